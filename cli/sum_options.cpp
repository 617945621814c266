#include "cli/sum_options.hpp"

#include "cli/request_args.hpp"

namespace fplab::cli {

void add_sum_options(CLI::App& app, SumRequest& r) {
  CLI::App* cmd = &app;
  cmd->add_option("numbers", r.numbers, "Numbers to sum (decimal or hex, e.g. 0.1 1e20 -1e20)");
  cmd->add_option("-f,--file", r.file,
                  "Read the numbers from a .npy, .safetensors or text file (a lone argument "
                  "naming an existing file is read the same way)");
  cmd->add_option("--axis", r.axis,
                  "For an N-D array: sum each 1-D slice along this axis (default: the whole "
                  "array, flattened in C order)");
  cmd->add_option(
      "--tensor", r.tensor,
      "The tensor of a .safetensors file, or the column of a text file with a header row, to "
      "sum (needed when it holds several)");
  cmd->add_flag("--bfloat16-void", r.bfloat16_void,
                "Read .npy dtype '<V2'/'|V2' (how np.save writes ml_dtypes' bfloat16) as bfloat16");
  cmd->add_option("--dtype", r.dtype, "Precision for numbers given as text")
      ->check(CLI::IsMember({"float32", "float64"}));
  cmd->add_option("-s,--strategy", r.strategies,
                  "Strategies to run (repeatable; default: all; see 'fplab list')")
      ->allow_extra_args(false);
  auto* json = cmd->add_flag("--json", r.json, "Print JSON, one entry per strategy");
  auto* csv =
      cmd->add_flag("--csv", r.csv,
                    "Print CSV, one row per strategy (errors vs the exact sum, exact decimal, hex "
                    "and bits)")
          ->excludes(json);
  cmd->add_flag("--narrow", r.narrow,
                "The text table in 80 columns, two lines per strategy (the default on a "
                "terminal narrower than the wide table's 148 columns)");
  cmd->add_flag("--show-tree", r.show_tree,
                "Also print how each strategy parenthesises the sum, e.g. ((x0 + x1) + (x2 + "
                "x3)) (at most 16 numbers; text and --json)")
      ->excludes(csv);
  cmd->add_flag("--no-gpu", r.no_gpu,
                "Leave out the table of the sum on every GPU's matrix units (text and --json; "
                "the CSV never has it)");
}

SumRequest parse_sum_request(const std::vector<std::string>& args) {
  SumRequest r;
  CLI::App app("fplab sum");
  add_sum_options(app, r);
  parse_request_args(app, args);
  return r;
}

}  // namespace fplab::cli
