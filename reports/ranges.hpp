// Integer lists as a reader takes them in: runs printed as ranges.
//
//   compact_list({1,2,...,32,64,128,256,512,1024}) == "1..32, 64, 128, 256..1024"
//
// A run of at least four consecutive integers prints as "a..b"; a run of at
// least five with one other constant difference, or one constant integer
// ratio, prints its first three terms and its last ("2, 4, 6..16",
// "1, 2, 4..1024"): three terms say which progression it is. Everything else
// prints as itself. Items are separated by ", " so that a long list wraps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fplab::report {

std::string compact_list(const std::vector<std::int64_t>& v);

// A comma-separated list of integers ("1,2,3") parsed; nullopt when any item
// is not an integer.
std::optional<std::vector<std::int64_t>> parse_int_list(const std::string& text);

}  // namespace fplab::report
