// precision-flips (claim B5): greedy decoding in fp32 against bf16 and
// fp16, same weights, same prompts: which answers diverge, and where.
#include <fmt/format.h>

#include "experiments/experiment.hpp"
#include "io/numbers.hpp"
#include "model/model_experiments.hpp"

namespace fplab::model::experiments {
namespace {

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const Model& m = experiment_model(p, out);
  const auto n_prompts = static_cast<std::size_t>(p.integer("prompts"));
  const auto steps = static_cast<std::size_t>(p.integer("steps"));
  const auto prompts = encode_prompts(m, n_prompts);
  GreedyResult r32, r16b, r16h;
  {
    const OneThread one;
    r32 =
        greedy_decode(m, {ReductionPolicy::batch_invariant, PrecisionPolicy::fp32}, prompts, steps);
    ctx.progress(1, 3, "decode");
    r16b =
        greedy_decode(m, {ReductionPolicy::batch_invariant, PrecisionPolicy::bf16}, prompts, steps);
    ctx.progress(2, 3, "decode");
    r16h =
        greedy_decode(m, {ReductionPolicy::batch_invariant, PrecisionPolicy::fp16}, prompts, steps);
    ctx.finish_progress();
  }
  Table t{"texts", "Greedy continuations, fp32 vs bf16 vs fp16 (batch-invariant)", "prompt"};
  t.add_column("prompt", "prompt");
  t.add_column("fp32", "fp32");
  t.add_column("bf16", "bf16");
  t.add_column("bf16_first", "bf16: first differing step (-1: none)");
  t.add_column("fp16", "fp16");
  t.add_column("fp16_first", "fp16: first differing step (-1: none)");
  t.caption = fmt::format("{} steps after each prompt; steps count from 0.", steps);
  std::int64_t div_b = 0, div_h = 0, sum_b = 0, sum_h = 0;
  for (std::size_t i = 0; i < n_prompts; ++i) {
    const auto fb = first_difference(r32.tokens[i], r16b.tokens[i]);
    const auto fh = first_difference(r32.tokens[i], r16h.tokens[i]);
    const auto sb = fb < steps ? static_cast<std::int64_t>(fb) : -1;
    const auto sh = fh < steps ? static_cast<std::int64_t>(fh) : -1;
    if (sb >= 0) {
      ++div_b;
      sum_b += sb;
    }
    if (sh >= 0) {
      ++div_h;
      sum_h += sh;
    }
    t.add_row(std::to_string(i + 1))
        .set("prompt", Value::text(std::string(kPrompts[i])))
        .set("fp32", Value::text(m.tokenizer().decode(r32.tokens[i])))
        .set("bf16", Value::text(m.tokenizer().decode(r16b.tokens[i])))
        .set("bf16_first", Value::integer(sb))
        .set("fp16", Value::text(m.tokenizer().decode(r16h.tokens[i])))
        .set("fp16_first", Value::integer(sh));
  }
  out.add_table(std::move(t));
  Table s{"summary", "Answers that diverge from fp32", "precision"};
  s.add_column("diverged", "diverged");
  s.add_column("prompts", "of");
  s.add_column("mean_first", "mean first differing step", ".1f");
  const double mb = div_b > 0 ? static_cast<double>(sum_b) / static_cast<double>(div_b) : 0.0;
  const double mh = div_h > 0 ? static_cast<double>(sum_h) / static_cast<double>(div_h) : 0.0;
  s.add_row("bf16")
      .set("diverged", Value::integer(div_b))
      .set("prompts", Value::integer(static_cast<std::int64_t>(n_prompts)))
      .set("mean_first", Value::f64(mb));
  s.add_row("fp16")
      .set("diverged", Value::integer(div_h))
      .set("prompts", Value::integer(static_cast<std::int64_t>(n_prompts)))
      .set("mean_first", Value::f64(mh));
  out.add_table(std::move(s));
  const bool half = 2 * div_b >= static_cast<std::int64_t>(n_prompts);
  out.add_verdict(
      "B5",
      fmt::format("{} of {} bf16 answers diverge from fp32 within {} steps{}; fp16: {} of {}",
                  div_b, n_prompts, steps,
                  div_b > 0 ? fmt::format(", first at step {:.1f} on average", mb) : "", div_h,
                  n_prompts),
      (div_b > 0 && half) ? Status::reproduced : Status::differs,
      "reproduced when bf16 changes at least half of the greedy answers; the step depends on the "
      "model's "
      "gaps (top2-gaps)");
}

Experiment make() {
  return {.info = {.id = "precision-flips",
                   .title = "Greedy text in fp32 vs bf16 and fp16",
                   .description = "B5: how many greedy answers diverge between fp32 and bf16/fp16, "
                                  "and at which step",
                   .order = 320,
                   .seed = 1,
                   .claims = {"B5"},
                   .params = {ParamSpec::integer("prompts", "prompts (of the fixed 12)", "8", "2",
                                                 1, 12),
                              ParamSpec::integer("steps", "greedy steps per prompt", "120", "30", 1,
                                                 190),
                              model_param()}},
          .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace
}  // namespace fplab::model::experiments
