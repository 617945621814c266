// fplab diff A B: did any floating-point number move?
//
// Two results.json files (both ending in .json) are compared value by value
// (reports/diff.hpp); any other pair of files is compared as arrays
// (reports/array_diff.hpp): .npy, .safetensors tensor by tensor, or text/CSV
// columns. Two directories are compared file by file, paired by relative
// path (reports/directory_diff.hpp). A tolerance file (reports/tolerance.hpp)
// gives each results path, file or array its own tolerance; for arrays its
// patterns see the file's path relative to the directory compared (a single
// file: its name) and FILE/NAME for a named array.
//
// --update writes B over A (reports/baseline.hpp) after the comparison, or
// instead of it when A does not exist yet, and says so; it exits 0 unless
// the input is bad.
//
// Exit codes for CI: 0 identical (or every change within the tolerances),
// 1 drift beyond them (or, for directories, a missing or extra file),
// 2 bad input (unreadable file, other schema version, different
// experiments, a name/shape/dtype mismatch; with --strict-dtype, text
// numbers that look float32 compared as float64).
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/commands.hpp"
#include "cli/numeric_options.hpp"
#include "io/array.hpp"
#include "io/text_columns.hpp"
#include "reports/array_diff.hpp"
#include "reports/baseline.hpp"
#include "reports/diff.hpp"
#include "reports/directory_diff.hpp"
#include "reports/results_json.hpp"

namespace fplab::cli {

namespace {
struct DiffOptions {
  std::string a;
  std::string b;
  std::string tolerances;
  std::vector<ToleranceRule> rules;  // read from `tolerances`
  bool json = false;
  bool markdown = false;
  std::size_t limit = 50;
  std::optional<std::uint64_t> ulps;
  std::optional<double> rel;
  std::optional<double> atol;
  std::string dtype = "float64";
  bool dtype_given = false;
  bool strict_dtype = false;
  bool bfloat16_void = false;
  bool update = false;
};

bool is_results_file(const std::filesystem::path& path) { return path.extension() == ".json"; }

bool is_text_file(const std::filesystem::path& path) {
  return array_file_kind(path) == ArrayFile::text;
}

// One file pair's report in every form, its exit code and the patterns of
// the tolerance rules that decided something in it. (As FileDiffOutcome:
// clang-tidy 14 sees nlohmann::json's members as able to throw inside the
// implicit special members.)
// NOLINTNEXTLINE(bugprone-exception-escape)
struct FilePairDiff {
  FileDiffOutcome outcome;
  std::set<std::string> rules_used;
};

FilePairDiff diff_array_files(const std::filesystem::path& pa, const std::filesystem::path& pb,
                              const DiffOptions& o, const std::string& key) {
  ArrayReadOptions read;
  read.text_type = o.dtype == "float32" ? ElementType::float32 : ElementType::float64;
  read.void2_as_bfloat16 = o.bfloat16_void;
  const auto a = read_arrays(pa, read);
  const auto b = read_arrays(pb, read);
  ArrayTolerance tol;
  tol.max_ulps = o.ulps;
  tol.max_relative = o.rel;
  tol.max_absolute = o.atol;
  ArrayDiffReport d = diff_arrays(pa.string(), a, pb.string(), b, tol, o.limit, o.rules, key);
  // float32 data written as text, compared as float64: a one-step float32
  // change reads as 2^29 ulps.
  if (!o.dtype_given && d.bit_identical() != d.elements() && is_text_file(pa) && is_text_file(pb) &&
      text_columns_look_float32(pa) && text_columns_look_float32(pb)) {
    const std::string warning = fmt::format(
        "{} and {}: every number looks written from float32 (a float32 value, or at most 9 "
        "significant digits), but they are compared as float64, where one float32 step is 2^29 "
        "ulps; pass --dtype float32 if the data is float32",
        pa.string(), pb.string());
    if (o.strict_dtype) throw InputError(warning + " (--strict-dtype)");
    d.warnings.push_back(warning);
  }
  FilePairDiff f;
  f.rules_used.insert(d.rules_used.begin(), d.rules_used.end());
  FileDiffOutcome& out = f.outcome;
  out.exit_code = d.exit_code();
  out.summary = d.bit_identical() == d.elements()
                    ? "bit-identical"
                    : fmt::format(
                          "{} of {} elements bit-identical, max ulps {}, {} beyond "
                          "tolerance",
                          d.bit_identical(), d.elements(), d.max_ulps(), d.beyond_tolerance());
  if (!d.warnings.empty()) out.summary += " (warning: looks float32, compared as float64)";
  out.text = format_array_diff(d, o.limit);
  out.markdown = format_array_diff_markdown(d, o.limit);
  out.json = array_diff_to_json(d, o.limit);
  return f;
}

FilePairDiff diff_results_files(const std::filesystem::path& pa, const std::filesystem::path& pb,
                                const DiffOptions& o, bool in_directory) {
  if ((o.ulps || o.rel || o.atol) && !in_directory) {
    throw InputError(
        "--ulps/--rel/--atol apply to arrays; for results.json use a --tolerances file");
  }
  const Results a = read_results_json(pa.string());
  const Results b = read_results_json(pb.string());
  const DiffReport d = diff_results(a, b, o.rules);
  FilePairDiff f;
  for (const auto& r : o.rules) f.rules_used.insert(r.pattern);
  for (const auto& p : d.unmatched_rules) f.rules_used.erase(p);
  FileDiffOutcome& out = f.outcome;
  out.exit_code = d.exit_code();
  out.summary = fmt::format("{} values compared, {} changed, {} beyond tolerance",
                            d.values_compared, d.changes.size(), d.untolerated());
  out.text = format_diff(d, o.limit);
  out.markdown = format_diff_markdown(d, o.limit);
  out.json = diff_to_json(d);
  return f;
}

FilePairDiff diff_file_pair(const std::filesystem::path& a, const std::filesystem::path& b,
                            const DiffOptions& o, const std::string& key, bool in_directory) {
  const bool ra = is_results_file(a);
  if (ra != is_results_file(b)) {
    throw InputError("cannot compare a results file with an array file: " + a.string() + ", " +
                     b.string());
  }
  return ra ? diff_results_files(a, b, o, in_directory) : diff_array_files(a, b, o, key);
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

// Rules that decided nothing in any file compared: a typo, a renamed file, a
// rule an earlier one shadows.
void warn_unused_rules(const DiffOptions& o, const std::set<std::string>& used) {
  for (const auto& r : o.rules) {
    if (used.count(r.pattern) != 0) continue;
    std::fprintf(stderr,
                 "fplab: warning: %s:%d: tolerance rule '%s' decides nothing in %s or %s (it "
                 "matches nothing, or an earlier rule wins wherever it matches)\n",
                 o.tolerances.c_str(), r.line, r.pattern.c_str(), o.a.c_str(), o.b.c_str());
  }
}

int diff_directories(const DiffOptions& o) {
  DirectoryDiff d;
  d.dir_a = o.a;
  d.dir_b = o.b;
  d.pairing = pair_directory_files(o.a, o.b);
  std::set<std::string> used;
  for (const auto& rel : d.pairing.both) {
    FileDiffOutcome f;
    try {
      auto pair = diff_file_pair(std::filesystem::path(o.a) / rel, std::filesystem::path(o.b) / rel,
                                 o, rel, true);
      used.insert(pair.rules_used.begin(), pair.rules_used.end());
      f = std::move(pair.outcome);
    } catch (const std::exception& e) {  // bad input in one file: reported, the others compared
      f.exit_code = 2;
      f.summary = e.what();
    }
    f.path = rel;
    d.files.push_back(std::move(f));
  }
  warn_unused_rules(o, used);
  if (o.json) {
    fmt::print("{}\n", directory_diff_to_json(d).dump(2));
  } else if (o.markdown) {
    fmt::print("{}", format_directory_diff_markdown(d));
  } else {
    fmt::print("{}", format_directory_diff(d));
  }
  return d.exit_code();
}

int diff_files(const DiffOptions& o) {
  const std::string key = std::filesystem::path(o.a).filename().string();
  const auto f = diff_file_pair(o.a, o.b, o, key, false);
  warn_unused_rules(o, f.rules_used);
  print(f.outcome, o);
  return f.outcome.exit_code;
}

void run_diff(const DiffOptions& o) {
  const bool a_exists = std::filesystem::exists(o.a);
  if (!a_exists && !o.update) {
    throw InputError(o.a + ": no such file or directory (--update writes it from " + o.b + ")");
  }
  int code = 0;
  if (a_exists) {
    if (std::filesystem::is_directory(o.a) != std::filesystem::is_directory(o.b)) {
      throw InputError("cannot compare a directory with a file: " + o.a + ", " + o.b);
    }
    code = std::filesystem::is_directory(o.a) ? diff_directories(o) : diff_files(o);
  }
  if (o.update) {
    if (code == 2) throw ExitStatus{2};  // bad input: the baseline stays as it was
    const BaselineUpdate u = update_baseline(o.a, o.b);
    // On stderr, so that --json stays JSON.
    std::fprintf(stderr, "fplab: %s\n", u.describe(o.a, o.b).c_str());
    return;
  }
  if (code != 0) throw ExitStatus{code};
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
                  "directory of them (with --update it may not exist yet)")
      ->required();
  cmd->add_option("b", opts->b, "File B, of the same kind (a directory when A is one)")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("-t,--tolerances", opts->tolerances,
                  "Tolerance file: lines 'PATTERN ignore' or 'PATTERN ulps=N or atol=X' (terms "
                  "ulps=N, rel=X, atol=X joined by 'or' or 'and'), over results paths, files and "
                  "FILE/ARRAY (docs/drift.md; a rule that decides nothing is reported)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--ulps", opts->ulps,
                  "Arrays only: accept elements at most N ulps apart (numpy nulp_diff's count)")
      ->check(integer_at_least(0));
  cmd->add_option("--rel", opts->rel,
                  "Arrays only: accept elements with |b - a| / |a| <= X (any one tolerance "
                  "suffices)")
      ->check(non_negative_number());
  cmd->add_option("--atol", opts->atol,
                  "Arrays only: accept elements with |b - a| <= X (for values near zero, where "
                  "relative errors are large)")
      ->check(non_negative_number());
  auto* dtype =
      cmd->add_option("--dtype", opts->dtype, "Arrays only: type text numbers are rounded to")
          ->check(CLI::IsMember({"float32", "float64"}));
  cmd->add_flag("--strict-dtype", opts->strict_dtype,
                "Arrays only: fail (exit 2) where text numbers look float32 but are compared as "
                "float64, instead of warning");
  cmd->add_flag("--update", opts->update,
                "Write B over A (the baseline) after comparing, or when A does not exist yet, "
                "atomically, and say so (exit 0 unless the input is bad)");
  cmd->add_flag("--bfloat16-void", opts->bfloat16_void,
                "Arrays only: read .npy dtype '<V2'/'|V2' (ml_dtypes' bfloat16) as bfloat16");
  cmd->add_option("--limit", opts->limit,
                  "Most changed values (arrays: drifted elements, worst first; and arrays) to list")
      ->check(integer_at_least(1));
  cmd->add_flag("--json", opts->json, "Print the comparison as JSON");
  cmd->add_flag("--markdown", opts->markdown,
                "Print a Markdown summary with a per-table (per-array) count and max ulps, "
                "for a pull-request comment");
  cmd->footer(
      "Examples:\n"
      "  fplab diff baseline.npy out.npy --ulps 2\n"
      "  fplab diff baseline/ out/ --ulps 4 --atol 1e-6 --markdown   (files paired by path)\n"
      "  fplab diff --dtype float32 a.csv b.csv --limit 5 --json\n"
      "  fplab diff -t tolerances.txt baseline.json results.json\n"
      "  fplab diff -t contract.txt baseline/ out/   (contract.txt: 'logits.npy ulps=64 or "
      "atol=1e-5')\n"
      "  fplab diff --update baseline/ out/          (write or refresh the baseline)");
  cmd->callback([opts, dtype] {
    opts->dtype_given = dtype->count() > 0;
    if (!opts->tolerances.empty()) opts->rules = read_tolerances(opts->tolerances);
    run_diff(*opts);
  });
}

}  // namespace fplab::cli
