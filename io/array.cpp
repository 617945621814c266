#include "io/array.hpp"

#include "io/npy.hpp"
#include "io/safetensors_arrays.hpp"
#include "io/text_columns.hpp"

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

std::vector<Array> read_arrays(const std::filesystem::path& path, const ArrayReadOptions& options) {
  const auto ext = path.extension();
  if (ext == ".npy") {
    NpyReadOptions npy;
    npy.void2_as_bfloat16 = options.void2_as_bfloat16;
    return {read_npy_array(path, npy)};
  }
  if (ext == ".safetensors") return read_safetensors_arrays(path);
  return read_text_columns(path, options.text_type);
}

}  // namespace fplab
