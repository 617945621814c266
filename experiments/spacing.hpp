// spacing's measurements (claim A5), as plain data: bfloat16 around one
// value. What experiments/spacing.cpp records (beside the spacing tables,
// which precision/queries.hpp computes), and what tests check directly.
#pragma once

namespace fplab {

// The bf16 values around `probe` and the grid's figures there.
struct Bf16Probe {
  double below = 0;      // the largest bf16 value <= probe
  double above = 0;      // the smallest bf16 value > probe
  double next_up = 0;    // the bf16 value after `above`
  double spacing = 0;    // the gap between consecutive bf16 values at probe
  double max_error = 0;  // the largest round-to-nearest error there: half the gap
};
Bf16Probe bf16_probe(double probe);

}  // namespace fplab
