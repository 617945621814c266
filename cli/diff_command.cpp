// fplab diff A B: did any floating-point number move?
//
// Two results.json files (both ending in .json) are compared value by value
// (reports/diff.hpp); any other pair of files is compared as arrays
// (reports/array_diff.hpp): .npy, .safetensors tensor by tensor, or text/CSV
// columns.
//
// Exit codes for CI: 0 identical (or every change within the tolerances),
// 1 drift beyond them, 2 bad input (unreadable file, other schema version,
// different experiments, a name/shape/dtype mismatch).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "io/array.hpp"
#include "reports/array_diff.hpp"
#include "reports/diff.hpp"

namespace fplab::cli {

namespace {
struct DiffOptions {
  std::string a;
  std::string b;
  std::string tolerances;
  bool json = false;
  bool markdown = false;
  std::size_t limit = 50;
  std::optional<std::uint64_t> ulps;
  std::optional<double> rel;
  std::string dtype = "float64";
  bool bfloat16_void = false;
};

bool is_results_file(const std::string& path) {
  return std::filesystem::path(path).extension() == ".json";
}

void diff_array_files(const DiffOptions& o) {
  if (!o.tolerances.empty()) {
    throw InputError("--tolerances applies to results.json files; for arrays use --ulps/--rel");
  }
  ArrayReadOptions read;
  read.text_type = o.dtype == "float32" ? ElementType::float32 : ElementType::float64;
  read.void2_as_bfloat16 = o.bfloat16_void;
  const auto a = read_arrays(o.a, read);
  const auto b = read_arrays(o.b, read);
  ArrayTolerance tol;
  tol.max_ulps = o.ulps;
  tol.max_relative = o.rel;
  const ArrayDiffReport d = diff_arrays(o.a, a, o.b, b, tol);
  if (o.json) {
    fmt::print("{}\n", array_diff_to_json(d).dump(2));
  } else if (o.markdown) {
    fmt::print("{}", format_array_diff_markdown(d, o.limit));
  } else {
    fmt::print("{}", format_array_diff(d, o.limit));
  }
  if (d.exit_code() != 0) throw ExitStatus{d.exit_code()};
}

void diff_results_files(const DiffOptions& o) {
  if (o.ulps || o.rel) {
    throw InputError("--ulps/--rel apply to arrays; for results.json use a --tolerances file");
  }
  const Results a = read_results_json(o.a);
  const Results b = read_results_json(o.b);
  const auto rules =
      o.tolerances.empty() ? std::vector<ToleranceRule>{} : read_tolerances(o.tolerances);
  const DiffReport d = diff_results(a, b, rules);
  if (o.json) {
    fmt::print("{}\n", diff_to_json(d).dump(2));
  } else if (o.markdown) {
    fmt::print("{}", format_diff_markdown(d, o.limit));
  } else {
    fmt::print("{}", format_diff(d, o.limit));
  }
  if (d.exit_code() != 0) throw ExitStatus{d.exit_code()};
}

}  // namespace

void add_diff_command(CLI::App& app) {
  auto opts = std::make_shared<DiffOptions>();
  auto* cmd = app.add_subcommand(
      "diff",
      "Compare two results.json files value by value, or two .npy/.safetensors/text arrays "
      "element by element (exit 0 same, 1 drift, 2 bad input)");
  cmd->add_option("a", opts->a, "File A (the baseline): results.json, .npy, .safetensors or text")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("b", opts->b, "File B, of the same kind")->required()->check(CLI::ExistingFile);
  cmd->add_option("-t,--tolerances", opts->tolerances,
                  "results.json only: tolerance file, lines 'PATTERN ignore|ulps=N|rel=X'")
      ->check(CLI::ExistingFile);
  cmd->add_option("--ulps", opts->ulps,
                  "Arrays only: accept elements at most N ulps apart (numpy nulp_diff's count)");
  cmd->add_option(
         "--rel", opts->rel,
         "Arrays only: accept elements with |b - a| / |a| <= X (either tolerance suffices)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--dtype", opts->dtype, "Arrays only: type text numbers are rounded to")
      ->check(CLI::IsMember({"float32", "float64"}));
  cmd->add_flag("--bfloat16-void", opts->bfloat16_void,
                "Arrays only: read .npy dtype '<V2'/'|V2' (ml_dtypes' bfloat16) as bfloat16");
  cmd->add_option("--limit", opts->limit, "Most changed values (or arrays) to list")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", opts->json, "Print the comparison as JSON");
  cmd->add_flag("--markdown", opts->markdown,
                "Print a Markdown summary with a per-table (per-array) count and max ulps, "
                "for a pull-request comment");
  cmd->callback([opts] {
    const bool ra = is_results_file(opts->a);
    const bool rb = is_results_file(opts->b);
    if (ra != rb) {
      throw InputError("cannot compare a results file with an array file: " + opts->a + ", " +
                       opts->b);
    }
    if (ra) {
      diff_results_files(*opts);
    } else {
      diff_array_files(*opts);
    }
  });
}

}  // namespace fplab::cli
