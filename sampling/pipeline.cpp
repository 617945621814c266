#include "sampling/pipeline.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "io/numbers.hpp"

namespace fplab::sampling {

namespace {

constexpr std::array kStages = {Stage::penalties, Stage::temperature, Stage::top_k, Stage::top_p};

[[noreturn]] void fail(const std::string& message) { throw std::invalid_argument(message); }

void check_finite(const char* what, double x) {
  if (!std::isfinite(x)) fail(std::string(what) + " must be a finite number, not " + to_decimal(x));
}

// Counts of each token in the history; throws for an id outside [0, vocab).
std::vector<std::int64_t> counts(std::span<const Token> history, std::size_t vocab) {
  std::vector<std::int64_t> n(vocab, 0);
  for (const Token t : history) {
    if (t < 0 || static_cast<std::size_t>(t) >= vocab) {
      fail("history token " + std::to_string(t) + " is outside the vocabulary of " +
           std::to_string(vocab));
    }
    ++n[static_cast<std::size_t>(t)];
  }
  return n;
}

// Survivors in decreasing logit, ties by increasing id.
std::vector<Token> ranked(std::span<const double> logits, std::vector<Token> tokens) {
  std::sort(tokens.begin(), tokens.end(), [&](Token a, Token b) {
    const double la = logits[static_cast<std::size_t>(a)];
    const double lb = logits[static_cast<std::size_t>(b)];
    return la > lb || (la == lb && a < b);
  });
  return tokens;
}

std::vector<double> softmax_of(std::span<const double> logits, std::span<const Token> tokens) {
  double m = -std::numeric_limits<double>::infinity();
  for (const Token t : tokens) m = std::max(m, logits[static_cast<std::size_t>(t)]);
  std::vector<double> p(tokens.size());
  double z = 0.0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    p[i] = std::exp(logits[static_cast<std::size_t>(tokens[i])] - m);
    z += p[i];
  }
  for (double& x : p) x /= z;
  return p;
}

void keep(Candidates& c, std::vector<Token> survivors) {
  std::sort(survivors.begin(), survivors.end());
  c.tokens = std::move(survivors);
}

}  // namespace

std::string_view name(Stage s) {
  switch (s) {
    case Stage::penalties:
      return "penalties";
    case Stage::temperature:
      return "temperature";
    case Stage::top_k:
      return "top-k";
    case Stage::top_p:
      return "top-p";
  }
  return "?";
}

Stage parse_stage(std::string_view text) {
  for (const Stage s : kStages) {
    if (name(s) == text) return s;
  }
  fail("unknown sampling stage '" + std::string(text) +
       "' (valid: penalties, temperature, top-k, top-p)");
}

std::vector<Stage> parse_order(std::string_view text) {
  std::vector<Stage> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    out.push_back(parse_stage(text.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string describe(const std::vector<Stage>& order) {
  std::string s;
  for (const Stage st : order) {
    s += name(st);
    s += " -> ";
  }
  return s + "renormalise -> draw";
}

std::vector<Stage> default_order() { return {kStages.begin(), kStages.end()}; }

void SamplingConfig::validate(std::size_t vocab_size) const {
  check_finite("presence_penalty", presence_penalty);
  check_finite("frequency_penalty", frequency_penalty);
  check_finite("repetition_penalty", repetition_penalty);
  if (repetition_penalty <= 0.0) {
    fail("repetition_penalty must be > 0 (1 = off), not " + to_decimal(repetition_penalty));
  }
  check_finite("temperature", temperature);
  if (std::isnan(top_p) || top_p < 0.0 || top_p > 1.0) {
    fail("top_p must be in [0, 1] (1 = off), not " + to_decimal(top_p));
  }
  if (top_k < 0 || static_cast<std::uint64_t>(top_k) > vocab_size) {
    fail("top_k must be between 0 (off) and the vocabulary size " + std::to_string(vocab_size) +
         ", not " + std::to_string(top_k));
  }
  bool ok = order.size() == kStages.size();
  for (const Stage s : kStages) ok = ok && std::count(order.begin(), order.end(), s) == 1;
  if (!ok) fail("the stage order must name each of penalties, temperature, top-k, top-p once");
}

Candidates all_candidates(std::span<const float> logits) {
  if (logits.empty()) fail("empty row of logits");
  Candidates c;
  c.logits.resize(logits.size());
  c.tokens.reserve(logits.size());
  bool any_finite = false;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const float x = logits[i];
    if (std::isnan(x) || x == std::numeric_limits<float>::infinity()) {
      fail("the logit of token " + std::to_string(i) + " is " + to_decimal(x));
    }
    any_finite = any_finite || std::isfinite(x);
    c.logits[i] = x;
    c.tokens.push_back(static_cast<Token>(i));
  }
  if (!any_finite) fail("no token has a finite logit");
  return c;
}

void apply_presence_frequency(std::span<double> logits, std::span<const Token> history,
                              double presence, double frequency) {
  const auto n = counts(history, logits.size());
  for (std::size_t t = 0; t < logits.size(); ++t) {
    if (n[t] == 0) continue;
    logits[t] -= frequency * static_cast<double>(n[t]) + presence;
  }
}

void apply_repetition(std::span<double> logits, std::span<const Token> history, double theta) {
  const auto n = counts(history, logits.size());
  for (std::size_t t = 0; t < logits.size(); ++t) {
    if (n[t] == 0) continue;
    logits[t] = logits[t] > 0.0 ? logits[t] / theta : logits[t] * theta;
  }
}

void apply_stage(Stage stage, const SamplingConfig& config, std::span<const Token> history,
                 Candidates& c) {
  switch (stage) {
    case Stage::penalties:
      if (config.presence_penalty != 0.0 || config.frequency_penalty != 0.0) {
        apply_presence_frequency(c.logits, history, config.presence_penalty,
                                 config.frequency_penalty);
      }
      if (config.repetition_penalty != 1.0)
        apply_repetition(c.logits, history, config.repetition_penalty);
      return;
    case Stage::temperature: {
      const double t = config.temperature;
      if (t <= 0.0) {
        keep(c, {ranking(c).front()});
      } else if (t != 1.0) {
        for (const Token tok : c.tokens) c.logits[static_cast<std::size_t>(tok)] /= t;
      }
      return;
    }
    case Stage::top_k: {
      const auto k = static_cast<std::size_t>(config.top_k);
      if (k == 0 || k >= c.tokens.size()) return;
      auto r = ranking(c);
      r.resize(k);
      keep(c, std::move(r));
      return;
    }
    case Stage::top_p: {
      if (config.top_p >= 1.0 || c.tokens.size() == 1) return;
      const auto r = ranking(c);
      const auto p = softmax_of(c.logits, r);
      keep(c,
           {r.begin(), r.begin() + static_cast<std::ptrdiff_t>(tokens_for_mass(p, config.top_p))});
      return;
    }
  }
}

Candidates apply_stages(std::span<const float> logits, std::span<const Token> history,
                        const SamplingConfig& config, std::vector<std::size_t>* sizes) {
  config.validate(logits.size());
  Candidates c = all_candidates(logits);
  if (sizes != nullptr) sizes->clear();
  for (const Stage s : config.order) {
    apply_stage(s, config, history, c);
    if (sizes != nullptr) sizes->push_back(c.tokens.size());
  }
  return c;
}

std::vector<Token> ranking(const Candidates& c) { return ranked(c.logits, c.tokens); }

std::vector<Token> ranking(std::span<const double> logits) {
  std::vector<Token> all(logits.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<Token>(i);
  return ranked(logits, std::move(all));
}

std::vector<double> softmax(const Candidates& c) { return softmax_of(c.logits, c.tokens); }

std::vector<double> softmax(std::span<const float> logits, double t) {
  if (!(t > 0.0) || !std::isfinite(t))
    fail("softmax temperature must be finite and > 0, not " + to_decimal(t));
  Candidates c = all_candidates(logits);
  if (t != 1.0) {
    for (double& x : c.logits) x /= t;
  }
  return softmax(c);
}

Token argmax(std::span<const float> logits) {
  if (logits.empty()) fail("argmax of an empty row");
  std::size_t best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<Token>(best);
}

Token argmax(std::span<const double> logits) {
  if (logits.empty()) fail("argmax of an empty row");
  std::size_t best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<Token>(best);
}

Token draw(std::span<const Token> tokens, std::span<const double> probs, double u) {
  if (tokens.empty() || tokens.size() != probs.size())
    fail("draw needs one probability per candidate");
  double cum = 0.0;
  std::size_t last_positive = 0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    cum += probs[i];
    if (probs[i] > 0.0) last_positive = i;
    if (u < cum) return tokens[i];
  }
  return tokens[last_positive];
}

std::size_t tokens_for_mass(std::span<const double> probs, double mass) {
  std::vector<double> sorted(probs.begin(), probs.end());
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  double cum = 0.0;
  std::size_t n = 0;
  while (n < sorted.size()) {
    cum += sorted[n];
    ++n;
    if (cum >= mass) break;
  }
  return std::max<std::size_t>(n, 1);
}

Step sample_step(std::span<const float> logits, std::span<const Token> history,
                 const SamplingConfig& config, Generator& g) {
  const double u = g.uniform();  // one draw per step, whatever the step does
  Candidates c = apply_stages(logits, history, config);
  Step s;
  s.probabilities = softmax(c);
  s.u = u;
  s.token = draw(c.tokens, s.probabilities, u);
  s.candidates = std::move(c.tokens);
  return s;
}

}  // namespace fplab::sampling
