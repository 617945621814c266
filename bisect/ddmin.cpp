#include "bisect/ddmin.hpp"

#include <algorithm>
#include <utility>

namespace fplab::bisect {

Ddmin::Ddmin(Test test, Tested tested) : test_(std::move(test)), tested_(std::move(tested)) {}

bool Ddmin::good(const Subset& subset) {
  const auto [it, fresh] = cache_.try_emplace(subset, false);
  if (fresh) {
    ++tests_;
    it->second = test_(subset);
    if (it->second && (!best_ || subset.size() < best_->size())) best_ = subset;
    if (tested_) tested_(best_, tests_);
  }
  return it->second;
}

Ddmin::Subset Ddmin::run(Subset c, std::size_t n) {
  while (c.size() >= 2) {
    const std::size_t parts = std::min(n, c.size());
    std::vector<std::vector<std::size_t>> subsets(parts);
    for (std::size_t i = 0; i < c.size(); ++i) subsets[i * parts / c.size()].push_back(c[i]);
    bool reduced = false;
    for (const auto& s : subsets) {
      if (good(s)) {
        c = s;
        n = 2;
        reduced = true;
        break;
      }
    }
    if (!reduced && parts > 2) {
      for (std::size_t k = 0; k < parts; ++k) {
        std::vector<std::size_t> complement;
        for (std::size_t j = 0; j < parts; ++j)
          if (j != k) complement.insert(complement.end(), subsets[j].begin(), subsets[j].end());
        std::sort(complement.begin(), complement.end());
        if (good(complement)) {
          c = complement;
          n = std::max<std::size_t>(parts - 1, 2);
          reduced = true;
          break;
        }
      }
    }
    if (reduced) continue;
    if (parts >= c.size()) break;
    n = std::min(c.size(), 2 * parts);
  }
  return c;
}

Ddmin::Subset Ddmin::remove_each(Subset c) {
  bool removed = true;
  while (removed && c.size() >= 2) {
    removed = false;
    for (std::size_t k = 0; k < c.size();) {
      Subset rest = c;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(k));
      if (good(rest)) {
        c = std::move(rest);
        removed = true;
      } else {
        ++k;
      }
    }
  }
  return c;
}

}  // namespace fplab::bisect
