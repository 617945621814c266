#include "model/throughput.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

#include "model/decode.hpp"

namespace fplab::model {

Throughput measure_throughput(const Model& model, Policy policy, std::size_t batch,
                              std::size_t steps, std::size_t window) {
  using clock = std::chrono::steady_clock;
  const auto& c = model.config();
  const std::size_t V = c.vocab_size;
  if (window == 0) window = c.context;
  Throughput t{policy, batch, 0, 0, 0, 0};
  const auto cpu_seconds = [](std::clock_t a, std::clock_t b) {
    return static_cast<double>(b - a) / CLOCKS_PER_SEC;
  };

  // A fixed prompt of 16 tokens; then `steps` passes of one token each.
  std::vector<std::vector<Token>> feed(batch);
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t i = 0; i < 16; ++i) feed[b].push_back(static_cast<Token>((7 * i + 3) % V));
  }
  Batch decode(model, policy, batch);
  decode.forward(feed);
  const auto t0 = clock::now();
  const std::clock_t c0 = std::clock();
  std::size_t done = 0;
  for (std::size_t s = 0; s < steps && 16 + s < c.context; ++s, ++done) {
    const Logits& l = decode.forward(feed);
    for (std::size_t b = 0; b < batch; ++b) feed[b].assign(1, top_two(l.last(b)).first);
  }
  const double dt = std::chrono::duration<double>(clock::now() - t0).count();
  t.decode_tokens_per_s = static_cast<double>(batch * done) / dt;
  t.decode_tokens_per_cpu_s = static_cast<double>(batch * done) / cpu_seconds(c0, std::clock());

  std::vector<std::vector<Token>> windows(batch);
  for (std::size_t b = 0; b < batch; ++b) {
    for (std::size_t i = 0; i < window; ++i)
      windows[b].push_back(static_cast<Token>((13 * i + b) % V));
  }
  Batch prefill(model, policy, batch);
  const auto t1 = clock::now();
  const std::clock_t c1 = std::clock();
  prefill.forward(windows);
  const double dp = std::chrono::duration<double>(clock::now() - t1).count();
  t.prefill_tokens_per_s = static_cast<double>(batch * window) / dp;
  t.prefill_tokens_per_cpu_s = static_cast<double>(batch * window) / cpu_seconds(c1, std::clock());
  return t;
}

std::vector<Throughput> measure_throughputs(const Model& model,
                                            std::span<const std::size_t> batches,
                                            std::span<const PrecisionPolicy> precisions) {
  std::vector<Throughput> out;
  for (PrecisionPolicy p : precisions) {
    for (ReductionPolicy r : kReductionPolicies) {
      for (std::size_t b : batches) out.push_back(measure_throughput(model, Policy{r, p}, b));
    }
  }
  return out;
}

void print_throughputs(std::ostream& out, std::span<const Throughput> rows) {
  char line[160];
  std::snprintf(line, sizeof line, "%-16s %-9s %5s %13s %13s %13s %13s\n", "reduction", "precision",
                "batch", "decode tok/s", "(per cpu-s)", "prefill tok/s", "(per cpu-s)");
  out << line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%-16s %-9s %5zu %13.0f %13.0f %13.0f %13.0f\n",
                  std::string(name(r.policy.reduction)).c_str(),
                  std::string(name(r.policy.precision)).c_str(), r.batch, r.decode_tokens_per_s,
                  r.decode_tokens_per_cpu_s, r.prefill_tokens_per_s, r.prefill_tokens_per_cpu_s);
    out << line;
  }
}

}  // namespace fplab::model
