#include "cli/narrow_text.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>

namespace fplab::cli {

std::size_t terminal_columns() {
  if (isatty(STDOUT_FILENO) == 0) return std::numeric_limits<std::size_t>::max();
  winsize w{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col != 0) return w.ws_col;
  const char* columns = std::getenv("COLUMNS");
  if (columns != nullptr) {
    char* end = nullptr;
    const unsigned long n = std::strtoul(columns, &end, 10);
    if (end != columns && *end == '\0' && n > 0) return n;
  }
  return std::numeric_limits<std::size_t>::max();
}

bool narrow_output(bool narrow_flag, std::size_t wide_columns) {
  return narrow_flag || terminal_columns() < std::max(kNarrowBelow, wide_columns);
}

std::string wrapped(std::string text, std::size_t width, std::size_t indent) {
  std::string out;
  while (text.size() > width) {
    std::size_t cut = text.rfind(' ', width);
    std::size_t skip = 1;  // the space at the cut
    if (cut == std::string::npos || cut <= indent) {
      const std::size_t comma = text.rfind(',', width - 1);
      if (comma != std::string::npos && comma > indent) {
        cut = comma + 1;  // a list with no space: after a comma, which stays
        skip = 0;
      } else {
        cut = text.find(' ', width);
      }
    }
    if (cut == std::string::npos) break;
    out += text.substr(0, cut) + "\n";
    text = std::string(indent, ' ') + text.substr(cut + skip);
  }
  return out + text + "\n";
}

}  // namespace fplab::cli
