// One rounded value as JSON: the format block of `fplab round --json`
// (cli/round_command.cpp) and the classroom page's bits widget
// (classroom/classroom.cpp, fplab_bits), written by one function so that the
// page and the command show the same fields with the same spelling.
//
//   round_query_json(q): an object with
//     format, spelling        q.format's name and its parse_format spelling
//     rounded, error, below, above, next_down, next_up, spacing, max_error
//                             io/exact_json.hpp's {"hex", "decimal"} of
//                             q.rounded, q.error, q.around.below/above,
//                             q.next_below/above, q.spacing, q.max_error
//     stored_exact            exact_decimal(q.rounded): every digit of the
//                             stored value (io/exact_decimal.hpp)
//     exact                   q.exact
//     bits                    {sign (0 or 1), exponent, mantissa (the
//                             fields as integers), exponent_bits,
//                             mantissa_bits, hex: bits_hex, binary:
//                             bits_binary, kind}
//   bits_hex(b):    b.bits as "0x" and one hex digit per 4 bits of the
//                   format's width (1 + exponent_bits + mantissa_bits),
//                   zero-padded: bf16's 16.125 is "0x4181".
//   bits_binary(b): sign, exponent and mantissa fields in binary, each
//                   padded to its width, separated by spaces: "0 10000011
//                   0000001".
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "precision/queries.hpp"
#include "precision/round_request.hpp"

namespace fplab {

nlohmann::json round_query_json(const RoundQuery& q);
std::string bits_hex(const BitFields& b);
std::string bits_binary(const BitFields& b);

}  // namespace fplab
