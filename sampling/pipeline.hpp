// The decoding pipeline: from one row of logits and the tokens so far to the
// next token (docs/sampling.md).
//
// The stages, in their standard (default) order:
//
//   penalties    presence and frequency penalties (OpenAI):
//                  l[t] -= frequency * count[t] + presence * (count[t] > 0)
//                then the CTRL repetition penalty (Keskar et al. 2019) on
//                every token seen: l[t] = l[t] > 0 ? l[t] / theta : l[t] * theta
//   temperature  l[t] /= T for T > 0; T <= 0 keeps only the argmax (ties:
//                the lowest token id) and makes the step greedy
//   top-k        keeps the k highest logits (ties: the lower id first); 0 = off
//   top-p        keeps the smallest set of highest-probability tokens whose
//                probability, renormalised over the tokens still in, adds up
//                to at least p (at least one token); p >= 1 = off
//   renormalise  softmax over the survivors
//   draw         one uniform double from the seeded generator, then the CDF
//                walk over the survivors in token-id order
//
// The first four are configurable in order (SamplingConfig::order, a
// permutation of them) so the effect of reordering can be measured;
// renormalise and draw always come last. Each stage is also a function of
// its own so that experiments can inspect the candidate set after any of
// them.
//
// Arithmetic: logits are widened to double (exactly) and every stage works
// in double; the softmax subtracts the maximum, sums exp(l - max) in token-id
// order, and divides. Only the last bits of exp depend on the C library.
//
// The generator (Generator): std::mt19937_64 seeded with SamplingConfig::seed
// (its output is fixed by the C++ standard), and exactly one 64-bit output
// per step, whatever the step does (even a greedy one): u = (g() >> 11) *
// 2^-53, a double in [0, 1) with 53 random bits. The token is the first
// survivor t, in token-id order, with u < p[first] + ... + p[t] (the running
// sum in double); if rounding leaves u at or above the total, the last
// survivor with a positive probability. No std::*_distribution is used (their
// output differs between standard libraries), so a seed gives the same u at
// step n on every platform, and therefore the same token unless the
// probabilities themselves differ -- which is the point of C6: a seed fixes
// the draw, not the distribution.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fplab::sampling {

using Token = std::int32_t;

enum class Stage { penalties, temperature, top_k, top_p };

// "penalties", "temperature", "top-k", "top-p".
std::string_view name(Stage s);
// Parses one of those spellings; throws std::invalid_argument otherwise.
Stage parse_stage(std::string_view text);
// Parses a comma-separated order such as "top-p,temperature,penalties,top-k"
// (not validated: see SamplingConfig::validate).
std::vector<Stage> parse_order(std::string_view text);
// "penalties -> temperature -> top-k -> top-p -> renormalise -> draw".
std::string describe(const std::vector<Stage>& order);

// penalties, temperature, top-k, top-p.
std::vector<Stage> default_order();

struct SamplingConfig {
  double presence_penalty = 0.0;    // subtracted once from every token already seen
  double frequency_penalty = 0.0;   // subtracted once per occurrence
  double repetition_penalty = 1.0;  // CTRL theta > 0; 1 = off
  double temperature = 1.0;         // <= 0: argmax
  std::int64_t top_k = 0;           // 0 = off
  double top_p = 1.0;               // in [0, 1]; 1 = off
  std::uint64_t seed = 0;
  std::vector<Stage> order = default_order();

  // Throws std::invalid_argument with a one-line message for a NaN or
  // infinite parameter, top_p outside [0, 1], top_k negative or larger than
  // vocab_size, repetition_penalty <= 0, or an order that is not a
  // permutation of the four stages.
  void validate(std::size_t vocab_size) const;
};

// The seeded generator; one uniform() per decoding step.
class Generator {
 public:
  explicit Generator(std::uint64_t seed) : engine_(seed) {}
  // (g() >> 11) * 2^-53: uniform in [0, 1), 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 engine_;
};

// The pipeline's state between stages.
struct Candidates {
  std::vector<double> logits;  // every token's current logit (a dropped token's is meaningless)
  std::vector<Token> tokens;   // the survivors, in increasing id order
};

// Every token a candidate, logits widened to double. Throws
// std::invalid_argument for an empty row, a NaN or +inf logit, or a row
// where no logit is finite (-inf is allowed: a masked token).
Candidates all_candidates(std::span<const float> logits);

// The penalties stage's two parts, on every token of `logits`. Throws
// std::invalid_argument for a history token outside the vocabulary.
void apply_presence_frequency(std::span<double> logits, std::span<const Token> history,
                              double presence, double frequency);
void apply_repetition(std::span<double> logits, std::span<const Token> history, double theta);

// One stage, in place.
void apply_stage(Stage stage, const SamplingConfig& config, std::span<const Token> history,
                 Candidates& c);

// All four stages in config.order (config is validated first). When
// `sizes` is given it receives the number of survivors after each stage.
Candidates apply_stages(std::span<const float> logits, std::span<const Token> history,
                        const SamplingConfig& config, std::vector<std::size_t>* sizes = nullptr);

// The survivors by decreasing logit, ties by increasing id.
std::vector<Token> ranking(const Candidates& c);
// Every token of a row by decreasing logit, ties by increasing id.
std::vector<Token> ranking(std::span<const double> logits);

// Softmax over the survivors (same order as c.tokens), in double.
std::vector<double> softmax(const Candidates& c);
// Softmax of a whole row of logits divided by t > 0 (t = 1: plain softmax).
std::vector<double> softmax(std::span<const float> logits, double t = 1.0);

// The argmax, ties to the lowest id.
Token argmax(std::span<const float> logits);
Token argmax(std::span<const double> logits);

// The CDF walk: the first tokens[i] with u < probs[0] + ... + probs[i].
Token draw(std::span<const Token> tokens, std::span<const double> probs, double u);

// How many tokens, taken in decreasing probability, hold at least `mass` of
// the probability (the top-p nucleus size for p = mass; at least 1).
std::size_t tokens_for_mass(std::span<const double> probs, double mass);

// One decoding step: apply_stages, softmax, one draw from `g`.
struct Step {
  std::vector<Token> candidates;      // survivors, increasing id
  std::vector<double> probabilities;  // for each survivor
  double u = 0.0;                     // the draw
  Token token = 0;                    // the chosen token
};
Step sample_step(std::span<const float> logits, std::span<const Token> history,
                 const SamplingConfig& config, Generator& g);

}  // namespace fplab::sampling
