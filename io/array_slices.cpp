#include "io/array_slices.hpp"

#include <fmt/format.h>

namespace fplab {

Array pick_array(const std::filesystem::path& file, const std::string& tensor,
                 const ArrayReadOptions& read) {
  auto arrays = read_arrays(file, read);
  if (file.extension() != ".npy") {  // .safetensors, or a CSV with a header row (as diff reads it)
    if (tensor.empty()) {
      if (arrays.size() == 1) return arrays[0];
      std::string names;
      for (const auto& a : arrays) names += (names.empty() ? "" : ", ") + a.name;
      throw InputError(file.string() + ": holds several arrays, pick one with --tensor (" + names +
                       ")");
    }
    for (auto& a : arrays) {
      if (a.name == tensor) return a;
    }
    throw InputError(file.string() + ": no tensor '" + tensor + "'");
  }
  if (!tensor.empty()) throw InputError("--tensor applies to .safetensors files");
  return arrays.at(0);
}

std::vector<ArraySlice> array_slices(const Array& a, std::optional<std::size_t> axis) {
  std::vector<ArraySlice> out;
  if (!axis) {
    std::vector<std::size_t> all(a.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    out.push_back({"", std::move(all)});
    return out;
  }
  const auto& shape = a.shape;
  if (*axis >= shape.size()) {
    throw InputError("--axis " + std::to_string(*axis) + " out of range for shape " +
                     a.shape_text());
  }
  std::size_t stride = 1;
  for (std::size_t d = *axis + 1; d < shape.size(); ++d) stride *= shape[d];
  const std::size_t len = shape[*axis];
  const std::size_t outer = len == 0 || stride == 0 ? 0 : a.size() / (len * stride);
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t in = 0; in < stride; ++in) {
      const std::size_t base = o * len * stride + in;
      std::vector<std::size_t> idx(len);
      for (std::size_t k = 0; k < len; ++k) idx[k] = base + k * stride;
      // The label: the multi-index of `base` with ':' on the axis.
      std::vector<std::string> parts(shape.size());
      std::size_t rest = base;
      for (std::size_t d = shape.size(); d-- > 0;) {
        parts[d] = d == *axis ? ":" : std::to_string(rest % shape[d]);
        rest /= shape[d];
      }
      out.push_back({"[" + fmt::format("{}", fmt::join(parts, ", ")) + "]", std::move(idx)});
    }
  }
  return out;
}

}  // namespace fplab
