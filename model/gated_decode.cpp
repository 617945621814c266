#include "model/gated_decode.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "model/decode.hpp"
#include "model/enclosure.hpp"
#include "model/first_order_bound.hpp"

namespace fplab::model {

namespace {

const char* const kGateSpellings = "bound, margin:TAU, window:W, fast or invariant";

template <class T>
bool parse_number(std::string_view text, T& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

Gate parse_gate(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(
        fmt::format("gate '{}': {} (valid: {})", text, why, kGateSpellings));
  };
  if (text == "bound") return {GateKind::bound};
  if (text == "fast") return {GateKind::fast};
  if (text == "invariant") return {GateKind::invariant};
  const auto colon = text.find(':');
  const std::string_view head = text.substr(0, colon);
  const std::string_view arg = colon == std::string_view::npos ? "" : text.substr(colon + 1);
  if (head == "margin" && colon != std::string_view::npos) {
    Gate g{GateKind::margin};
    if (!parse_number(arg, g.tau) || !std::isfinite(g.tau) || g.tau < 0)
      throw bad("TAU must be a finite number >= 0");
    return g;
  }
  if (head == "window" && colon != std::string_view::npos) {
    Gate g{GateKind::window};
    if (!parse_number(arg, g.window) || g.window == 0) throw bad("W must be an integer >= 1");
    return g;
  }
  throw bad("unknown gate");
}

std::string gate_spec(const Gate& g) {
  switch (g.kind) {
    case GateKind::fast:
      return "fast";
    case GateKind::invariant:
      return "invariant";
    case GateKind::bound:
      return "bound";
    case GateKind::margin:
      return fmt::format("margin:{}", g.tau);
    case GateKind::window:
      return fmt::format("window:{}", g.window);
  }
  return {};
}

std::string_view name(Certificate c) {
  switch (c) {
    case Certificate::none:
      return "none";
    case Certificate::rigorous:
      return "rigorous";
    case Certificate::first_order:
      return "first-order";
  }
  return {};
}

StepBounds::StepBounds(const Model& model, PrecisionPolicy precision, bool rigorous, double scale)
    : model_(&model),
      precision_(precision),
      rigorous_(rigorous && precision == PrecisionPolicy::fp32 && model.config().plain()),
      scale_(scale) {
  if (precision != PrecisionPolicy::fp32 && precision != PrecisionPolicy::bf16) {
    throw std::invalid_argument("step bounds: only fp32 and bf16, not " +
                                std::string(name(precision)));
  }
}

StepBounds::~StepBounds() = default;

// The enclosure after `tokens`: the kept one where its tokens begin them
// (taken out, so that no two threads share one), else a new one.
std::unique_ptr<EnclosedSequence> StepBounds::enclosure_after(std::span<const Token> tokens) {
  std::unique_ptr<EnclosedSequence> e;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (enclosed_ && enclosed_tokens_.size() <= tokens.size() &&
        std::equal(enclosed_tokens_.begin(), enclosed_tokens_.end(), tokens.begin())) {
      e = std::move(enclosed_);
    }
  }
  if (!e) e = std::make_unique<EnclosedSequence>(*model_);
  const std::size_t from = e->length();
  for (std::size_t i = from; i < tokens.size(); ++i) e->push(tokens[i]);
  const std::lock_guard<std::mutex> lock(mutex_);
  enclosed_pushes_ += static_cast<std::int64_t>(tokens.size() - from);
  return e;
}

std::int64_t StepBounds::enclosed_pushes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return enclosed_pushes_;
}

std::int64_t StepBounds::computed() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return computed_;
}

BoundVerdict StepBounds::verdict(std::span<const Token> prefix) {
  if (prefix.empty()) throw std::invalid_argument("step bounds: empty prefix");
  std::vector<Token> key(prefix.begin(), prefix.end());
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
  }
  // Computed outside the lock: two threads may compute the same prefix
  // (the same verdict), never block each other for seconds.
  FirstOrderSequence first(*model_, FirstOrderOptions{.precision = precision_, .scale = scale_});
  for (std::size_t i = 0; i + 1 < prefix.size(); ++i) first.push(prefix[i], false);
  const FirstOrderStep& step = first.push(prefix.back());
  BoundVerdict v;
  v.lead = step.lead;
  v.gap = step.gap;
  v.gap_bound = 0;
  v.routes_certified = step.routes_certified;
  double runner_gap = std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < step.centre.size(); ++j) {
    if (static_cast<Token>(j) == step.lead) continue;
    const double g = step.centre[static_cast<std::size_t>(step.lead)] - step.centre[j];
    if (g < runner_gap) runner_gap = g, v.gap_bound = step.gap_bound[j];
  }
  std::unique_ptr<EnclosedSequence> enclosed;
  if (rigorous_) {
    enclosed = enclosure_after(prefix.first(prefix.size() - 1));
    if (certified(enclosed->push(prefix.back()), step.lead)) v.by = Certificate::rigorous;
  }
  if (v.by == Certificate::none && step.certified) v.by = Certificate::first_order;
  const std::lock_guard<std::mutex> lock(mutex_);
  ++computed_;
  if (enclosed) {
    ++enclosed_pushes_;  // the prefix's last token
    enclosed_ = std::move(enclosed);
    enclosed_tokens_ = key;
  }
  memo_.emplace(std::move(key), v);
  return v;
}

GatedStats& GatedStats::operator+=(const GatedStats& o) {
  steps += o.steps;
  recomputed += o.recomputed;
  rigorous += o.rigorous;
  first_order += o.first_order;
  bound_violations += o.bound_violations;
  route_uncertified += o.route_uncertified;
  verifications += o.verifications;
  rollbacks += o.rollbacks;
  replayed += o.replayed;
  discarded += o.discarded;
  fast_tokens += o.fast_tokens;
  fast_passes += o.fast_passes;
  invariant_tokens += o.invariant_tokens;
  invariant_passes += o.invariant_passes;
  return *this;
}

namespace {

// `fast` made batch-invariant: one fixed order for every op, its per-op
// precisions kept (the gate compares orders, not formats).
Policy invariant_twin(const Policy& fast) {
  Policy p = fast;
  p.reduction = ReductionPolicy::batch_invariant;
  p.overrides.clear();
  return p;
}

// The decoder's state: both batches, each sequence's tokens and how far
// each batch has read them.
class GatedDecoder {
 public:
  GatedDecoder(const Model& model, const Policy& fast, std::span<const std::vector<Token>> prompts,
               std::size_t steps, const Gate& gate, StepBounds* bounds, std::size_t gated,
               const GatedProgress& progress)
      : progress_(progress),
        prompts_(prompts),
        steps_(steps),
        gate_(gate),
        bounds_(bounds),
        gated_(std::min(gated, prompts.size())),
        fast_(model, gate.kind == GateKind::invariant ? invariant_twin(fast) : fast,
              prompts.size()),
        shadow_(model, invariant_twin(fast), prompts.size()),
        out_(prompts.size()),
        feed_(prompts.begin(), prompts.end()),
        verified_(prompts.size(), 0),
        stats_(prompts.size()) {}

  GatedResult run() {
    const std::size_t B = prompts_.size();
    while (true) {
      bool any = false;
      for (std::size_t b = 0; b < B; ++b) {
        if (out_[b].size() >= steps_) feed_[b].clear();
        any = any || !feed_[b].empty();
      }
      if (!any) break;
      const Logits& logits = fast_.forward(feed_);
      ++total_.fast_passes;
      std::vector<Token> chosen(B, -1);
      std::vector<std::size_t> recompute;
      for (std::size_t b = 0; b < B; ++b) {
        if (feed_[b].empty()) continue;
        stats_[b].fast_tokens += static_cast<std::int64_t>(feed_[b].size());
        const TopTwo top = top_two(logits.last(b));
        chosen[b] = top.first;
        if (b < gated_ && !accept(b, top)) recompute.push_back(b);
      }
      if (!recompute.empty()) {
        const auto tokens = invariant_next(recompute);
        for (std::size_t i = 0; i < recompute.size(); ++i) {
          chosen[recompute[i]] = tokens[i];
          ++stats_[recompute[i]].recomputed;
        }
      }
      std::vector<std::size_t> verify;
      for (std::size_t b = 0; b < B; ++b) {
        if (feed_[b].empty()) continue;
        out_[b].push_back(chosen[b]);
        feed_[b].assign(1, chosen[b]);
        if (gate_.kind == GateKind::window && b < gated_ &&
            (out_[b].size() - verified_[b] >= gate_.window || out_[b].size() == steps_)) {
          verify.push_back(b);
        }
      }
      if (!verify.empty()) replay(verify);
      if (progress_) {
        std::size_t committed = 0;
        for (const auto& o : out_) committed += o.size();
        progress_(committed, B * steps_);
      }
    }
    GatedResult r;
    r.tokens = out_;
    for (std::size_t b = 0; b < B; ++b) {
      stats_[b].steps = static_cast<std::int64_t>(out_[b].size());
      total_ += stats_[b];
    }
    r.per_sequence = std::move(stats_);
    r.total = total_;
    return r;
  }

 private:
  // Whether gated sequence b takes the fast token (its top two `top`).
  bool accept(std::size_t b, const TopTwo& top) {
    switch (gate_.kind) {
      case GateKind::fast:
      case GateKind::invariant:
      case GateKind::window:
        return true;
      case GateKind::margin:
        return static_cast<double>(top.gap()) > gate_.tau;
      case GateKind::bound: {
        const auto seq = sequence(b);
        const BoundVerdict v = bounds_->verdict(seq);
        if (v.by == Certificate::none) {
          stats_[b].route_uncertified += v.routes_certified ? 0 : 1;
          return false;
        }
        if (v.lead != top.first) {  // the bound is wrong: never take the token
          ++stats_[b].bound_violations;
          return false;
        }
        ++(v.by == Certificate::rigorous ? stats_[b].rigorous : stats_[b].first_order);
        return true;
      }
    }
    return false;
  }

  // Prompt b followed by its tokens so far.
  [[nodiscard]] std::vector<Token> sequence(std::size_t b) const {
    std::vector<Token> s = prompts_[b];
    s.insert(s.end(), out_[b].begin(), out_[b].end());
    return s;
  }

  // One shadow pass that brings each sequence of `rows` up to `upto[i]`
  // tokens of its sequence; returns the logits.
  const Logits& catch_up(std::span<const std::size_t> rows, std::span<const std::size_t> upto) {
    std::vector<std::vector<Token>> feed(prompts_.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::size_t b = rows[i];
      const auto seq = sequence(b);
      feed[b].assign(seq.begin() + static_cast<std::ptrdiff_t>(shadow_.length(b)),
                     seq.begin() + static_cast<std::ptrdiff_t>(upto[i]));
      stats_[b].invariant_tokens += static_cast<std::int64_t>(feed[b].size());
    }
    ++total_.invariant_passes;
    return shadow_.forward(feed);
  }

  // The invariant policy's next token for each sequence of `rows` (after
  // all its tokens so far).
  std::vector<Token> invariant_next(std::span<const std::size_t> rows) {
    std::vector<std::size_t> upto;
    for (const auto b : rows) upto.push_back(prompts_[b].size() + out_[b].size());
    const Logits& logits = catch_up(rows, upto);
    std::vector<Token> t;
    for (const auto b : rows) t.push_back(top_two(logits.last(b)).first);
    return t;
  }

  // The window gate's replay of each sequence's unverified tokens.
  void replay(std::span<const std::size_t> rows) {
    std::vector<std::size_t> upto, from;
    for (const auto b : rows) {
      // Token k of out is predicted by the logits after P + k tokens; the
      // last one's by those after P + n - 1.
      upto.push_back(prompts_[b].size() + out_[b].size() - 1);
      from.push_back(shadow_.length(b));
    }
    const Logits& logits = catch_up(rows, upto);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const std::size_t b = rows[i];
      const std::size_t P = prompts_[b].size();
      ++stats_[b].verifications;
      stats_[b].replayed += static_cast<std::int64_t>(out_[b].size() - verified_[b]);
      for (std::size_t k = verified_[b]; k < out_[b].size(); ++k) {
        // The row of position P + k - 1 (rows start at position from[i]).
        const Token inv = top_two(logits.row(b, P + k - 1 - from[i])).first;
        if (inv == out_[b][k]) continue;
        ++stats_[b].rollbacks;
        stats_[b].discarded += static_cast<std::int64_t>(out_[b].size() - k);
        out_[b].resize(k + 1);
        out_[b][k] = inv;
        fast_.copy_prefix(b, fast_, b, P + k);
        shadow_.copy_prefix(b, shadow_, b, P + k);
        feed_[b].assign(1, inv);
        break;
      }
      verified_[b] = out_[b].size();
    }
  }

  const GatedProgress& progress_;
  std::span<const std::vector<Token>> prompts_;
  std::size_t steps_;
  Gate gate_;
  StepBounds* bounds_;
  std::size_t gated_;
  Batch fast_, shadow_;
  std::vector<std::vector<Token>> out_, feed_;
  std::vector<std::size_t> verified_;  // window: tokens of out_ verified
  std::vector<GatedStats> stats_;
  GatedStats total_;  // the passes (the per-sequence counts are added at the end)
};

}  // namespace

GatedResult gated_decode(const Model& model, const Policy& fast,
                         std::span<const std::vector<Token>> prompts, std::size_t steps,
                         const Gate& gate, StepBounds* bounds, std::size_t gated,
                         const GatedProgress& progress) {
  if (prompts.empty()) throw std::invalid_argument("gated decode: no prompts");
  for (const auto& p : prompts) {
    if (p.empty()) throw std::invalid_argument("gated decode: empty prompt");
    if (p.size() + steps - (steps > 0 ? 1 : 0) > model.config().context) {
      throw std::invalid_argument(
          fmt::format("gated decode: prompt of {} tokens + {} steps exceeds the context of {}",
                      p.size(), steps, model.config().context));
    }
  }
  if (gate.kind == GateKind::bound) {
    if (bounds == nullptr) throw std::invalid_argument("gated decode: the bound gate needs bounds");
    if (!fast.whole_pass_precision()) {
      throw std::invalid_argument(
          "gated decode: the bounds support one precision for the whole pass, not " +
          precision_spec(fast));
    }
    if (bounds->precision() != fast.precision) {
      throw std::invalid_argument("gated decode: the bounds are for " +
                                  std::string(name(bounds->precision())) + ", the decode " +
                                  std::string(name(fast.precision)));
    }
  }
  if (steps == 0) {
    GatedResult r;
    r.tokens.assign(prompts.size(), {});
    r.per_sequence.assign(prompts.size(), {});
    return r;
  }
  return GatedDecoder(model, fast, prompts, steps, gate, bounds, gated, progress).run();
}

}  // namespace fplab::model
