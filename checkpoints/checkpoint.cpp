#include "checkpoints/checkpoint.hpp"

#include <cstring>

#include "checkpoints/checkpoint_builder.hpp"
#include "io/float_bits.hpp"
#include "io/input_error.hpp"

namespace fplab::checkpoints {

static_assert(std::endian::native == std::endian::little, "the mapped tensors are little-endian");

std::string_view name(StoredType t) {
  switch (t) {
    case StoredType::f32:
      return "F32";
    case StoredType::f16:
      return "F16";
    case StoredType::bf16:
      return "BF16";
  }
  return "?";
}

std::size_t stored_type_bytes(StoredType t) { return t == StoredType::f32 ? 4 : 2; }

std::size_t TensorView::elements() const {
  std::size_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
}

Checkpoint::Checkpoint() : storage_(std::make_unique<Storage>()) {}
Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint& Checkpoint::operator=(Checkpoint&&) noexcept = default;
Checkpoint::~Checkpoint() = default;

const std::vector<std::filesystem::path>& Checkpoint::files() const { return storage_->files; }

std::string_view Checkpoint::format() const {
  return location_.kind == ModelLocation::Kind::gguf_file ? "gguf" : "safetensors";
}

const TensorView* Checkpoint::find(std::string_view hf_name) const {
  const auto it = tensors_.find(hf_name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorView& Checkpoint::tensor(std::string_view hf_name) const {
  const auto* t = find(hf_name);
  if (t == nullptr) throw InputError(location_.id + ": no tensor '" + std::string(hf_name) + "'");
  return *t;
}

std::size_t Checkpoint::parameter_count() const {
  std::size_t n = 0;
  for (const auto& [name, t] : tensors_) n += t.elements();
  return n;
}

std::size_t Checkpoint::mapped_bytes() const {
  std::size_t n = 0;
  for (const auto& m : storage_->maps) n += m->bytes().size();
  return n;
}

std::size_t Checkpoint::owned_bytes() const {
  std::size_t n = 0;
  for (const auto& b : storage_->owned) n += b.size();
  return n;
}

Checkpoint Checkpoint::open(const ModelLocation& where, const ExpectedTensors& expected) {
  CheckpointBuilder b;
  b.c.location_ = where;
  if (where.kind == ModelLocation::Kind::gguf_file) {
    load_gguf(b, where.path, expected);
  } else {
    load_hf_directory(b, where.path, expected);
  }
  return std::move(b.c);
}

std::vector<float> to_float32(const TensorView& t) {
  std::vector<float> out(t.elements());
  const std::byte* p = t.data;
  for (std::size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype) {
      case StoredType::f32:
        std::memcpy(&out[i], p + 4 * i, 4);
        break;
      case StoredType::bf16: {
        std::uint16_t h = 0;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = bfloat16_to_float(h);
        break;
      }
      case StoredType::f16: {
        std::uint16_t h = 0;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = binary16_to_float(h);
        break;
      }
    }
  }
  return out;
}

void dequantize_q8_0(const std::byte* src, std::size_t elements, std::byte* out) {
  for (std::size_t blk = 0; blk < elements / 32; ++blk) {
    const std::byte* block = src + blk * 34;
    std::uint16_t d_bits = 0;
    std::memcpy(&d_bits, block, 2);
    const float d = binary16_to_float(d_bits);
    for (std::size_t i = 0; i < 32; ++i) {
      // |q| <= 128 and the scale has 11 significant bits: the product is exact.
      const float x = d * static_cast<float>(static_cast<std::int8_t>(block[2 + i]));
      std::memcpy(out + (blk * 32 + i) * 4, &x, 4);
    }
  }
}

}  // namespace fplab::checkpoints
