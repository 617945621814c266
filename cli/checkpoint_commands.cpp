// fplab tokenize: a real model's byte-level BPE tokenizer
// (checkpoints/tokenizer_bpe.hpp) on a text, or back from ids.
// fplab inspect: a real checkpoint's architecture and tensors
// (checkpoints/checkpoint.hpp), every tensor's shape checked against the
// config. Both take --model: a Hugging Face directory, a GGUF file or a
// model id in the local Hugging Face cache (docs/real-models.md).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoints/checkpoint.hpp"
#include "checkpoints/mapped_file.hpp"
#include "checkpoints/token_ids.hpp"
#include "checkpoints/tokenizer_bpe.hpp"
#include "cli/commands.hpp"
#include "io/input_error.hpp"
#include "io/sha256.hpp"
#include "model/checkpoint_tensors.hpp"

namespace fplab::cli {

namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string text_file;
  std::string decode;
  bool json = false;
};

void run_tokenize(const TokenizeOptions& o) {
  const auto tok = checkpoints::BpeTokenizer::for_model(o.model);
  if (!o.decode.empty()) {
    std::vector<checkpoints::BpeTokenizer::Id> ids;
    for (const std::int64_t id : checkpoints::parse_token_ids("--decode", o.decode))
      ids.push_back(static_cast<checkpoints::BpeTokenizer::Id>(id));
    const auto text = tok.decode(ids);
    if (o.json) {
      std::puts(nlohmann::json(text)
                    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                    .c_str());
    } else {
      std::fwrite(text.data(), 1, text.size(), stdout);  // exactly the bytes, no newline added
    }
    return;
  }
  const auto text = o.text_file.empty() ? o.text : checkpoints::read_text_file(o.text_file);
  const auto ids = tok.encode(text);
  std::string line = o.json ? "[" : "";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) line += o.json ? "," : " ";
    line += std::to_string(ids[i]);
  }
  if (o.json) line += "]";
  std::puts(line.c_str());
}

struct InspectOptions {
  std::string model;
  bool sha256 = false;
};

void run_inspect(const InspectOptions& o) {
  const auto ck = checkpoints::Checkpoint::open(o.model, model::checkpoint_tensors);
  std::printf("%s (%s, %s)\n", ck.location().path.string().c_str(),
              std::string(ck.format()).c_str(), checkpoints::describe(ck.config()).c_str());
  std::printf("%zu parameters in %zu tensors; %zu bytes mapped, %zu bytes copied\n",
              ck.parameter_count(), ck.tensors().size(), ck.mapped_bytes(), ck.owned_bytes());
  for (const auto& [name, t] : ck.tensors()) {
    std::string shape;
    for (std::size_t i = 0; i < t.shape.size(); ++i)
      shape += (i ? "x" : "") + std::to_string(t.shape[i]);
    std::string line = fmt::format("{} {} {}", name, checkpoints::name(t.dtype), shape);
    if (t.file_type != checkpoints::name(t.dtype)) line += " (from " + t.file_type + ")";
    if (o.sha256) line += " " + sha256_hex(std::span<const std::byte>(t.data, t.bytes()));
    std::puts(line.c_str());
  }
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto o = std::make_shared<TokenizeOptions>();
  auto* cmd = app.add_subcommand(
      "tokenize", "Token ids of a text with a real model's tokenizer, or the text of ids");
  cmd->add_option(
         "--model", o->model,
         "A Hugging Face model directory (tokenizer.json), a GGUF file, or a model id in the "
         "local Hugging Face cache (never downloaded)")
      ->required();
  cmd->add_option("text", o->text,
                  "The text to encode (UTF-8); no BOS or other special token is added");
  cmd->add_option("--text-file", o->text_file, "Encode this file's bytes instead of TEXT");
  cmd->add_option("--decode", o->decode,
                  "Decode these ids instead: 1,2,3 or a JSON array; prints exactly the bytes (no "
                  "newline added)");
  cmd->add_flag("--json", o->json,
                "Ids as one JSON array on one line (with --decode: the text as a JSON string)");
  cmd->footer(
      "Examples:\n"
      "  fplab tokenize --model HuggingFaceTB/SmolLM2-135M 'Hello, world!'\n"
      "  fplab tokenize --model qwen.gguf --json 'naïve 日本 😀'\n"
      "  fplab tokenize --model DIR --decode 9707,11,1879,0");
  cmd->callback([o] {
    const int sources =
        (o->text.empty() ? 0 : 1) + (o->text_file.empty() ? 0 : 1) + (o->decode.empty() ? 0 : 1);
    if (sources > 1) throw InputError("give one of TEXT, --text-file and --decode");
    run_tokenize(*o);
  });
}

void add_inspect_command(CLI::App& app) {
  auto o = std::make_shared<InspectOptions>();
  auto* cmd = app.add_subcommand(
      "inspect", "A real checkpoint's architecture and tensors, checked against its config");
  cmd->add_option("--model", o->model,
                  "A Hugging Face model directory, a GGUF file, or a model id in the local Hugging "
                  "Face cache")
      ->required();
  cmd->add_flag("--sha256", o->sha256,
                "Print each tensor's SHA-256 (of its bytes as loaded, HF layout)");
  cmd->footer(
      "Examples:\n"
      "  fplab inspect --model HuggingFaceTB/SmolLM2-135M           a cached model id\n"
      "  fplab inspect --model DIR --sha256                          each tensor's SHA-256\n"
      "  fplab inspect --model qwen.gguf                             a GGUF file");
  cmd->callback([o] { run_inspect(*o); });
}

}  // namespace fplab::cli
