#include "bisect/dump_diff.hpp"

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "bisect/engine_dumps.hpp"
#include "io/array.hpp"
#include "io/input_error.hpp"
#include "io/numbers.hpp"
#include "io/safetensors_arrays.hpp"
#include "reports/array_diff.hpp"

namespace fplab::bisect {

namespace {

std::string element_text(ElementType t, std::uint64_t bits) {
  const double v = element_to_double(t, bits);
  return to_decimal(v) + " (" + to_hex(v) + ")";
}

DumpTensor compare(const Array& a, const Array* b) {
  DumpTensor d;
  d.name = a.name;
  d.dtype = std::string(name(a.type));
  d.shape = a.shape_text();
  d.elements = a.size();
  if (b == nullptr) {
    d.status = DumpTensor::Status::only_in_a;
    return d;
  }
  if (b->type != a.type || b->shape != a.shape) {
    d.status = DumpTensor::Status::shape_or_dtype;
    return d;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a.bits[i] == b->bits[i]) continue;
    const bool nan = element_is_nan(a.type, a.bits[i]) || element_is_nan(a.type, b->bits[i]);
    const std::uint64_t u = nan ? UINT64_MAX : nulp_count(a.type, a.bits[i], b->bits[i]);
    if (d.moved++ == 0 || u > d.max_ulps) {
      d.max_ulps = u;
      d.a = element_text(a.type, a.bits[i]);
      d.b = element_text(a.type, b->bits[i]);
    }
  }
  d.status = d.moved == 0 ? DumpTensor::Status::identical : DumpTensor::Status::differs;
  return d;
}

}  // namespace

std::vector<std::string> dump_order(const std::filesystem::path& path) {
  if (path.extension() != ".safetensors") {
    std::vector<std::string> names;  // read_arrays keeps the file's own order
    for (const auto& a : read_arrays(path)) names.push_back(a.name);
    return names;
  }
  (void)read_safetensors_arrays(path);  // the one parser checks the file first
  std::ifstream in(path, std::ios::binary);
  unsigned char len[8] = {};
  in.read(reinterpret_cast<char*>(len), 8);
  std::uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | len[k];
  std::string header(static_cast<std::size_t>(n), '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  if (!in) fail_input(path, "cannot read the header");
  // ordered_json keeps the keys in the order of the text.
  const auto j = nlohmann::ordered_json::parse(header, nullptr, false);
  if (!j.is_object()) fail_input(path, "the header is not a JSON object");
  std::vector<std::string> names;
  for (const auto& [key, value] : j.items())
    if (key != "__metadata__") names.push_back(key);
  return names;
}

std::size_t DumpBisect::divergent() const {
  std::size_t n = 0;
  for (const auto& t : tensors) n += t.status != DumpTensor::Status::identical ? 1 : 0;
  return n;
}

namespace {

// One side of the comparison in its own order: a file, or a folder of
// per-rank dumps joined (bisect/engine_dumps.hpp).
std::vector<Array> read_side(const std::filesystem::path& path, const std::vector<ShardRule>& rules,
                             const char* side, std::vector<std::string>& notes) {
  if (std::filesystem::is_directory(path)) {
    EngineDump d = read_engine_dump(path, rules);
    for (const auto& n : d.notes) notes.push_back(std::string(side) + ": " + n);
    return std::move(d.tensors);
  }
  std::vector<Array> arrays = read_arrays(path);
  std::map<std::string, std::size_t> at;
  for (std::size_t i = 0; i < arrays.size(); ++i) at[arrays[i].name] = i;
  std::vector<Array> out;
  for (const auto& n : dump_order(path)) out.push_back(std::move(arrays[at.at(n)]));
  return out;
}

}  // namespace

DumpBisect bisect_dumps(const std::filesystem::path& a, const std::filesystem::path& b,
                        const std::vector<ShardRule>& rules) {
  DumpBisect out;
  const auto arrays_a = read_side(a, rules, "A", out.rank_notes);
  const auto arrays_b = read_side(b, rules, "B", out.rank_notes);
  std::map<std::string, const Array*> by_name_a, by_name_b;
  for (const auto& x : arrays_a) by_name_a[x.name] = &x;
  for (const auto& x : arrays_b) by_name_b[x.name] = &x;
  for (const auto& x : arrays_a) {
    const auto it = by_name_b.find(x.name);
    out.tensors.push_back(compare(x, it == by_name_b.end() ? nullptr : it->second));
  }
  for (const auto& x : arrays_b) {
    if (by_name_a.count(x.name) != 0) continue;
    DumpTensor d;
    d.name = x.name;
    d.status = DumpTensor::Status::only_in_b;
    d.dtype = std::string(fplab::name(x.type));
    d.shape = x.shape_text();
    d.elements = x.size();
    out.tensors.push_back(d);
  }
  for (std::size_t i = 0; i < out.tensors.size(); ++i) {
    if (out.tensors[i].status != DumpTensor::Status::identical) {
      out.first_divergent = i;
      break;
    }
  }
  return out;
}

std::string_view name(DumpTensor::Status s) {
  switch (s) {
    case DumpTensor::Status::identical:
      return "identical";
    case DumpTensor::Status::differs:
      return "differs";
    case DumpTensor::Status::only_in_a:
      return "only in A";
    case DumpTensor::Status::only_in_b:
      return "only in B";
    case DumpTensor::Status::shape_or_dtype:
      return "shape or dtype differs";
  }
  return "?";
}

}  // namespace fplab::bisect
