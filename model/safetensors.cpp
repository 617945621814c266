#include "model/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "io/npy.hpp"

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

// Header sizes beyond this are not a model file (the safetensors spec caps
// headers at 100 MB).
constexpr std::uint64_t kMaxHeader = 100'000'000;

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw InputError(path.string() + ": " + what);
}

bool to_size(const nlohmann::json& j, std::size_t& out) {
  if (!j.is_number_unsigned()) return false;
  out = j.get<std::size_t>();
  return true;
}

// Element count, or false when it overflows.
bool checked_numel(const std::vector<std::size_t>& shape, std::size_t elem, std::size_t& bytes) {
  std::size_t n = elem;
  for (std::size_t d : shape) {
    if (d != 0 && n > std::numeric_limits<std::size_t>::max() / d) return false;
    n *= d;
  }
  bytes = n;
  return true;
}

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
  if (!in) fail(path, "cannot open the file");
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  if (end < 0) fail(path, "cannot read the file");
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
  SafeTensors st;
  st.path_ = path;
  // The data section is read only once the header's offsets fit in it: a
  // header that claims more than the file holds allocates nothing.
  const auto data_size = static_cast<std::size_t>(size - 8 - header_len);

  const auto j = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(path, "header is not valid JSON");
  if (!j.is_object()) fail(path, "header is not a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) fail(path, "__metadata__ is not an object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) fail(path, "metadata '" + mk + "' is not a string");
        st.metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + key + "': ";
    if (!value.is_object()) fail(path, where + "entry is not an object");
    const auto dt = value.find("dtype");
    const auto sh = value.find("shape");
    const auto off = value.find("data_offsets");
    if (dt == value.end() || !dt->is_string()) fail(path, where + "no dtype string");
    if (sh == value.end() || !sh->is_array()) fail(path, where + "no shape array");
    if (off == value.end() || !off->is_array() || off->size() != 2) {
      fail(path, where + "no data_offsets [begin, end]");
    }
    TensorInfo info;
    const auto dts = dt->get<std::string>();
    const auto* known = std::find_if(std::begin(kDTypes), std::end(kDTypes),
                                     [&](const DTypeName& d) { return d.name == dts; });
    if (known == std::end(kDTypes)) fail(path, where + "unknown dtype '" + dts + "'");
    info.dtype = known->dtype;
    for (const auto& d : *sh) {
      std::size_t v = 0;
      if (!to_size(d, v)) fail(path, where + "shape has a non-integer or negative entry");
      info.shape.push_back(v);
    }
    if (!to_size((*off)[0], info.begin) || !to_size((*off)[1], info.end) || info.begin > info.end) {
      fail(path, where + "bad data_offsets");
    }
    if (info.end > data_size) {
      fail(path, where + "data ends at byte " + std::to_string(info.end) + " of a " +
                     std::to_string(data_size) + "-byte data section (file truncated?)");
    }
    std::size_t bytes = 0;
    if (!checked_numel(info.shape, known->size, bytes) || bytes != info.end - info.begin) {
      fail(path, where + "data_offsets span " + std::to_string(info.end - info.begin) +
                     " bytes, not what " + dts + " " + shape_text(info.shape) + " needs");
    }
    st.tensors_.emplace(key, std::move(info));
  }
  st.data_.resize(data_size);
  in.read(reinterpret_cast<char*>(st.data_.data()), static_cast<std::streamsize>(data_size));
  if (!in) fail(path, "cannot read the file");
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
  if (it == tensors_.end()) fail(path_, "no tensor '" + std::string(tensor) + "'");
  return it->second;
}

const std::string& SafeTensors::metadata(std::string_view key) const {
  const auto it = metadata_.find(key);
  if (it == metadata_.end()) fail(path_, "no metadata '" + std::string(key) + "'");
  return it->second;
}

std::span<const std::byte> SafeTensors::bytes(std::string_view tensor, DType dtype,
                                              const std::vector<std::size_t>* shape) const {
  const TensorInfo& t = info(tensor);
  if (t.dtype != dtype) {
    fail(path_, "tensor '" + std::string(tensor) + "' has dtype " + std::string(name(t.dtype)) +
                    ", expected " + std::string(name(dtype)));
  }
  if (shape != nullptr && t.shape != *shape) {
    fail(path_, "tensor '" + std::string(tensor) + "' has shape " + shape_text(t.shape) +
                    ", expected " + shape_text(*shape));
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
