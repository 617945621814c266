#include "reports/pack.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <set>

#include "io/array.hpp"
#include "io/input_error.hpp"
#include "reports/columns.hpp"

namespace fplab {

namespace {

std::string sanitize(std::string s) {
  std::replace(s.begin(), s.end(), '/', '.');
  return s;
}

std::string row_key(const Array& a, std::size_t linear) {
  if (a.shape.size() <= 1) return std::to_string(linear);
  std::vector<std::size_t> idx(a.shape.size());
  for (std::size_t d = a.shape.size(); d-- > 0;) {
    idx[d] = linear % a.shape[d];
    linear /= a.shape[d];
  }
  return fmt::format("{}", fmt::join(idx, ","));
}

Value value_of(const Array& a, std::size_t i) {
  if (a.type == ElementType::float32) {
    return Value::f32(std::bit_cast<float>(static_cast<std::uint32_t>(a.bits[i])));
  }
  return Value::f64(std::bit_cast<double>(a.bits[i]));
}

// The column of an array that has no name of its own.
constexpr ColumnId kValue{"value"};

// A column whose row i holds element i of `a` (float32 or float64, its bits
// kept); `a` outlives the columns.
void add_elements(Columns<std::size_t>& columns, const Array& a, ColumnId id, std::string label) {
  columns.add(
      id, std::move(label), [&a](std::size_t i) { return value_of(a, i); }, "", true);
}

// The columns, then one row per element of `keyed` (keyed by its index).
void fill(Table& t, const Columns<std::size_t>& columns, const Array& keyed) {
  columns.add_to(t);
  for (std::size_t i = 0; i < keyed.size(); ++i) columns.add_row(t, row_key(keyed, i), i);
}

void check_type(const std::string& file, const Array& a) {
  if (a.type == ElementType::float32 || a.type == ElementType::float64) return;
  throw InputError(file + ": " + (a.name.empty() ? std::string("the array") : "'" + a.name + "'") +
                   " is " + std::string(name(a.type)) +
                   "; results files hold float32 and float64 only (compare it with 'fplab diff' "
                   "on the files themselves)");
}

}  // namespace

ExperimentRecord pack_arrays(const std::string& experiment, const std::vector<std::string>& inputs,
                             ElementType text_type) {
  if (experiment.empty() || experiment.find('/') != std::string::npos) {
    throw InputError("--experiment '" + experiment + "' must be non-empty, without '/'");
  }
  ExperimentRecord e;
  e.id = experiment;
  e.title = experiment;
  e.description = "Arrays packed by fplab pack: " + fmt::format("{}", fmt::join(inputs, " "));
  ArrayReadOptions read;
  read.text_type = text_type;
  std::set<std::string> table_ids;
  for (const auto& input : inputs) {
    const auto eq = input.find('=');
    const std::string name = eq == std::string::npos ? "" : input.substr(0, eq);
    const std::string file = eq == std::string::npos ? input : input.substr(eq + 1);
    if (!std::filesystem::is_regular_file(file)) throw InputError(file + ": no such file");
    const std::filesystem::path path(file);
    const auto arrays = read_arrays(path, read);
    const auto add = [&](const std::string& id) -> Table& {
      if (!table_ids.insert(id).second) {
        throw InputError(file + ": table '" + id + "' already packed (name the inputs NAME=FILE)");
      }
      return e.add_table(Table(id, id, "index"));
    };
    if (array_file_kind(path) == ArrayFile::safetensors ||
        array_file_kind(path) == ArrayFile::torch) {
      for (const auto& a : arrays) {
        check_type(file, a);
        Table& t = add(sanitize(name.empty() ? a.name : name + "." + a.name));
        t.caption = fmt::format("{} {} of {}", fplab::name(a.type), a.shape_text(), file);
        Columns<std::size_t> columns;
        add_elements(columns, a, kValue, kValue.str());
        fill(t, columns, a);
      }
      continue;
    }
    const std::string id = sanitize(name.empty() ? path.stem().string() : name);
    Table& t = add(id.empty() ? "array" : id);
    t.caption = file;
    Columns<std::size_t> columns;
    for (const auto& a : arrays) {
      check_type(file, a);
      const std::string column = a.name.empty() ? kValue.str() : sanitize(a.name);
      add_elements(columns, a, ColumnId{column}, a.name.empty() ? kValue.str() : a.name);
    }
    fill(t, columns, arrays.at(0));
  }
  return e;
}

}  // namespace fplab
