#include "reports/diff_request.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "io/array.hpp"
#include "io/input_error.hpp"
#include "io/numbers.hpp"
#include "io/text_columns.hpp"
#include "reports/array_diff.hpp"
#include "reports/diff.hpp"
#include "reports/directory_diff.hpp"
#include "reports/results_json.hpp"
#include "reports/tolerance.hpp"

namespace fplab {

std::vector<std::string> DiffRequest::to_args() const {
  std::vector<std::string> args{"--limit=" + std::to_string(limit)};
  if (!tolerances.empty()) args.push_back("--tolerances=" + tolerances);
  if (ulps) args.push_back("--ulps=" + std::to_string(*ulps));
  if (rel) args.push_back("--rel=" + to_decimal(*rel));
  if (atol) args.push_back("--atol=" + to_decimal(*atol));
  if (dtype_given) args.push_back("--dtype=" + dtype);
  const auto flag = [&args](const char* name, bool set) {
    if (set) args.emplace_back(name);
  };
  flag("--json", json);
  flag("--markdown", markdown);
  flag("--strict-dtype", strict_dtype);
  flag("--bfloat16-void", bfloat16_void);
  flag("--update", update);
  flag("--shared", shared);
  args.emplace_back("--");
  args.push_back(a);
  args.push_back(b);
  return args;
}

namespace {

// The request and its tolerance file's rules, read once.
struct Options : DiffRequest {
  std::vector<ToleranceRule> rules;
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
                              const Options& o, const std::string& key) {
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
                                const Options& o, bool in_directory) {
  if ((o.ulps || o.rel || o.atol) && !in_directory) {
    throw InputError(
        "--ulps/--rel/--atol apply to arrays; for results.json use a --tolerances file");
  }
  const Results a = read_results_json(pa.string());
  const Results b = read_results_json(pb.string());
  const DiffReport d = o.shared ? diff_shared_results(a, b, o.rules) : diff_results(a, b, o.rules);
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
                            const Options& o, const std::string& key, bool in_directory) {
  const bool ra = is_results_file(a);
  if (ra != is_results_file(b)) {
    throw InputError("cannot compare a results file with an array file: " + a.string() + ", " +
                     b.string());
  }
  return ra ? diff_results_files(a, b, o, in_directory) : diff_array_files(a, b, o, key);
}

// One file's report in the form asked.
std::string printed(const FileDiffOutcome& f, const Options& o) {
  if (o.json) return f.json.dump(2) + "\n";
  return o.markdown ? f.markdown : f.text;
}

// Rules that decided nothing in any file compared: a typo, a renamed file, a
// rule an earlier one shadows.
std::string unused_rules(const Options& o, const std::set<std::string>& used) {
  std::string out;
  for (const auto& r : o.rules) {
    if (used.count(r.pattern) != 0) continue;
    out += fmt::format(
        "fplab: warning: {}:{}: tolerance rule '{}' decides nothing in {} or {} (it matches "
        "nothing, or an earlier rule wins wherever it matches)\n",
        o.tolerances, r.line, r.pattern, o.a, o.b);
  }
  return out;
}

DiffOutput diff_directories(const Options& o) {
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
  DiffOutput out;
  out.err = unused_rules(o, used);
  if (o.json) {
    out.out = directory_diff_to_json(d).dump(2) + "\n";
  } else if (o.markdown) {
    out.out = format_directory_diff_markdown(d);
  } else {
    out.out = format_directory_diff(d);
  }
  out.exit_code = d.exit_code();
  return out;
}

DiffOutput diff_files(const Options& o) {
  const std::string key = std::filesystem::path(o.a).filename().string();
  const auto f = diff_file_pair(o.a, o.b, o, key, false);
  return {printed(f.outcome, o), unused_rules(o, f.rules_used), f.outcome.exit_code};
}

}  // namespace

DiffOutput run_diff(const DiffRequest& r) {
  Options o;
  static_cast<DiffRequest&>(o) = r;
  if (!o.tolerances.empty()) o.rules = read_tolerances(o.tolerances);
  if (!std::filesystem::exists(o.a)) {
    if (!o.update)
      throw InputError(o.a + ": no such file or directory (--update writes it from " + o.b + ")");
    return {};
  }
  if (std::filesystem::is_directory(o.a) != std::filesystem::is_directory(o.b)) {
    throw InputError("cannot compare a directory with a file: " + o.a + ", " + o.b);
  }
  return std::filesystem::is_directory(o.a) ? diff_directories(o) : diff_files(o);
}

}  // namespace fplab
