#include "model/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/input_error.hpp"
#include "io/safetensors_header.hpp"

namespace fplab::model {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swaps");

namespace {

struct DTypeName {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr DTypeName kDTypes[] = {
    {DType::F64, "F64", 8},   {DType::F32, "F32", 4}, {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I64, "I64", 8}, {DType::I32, "I32", 4},
    {DType::I16, "I16", 2},   {DType::I8, "I8", 1},   {DType::U8, "U8", 1},
    {DType::BOOL, "BOOL", 1},
};

const DTypeName* find_dtype(const std::string& spelling) {
  const auto* known = std::find_if(std::begin(kDTypes), std::end(kDTypes),
                                   [&](const DTypeName& d) { return d.name == spelling; });
  return known == std::end(kDTypes) ? nullptr : known;
}

// Every dtype of the table; the accessors check the one they expect.
const SafetensorsDTypes kModelDTypes{
    [](const std::string& dtype) -> std::size_t {
      const DTypeName* d = find_dtype(dtype);
      return d == nullptr ? 0 : d->size;
    },
    [](const std::string& dtype) { return "unknown dtype '" + dtype + "'"; }};

}  // namespace

std::string_view name(DType d) {
  for (const auto& t : kDTypes) {
    if (t.dtype == d) return t.name;
  }
  return "?";
}

std::size_t size_of(DType d) {
  for (const auto& t : kDTypes) {
    if (t.dtype == d) return t.size;
  }
  return 0;
}

std::size_t TensorInfo::numel() const {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

SafeTensors SafeTensors::read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input(path, "cannot open the file");
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  if (end < 0) fail_input(path, "cannot read the file");
  // The data section is read only once the header's offsets fit in it: a
  // header that claims more than the file holds allocates nothing.
  SafetensorsHeader header =
      read_safetensors_header(in, static_cast<std::uint64_t>(end), path, kModelDTypes);
  SafeTensors st;
  st.path_ = path;
  st.metadata_ = std::move(header.metadata);
  for (auto& e : header.tensors) {
    TensorInfo info;
    info.dtype = find_dtype(e.dtype)->dtype;
    info.shape = std::move(e.shape);
    info.begin = static_cast<std::size_t>(e.begin);
    info.end = static_cast<std::size_t>(e.end);
    st.tensors_.emplace(std::move(e.name), std::move(info));
  }
  st.data_.resize(static_cast<std::size_t>(header.data_size));
  in.seekg(static_cast<std::streamoff>(header.data_start));
  in.read(reinterpret_cast<char*>(st.data_.data()), static_cast<std::streamsize>(st.data_.size()));
  if (!in) fail_input(path, "cannot read the file");
  return st;
}

bool SafeTensors::contains(std::string_view tensor) const {
  return tensors_.find(tensor) != tensors_.end();
}

std::vector<std::string> SafeTensors::names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : tensors_) out.push_back(k);
  return out;
}

const TensorInfo& SafeTensors::info(std::string_view tensor) const {
  const auto it = tensors_.find(tensor);
  if (it == tensors_.end()) fail_input(path_, "no tensor '" + std::string(tensor) + "'");
  return it->second;
}

const std::string& SafeTensors::metadata(std::string_view key) const {
  const auto it = metadata_.find(key);
  if (it == metadata_.end()) fail_input(path_, "no metadata '" + std::string(key) + "'");
  return it->second;
}

std::span<const std::byte> SafeTensors::bytes(std::string_view tensor, DType dtype,
                                              const std::vector<std::size_t>* shape) const {
  const TensorInfo& t = info(tensor);
  if (t.dtype != dtype) {
    fail_input(path_, "tensor '" + std::string(tensor) + "' has dtype " +
                          std::string(name(t.dtype)) + ", expected " + std::string(name(dtype)));
  }
  if (shape != nullptr && t.shape != *shape) {
    fail_input(path_, "tensor '" + std::string(tensor) + "' has shape " +
                          safetensors_shape_text(t.shape) + ", expected " +
                          safetensors_shape_text(*shape));
  }
  return std::span<const std::byte>(data_).subspan(t.begin, t.end - t.begin);
}

std::vector<float> SafeTensors::f32(std::string_view tensor,
                                    const std::vector<std::size_t>& shape) const {
  const auto b = bytes(tensor, DType::F32, &shape);
  std::vector<float> out(b.size() / sizeof(float));
  if (!b.empty()) std::memcpy(out.data(), b.data(), b.size());
  return out;
}

std::vector<float> SafeTensors::f32(std::string_view tensor) const {
  const auto b = bytes(tensor, DType::F32, nullptr);
  std::vector<float> out(b.size() / sizeof(float));
  if (!b.empty()) std::memcpy(out.data(), b.data(), b.size());
  return out;
}

std::vector<std::int32_t> SafeTensors::i32(std::string_view tensor) const {
  const auto b = bytes(tensor, DType::I32, nullptr);
  std::vector<std::int32_t> out(b.size() / sizeof(std::int32_t));
  if (!b.empty()) std::memcpy(out.data(), b.data(), b.size());
  return out;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  // nlohmann's ordered_json keeps the tensors in the order given.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::size_t offset = 0;
  for (const auto& t : tensors) {
    if (t.dtype != DType::F32 && t.dtype != DType::I32) {
      throw InputError(path.string() + ": can only write F32 and I32 tensors");
    }
    std::size_t n = 1;
    for (std::size_t d : t.shape) n *= d;
    const std::size_t have = t.dtype == DType::F32 ? t.f32.size() : t.i32.size();
    if (have != n)
      throw InputError(path.string() + ": tensor '" + t.name + "' has the wrong number of values");
    header[t.name] = {{"dtype", std::string(name(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + 4 * n}}};
    offset += 4 * n;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(path.string() + ": cannot write the file");
  std::uint64_t len = h.size();
  unsigned char len_bytes[8];
  for (auto& b : len_bytes) {
    b = static_cast<unsigned char>(len & 0xFF);
    len >>= 8;
  }
  out.write(reinterpret_cast<const char*>(len_bytes), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const auto& t : tensors) {
    if (t.dtype == DType::F32) {
      out.write(reinterpret_cast<const char*>(t.f32.data()),
                static_cast<std::streamsize>(4 * t.f32.size()));
    } else {
      out.write(reinterpret_cast<const char*>(t.i32.data()),
                static_cast<std::streamsize>(4 * t.i32.size()));
    }
  }
  if (!out) throw InputError(path.string() + ": cannot write the file");
}

}  // namespace fplab::model
