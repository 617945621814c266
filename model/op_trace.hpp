// Observation points put to use: an OpObserver (model/transformer.hpp) that
// records, pass after pass, every op's output for one sequence of a batch
// (the request, row 0 of a batched server's batch): the op, the pass (0 the
// first forward call: the prompt's prefill; then one per decode step), the
// positions, the values and a hash of their bits. Two traces of the same
// request under two settings compare op by op (`first_difference`), and a
// trace is written as a safetensors file with one tensor per (pass, op)
// (`write_trace`), named "step<N>.<op name>", [positions, width] float32,
// in execution order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/transformer.hpp"

namespace fplab::model {

struct OpRecord {
  std::size_t pass = 0;
  std::size_t op = 0;  // index into the model's ops()
  std::string name;    // the op's name
  std::size_t first_position = 0;
  std::size_t rows = 0;  // the sequence's new tokens in this pass
  std::size_t width = 0;
  std::vector<float> values;  // rows x width
  std::uint64_t hash = 0;     // FNV-1a 64 over the values' bit patterns
};

class OpTrace final : public OpObserver {
 public:
  // Records sequence `sequence` of the batches it observes.
  explicit OpTrace(std::size_t sequence = 0) : sequence_(sequence) {}
  void observe(std::size_t op, std::span<const float> out, const Batch& batch) override;
  [[nodiscard]] const std::vector<OpRecord>& records() const { return records_; }

 private:
  std::size_t sequence_;
  std::size_t passes_ = 0;
  std::vector<OpRecord> records_;
};

// FNV-1a (64-bit) over the bit patterns of `v`, little-endian bytes.
std::uint64_t bits_hash(std::span<const float> v);

// The first record (in execution order) whose bits differ between two
// traces of the same request, or nullopt when every record matches; throws
// std::invalid_argument when the traces do not record the same ops.
std::optional<std::size_t> first_difference(const std::vector<OpRecord>& a,
                                            const std::vector<OpRecord>& b);

// One tensor per record, "step<pass>.<name>", [rows, width] F32, in order.
void write_trace(const std::filesystem::path& path, const std::vector<OpRecord>& records,
                 const std::map<std::string, std::string>& metadata);

}  // namespace fplab::model
