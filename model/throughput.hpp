// Tokens per second of the forward pass, per policy and batch size.
#pragma once

#include <cstddef>
#include <ostream>
#include <span>
#include <vector>

#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::model {

struct Throughput {
  Policy policy;
  std::size_t batch = 0;
  double decode_tokens_per_s = 0;   // greedy steps: batch tokens per pass
  double prefill_tokens_per_s = 0;  // teacher-forced: batch windows of `window` tokens per pass
  // The same per second of CPU time (all threads): steadier than wall time
  // on a machine shared with other jobs.
  double decode_tokens_per_cpu_s = 0;
  double prefill_tokens_per_cpu_s = 0;
};

// Times `batch` copies of a fixed prompt decoding `steps` greedy tokens
// (the prompt's own pass not counted), and `batch` windows of `window`
// tokens (0: the context) scored in one pass. Wall-clock time: the
// numbers vary from run to run, the logits do not.
Throughput measure_throughput(const Model& model, Policy policy, std::size_t batch,
                              std::size_t steps = 48, std::size_t window = 0);

// Every reduction policy x the given precisions x batch sizes.
std::vector<Throughput> measure_throughputs(const Model& model,
                                            std::span<const std::size_t> batches,
                                            std::span<const PrecisionPolicy> precisions);

// One line per measurement: policy, precision, batch, decode and prefill
// tokens/s, wall and CPU.
void print_throughputs(std::ostream& out, std::span<const Throughput> rows);

}  // namespace fplab::model
