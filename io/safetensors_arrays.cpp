#include "io/safetensors_arrays.hpp"

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "io/safetensors_header.hpp"

namespace fplab {

namespace {

bool dtype_from_name(const std::string& name, ElementType& t) {
  if (name == "F64") {
    t = ElementType::float64;
  } else if (name == "F32") {
    t = ElementType::float32;
  } else if (name == "F16") {
    t = ElementType::float16;
  } else if (name == "BF16") {
    t = ElementType::bfloat16;
  } else {
    return false;
  }
  return true;
}

const char* safetensors_dtype(ElementType t) {
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

// The float dtypes only: another dtype is an error, not skipped.
const SafetensorsDTypes kFloatDTypes{[](const std::string& dtype) -> std::size_t {
                                       ElementType t{};
                                       return dtype_from_name(dtype, t) ? element_bits(t) / 8 : 0;
                                     },
                                     [](const std::string& dtype) {
                                       return "dtype " + dtype +
                                              " is not a float type (F64, F32, F16, BF16)";
                                     }};

}  // namespace

std::vector<Array> read_safetensors_arrays(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input(path, "cannot open");
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  if (end < 0) fail_input(path, "cannot read");
  const SafetensorsHeader header =
      read_safetensors_header(in, static_cast<std::uint64_t>(end), path, kFloatDTypes);

  std::vector<Array> out;
  std::vector<unsigned char> raw;
  for (const auto& e : header.tensors) {
    raw.resize(static_cast<std::size_t>(e.end - e.begin));
    in.seekg(static_cast<std::streamoff>(header.data_start + e.begin));
    in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
    if (!in) fail_input(path, "tensor '" + e.name + "': cannot read its data");
    Array a;
    a.name = e.name;
    dtype_from_name(e.dtype, a.type);
    a.shape = e.shape;
    const std::size_t width = e.element_bytes;
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
    header[a.name] = {{"dtype", safetensors_dtype(a.type)},
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
