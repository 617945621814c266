// associativity's measurements (claim A1), as plain data: the two
// groupings of a + b + c in one format. What experiments/associativity.cpp
// records, and what tests check directly.
#pragma once

#include "precision/format.hpp"
#include "reports/results.hpp"

namespace fplab {

// The inputs rounded to the format, (a + b) + c, a + (b + c) and the exact
// sum rounded once. fp64 and fp32 use the hardware's arithmetic (Values of
// that type); every other format is emulated (precision/): inputs rounded
// to it once, each addition rounded to it once, shown as doubles.
struct Groupings {
  Value a, b, c, left, right, exact;
};
Groupings groupings_in(const Format& f, double a, double b, double c);

}  // namespace fplab
