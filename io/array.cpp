#include "io/array.hpp"

#include <bit>
#include <cmath>
#include <fstream>
#include <limits>

#include "io/npy.hpp"
#include "io/safetensors_arrays.hpp"
#include "io/text_columns.hpp"
#include "io/torch_pt.hpp"

namespace fplab {

std::string Array::shape_text() const {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

namespace {

// The first bytes of a file name a torch.save file whatever its extension
// (engines write .pt, .pth, .bin, ...).
bool file_starts_like_pt(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> head(16, 0);
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return starts_like_pt(head);
}

}  // namespace

ArrayFile array_file_kind(const std::filesystem::path& path) {
  const auto ext = path.extension();
  if (ext == ".npy") return ArrayFile::npy;
  if (ext == ".safetensors") return ArrayFile::safetensors;
  if (ext == ".pt" || ext == ".pth" || file_starts_like_pt(path)) return ArrayFile::torch;
  return ArrayFile::text;
}

std::vector<Array> read_arrays(const std::filesystem::path& path, const ArrayReadOptions& options) {
  switch (array_file_kind(path)) {
    case ArrayFile::npy: {
      NpyReadOptions npy;
      npy.void2_as_bfloat16 = options.void2_as_bfloat16;
      return {read_npy_array(path, npy)};
    }
    case ArrayFile::safetensors:
      return read_safetensors_arrays(path);
    case ArrayFile::torch:
      return read_pt_arrays(path);
    case ArrayFile::text:
      break;
  }
  return read_text_columns(path, options.text_type);
}

}  // namespace fplab
