// gated-determinism's per-gate counts and the MarginGate reading of them
// (claim B11), as plain data and functions: what experiments/
// gated_determinism.cpp records, and what tests check on rows they make.
//
// A GateRow is one gate at one precision, summed over the prompts and batch
// sizes: `deterministic` counts the prompts whose tokens equal the
// reference (the prompt alone, batch-invariant) at every batch size.
//
// smallest_deterministic_margin(rows, pr): among the rows of precision `pr`
// with a margin gate and every prompt deterministic, the one with the
// smallest TAU (the first of equal TAUs); null when there is none.
// margin_note(rows, pr): the note "<pr>:" followed by, each when there is
// one, that calibrated margin gate and its trigger rate (recomputed /
// steps, 0 for no steps), the largest-TAU margin gate that fails, and the
// bound gate's counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/gated_decode.hpp"
#include "model/policy.hpp"

namespace fplab::model::experiments::gated_determinism_experiment {

struct GateRow {
  PrecisionPolicy precision = PrecisionPolicy::fp32;
  Gate gate;
  std::size_t prompts = 0;
  std::size_t deterministic = 0;  // prompts equal to the reference at every batch size
  std::int64_t runs = 0, differing_runs = 0;
  GatedStats stats;           // the gated rows' counts, the passes of every run
  double seconds = 0;         // the decodes' wall time
  double bound_seconds = 0;   // the bound gate's verdicts, at their measured mean
  std::int64_t verdicts = 0;  // verdicts the runs asked for
};

const GateRow* smallest_deterministic_margin(const std::vector<GateRow>& rows, PrecisionPolicy pr);

std::string margin_note(const std::vector<GateRow>& rows, PrecisionPolicy pr);

}  // namespace fplab::model::experiments::gated_determinism_experiment
