// op-localisation's measurements, as plain data: for one request on a
// model, under each of `policies`, three pairs of settings a server
// confuses (batch 1 vs 8, TP 1 vs 4 in process, the prompt prefilled at
// once vs in chunks), fplab bisect's answer (bisect/bisect.hpp): the first
// divergent op, the 1-minimal set of ops to make invariant, and each op
// alone ranked by how far it moves the top-2 margin.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "bisect/bisect_report.hpp"
#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::bisect {

struct Localisation {
  model::ReductionPolicy policy = model::ReductionPolicy::library;
  std::string comparison;  // "batch 1 vs 8", ...
  BisectReport report;
  // How many ops of each kind the minimal set holds.
  std::size_t linear = 0, rmsnorm = 0, attention = 0;
};

// The three comparisons, chunked prefill in chunks of `chunk` tokens.
std::vector<std::pair<Setting, Setting>> localisation_settings(std::size_t chunk);
std::string comparison_name(const Setting& a, const Setting& b);

// `prompt`: the request's tokens; `steps` greedy steps. A comparison the
// model's shape rules out (a TP degree its heads or widths do not split
// into) is left out, with why added to `left_out` when given. With
// `first_op_only`, each report holds the first divergent op alone (two
// traced decodes per comparison): no minimal fix, no ranking, which
// decode the request twice per candidate op.
std::vector<Localisation> measure_op_localisation(const model::Model& m,
                                                  const std::vector<model::Token>& prompt,
                                                  std::size_t steps, std::size_t chunk,
                                                  std::span<const model::ReductionPolicy> policies,
                                                  std::vector<std::string>* left_out = nullptr,
                                                  bool first_op_only = false);

}  // namespace fplab::bisect
