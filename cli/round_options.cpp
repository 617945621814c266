#include "cli/round_options.hpp"

#include "cli/request_args.hpp"

namespace fplab::cli {

void add_round_options(CLI::App& app, RoundRequest& r) {
  CLI::App* cmd = &app;
  cmd->add_option("values", r.values, "Values (decimal or hex, e.g. 16.07 0x1.8p-3)");
  cmd->add_option("-F,--format", r.formats,
                  "Format (repeatable; default: fp32 bf16 fp16 tf32 e4m3 e5m2); also "
                  "p=11,emax=15[,emin=-14][,subnormals=off][,specials=fn][,overflow=saturate]")
      ->allow_extra_args(false);
  cmd->add_option("-m,--mode", r.mode, "Rounding: rne, rtz, up, down, sr (stochastic)");
  cmd->add_flag("--via-float", r.via_float,
                "Round to float (nearest even) first: two roundings, as casts through float do");
  cmd->add_option("--seed", r.seed, "Seed of stochastic rounding");
  cmd->add_flag("--json", r.json, "Print JSON");
  cmd->add_flag("--narrow", r.narrow,
                "Fit 80 columns: each field's hex and notes on a line of their own (the default "
                "on a terminal narrower than the wide layout's 112 columns)");
  cmd->add_flag("--limits", r.limits, "Print the formats' parameters and limits instead");
}

RoundRequest parse_round_request(const std::vector<std::string>& args) {
  RoundRequest r;
  CLI::App app("fplab round");
  add_round_options(app, r);
  parse_request_args(app, args);
  return r;
}

}  // namespace fplab::cli
