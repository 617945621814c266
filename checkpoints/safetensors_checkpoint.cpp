// A Hugging Face directory's checkpoint: config.json and model.safetensors,
// or model.safetensors.index.json and its shards (checkpoints/checkpoint.hpp
// says what is guaranteed).
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "checkpoints/checkpoint_builder.hpp"

namespace fplab::checkpoints {

namespace {

StoredType safetensors_type(const std::string& dtype) {
  if (dtype == "F32") return StoredType::f32;
  if (dtype == "F16") return StoredType::f16;
  return StoredType::bf16;
}

bool is_inv_freq_buffer(std::string_view name) {
  constexpr std::string_view suffix = "rotary_emb.inv_freq";
  return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
}

// Maps one safetensors file; returns the names of the tensors it added.
std::vector<std::string> load_safetensors_file(
    CheckpointBuilder& b, const std::filesystem::path& path,
    std::vector<std::shared_ptr<const MappedFile>>& maps) {
  const auto map = MappedFile::open(path);
  maps.push_back(map);
  b.read(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input(path, "cannot open");
  SafetensorsDTypes dtypes{
      [](const std::string& d) -> std::size_t {
        if (d == "F32") return 4;
        if (d == "F16" || d == "BF16") return 2;
        return 0;
      },
      [](const std::string& d) { return "dtype " + d + " is not supported (F32, F16, BF16)"; }};
  const auto header = read_safetensors_header(in, map->bytes().size(), path, dtypes);
  std::vector<std::string> names;
  for (const auto& e : header.tensors) {
    if (is_inv_freq_buffer(e.name)) continue;
    const auto at = header.data_start + e.begin;
    if (at % e.element_bytes != 0) {
      fail_input(path, "tensor '" + e.name + "': offset " + std::to_string(at) +
                           " is not a multiple of its " + std::to_string(e.element_bytes) +
                           "-byte elements (misaligned)");
    }
    TensorView v;
    v.dtype = safetensors_type(e.dtype);
    v.shape = e.shape;
    v.data = map->bytes().data() + at;
    v.file_type = e.dtype;
    b.add(e.name, std::move(v), path.string());
    names.push_back(e.name);
  }
  return names;
}

}  // namespace

void load_hf_directory(CheckpointBuilder& b, const std::filesystem::path& dir,
                       const ExpectedTensors& list) {
  const auto config_path = dir / "config.json";
  b.config() = parse_hf_config(read_text_file(config_path, 16u << 20), config_path.string());
  b.read(config_path);
  auto& maps = b.maps();
  std::error_code ec;
  const auto single = dir / "model.safetensors";
  const auto index_path = dir / "model.safetensors.index.json";
  if (std::filesystem::exists(single, ec)) {
    load_safetensors_file(b, single, maps);
  } else if (std::filesystem::exists(index_path, ec)) {
    const auto j = nlohmann::json::parse(read_text_file(index_path, 64u << 20), nullptr, false);
    if (j.is_discarded() || !j.is_object()) fail_input(index_path, "not a JSON object");
    b.read(index_path);
    const auto wm = j.find("weight_map");
    if (wm == j.end() || !wm->is_object()) fail_input(index_path, "no weight_map object");
    std::map<std::string, std::string, std::less<>> where;  // tensor -> shard
    std::set<std::string, std::less<>> shards;
    static const std::regex shard_name(R"([A-Za-z0-9._-]+\.safetensors)");
    for (const auto& [name, file] : wm->items()) {
      if (!file.is_string() || !std::regex_match(file.get<std::string>(), shard_name)) {
        fail_input(index_path,
                   "weight_map['" + name + "'] is not a .safetensors file name in this directory");
      }
      where[name] = file.get<std::string>();
      shards.insert(file.get<std::string>());
    }
    for (const auto& shard : shards) {
      const auto path = dir / shard;
      if (!std::filesystem::exists(path, ec))
        fail_input(index_path, "shard " + shard + " is missing");
      for (const auto& name : load_safetensors_file(b, path, maps)) {
        const auto it = where.find(name);
        if (it == where.end() || it->second != shard) {
          fail_input(path, "tensor '" + name + "' is not in the index under this shard");
        }
      }
    }
    for (const auto& [name, shard] : where) {
      if (b.c.find(name) == nullptr && !is_inv_freq_buffer(name)) {
        fail_input(dir / shard, "tensor '" + name + "' that the index places here is missing");
      }
    }
  } else {
    fail_input(dir, "neither model.safetensors nor model.safetensors.index.json");
  }
  const std::string source = dir.string();
  b.check_shapes(b.expected(list, b.c.tensors().size(), source), source);
}

}  // namespace fplab::checkpoints
