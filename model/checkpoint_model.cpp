// Model::from_checkpoint: a real checkpoint (checkpoints/checkpoint.hpp) as
// a Model. Its architecture becomes a ModelConfig (model_config, the
// optional features of model/forward_ops.hpp), the op list's tensors are
// what Checkpoint::open checks the files against (checkpoint_tensors), its
// tokenizer is the byte-level BPE beside it; its
// tensors: a bf16 or f16 checkpoint's matrices stay as stored (the forward
// pass widens them exactly: Model::stored_weight), its norms and biases and
// an f32 checkpoint's weights become float32 (exact: every bf16 and f16 is a
// float).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>

#include "checkpoints/checkpoint.hpp"
#include "checkpoints/tokenizer_bpe.hpp"
#include "io/float_bits.hpp"
#include "io/input_error.hpp"
#include "model/checkpoint_tensors.hpp"
#include "model/transformer.hpp"

namespace fplab::model {

namespace {

// checkpoints' byte-level BPE as the model's subword tokenizer.
class BpeSubword final : public SubwordTokenizer {
 public:
  explicit BpeSubword(checkpoints::BpeTokenizer bpe) : bpe_(std::move(bpe)) {}
  [[nodiscard]] std::size_t vocab_size() const override { return bpe_.vocab_size(); }
  [[nodiscard]] std::vector<Token> encode(std::string_view text) const override {
    return bpe_.encode(text);
  }
  [[nodiscard]] std::string decode(std::span<const Token> tokens) const override {
    return bpe_.decode(tokens);
  }

 private:
  checkpoints::BpeTokenizer bpe_;
};

// The first element of `n` stored values of type U (at `data`) whose
// exponent bits (`exponent`) are all ones, or n. A branch-free pass first
// (it vectorises: the whole checkpoint is read once at load), the index
// only when one is there.
template <typename U>
std::size_t first_non_finite(const std::byte* data, std::size_t n, U exponent) {
  unsigned any = 0;
  for (std::size_t i = 0; i < n; ++i) {
    U u = 0;
    std::memcpy(&u, data + sizeof(U) * i, sizeof(U));
    any |= static_cast<unsigned>((u & exponent) == exponent);
  }
  if (any == 0) return n;
  for (std::size_t i = 0; i < n; ++i) {
    U u = 0;
    std::memcpy(&u, data + sizeof(U) * i, sizeof(U));
    if ((u & exponent) == exponent) return i;
  }
  return n;
}

// Throws InputError naming the first tensor (in name order) that holds a
// NaN or an infinity, and where: such a weight would surface only as a NaN
// logit many ops later. Reads the stored bits (exponent all ones), so a
// 16-bit checkpoint is not widened for it.
void require_finite_weights(const checkpoints::Checkpoint& ck, const std::string& where) {
  for (const auto& [tensor, view] : ck.tensors()) {
    const std::size_t n = view.elements();
    const bool f32 = view.dtype == checkpoints::StoredType::f32;
    const bool bf16 = view.dtype == checkpoints::StoredType::bf16;
    const ElementType type = f32    ? ElementType::float32
                             : bf16 ? ElementType::bfloat16
                                    : ElementType::float16;
    const auto exponent = static_cast<std::uint32_t>(exponent_field_mask(type));
    const std::size_t i =
        f32 ? first_non_finite<std::uint32_t>(view.data, n, exponent)
            : first_non_finite<std::uint16_t>(view.data, n, static_cast<std::uint16_t>(exponent));
    if (i == n) continue;
    std::uint32_t u = 0;
    std::memcpy(&u, view.data + (f32 ? 4 : 2) * i, f32 ? 4 : 2);  // little-endian host
    const bool nan = element_is_nan(type, u);
    throw InputError(where + ": the weight " + tensor + " holds " +
                     (nan ? "a NaN" : "an infinity") + " (element " + std::to_string(i) + " of " +
                     std::to_string(n) + ")");
  }
}

}  // namespace

Model Model::load(const std::filesystem::path& path) {
  if (path.native() == kBundledMoeSpec) return load_bundled_moe(model_path());
  const auto file = model_path(path);
  // A directory, a GGUF file or a model id is a real checkpoint.
  // (A missing .safetensors file is the bundled format's "cannot open".)
  if (std::filesystem::is_directory(file) || file.extension() == ".gguf" ||
      (!std::filesystem::exists(file) && file.extension() != ".safetensors")) {
    return from_checkpoint(file.string());
  }
  return load_bundled(file);
}

Model Model::from_checkpoint(const std::string& model) {
  const checkpoints::ModelLocation where = checkpoints::resolve_model(model);
  checkpoints::Checkpoint ck = checkpoints::Checkpoint::open(where, checkpoint_tensors);
  const std::string name = where.path.string();
  const ModelConfig config = model_config(ck.config(), name);
  require_finite_weights(ck, name);
  auto bpe =
      std::make_shared<const BpeSubword>(checkpoints::BpeTokenizer::for_model(where.path.string()));
  // A tokenizer of another model (its ids past the embedding's rows) would
  // feed the forward pass ids it has no row for.
  if (bpe->vocab_size() > config.vocab_size) {
    throw InputError(name + ": the tokenizer's ids reach " + std::to_string(bpe->vocab_size() - 1) +
                     ", past the model's vocab_size of " + std::to_string(config.vocab_size) +
                     " (a tokenizer of another model?)");
  }
  Model m(where.path, config, Tokenizer(std::move(bpe)));
  m.metadata_ = {{"format", std::string(ck.format())},
                 {"id", where.id},
                 {"architecture", std::string(checkpoints::name(ck.config().architecture))},
                 {"parameters", std::to_string(ck.parameter_count())},
                 {"stored_dtype", ck.config().stored_dtype_name},
                 {"description", checkpoints::describe(ck.config())}};
  // The weights' types as the files store them ("BF16"; "F32,Q8_0" for a
  // GGUF with both), which the config's torch_dtype need not be.
  std::set<std::string> file_types;
  for (const auto& entry : ck.tensors()) file_types.insert(entry.second.file_type);
  std::string types;
  for (const auto& s : file_types) types += (types.empty() ? "" : ",") + s;
  m.metadata_["weights_dtype"] = types;
  m.files_ = ck.files();
  if (where.kind == checkpoints::ModelLocation::Kind::hf_directory)
    m.files_.push_back(where.path / "tokenizer.json");
  m.ops_ = describe_forward(config);

  // A 16-bit checkpoint keeps its matrices (each embed, linear and router op's) as
  // stored, mapped (or GGUF's owned Q/K rows): only the norms and biases
  // are made float here. All of them in one 16-bit format, else (f32, a
  // mix, GGUF's dequantized Q8_0) all float32.
  std::vector<HalfMatrix> halves(m.ops_.size());
  std::vector<bool> matrices;  // per tensor: an embed or linear op's weight
  const checkpoints::StoredType stored = ck.tensor("model.embed_tokens.weight").dtype;
  bool keep = stored != checkpoints::StoredType::f32;
  for (std::size_t i = 0; i < m.ops_.size(); ++i) {
    const Op& op = m.ops_[i];
    if (op.kind != OpKind::embed && !op.product()) continue;
    const OpWeight& matrix = op.weights[0];
    if (matrices.size() <= matrix.tensor) matrices.resize(matrix.tensor + 1);
    matrices[matrix.tensor] = true;
    const checkpoints::TensorView& t = ck.tensor(matrix.hf_name);
    keep = keep && t.dtype == stored;
    halves[i] = {
        reinterpret_cast<const std::uint16_t*>(t.data),
        stored == checkpoints::StoredType::bf16 ? kernels::Half::bf16 : kernels::Half::f16};
  }
  Weights w = load_weights(m.ops_, [&](const OpWeight& t) {
    const checkpoints::TensorView& view = ck.tensor(t.hf_name);
    if (view.shape != t.shape) {
      throw InputError(name + ": tensor '" + t.hf_name + "' is not of the shape its op reads");
    }
    const bool matrix = t.tensor < matrices.size() && matrices[t.tensor];
    return keep && matrix ? std::vector<float>() : checkpoints::to_float32(view);
  });
  if (!keep) {
    m.set_weights(std::move(w));
    return m;
  }
  m.set_stored_weights(std::move(w), std::move(halves),
                       std::make_shared<const checkpoints::Checkpoint>(std::move(ck)));
  return m;
}

}  // namespace fplab::model
