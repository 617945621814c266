// A float as JSON, exactly: {"hex": "0x1.8p+0", "decimal": "1.5"}, the
// exact hex beside the shortest decimal that reads back to the same bits
// (io/numbers.hpp). One spelling for every JSON fplab prints by hand:
// `fplab sum --json` and `fplab round --json` (cli/), and the classroom
// page's replies (classroom/reply.hpp), so the page and the command show a
// value alike. (results.json has its own codec: reports/results_json.hpp.)
#pragma once

#include <nlohmann/json.hpp>

#include "io/numbers.hpp"

namespace fplab {

// T: float or double.
template <class T>
nlohmann::json exact_value(T v) {
  return {{"hex", to_hex(v)}, {"decimal", to_decimal(v)}};
}

}  // namespace fplab
