// The teaching commands' narrow mode (fplab sum, round, list): text that fits
// an 80-column terminal or projector. A command prints it with --narrow, or
// by itself when standard output is a terminal narrower than 100 columns or
// than the command's wide layout needs (sum's table: 148, round's: 112). A
// pipe or a file keeps the wide layout, so scripts see one format.
#pragma once

#include <cstddef>
#include <string>

namespace fplab::cli {

inline constexpr std::size_t kNarrowColumns = 80;
inline constexpr std::size_t kNarrowBelow = 100;

// The width of the terminal standard output is (TIOCGWINSZ; COLUMNS when
// that fails), or the largest size_t when standard output is not a
// terminal.
std::size_t terminal_columns();

// --narrow given, or standard output a terminal narrower than
// max(kNarrowBelow, wide_columns).
bool narrow_output(bool narrow_flag, std::size_t wide_columns = kNarrowBelow);

// `text` broken at spaces into lines of at most `width` columns, each line
// after the first indented by `indent`; ends with a newline. A word too long
// for a line is broken after a comma (`[a,b,c]`), or else stands alone.
std::string wrapped(std::string text, std::size_t width, std::size_t indent);

}  // namespace fplab::cli
