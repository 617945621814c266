#include "io/safetensors_header.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "io/file_kind.hpp"

namespace fplab {

namespace {

// Beyond this a header is not a tensor file (the safetensors spec caps it).
constexpr std::uint64_t kMaxHeader = 100'000'000;

bool to_u64(const nlohmann::json& j, std::uint64_t& out) {
  if (!j.is_number_unsigned()) return false;
  out = j.get<std::uint64_t>();
  return true;
}

SafetensorsEntry parse_entry(const std::string& key, const nlohmann::json& value,
                             std::uint64_t data_size, const std::filesystem::path& path,
                             const SafetensorsDTypes& dtypes) {
  const std::string where = "tensor '" + key + "': ";
  if (!value.is_object()) fail_input(path, where + "entry is not an object");
  const auto dt = value.find("dtype");
  const auto sh = value.find("shape");
  const auto off = value.find("data_offsets");
  if (dt == value.end() || !dt->is_string()) fail_input(path, where + "no dtype string");
  if (sh == value.end() || !sh->is_array()) fail_input(path, where + "no shape array");
  if (off == value.end() || !off->is_array() || off->size() != 2) {
    fail_input(path, where + "no data_offsets [begin, end]");
  }
  SafetensorsEntry e;
  e.name = key;
  e.dtype = dt->get<std::string>();
  e.element_bytes = dtypes.element_bytes(e.dtype);
  if (e.element_bytes == 0) fail_input(path, where + dtypes.refusal(e.dtype));
  if (!to_u64((*off)[0], e.begin) || !to_u64((*off)[1], e.end)) {
    fail_input(path, where + "bad data_offsets (need two non-negative integers)");
  }
  for (const auto& d : *sh) {
    std::uint64_t v = 0;
    if (!to_u64(d, v) || v > std::numeric_limits<std::size_t>::max()) {
      fail_input(path, where + "shape has a non-integer or negative entry");
    }
    e.shape.push_back(static_cast<std::size_t>(v));
  }
  // The byte count of dtype x shape, refused when it passes 2^64 (a zero
  // dimension anywhere makes it 0).
  std::uint64_t bytes = e.element_bytes;
  if (std::find(e.shape.begin(), e.shape.end(), std::size_t{0}) != e.shape.end()) bytes = 0;
  for (const std::size_t v : e.shape) {
    if (bytes == 0) break;
    if (bytes > std::numeric_limits<std::uint64_t>::max() / v) {
      fail_input(path, where + "shape " + safetensors_shape_text(e.shape) + " is too large");
    }
    bytes *= v;
  }
  if (e.begin > e.end || e.end > data_size) {
    fail_input(path, where + "data_offsets [" + std::to_string(e.begin) + ", " +
                         std::to_string(e.end) + "] outside the " + std::to_string(data_size) +
                         "-byte data section (file truncated?)");
  }
  if (e.end - e.begin != bytes) {
    fail_input(path, where + "data_offsets span " + std::to_string(e.end - e.begin) +
                         " bytes, not what " + e.dtype + " " + safetensors_shape_text(e.shape) +
                         " needs (" + std::to_string(bytes) + ")");
  }
  return e;
}

}  // namespace

std::string safetensors_shape_text(const std::vector<std::size_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

SafetensorsHeader read_safetensors_header(std::istream& in, std::uint64_t file_size,
                                          const std::filesystem::path& path,
                                          const SafetensorsDTypes& dtypes) {
  if (file_size < 8) {
    fail_input(path,
               "truncated: " + std::to_string(file_size) + " bytes, not even a header length");
  }
  in.seekg(0);
  unsigned char len_bytes[8] = {};
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  if (!in) fail_input(path, "cannot read the header length");
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > file_size - 8) {
    // Not a safetensors file, most likely: say what it is when its first
    // bytes tell (io/file_kind.hpp).
    const std::string kind = file_kind(len_bytes);
    fail_input(path, "header length " + std::to_string(header_len) +
                         " runs past the end of the file (" + std::to_string(file_size) +
                         " bytes)" + (kind.empty() ? "" : ": not a safetensors file but " + kind));
  }
  if (header_len > kMaxHeader) {
    fail_input(path, "header length " + std::to_string(header_len) + " is too large");
  }
  std::string text(static_cast<std::size_t>(header_len), '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_len));
  if (!in) fail_input(path, "cannot read the header");

  SafetensorsHeader h;
  h.data_start = 8 + header_len;
  h.data_size = file_size - h.data_start;
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail_input(path, "header is not valid JSON");
  if (!j.is_object()) fail_input(path, "header is not a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) fail_input(path, "__metadata__ is not an object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) fail_input(path, "metadata '" + mk + "' is not a string");
        h.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    h.tensors.push_back(parse_entry(key, value, h.data_size, path, dtypes));
  }
  // nlohmann's objects iterate in key order already; sorting says so here.
  std::sort(h.tensors.begin(), h.tensors.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.name < b.name; });
  return h;
}

}  // namespace fplab
