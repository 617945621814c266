// certified-tokens' measurements, as plain data: the rigorous enclosure
// (model/enclosure.hpp) and the first-order bound (model/
// first_order_bound.hpp) along the greedy path of the batch-invariant
// decode (fp32; bf16 for the bf16 first-order bound), and the check of
// every measured logit against both.
//
// The path: greedy_decode of `prompts` of kPrompts from index `first` for `steps`
// steps, batch-invariant, fp32. Step t's logits are those after the prompt
// and the path's first t tokens; step t is certified when the path's token
// t has the certified lead (certified()).
//
// The first-order path: the same, with FirstOrderSequence; a step is
// certified when its centre's leader beats every other logit by more than
// the gap's bound (FirstOrderStep::certified).
//
// The sweep: for each tensor-parallel degree T (in process, the default
// all-reduce order), each reduction policy (all four) and batch size b,
// the prompts in
// groups of b (a group short of b filled with unrelated lines that decode
// greedily), each prompt teacher-forced along the path, one token per
// step after a prefill of all prompts at once; every logit of every step of
// every prompt compared with its enclosure and with its first-order bound
// (|l - centre| <= B, and <= B 2^-20: the negative control; on a
// Mixture-of-Experts model only at steps whose routes are certified, B
// holding for the centre's experts only), and each step's measured greedy
// token with the path's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "model/enclosure.hpp"
#include "model/first_order_bound.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::model::experiments {

struct CertifiedPath {
  std::size_t first = 0;  // the prompts are kPrompts[first, first + prompts)
  std::size_t prompts = 0;
  std::size_t steps = 0;
  std::vector<std::vector<Token>> tokens;                      // [prompt][step]
  std::vector<std::vector<std::vector<Interval>>> enclosures;  // [prompt][step][vocab]
  std::vector<std::vector<std::uint8_t>> certified;            // [prompt][step]
  std::int64_t certified_steps = 0;
  std::int64_t total_steps = 0;
  double widest = 0;                   // widest logit enclosure (hi - lo)
  double median_width = 0;             // median over every logit of every step
  double smallest_certified_gap = 0;   // smallest measured top-2 gap (path) at a certified step
  double largest_uncertified_gap = 0;  // largest such gap at an uncertified step
  // Per layer, the smallest and the largest over every step of the residual
  // stream's relative 2-norm bound after it (EnclosedSequence::layer_growth).
  std::vector<double> growth_min, growth_max;
};
// `step_done`, when set, is called after each step's bound (a progress
// point: it may run on another thread than the caller's).
CertifiedPath measure_certified_path(const Model& m, std::size_t prompts, std::size_t steps,
                                     EnclosureOptions options = {}, std::size_t first = 0,
                                     const std::function<void()>& step_done = {});

struct FirstOrderPath {
  PrecisionPolicy precision = PrecisionPolicy::fp32;
  double scale = 1;
  std::size_t first = 0;
  std::size_t prompts = 0;
  std::size_t steps = 0;
  std::vector<std::vector<Token>> tokens;           // [prompt][step]
  std::vector<std::vector<FirstOrderStep>> bounds;  // [prompt][step]
  std::int64_t certified_steps = 0;
  std::int64_t total_steps = 0;
  std::int64_t lead_differs = 0;  // steps whose centre's leader is not the path's token
  // Mixture of experts: steps left uncertified by a route (some position's
  // expert set not certified: FirstOrderStep::routes_certified), whatever
  // their logits' gaps.
  std::int64_t route_uncertified_steps = 0;
  bool cover = false;                  // the bounds came from the cover (FirstOrderStep::cover)
  double median_gap_bound = 0;         // median G_j over every competitor of every step
  double median_logit_bound = 0;       // median B_j over every logit of every step
  double smallest_certified_gap = 0;   // smallest measured top-2 gap (path) at a certified step
  double largest_uncertified_gap = 0;  // largest such gap at an uncertified step
};
// `precision`: fp32 or bf16 (the path then the bf16 batch-invariant decode).
// `step_done`: as measure_certified_path's.
FirstOrderPath measure_first_order_path(const Model& m, std::size_t prompts, std::size_t steps,
                                        FirstOrderOptions options = {}, std::size_t first = 0,
                                        const std::function<void()>& step_done = {});

// The negative control's factor on the first-order bound.
inline constexpr double kControlScale = 0x1p-20;

struct SweepCheck {
  ReductionPolicy policy = ReductionPolicy::library;
  std::size_t batch = 0;
  std::size_t tp = 1;  // tensor-parallel degree
  PrecisionPolicy precision = PrecisionPolicy::fp32;
  std::int64_t logits = 0;               // logits compared
  std::int64_t outside = 0;              // outside their rigorous enclosure
  std::int64_t certified_flips = 0;      // rigorously certified steps whose greedy token differs
  std::int64_t uncertified_flips = 0;    // steps certified by neither bound whose token differs
  std::int64_t outside_first_order = 0;  // |l - centre| > B (routes certified: below)
  // Logits of steps whose routes are not certified (their B assumes the
  // centre's experts): in `logits`, not compared with B or its control.
  std::int64_t route_uncertified_logits = 0;
  std::int64_t outside_control = 0;    // |l - centre| > B kControlScale
  std::int64_t first_order_flips = 0;  // first-order certified steps whose token differs
  double worst_ratio = 0;              // largest |l - centre| / B
};
// Both paths along the same tokens (fp32). `precision`: the sweep's
// forward passes (fp32; bf16 as the negative control of an fp32 bound).
std::vector<SweepCheck> check_sweep(const Model& m, const CertifiedPath& path,
                                    const FirstOrderPath& first_order,
                                    std::span<const std::size_t> batches,
                                    std::span<const std::size_t> degrees,
                                    std::span<const ReductionPolicy> policies,
                                    PrecisionPolicy precision = PrecisionPolicy::fp32);
// A first-order bound alone, against forward passes in `precision` (its
// own when absent) along its own path, at each tensor-parallel degree of
// `degrees` (T = 1 when empty; under bf16, tensor parallelism rounds its
// partial sums, a rounding point the bound does not list); the rigorous
// columns stay 0.
std::vector<SweepCheck> check_first_order(const Model& m, const FirstOrderPath& first_order,
                                          std::span<const std::size_t> batches,
                                          std::span<const ReductionPolicy> policies,
                                          std::span<const std::size_t> degrees = {},
                                          std::optional<PrecisionPolicy> precision = {});

// check_sweep and check_first_order leave out the runs whose (policy, T)
// the model's shape does not split into (tp_refusal, experiments/
// model_support.hpp).

}  // namespace fplab::model::experiments
