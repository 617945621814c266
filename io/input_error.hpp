// The one error type for bad input: an unreadable, truncated or malformed
// file, a bad number, a value out of range. Its message is one line that
// names the file or the value; `fplab` prints it and exits 2.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace fplab {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws InputError("PATH: WHY"), the form a file reader's message takes.
[[noreturn]] inline void fail_input(const std::filesystem::path& path, const std::string& why) {
  throw InputError(path.string() + ": " + why);
}

}  // namespace fplab
