#include "checkpoints/token_ids.hpp"

#include <exception>
#include <nlohmann/json.hpp>

#include "io/input_error.hpp"

namespace fplab::checkpoints {

std::vector<std::int64_t> parse_token_ids(std::string_view flag, const std::string& s) {
  std::vector<std::int64_t> ids;
  const std::string name(flag);
  if (!s.empty() && s.front() == '[') {  // a JSON array, as --json prints
    const auto j = nlohmann::json::parse(s, nullptr, false);
    if (j.is_discarded() || !j.is_array()) throw InputError(name + ": not a JSON array of ids");
    for (const auto& v : j) {
      if (!v.is_number_integer())
        throw InputError(name + ": " + v.dump() + " is not an integer id");
      ids.push_back(v.get<std::int64_t>());
    }
    return ids;
  }
  std::size_t i = 0;
  while (i <= s.size() && !s.empty()) {
    const auto comma = s.find(',', i);
    const auto word = s.substr(i, comma == std::string::npos ? std::string::npos : comma - i);
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != word.size() || v < 0 || v > (1LL << 30))
      throw InputError(name + ": '" + word + "' is not a token id");
    ids.push_back(v);
    if (comma == std::string::npos) break;
    i = comma + 1;
  }
  return ids;
}

}  // namespace fplab::checkpoints
