// fplab diff A B: did any floating-point number move?
//
// Two results.json files (both ending in .json) are compared value by value
// (reports/diff.hpp); any other pair of files is compared as arrays
// (reports/array_diff.hpp): .npy, .safetensors tensor by tensor, or text/CSV
// columns. Two directories are compared file by file, paired by relative
// path (reports/directory_diff.hpp).
//
// Exit codes for CI: 0 identical (or every change within the tolerances),
// 1 drift beyond them (or, for directories, a missing or extra file),
// 2 bad input (unreadable file, other schema version, different
// experiments, a name/shape/dtype mismatch).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "io/array.hpp"
#include "io/text_columns.hpp"
#include "reports/array_diff.hpp"
#include "reports/diff.hpp"
#include "reports/directory_diff.hpp"

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
  std::optional<double> atol;
  std::string dtype = "float64";
  bool dtype_given = false;
  bool bfloat16_void = false;
};

bool is_results_file(const std::filesystem::path& path) { return path.extension() == ".json"; }

bool is_text_file(const std::filesystem::path& path) {
  return array_file_kind(path) == ArrayFile::text;
}

// One file pair's report in every form, and its exit code.
FileDiffOutcome diff_array_files(const std::filesystem::path& pa, const std::filesystem::path& pb,
                                 const DiffOptions& o, bool in_directory) {
  if (!o.tolerances.empty() && !in_directory) {
    throw InputError(
        "--tolerances applies to results.json files; for arrays use --ulps/--rel/--atol");
  }
  ArrayReadOptions read;
  read.text_type = o.dtype == "float32" ? ElementType::float32 : ElementType::float64;
  read.void2_as_bfloat16 = o.bfloat16_void;
  const auto a = read_arrays(pa, read);
  const auto b = read_arrays(pb, read);
  ArrayTolerance tol;
  tol.max_ulps = o.ulps;
  tol.max_relative = o.rel;
  tol.max_absolute = o.atol;
  const ArrayDiffReport d = diff_arrays(pa.string(), a, pb.string(), b, tol, o.limit);
  FileDiffOutcome out;
  out.exit_code = d.exit_code();
  out.summary = d.bit_identical() == d.elements()
                    ? "bit-identical"
                    : fmt::format(
                          "{} of {} elements bit-identical, max ulps {}, {} beyond "
                          "tolerance",
                          d.bit_identical(), d.elements(), d.max_ulps(), d.beyond_tolerance());
  out.text = format_array_diff(d, o.limit);
  out.markdown = format_array_diff_markdown(d, o.limit);
  out.json = array_diff_to_json(d, o.limit);
  // float32 data written as text, compared as float64: a one-step float32
  // change reads as 2^29 ulps. Said on stderr, so that --json stays JSON.
  if (!o.dtype_given && d.bit_identical() != d.elements() && is_text_file(pa) && is_text_file(pb) &&
      text_columns_look_float32(pa) && text_columns_look_float32(pb)) {
    const std::string warning = fmt::format(
        "{} and {}: every number looks written from float32 (a float32 value, or at most 9 "
        "significant digits), but they are compared as float64, where one float32 step is 2^29 "
        "ulps; pass --dtype float32 if the data is float32",
        pa.string(), pb.string());
    std::fprintf(stderr, "fplab: warning: %s\n", warning.c_str());
    out.json["warnings"] = {warning};
  }
  return out;
}

FileDiffOutcome diff_results_files(const std::filesystem::path& pa, const std::filesystem::path& pb,
                                   const DiffOptions& o, bool in_directory) {
  if ((o.ulps || o.rel || o.atol) && !in_directory) {
    throw InputError(
        "--ulps/--rel/--atol apply to arrays; for results.json use a --tolerances file");
  }
  const Results a = read_results_json(pa.string());
  const Results b = read_results_json(pb.string());
  const auto rules =
      o.tolerances.empty() ? std::vector<ToleranceRule>{} : read_tolerances(o.tolerances);
  const DiffReport d = diff_results(a, b, rules);
  for (const auto& p : d.unmatched_rules) {
    std::fprintf(stderr, "fplab: warning: %s: tolerance rule '%s' matches no value of %s or %s\n",
                 o.tolerances.c_str(), p.c_str(), pa.string().c_str(), pb.string().c_str());
  }
  FileDiffOutcome out;
  out.exit_code = d.exit_code();
  out.summary = fmt::format("{} values compared, {} changed, {} beyond tolerance",
                            d.values_compared, d.changes.size(), d.untolerated());
  out.text = format_diff(d, o.limit);
  out.markdown = format_diff_markdown(d, o.limit);
  out.json = diff_to_json(d);
  return out;
}

FileDiffOutcome diff_file_pair(const std::filesystem::path& a, const std::filesystem::path& b,
                               const DiffOptions& o, bool in_directory) {
  const bool ra = is_results_file(a);
  if (ra != is_results_file(b)) {
    throw InputError("cannot compare a results file with an array file: " + a.string() + ", " +
                     b.string());
  }
  return ra ? diff_results_files(a, b, o, in_directory) : diff_array_files(a, b, o, in_directory);
}

void print(const FileDiffOutcome& f, const DiffOptions& o) {
  if (o.json) {
    fmt::print("{}\n", f.json.dump(2));
  } else if (o.markdown) {
    fmt::print("{}", f.markdown);
  } else {
    fmt::print("{}", f.text);
  }
}

void diff_directories(const DiffOptions& o) {
  DirectoryDiff d;
  d.dir_a = o.a;
  d.dir_b = o.b;
  d.pairing = pair_directory_files(o.a, o.b);
  for (const auto& rel : d.pairing.both) {
    FileDiffOutcome f;
    try {
      f = diff_file_pair(std::filesystem::path(o.a) / rel, std::filesystem::path(o.b) / rel, o,
                         true);
    } catch (const std::exception& e) {  // bad input in one file: reported, the others compared
      f.exit_code = 2;
      f.summary = e.what();
    }
    f.path = rel;
    d.files.push_back(std::move(f));
  }
  if (o.json) {
    fmt::print("{}\n", directory_diff_to_json(d).dump(2));
  } else if (o.markdown) {
    fmt::print("{}", format_directory_diff_markdown(d));
  } else {
    fmt::print("{}", format_directory_diff(d));
  }
  if (d.exit_code() != 0) throw ExitStatus{d.exit_code()};
}

}  // namespace

void add_diff_command(CLI::App& app) {
  auto opts = std::make_shared<DiffOptions>();
  auto* cmd = app.add_subcommand(
      "diff",
      "Compare two results.json files value by value, two .npy/.safetensors/text arrays "
      "element by element, or two directories of them file by file (exit 0 same, 1 drift, 2 "
      "bad input)");
  cmd->add_option("a", opts->a,
                  "File A (the baseline): results.json, .npy, .safetensors or text; or a "
                  "directory of them")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("b", opts->b, "File B, of the same kind (a directory when A is one)")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("-t,--tolerances", opts->tolerances,
                  "results.json only: tolerance file, lines 'PATTERN ignore|ulps=N|rel=X' (a "
                  "rule that matches nothing is reported)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--ulps", opts->ulps,
                  "Arrays only: accept elements at most N ulps apart (numpy nulp_diff's count)");
  cmd->add_option("--rel", opts->rel,
                  "Arrays only: accept elements with |b - a| / |a| <= X (any one tolerance "
                  "suffices)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--atol", opts->atol,
                  "Arrays only: accept elements with |b - a| <= X (for values near zero, where "
                  "relative errors are large)")
      ->check(CLI::NonNegativeNumber);
  auto* dtype =
      cmd->add_option("--dtype", opts->dtype, "Arrays only: type text numbers are rounded to")
          ->check(CLI::IsMember({"float32", "float64"}));
  cmd->add_flag("--bfloat16-void", opts->bfloat16_void,
                "Arrays only: read .npy dtype '<V2'/'|V2' (ml_dtypes' bfloat16) as bfloat16");
  cmd->add_option("--limit", opts->limit,
                  "Most changed values (arrays: drifted elements, worst first; and arrays) to list")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", opts->json, "Print the comparison as JSON");
  cmd->add_flag("--markdown", opts->markdown,
                "Print a Markdown summary with a per-table (per-array) count and max ulps, "
                "for a pull-request comment");
  cmd->footer(
      "Examples:\n"
      "  fplab diff baseline.npy out.npy --ulps 2\n"
      "  fplab diff baseline/ out/ --ulps 4 --atol 1e-6 --markdown   (files paired by path)\n"
      "  fplab diff --dtype float32 a.csv b.csv --limit 5 --json\n"
      "  fplab diff -t tolerances.txt baseline.json results.json");
  cmd->callback([opts, dtype] {
    opts->dtype_given = dtype->count() > 0;
    const bool da = std::filesystem::is_directory(opts->a);
    if (da != std::filesystem::is_directory(opts->b)) {
      throw InputError("cannot compare a directory with a file: " + opts->a + ", " + opts->b);
    }
    if (da) {
      diff_directories(*opts);
      return;
    }
    const auto f = diff_file_pair(opts->a, opts->b, *opts, false);
    print(f, *opts);
    if (f.exit_code != 0) throw ExitStatus{f.exit_code};
  });
}

}  // namespace fplab::cli
