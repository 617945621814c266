// The one error type for bad input: an unreadable, truncated or malformed
// file, a bad number, a value out of range. Its message is one line that
// names the file or the value; `fplab` prints it and exits 2.
#pragma once

#include <stdexcept>

namespace fplab {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace fplab
