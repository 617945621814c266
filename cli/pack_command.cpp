// fplab pack: people's own arrays into a results.json that `fplab diff` and
// `fplab report` take, so that one CI step can track both fplab's results
// and theirs (docs/drift.md).
//
//   fplab pack OUT.json [--experiment ID] INPUT...
//
// Each INPUT is FILE or NAME=FILE. A .npy becomes one table NAME (default:
// the file's stem) with one column "value"; a .safetensors file one table
// per tensor, NAME.TENSOR (or TENSOR when NAME is not given); a text/CSV
// file with a header one table NAME with its columns, one without (a
// matrix, io/text_columns.hpp) one table with a column "value", as a .npy.
// Rows are keyed by the element's
// index ("7", or "2,3" for an N-D array). float64 and float32 keep their
// bits; float16 and bfloat16 are refused (results files hold float32 and
// float64 only: diff such arrays with `fplab diff` directly). '/' in a
// name, which a results path cannot hold, becomes '.'.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "build_info.hpp"
#include "cli/commands.hpp"
#include "io/array.hpp"
#include "reports/results.hpp"
#include "reports/results_json.hpp"

namespace fplab::cli {

namespace {

struct PackOptions {
  std::string out;
  std::string experiment = "pack";
  std::vector<std::string> inputs;
  std::string dtype = "float64";
};

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

void check_type(const std::string& file, const Array& a) {
  if (a.type == ElementType::float32 || a.type == ElementType::float64) return;
  throw InputError(file + ": " + (a.name.empty() ? std::string("the array") : "'" + a.name + "'") +
                   " is " + std::string(name(a.type)) +
                   "; results files hold float32 and float64 only (compare it with 'fplab diff' "
                   "on the files themselves)");
}

}  // namespace

void add_pack_command(CLI::App& app) {
  auto opts = std::make_shared<PackOptions>();
  auto* cmd = app.add_subcommand(
      "pack", "Pack .npy, .safetensors or text/CSV arrays into a results.json for diff and report");
  cmd->add_option("out", opts->out, "The results.json to write")->required();
  cmd->add_option("inputs", opts->inputs, "FILE or NAME=FILE, one or more")->required();
  cmd->add_option("-e,--experiment", opts->experiment, "Experiment id in the results file");
  cmd->add_option("--dtype", opts->dtype, "Type text numbers are rounded to")
      ->check(CLI::IsMember({"float32", "float64"}));
  cmd->footer(
      "Examples:\n"
      "  fplab pack out.json -e mine logits=run1.npy       one array as a results.json\n"
      "  fplab pack b.json -e mine logits=run2.npy && fplab diff out.json b.json");
  cmd->callback([opts] {
    if (opts->experiment.empty() || opts->experiment.find('/') != std::string::npos) {
      throw InputError("--experiment '" + opts->experiment + "' must be non-empty, without '/'");
    }
    ExperimentRecord e;
    e.id = opts->experiment;
    e.title = opts->experiment;
    e.description =
        "Arrays packed by fplab pack: " + fmt::format("{}", fmt::join(opts->inputs, " "));
    ArrayReadOptions read;
    read.text_type = opts->dtype == "float32" ? ElementType::float32 : ElementType::float64;
    std::set<std::string> table_ids;
    for (const auto& input : opts->inputs) {
      const auto eq = input.find('=');
      const std::string name = eq == std::string::npos ? "" : input.substr(0, eq);
      const std::string file = eq == std::string::npos ? input : input.substr(eq + 1);
      if (!std::filesystem::is_regular_file(file)) throw InputError(file + ": no such file");
      const std::filesystem::path path(file);
      const auto arrays = read_arrays(path, read);
      const auto add = [&](const std::string& id) -> Table& {
        if (!table_ids.insert(id).second) {
          throw InputError(file + ": table '" + id +
                           "' already packed (name the inputs NAME=FILE)");
        }
        return e.add_table(Table(id, id, "index"));
      };
      if (array_file_kind(path) == ArrayFile::safetensors ||
          array_file_kind(path) == ArrayFile::torch) {
        for (const auto& a : arrays) {
          check_type(file, a);
          Table& t = add(sanitize(name.empty() ? a.name : name + "." + a.name));
          t.caption = fmt::format("{} {} of {}", fplab::name(a.type), a.shape_text(), file);
          t.add_column("value", "value", "", true);
          for (std::size_t i = 0; i < a.size(); ++i)
            t.add_row(row_key(a, i)).set("value", value_of(a, i));
        }
        continue;
      }
      const std::string id = sanitize(name.empty() ? path.stem().string() : name);
      Table& t = add(id.empty() ? "array" : id);
      t.caption = file;
      for (const auto& a : arrays) {
        check_type(file, a);
        t.add_column(a.name.empty() ? "value" : sanitize(a.name), a.name.empty() ? "value" : a.name,
                     "", true);
      }
      const std::size_t n = arrays.at(0).size();
      for (std::size_t i = 0; i < n; ++i) {
        Row& row = t.add_row(row_key(arrays[0], i));
        for (std::size_t c = 0; c < arrays.size(); ++c) {
          row.set(t.columns[c].id, value_of(arrays[c], i));
        }
      }
    }
    Results r;
    r.context.fplab_version = build::kVersion;
    r.context.command =
        "fplab pack " + opts->out + " " + fmt::format("{}", fmt::join(opts->inputs, " "));
    r.experiments.push_back(std::move(e));
    write_results_json(r, opts->out);
    std::size_t values = flatten(r).size();
    fmt::print("wrote {} ({} tables, {} values, fingerprint {})\n", opts->out,
               r.experiments[0].tables.size(), values, fingerprint(r));
  });
}

}  // namespace fplab::cli
