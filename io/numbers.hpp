// Numbers as text, exactly: parsing rounds once, straight to the target type
// (never via double for float), and printing gives both the exact binary
// value in hex (%a) and the shortest decimal that reads back to the same bits.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace fplab {

// Decimal ("0.1", "1e20", "-inf", "nan") or C99 hex ("0x1.8p-3").
// Throws InputError("'<text>' is not a number") on anything else.
template <class T>
T parse_number(std::string_view text);

// Numbers separated by white space or commas; '#' starts a comment.
// Errors name the file and the line.
template <class T>
std::vector<T> read_text_numbers(const std::filesystem::path& path);

// Exact hexadecimal, e.g. "0x1.999999999999ap-4".
std::string to_hex(double x);
std::string to_hex(float x);
// Shortest round-trip decimal, e.g. "0.1" (float: shortest for float).
std::string to_decimal(double x);
std::string to_decimal(float x);
// A measured value in prose (captions, verdicts): 4 significant digits,
// e.g. "9.537e-07", "0.1185"; the tables keep the exact hex and decimal.
std::string to_prose(double x);
// A count in prose, digits grouped by three with commas: "49,152", "-1,000".
std::string to_prose_count(long long n);

}  // namespace fplab
