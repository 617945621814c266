// Shared by the fuzz targets: the one rule they check, and a scratch file
// for readers that take a path.
//
// The rule: a reader given any bytes returns a value or throws one of the
// errors fplab turns into a one-line message and exit 2 (InputError,
// std::invalid_argument). Anything else (a crash, a sanitizer report, a
// hang, any other exception, which escapes and aborts) is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include "io/input_error.hpp"

namespace fplab::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `f`; swallows the documented one-line errors, lets anything else escape.
template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const fplab::InputError&) {
  } catch (const std::invalid_argument&) {
  }
}

// A file of this process (so parallel fuzzing jobs do not share one) that
// holds the current input, for readers that only take a path.
inline std::filesystem::path scratch_file(std::string_view name, const std::uint8_t* data,
                                          std::size_t size) {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("fplab-fuzz-" + std::string(name) + "-" + std::to_string(::getpid()));
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) __builtin_trap();  // the harness cannot work: stop loudly
  if (size > 0 && std::fwrite(data, 1, size, f) != size) __builtin_trap();
  std::fclose(f);
  return path;
}

// A property the harness checks beyond "no crash": fails loudly.
inline void require(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace fplab::fuzz
