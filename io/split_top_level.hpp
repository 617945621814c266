// Splitting a list at its top-level commas: "chunked(4,numpy,sequential),kahan"
// is two items, "chunked(4,numpy,sequential)" and "kahan". Commas inside
// parentheses (at any depth) do not split. The pieces are views into `text`,
// untrimmed and possibly empty; an empty `text` gives one empty piece, so
// the result always has (top-level commas + 1) items. Unbalanced
// parentheses are the caller's to diagnose: a ')' without its '(' only
// lowers the depth. Used by the strategy spellings (reductions/strategy.cpp)
// and by list parameters (lab/param_spec.cpp).
#pragma once

#include <string_view>
#include <vector>

namespace fplab {

inline std::vector<std::string_view> split_top_level(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')') --depth;
    if (text[i] == ',' && depth == 0) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(text.substr(start));
  return out;
}

}  // namespace fplab
