#include "cli/diff_options.hpp"

#include "cli/numeric_options.hpp"
#include "cli/request_args.hpp"

namespace fplab::cli {

DiffOptionHandles add_diff_options(CLI::App& app, DiffRequest& r) {
  CLI::App* cmd = &app;
  cmd->add_option("a", r.a,
                  "File A (the baseline): results.json, .npy, .safetensors or text; or a "
                  "directory of them (with --update it may not exist yet)")
      ->required();
  cmd->add_option("b", r.b, "File B, of the same kind (a directory when A is one)")
      ->required()
      ->check(CLI::ExistingPath);
  cmd->add_option("-t,--tolerances", r.tolerances,
                  "Tolerance file: lines 'PATTERN ignore' or 'PATTERN ulps=N or atol=X' (terms "
                  "ulps=N, rel=X, atol=X joined by 'or' or 'and'), over results paths, files and "
                  "FILE/ARRAY (docs/drift.md; a rule that decides nothing is reported)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--ulps", r.ulps,
                  "Arrays only: accept elements at most N ulps apart (numpy nulp_diff's count)")
      ->check(integer_at_least(0));
  cmd->add_option("--rel", r.rel,
                  "Arrays only: accept elements with |b - a| / |a| <= X (any one tolerance "
                  "suffices)")
      ->check(non_negative_number());
  cmd->add_option("--atol", r.atol,
                  "Arrays only: accept elements with |b - a| <= X (for values near zero, where "
                  "relative errors are large)")
      ->check(non_negative_number());
  auto* dtype = cmd->add_option("--dtype", r.dtype, "Arrays only: type text numbers are rounded to")
                    ->check(CLI::IsMember({"float32", "float64"}));
  cmd->add_flag("--strict-dtype", r.strict_dtype,
                "Arrays only: fail (exit 2) where text numbers look float32 but are compared as "
                "float64, instead of warning");
  cmd->add_flag("--update", r.update,
                "Write B over A (the baseline) after comparing, or when A does not exist yet, "
                "atomically, and say so (exit 0 unless the input is bad)");
  cmd->add_flag("--shared", r.shared,
                "Results files: compare only the experiments both files hold and list the others "
                "(without it, files with different experiments are refused)");
  cmd->add_flag("--bfloat16-void", r.bfloat16_void,
                "Arrays only: read .npy dtype '<V2'/'|V2' (ml_dtypes' bfloat16) as bfloat16");
  cmd->add_option("--limit", r.limit,
                  "Most changed values (arrays: drifted elements, worst first; and arrays) to list")
      ->check(integer_at_least(1));
  cmd->add_flag("--json", r.json, "Print the comparison as JSON");
  cmd->add_flag("--markdown", r.markdown,
                "Print a Markdown summary with a per-table (per-array) count and max ulps, "
                "for a pull-request comment");

  return {dtype};
}

void finish_diff_request(const DiffOptionHandles& h, DiffRequest& r) {
  r.dtype_given = h.dtype->count() > 0;
}

DiffRequest parse_diff_request(const std::vector<std::string>& args) {
  DiffRequest r;
  CLI::App app("fplab diff");
  const DiffOptionHandles h = add_diff_options(app, r);
  parse_request_args(app, args);
  finish_diff_request(h, r);
  return r;
}

}  // namespace fplab::cli
