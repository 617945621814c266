#include "io/safetensors_arrays.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace fplab {

namespace {

// Beyond this a header is not a tensor file (the safetensors spec caps it).
constexpr std::uint64_t kMaxHeader = 100'000'000;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& why) {
  throw InputError(path.string() + ": " + why);
}

bool dtype_from_name(const std::string& name, ElementType& t) {
  if (name == "F64")
    t = ElementType::float64;
  else if (name == "F32")
    t = ElementType::float32;
  else if (name == "F16")
    t = ElementType::float16;
  else if (name == "BF16")
    t = ElementType::bfloat16;
  else
    return false;
  return true;
}

const char* dtype_name(ElementType t) {
  switch (t) {
    case ElementType::float64:
      return "F64";
    case ElementType::float32:
      return "F32";
    case ElementType::float16:
      return "F16";
    case ElementType::bfloat16:
      return "BF16";
  }
  return "?";
}

struct Entry {
  std::string name;
  ElementType type;
  std::vector<std::size_t> shape;
  std::uint64_t begin;
  std::uint64_t end;
};

}  // namespace

std::vector<Array> read_safetensors_arrays(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  if (end < 0) fail(path, "cannot read");
  const auto size = static_cast<std::uint64_t>(end);
  in.seekg(0);
  if (size < 8)
    fail(path, "truncated: " + std::to_string(size) + " bytes, not even a header length");
  unsigned char len_bytes[8];
  in.read(reinterpret_cast<char*>(len_bytes), 8);
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > size - 8) {
    fail(path, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                   std::to_string(size) + " bytes)");
  }
  if (header_len > kMaxHeader)
    fail(path, "header length " + std::to_string(header_len) + " is too large");
  std::string header(static_cast<std::size_t>(header_len), '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  if (!in) fail(path, "cannot read the header");
  const std::uint64_t data_size = size - 8 - header_len;

  const auto j = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(path, "header is not valid JSON");
  if (!j.is_object()) fail(path, "header is not a JSON object");
  std::vector<Entry> entries;
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") continue;
    const std::string where = "tensor '" + key + "': ";
    if (!value.is_object()) fail(path, where + "entry is not an object");
    const auto dt = value.find("dtype");
    const auto sh = value.find("shape");
    const auto off = value.find("data_offsets");
    if (dt == value.end() || !dt->is_string()) fail(path, where + "no dtype string");
    if (sh == value.end() || !sh->is_array()) fail(path, where + "no shape array");
    if (off == value.end() || !off->is_array() || off->size() != 2 ||
        !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned()) {
      fail(path, where + "no data_offsets [begin, end]");
    }
    Entry e{key,
            ElementType::float32,
            {},
            (*off)[0].get<std::uint64_t>(),
            (*off)[1].get<std::uint64_t>()};
    const auto dts = dt->get<std::string>();
    if (!dtype_from_name(dts, e.type)) {
      fail(path, where + "dtype " + dts + " is not a float type (F64, F32, F16, BF16)");
    }
    const std::uint64_t width = element_bits(e.type) / 8;
    std::uint64_t count = 1;
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned()) fail(path, where + "shape has a non-integer or negative entry");
      const auto v = d.get<std::uint64_t>();
      if (v != 0 && count > std::numeric_limits<std::uint64_t>::max() / width / v) {
        fail(path, where + "shape is too large");
      }
      count *= v;
      e.shape.push_back(static_cast<std::size_t>(v));
    }
    if (e.begin > e.end || e.end > data_size) {
      fail(path, where + "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                     "] outside the " + std::to_string(data_size) +
                     "-byte data section (file truncated?)");
    }
    if (e.end - e.begin != count * width) {
      fail(path, where + "data_offsets span " + std::to_string(e.end - e.begin) + " bytes, " + dts +
                     " of that shape needs " + std::to_string(count * width));
    }
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.name < b.name; });

  std::vector<Array> out;
  std::vector<unsigned char> raw;
  for (const auto& e : entries) {
    raw.resize(static_cast<std::size_t>(e.end - e.begin));
    in.seekg(static_cast<std::streamoff>(8 + header_len + e.begin));
    in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
    if (!in) fail(path, "tensor '" + e.name + "': cannot read its data");
    Array a;
    a.name = e.name;
    a.type = e.type;
    a.shape = e.shape;
    const std::size_t width = element_bits(e.type) / 8;
    a.bits.resize(raw.size() / width);
    for (std::size_t i = 0; i < a.bits.size(); ++i) {
      std::uint64_t v = 0;
      for (std::size_t k = width; k-- > 0;) v = (v << 8) | raw[i * width + k];
      a.bits[i] = v;
    }
    out.push_back(std::move(a));
  }
  return out;
}

void write_safetensors_arrays(const std::filesystem::path& path, const std::vector<Array>& arrays) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::uint64_t offset = 0;
  for (const auto& a : arrays) {
    const std::uint64_t bytes = a.size() * (element_bits(a.type) / 8);
    header[a.name] = {{"dtype", dtype_name(a.type)},
                      {"shape", a.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::string data;
  std::uint64_t len = h.size();
  for (int k = 0; k < 8; ++k) data.push_back(static_cast<char>((len >> (8 * k)) & 0xFF));
  data += h;
  for (const auto& a : arrays) {
    const std::size_t width = element_bits(a.type) / 8;
    for (const std::uint64_t v : a.bits) {
      for (std::size_t k = 0; k < width; ++k)
        data.push_back(static_cast<char>((v >> (8 * k)) & 0xFF));
    }
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(path.string() + ": cannot open for writing");
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw InputError(path.string() + ": write failed");
}

}  // namespace fplab
