#include "checkpoints/model_location.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>

#include "checkpoints/mapped_file.hpp"
#include "io/input_error.hpp"

namespace fplab::checkpoints {

std::filesystem::path hf_hub_cache() {
  if (const char* c = std::getenv("HF_HUB_CACHE"); c != nullptr && *c != '\0') return c;
  if (const char* h = std::getenv("HF_HOME"); h != nullptr && *h != '\0') {
    return std::filesystem::path(h) / "hub";
  }
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home != nullptr ? home : "") / ".cache" / "huggingface" / "hub";
}

namespace {

bool is_model_id(std::string_view s) {
  static const std::regex id(R"([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)");
  return std::regex_match(s.begin(), s.end(), id) && s.find("..") == std::string_view::npos;
}

bool file_starts_with_gguf(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in && std::memcmp(magic, "GGUF", 4) == 0;
}

}  // namespace

ModelLocation resolve_model(std::string_view model) {
  ModelLocation loc;
  loc.id = std::string(model);
  const std::filesystem::path p(loc.id);
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) {
    if (!std::filesystem::exists(p / "config.json", ec)) {
      fail_input(p, "a model directory needs config.json (and model.safetensors or its index)");
    }
    loc.kind = ModelLocation::Kind::hf_directory;
    loc.path = p;
    return loc;
  }
  if (std::filesystem::is_regular_file(p, ec)) {
    if (!file_starts_with_gguf(p)) {
      fail_input(p, "not a GGUF file (no GGUF magic); a Hugging Face model is a directory");
    }
    loc.kind = ModelLocation::Kind::gguf_file;
    loc.path = p;
    return loc;
  }
  if (!is_model_id(model)) {
    fail_input(p, "no such file or directory, and not a model id of the form ORG/NAME");
  }
  const auto cache = hf_hub_cache();
  const auto slash = model.find('/');
  const auto repo = cache / ("models--" + std::string(model.substr(0, slash)) + "--" +
                             std::string(model.substr(slash + 1)));
  const auto ref = repo / "refs" / "main";
  if (!std::filesystem::is_regular_file(ref, ec)) {
    throw InputError("model '" + loc.id + "' is not in the local Hugging Face cache (looked for " +
                     ref.string() +
                     "; set HF_HUB_CACHE or HF_HOME, or give a directory; fplab never downloads)");
  }
  auto hash = read_text_file(ref, 4096);
  while (!hash.empty() && (hash.back() == '\n' || hash.back() == '\r' || hash.back() == ' '))
    hash.pop_back();
  static const std::regex commit("[0-9a-fA-F]{7,64}");
  if (!std::regex_match(hash, commit)) fail_input(ref, "does not hold a commit hash");
  const auto snapshot = repo / "snapshots" / hash;
  if (!std::filesystem::exists(snapshot / "config.json", ec)) {
    throw InputError("model '" + loc.id + "': snapshot " + snapshot.string() +
                     " has no config.json (an incomplete download?)");
  }
  loc.kind = ModelLocation::Kind::hf_directory;
  loc.path = snapshot;
  return loc;
}

}  // namespace fplab::checkpoints
