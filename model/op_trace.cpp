#include "model/op_trace.hpp"

#include <cstring>
#include <stdexcept>

#include "model/safetensors.hpp"

namespace fplab::model {

std::uint64_t bits_hash(std::span<const float> v) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (float x : v) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    for (int byte = 0; byte < 4; ++byte) {
      h ^= (bits >> (8 * byte)) & 0xffu;
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

void OpTrace::observe(std::size_t op, std::span<const float> out, const Batch& batch) {
  if (op == 0 && !records_.empty()) ++passes_;
  const std::size_t width = batch.ops()[op].width();
  OpRecord r;
  r.pass = passes_;
  r.op = op;
  r.name = batch.ops()[op].name;
  r.width = width;
  bool first = true;
  for (std::size_t row = 0; row < batch.rows(); ++row) {
    if (batch.row_sequence(row) != sequence_) continue;
    if (first) r.first_position = batch.row_position(row);
    first = false;
    ++r.rows;
    const auto values = out.subspan(row * width, width);
    r.values.insert(r.values.end(), values.begin(), values.end());
  }
  r.hash = bits_hash(r.values);
  records_.push_back(std::move(r));
}

std::optional<std::size_t> first_difference(const std::vector<OpRecord>& a,
                                            const std::vector<OpRecord>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i].name != b[i].name || a[i].pass != b[i].pass || a[i].rows != b[i].rows) {
      throw std::invalid_argument("the traces differ in their ops at record " + std::to_string(i) +
                                  " ('" + a[i].name + "' vs '" + b[i].name + "')");
    }
    if (a[i].hash != b[i].hash || a[i].values.size() != b[i].values.size() ||
        std::memcmp(a[i].values.data(), b[i].values.data(), a[i].values.size() * sizeof(float)) !=
            0) {
      return i;
    }
  }
  if (a.size() != b.size()) {
    throw std::invalid_argument("the traces have " + std::to_string(a.size()) + " and " +
                                std::to_string(b.size()) + " records");
  }
  return std::nullopt;
}

void write_trace(const std::filesystem::path& path, const std::vector<OpRecord>& records,
                 const std::map<std::string, std::string>& metadata) {
  std::vector<TensorToWrite> tensors;
  tensors.reserve(records.size());
  for (const auto& r : records) {
    tensors.push_back({"step" + std::to_string(r.pass) + "." + r.name,
                       {r.rows, r.width},
                       r.values,
                       {},
                       DType::F32});
  }
  write_safetensors(path, tensors, metadata);
}

}  // namespace fplab::model
