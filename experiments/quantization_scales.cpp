// quantization-scales (claim D6): fp8 activation scales couple a request to
// its batch mates with no sum reordered. Each request prompt is decoded
// greedily alone and beside one batch mate whose prompt carries an
// outlier activation, under batch-invariant fp32 reductions, with every
// decoder linear in E4M3 under one of four activation-scale rules.
#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "experiments/quantization_scales.hpp"
#include "io/numbers.hpp"
#include "lab/experiment.hpp"
#include "reports/argument_ids.hpp"
#include "reports/columns.hpp"

namespace fplab::model::experiments {

namespace {

constexpr ReductionPolicy kReduction = ReductionPolicy::batch_invariant;
const Policy kPolicy{kReduction, PrecisionPolicy::fp32};

// Greedy decoding of `prompts` in one Batch with every decoder linear in
// fp8: sequence 0's tokens and the logits that chose each of them.
struct QuantizedDecode {
  std::vector<Token> tokens;
  std::vector<std::vector<float>> step_logits;  // [step][vocab], sequence 0
};

QuantizedDecode decode_quantized(const Model& m, ActivationQuantizer& q,
                                 std::span<const std::vector<Token>> prompts, std::size_t steps) {
  Batch batch(m, kPolicy, prompts.size());
  batch.quantize_activations(&q);
  std::vector<std::vector<Token>> feed(prompts.begin(), prompts.end());
  QuantizedDecode d;
  for (std::size_t step = 0; step < steps; ++step) {
    const Logits& logits = batch.forward(feed);
    for (std::size_t b = 0; b < prompts.size(); ++b) {
      const Token t = top_two(logits.last(b)).first;
      if (b == 0) {
        const auto row = logits.last(0);
        d.step_logits.emplace_back(row.begin(), row.end());
        d.tokens.push_back(t);
      }
      feed[b].assign(1, t);
    }
  }
  return d;
}

}  // namespace

std::vector<Token> calibration_prompt(const Model& m) {
  std::string text;
  for (const auto f : kFillers) {
    if (!text.empty()) text += ' ';
    text += f;
  }
  auto tokens = m.tokenizer().encode(text);
  tokens.resize(std::min(tokens.size(), m.config().context));
  return tokens;
}

BatchMate make_batch_mate(const Model& m, std::span<const std::vector<Token>> requests) {
  ActivationQuantizer probe(m, PrecisionPolicy::fp32, ActivationScale::per_token);
  BatchMate mate;
  for (std::size_t i = 0; i < kFillers.size(); ++i) {
    const auto tokens = m.tokenizer().encode(kFillers[i]);
    const float a = probe.largest_input(kReduction, tokens);
    if (a > mate.mate_amax) {
      mate.mate_amax = a;
      mate.filler = i;
      mate.prompt = tokens;
    }
  }
  for (const auto& r : requests)
    mate.request_amax = std::max(mate.request_amax, probe.largest_input(kReduction, r));
  return mate;
}

QuantizationScales measure_quantization_scales(const Model& m, std::size_t n_prompts,
                                               std::size_t steps, RunContext& ctx) {
  const auto prompts = encode_prompts(m, n_prompts);
  const OneThread one;
  QuantizationScales out;
  out.mate = make_batch_mate(m, prompts);
  std::vector<std::vector<float>> unquantized;
  unquantized.reserve(prompts.size());
  for (const auto& p : prompts) unquantized.push_back(last_logits(m, kPolicy, std::span(&p, 1))[0]);
  const std::uint64_t total = kActivationScales.size() * prompts.size();
  std::uint64_t done = 0;
  for (const ActivationScale rule : kActivationScales) {
    // A rule the model's widths rule out (mx-block32 needs multiples of 32)
    // is left out, and said so.
    std::optional<ActivationQuantizer> made;
    try {
      made.emplace(m, PrecisionPolicy::fp32, rule);
    } catch (const std::invalid_argument& e) {
      out.left_out.push_back(fmt::format("{} ({})", name(rule), e.what()));
      continue;
    }
    ActivationQuantizer& q = *made;
    if (rule == ActivationScale::static_calibrated) q.calibrate(kReduction, calibration_prompt(m));
    RuleEffect e;
    e.rule = rule;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      const QuantizedDecode alone = decode_quantized(m, q, std::span(&prompts[i], 1), steps);
      const std::vector<std::vector<Token>> pair{prompts[i], out.mate.prompt};
      const QuantizedDecode batched = decode_quantized(m, q, pair, steps);
      RequestEffect r;
      r.alone = alone.tokens;
      r.batched = batched.tokens;
      const std::size_t flip = first_difference(alone.tokens, batched.tokens);
      r.first_flip = flip < steps ? static_cast<std::int64_t>(flip) : -1;
      // Steps 0..flip saw the same tokens in both runs.
      for (std::size_t s = 0; s < steps && s <= flip; ++s) {
        const Perturbation p = compare_logits(alone.step_logits[s], batched.step_logits[s]);
        r.logits.differing += p.differing;
        r.logits.max_change = std::max(r.logits.max_change, p.max_change);
      }
      e.vs_unquantized = std::max(e.vs_unquantized,
                                  compare_logits(alone.step_logits[0], unquantized[i]).max_change);
      if (r.logits.differing > 0) ++e.prompts_moved;
      e.differing += r.logits.differing;
      e.max_change = std::max(e.max_change, r.logits.max_change);
      if (r.first_flip >= 0) ++e.answers_flipped;
      e.requests.push_back(std::move(r));
      ctx.progress(++done, total, "decode");
    }
    out.rules.push_back(std::move(e));
  }
  ctx.finish_progress();
  return out;
}

namespace quantization_scales_experiment {

void record_rules(const QuantizationScales& q, std::size_t steps, ExperimentRecord& out) {
  using E = RuleEffect;
  Columns<E> columns;
  columns.add(ColumnId{"prompts_moved"}, "requests whose logits moved", &E::prompts_moved)
      .add(ColumnId{"differing"}, "differing logits", &E::differing)
      .add(ColumnId{"max_change"}, "largest |logit change|", &E::max_change, ".3e", true)
      .add(ColumnId{"answers_flipped"}, "greedy answers that changed", &E::answers_flipped)
      .add(ColumnId{"vs_unquantized"}, "fp8 vs unquantized fp32: largest |logit change|",
           &E::vs_unquantized, ".3e", true);
  Table t = columns.table(TableId{"rules"},
                          "A request alone vs beside an outlier batch mate, fp8 linears",
                          "activation scale");
  const auto n = q.rules.empty() ? 0 : q.rules.front().requests.size();
  t.caption = fmt::format(
      "{} request prompts, {} greedy steps each, batch-invariant fp32 reductions (no sum "
      "depends on the batch). Logits are compared at every step both runs reached with the same "
      "tokens; every decoder linear in E4M3, lm_head unquantized.",
      n, steps);
  for (const auto& e : q.rules) columns.add_row(t, std::string(name(e.rule)), e);
  out.add_table(std::move(t));
}

void record_mate(const Model& m, const QuantizationScales& q, ExperimentRecord& out) {
  // A row: its text (none for the requests' row) and its largest input.
  struct MateRow {
    std::optional<std::string> value;
    float amax = 0;
  };
  Columns<MateRow> columns;
  columns.add(ColumnId{"value"}, "value", &MateRow::value)
      .add(ColumnId{"amax"}, "largest |input| of a decoder linear", &MateRow::amax, ".6g", true);
  Table t = columns.table(TableId{"batch_mate"}, "The batch mate and its outlier", "what");
  t.caption =
      "The mate is the filler prompt whose largest input to a decoder linear (unquantized fp32, "
      "the prompt alone) is the largest of the 15 fillers: one activation at one position, "
      "larger than any the requests produce.";
  columns.add_row(t, "batch mate", {decoded_text(m, q.mate.prompt), q.mate.mate_amax});
  columns.add_row(t, "requests (largest, each alone)", {std::nullopt, q.mate.request_amax});
  out.add_table(std::move(t));
}

void record_answers(const Model& m, const QuantizationScales& q, ExperimentRecord& out) {
  // One row per request, by its index; a column per rule, then per-tensor's
  // two texts.
  const RuleEffect& per_tensor = q.rules.front();
  Columns<std::size_t> columns;
  columns.add(ColumnId{"prompt"}, "prompt", [](std::size_t i) { return kPrompts[i]; });
  for (const auto& e : q.rules) {
    const std::string id(name(e.rule));
    columns.add(ColumnId{id}, id, [&e](std::size_t i) { return e.requests[i].first_flip; });
  }
  columns
      .add(ColumnId{"alone"}, "per-tensor, alone",
           [&](std::size_t i) { return decoded_text(m, per_tensor.requests[i].alone); })
      .add(ColumnId{"batched"}, "per-tensor, beside the mate",
           [&](std::size_t i) { return decoded_text(m, per_tensor.requests[i].batched); });
  Table t = columns.table(TableId{"answers"},
                          "Per request: first greedy step that changes beside the mate (-1: none)",
                          "prompt");
  for (std::size_t i = 0; i < per_tensor.requests.size(); ++i)
    columns.add_row(t, std::to_string(i + 1), i);
  out.add_table(std::move(t));
}

void record_perturbation(const QuantizationScales& q, ExperimentRecord& out) {
  namespace ids = argument_ids::perturbation;
  Columns<double> columns;
  columns.add(
      ids::size, "size", [](double d) { return d; }, ".3e", true);
  Table t = columns.table(
      ids::table, "For the headline figure: the per-tensor scale's logit change", "perturbation");
  columns.add_row(t, "fp8 per-tensor scale, outlier batch mate", q.rules.front().max_change);
  out.add_table(std::move(t));
}

void verdict(const QuantizationScales& q, ExperimentRecord& out) {
  const RuleEffect& per_tensor = q.rules.front();
  std::int64_t others = 0;
  for (std::size_t i = 1; i < q.rules.size(); ++i) others += q.rules[i].differing;
  const auto n = static_cast<std::int64_t>(per_tensor.requests.size());
  out.add_verdict(
      "D6",
      fmt::format("per-tensor: the outlier mate moves {} logits of {} of {} requests (largest "
                  "change {}) and changes {} greedy answers; per-token, mx-block32 and static: {} "
                  "logits move",
                  per_tensor.differing, per_tensor.prompts_moved, n,
                  to_prose(per_tensor.max_change), per_tensor.answers_flipped, others),
      per_tensor.differing > 0 && others == 0 ? Status::reproduced : Status::differs,
      "reproduced when per-tensor moves a request's logits and the other three rules leave every "
      "bit; batch-invariant reductions, so only the scale couples the rows");
}

void run(const Params& p, RunContext& ctx, ExperimentRecord& out) {
  const Model& m = experiment_model(p, out);
  const auto steps = static_cast<std::size_t>(p.integer("steps"));
  const auto q =
      measure_quantization_scales(m, static_cast<std::size_t>(p.integer("prompts")), steps, ctx);
  record_rules(q, steps, out);
  record_mate(m, q, out);
  record_answers(m, q, out);
  record_perturbation(q, out);
  verdict(q, out);
  if (!q.left_out.empty()) {
    out.add_note(fmt::format("Left out, the model's widths do not allow them: {}.",
                             fmt::join(q.left_out, "; ")));
  }
}

Experiment make() {
  return {
      .info = {.id = "quantization-scales",
               .title = "fp8 activation scales that couple a request to its batch",
               .description = "D6: a request alone vs beside an outlier batch mate with E4M3 "
                              "linears, per activation-scale rule (per-tensor, per-token, "
                              "MX blocks, static)",
               .order = 345,
               .seed = 1,
               .claims = {"D6"},
               .params = {ParamSpec::integer("prompts", "request prompts (of the fixed 12)", "8",
                                             "2", 1, 12)
                              .quick_when_large("1")
                              .full_when_large("2"),
                          ParamSpec::integer("steps", "greedy steps per prompt", "24", "8", 1, 150)
                              .quick_when_large("1")
                              .full_when_large("4"),
                          model_param()},
               .large_quick = model::experiments::large_model_quick()},
      .run = run};
}

FPLAB_REGISTER_EXPERIMENT(make);

}  // namespace quantization_scales_experiment
}  // namespace fplab::model::experiments
