#include "io/numbers.hpp"

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <sstream>

#include "io/npy.hpp"

#if defined(__EMSCRIPTEN__)
#include <cctype>
#include <cerrno>
#include <cstdlib>
#endif

namespace fplab {

namespace {

#if defined(__EMSCRIPTEN__)
// The WebAssembly build (classroom/) only: Debian 12's emscripten 3.1.6
// ships a libc++ without floating-point std::from_chars. musl's strtof and
// strtod round correctly (decimal and hex alike), which is all from_chars is
// used for here; what strtod accepts beyond from_chars (leading space or
// sign) is refused first.
template <class T>
std::from_chars_result from_chars(const char* first, const char* last, T& value,
                                  std::chars_format format) {
  const bool hex = format == std::chars_format::hex;
  const std::string text = (hex ? "0x" : "") + std::string(first, last);
  const std::size_t skip = hex ? 2 : 0;
  if (text.size() == skip || std::isspace(static_cast<unsigned char>(text[skip])) != 0 ||
      text[skip] == '+' || text[skip] == '-') {
    return {first, std::errc::invalid_argument};
  }
  errno = 0;
  char* end = nullptr;
  if constexpr (sizeof(T) == 4) {
    value = std::strtof(text.c_str(), &end);
  } else {
    value = std::strtod(text.c_str(), &end);
  }
  const auto used = end - text.c_str() - static_cast<std::ptrdiff_t>(skip);
  if (used <= 0) return {first, std::errc::invalid_argument};
  const bool out_of_range = errno == ERANGE && (value == 0 || value - value != 0);
  return {first + used, out_of_range ? std::errc::result_out_of_range : std::errc{}};
}
#else
using std::from_chars;
#endif

}  // namespace

template <class T>
T parse_number(std::string_view text) {
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  auto format = std::chars_format::general;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    format = std::chars_format::hex;
  }
  T value{};
  const auto [ptr, ec] = from_chars(s.data(), s.data() + s.size(), value, format);
  // Out of range still rounds correctly (to inf or 0) in from_chars' value
  // only for some libraries; reject rather than guess.
  if (s.empty() || ec == std::errc::invalid_argument || ptr != s.data() + s.size() ||
      (!s.empty() && (s.front() == '+' || s.front() == '-'))) {
    throw InputError("'" + std::string(text) + "' is not a number");
  }
  if (ec == std::errc::result_out_of_range) {
    throw InputError("'" + std::string(text) + "' is out of range for " +
                     (sizeof(T) == 4 ? "float32" : "float64"));
  }
  return negative ? -value : value;
}

template float parse_number<float>(std::string_view);
template double parse_number<double>(std::string_view);

template <class T>
std::vector<T> read_text_numbers(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot open");
  std::vector<T> out;
  std::string line;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    for (char& c : line) {
      if (c == ',') c = ' ';
    }
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      try {
        out.push_back(parse_number<T>(word));
      } catch (const InputError& e) {
        throw InputError(path.string() + ":" + std::to_string(line_no) + ": " + e.what());
      }
    }
  }
  if (in.bad()) throw InputError(path.string() + ": read error");
  return out;
}

template std::vector<float> read_text_numbers<float>(const std::filesystem::path&);
template std::vector<double> read_text_numbers<double>(const std::filesystem::path&);

std::string to_hex(double x) { return fmt::format("{:a}", x); }
std::string to_hex(float x) { return fmt::format("{:a}", x); }
std::string to_decimal(double x) { return fmt::format("{}", x); }
std::string to_decimal(float x) { return fmt::format("{}", x); }
std::string to_prose(double x) { return fmt::format("{:.4g}", x); }

std::string to_prose_count(long long n) {
  std::string digits = std::to_string(n);
  const int first = n < 0 ? 1 : 0;
  for (int i = static_cast<int>(digits.size()) - 3; i > first; i -= 3)
    digits.insert(static_cast<std::size_t>(i), ",");
  return digits;
}

}  // namespace fplab
