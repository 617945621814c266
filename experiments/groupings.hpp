// groupings' measurements (claim A3), as plain data: how many distinct
// float32 totals the groupings of one data set give. What
// experiments/groupings.cpp records, and what tests check directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace fplab {

// The recipe: n float32 values, standard normals (lab/random.hpp,
// Marsaglia's polar method on std::mt19937_64(seed)) rounded to float32.
std::vector<float> float32_normals(std::size_t n, std::uint64_t seed);

// Grouping g (g = 1..groupings) cuts x into g contiguous chunks of
// np.array_split sizes, sums each chunk by `inner` in float32 and adds the
// g chunk totals by `combine`: the strategy chunked(g,inner,combine).
// Grouping 1 is the plain `inner` sum.
struct GroupingCount {
  std::size_t distinct = 0;  // distinct totals, bit for bit
  float lo = 0;              // the smallest total
  float hi = 0;              // the largest total
};
GroupingCount count_groupings(std::span<const float> x, std::int64_t groupings,
                              const std::string& inner, const std::string& combine);

// The spread of the per-seed counts. Median: the mean of the two middle
// counts when their number is even (exact in double).
struct CountSpread {
  std::int64_t first = 0, lo = 0, hi = 0;
  double median = 0;
};
CountSpread count_spread(const std::vector<std::int64_t>& counts);

}  // namespace fplab
