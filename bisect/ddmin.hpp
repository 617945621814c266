// ddmin (Zeller and Hildebrandt, "Simplifying and Isolating
// Failure-Inducing Input", 2002) over sets of candidate indices: from a set
// that passes `test`, a smaller one that still passes, by trying its parts
// (granularity n: the set cut into n nearly equal runs, in order) and then
// their complements, halving the parts' size when neither passes. The
// answer is 1-minimal: removing any one element of it fails `test` (for an
// answer of one element: provided the empty set fails, which the caller
// checks), given a deterministic `test` (each subset is tested once; the
// answers are cached). Subsets keep the order of `c`.
//
// bisect/bisect.hpp's minimal_fix runs it over the ops that can be made
// invariant, `test` being "the logits of both settings are bit-identical".
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace fplab::bisect {

class Ddmin {
 public:
  using Subset = std::vector<std::size_t>;
  // Whether a subset passes (the expensive call: run once per subset).
  using Test = std::function<bool(const Subset&)>;
  // Told after each new test: the smallest passing subset so far (nullopt
  // when none has passed) and how many subsets have been tested.
  using Tested = std::function<void(const std::optional<Subset>& best, std::size_t tests)>;

  explicit Ddmin(Test test, Tested tested = {});

  // `test(subset)`, cached.
  bool good(const Subset& subset);

  // ddmin from `c` (which must pass) at granularity `n` (2: the textbook
  // start; c.size(): each element alone, then each one's removal).
  Subset run(Subset c, std::size_t n);

  // ddmin's finest granularity, complements only: each element's removal
  // from `c` (which must pass) tried in turn and kept when the rest still
  // passes, until a whole round removes none. The answer is 1-minimal as
  // run()'s is (the last round tested each element's removal from it); it
  // costs one test per element when none can go, where run() at
  // granularity c.size() first tests each element alone as well. For a set
  // known to be mostly needed (bisect's op kinds, each needed as a whole).
  Subset remove_each(Subset c);

  // Subsets tested so far (cache hits not counted).
  [[nodiscard]] std::size_t tests() const { return tests_; }

 private:
  Test test_;
  Tested tested_;
  std::map<Subset, bool> cache_;
  std::optional<Subset> best_;  // the smallest good set tested
  std::size_t tests_ = 0;
};

}  // namespace fplab::bisect
