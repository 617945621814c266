// What every classroom entry point shares: its reply is JSON text, valid
// until the next call; an exception becomes {"error": "one line"} (never a
// trap), so bad input is a message on the page.
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/exact_json.hpp"
#include "io/numbers.hpp"

namespace fplab::classroom {

using nlohmann::json;

inline const char* reply(const json& j) {
  static std::string last;  // the last reply, kept alive for the caller
  last = j.dump();
  return last.c_str();
}

template <class F>
const char* guarded(F&& f) {
  try {
    return reply(f());
  } catch (const std::exception& e) {
    return reply(json{{"error", e.what()}});
  }
}

// A float as {"hex", "decimal"}: the one spelling `fplab sum --json` prints too.
using fplab::exact_value;

// The words of `text`, split at white space.
inline std::vector<std::string> words(const char* text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace fplab::classroom
