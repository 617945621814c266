// Gated decoding: greedy decoding under a fast, batch-variant policy
// (split-k or library) whose tokens are made equal, at every batch size, to
// those of always-batch-invariant decoding, by recomputing or replaying only
// where needed (issue 30).
//
// The decoder holds two Batches of the same B sequences: the fast one (the
// given policy), which runs every step, and an invariant shadow
// (batch-invariant, the same precision), which only ever runs when a gate
// asks it to, catching a sequence up from where it stopped in one chunked
// pass (batch-invariant chunked prefill keeps every bit of token-by-token
// decoding: docs/model.md, chunked prefill). So the shadow's logits after a
// prefix are exactly always-invariant decoding's logits after it.
//
// The gates (`Gate`, spelled as `fplab generate --gate` takes them):
//   "bound"      at each step, accept the fast token when a bound on every
//                reduction order certifies the step (StepBounds: the
//                rigorous enclosure where it certifies, else the first-
//                order bound of model/first_order_bound.hpp; on a Mixture-
//                of-Experts model only with every route up to the step
//                certified) and its lead is the fast token; else recompute
//                the step under the invariant policy (the shadow caught up
//                to this step).
//   "margin:TAU" accept when the fast top-2 margin exceeds TAU, else
//                recompute (MarginGate, arXiv 2605.30218). TAU too small
//                lets a flipped token through: no guarantee.
//   "window:W"   accept every fast token provisionally; when W unverified
//                tokens have accumulated (and at the end), replay them
//                teacher-forced under the invariant policy in one chunk and
//                roll back at the first mismatch: the token there becomes
//                the invariant one, the later ones are discarded and both
//                caches are cut back to it (LLM-42, arXiv 2601.17768).
//   "fast"       accept every fast token (the control that must differ).
//   "invariant"  decode under the invariant policy itself (the baseline).
//
// Only the first `gated` sequences of the batch are gated (the requests that
// asked for determinism); the rest decode fast (their batch mates).
//
// Work is counted in token-forwards (one position through the model) and in
// passes (Batch::forward calls), for each batch separately: on a GPU a
// decode pass costs about the same for 1 or 64 rows of a sequence (memory
// bound), so passes are the decode-time cost and tokens the compute.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/policy.hpp"
#include "model/transformer.hpp"

namespace fplab::model {

class EnclosedSequence;  // model/enclosure.hpp

enum class GateKind { fast, invariant, bound, margin, window };

struct Gate {
  GateKind kind = GateKind::bound;
  double tau = 0;          // margin
  std::size_t window = 0;  // window
  friend bool operator==(const Gate&, const Gate&) = default;
};

// "bound", "margin:TAU" (TAU >= 0, finite), "window:W" (W >= 1), "fast",
// "invariant"; throws std::invalid_argument (one line) otherwise.
Gate parse_gate(std::string_view text);
// The inverse ("margin:0.01" in shortest round-trip form).
std::string gate_spec(const Gate& g);

// Which bound certified a step.
enum class Certificate { none, rigorous, first_order };
std::string_view name(Certificate c);  // "none", "rigorous", "first-order"

struct BoundVerdict {
  Certificate by = Certificate::none;
  Token lead = 0;        // the bound's leader (the centre's argmax)
  double gap = 0;        // the centre's top-2 gap
  double gap_bound = 0;  // the first-order bound on the gap to the runner-up
  // Mixture of experts: whether every route of every position of the prefix
  // is certified (FirstOrderStep::routes_certified); a step whose routes
  // are not is not certified by the first-order bound. True on a dense model.
  bool routes_certified = true;
};

// The bounds of the steps after given prefixes, for one precision (fp32 or
// bf16; the rigorous enclosure exists for fp32 only), memoised by prefix
// (a step's bound depends on its tokens only), safe to share between
// threads. Each verdict costs a forward pass of the prefix in double and
// one reverse pass over the whole prefix (about prefix-length backward
// passes of one position: far more than a forward pass).
class StepBounds {
 public:
  // `rigorous`: try the rigorous enclosure first (fp32 and a model of the
  // bundled model's kind only: ModelConfig::plain(); else ignored).
  // `scale` multiplies the first-order bound (FirstOrderOptions::scale; 1
  // but in tests: 2^-20 is a too-small bound, the negative control).
  StepBounds(const Model& model, PrecisionPolicy precision, bool rigorous = true, double scale = 1);
  ~StepBounds();
  // The verdict on the logits after `prefix` (non-empty).
  BoundVerdict verdict(std::span<const Token> prefix);
  [[nodiscard]] PrecisionPolicy precision() const { return precision_; }
  // Verdicts computed (not memo hits).
  [[nodiscard]] std::int64_t computed() const;
  // Tokens pushed through the rigorous enclosure so far: a verdict whose
  // prefix extends the last computed one's pushes only the new tokens.
  [[nodiscard]] std::int64_t enclosed_pushes() const;

 private:
  const Model* model_;
  PrecisionPolicy precision_;
  bool rigorous_;
  double scale_;
  mutable std::mutex mutex_;
  std::map<std::vector<Token>, BoundVerdict> memo_;
  std::int64_t computed_ = 0;
  // The rigorous enclosure after the last computed verdict's prefix (its
  // tokens in enclosed_tokens_), kept for the next: along a path (each
  // prefix the last plus a token) a verdict pushes one token, not the
  // whole prefix again; the same pushes, so the same bits.
  std::unique_ptr<EnclosedSequence> enclosed_;
  std::vector<Token> enclosed_tokens_;
  std::int64_t enclosed_pushes_ = 0;

  std::unique_ptr<EnclosedSequence> enclosure_after(std::span<const Token> tokens);
};

struct GatedStats {
  std::int64_t steps = 0;              // tokens committed (the final sequences' lengths)
  std::int64_t recomputed = 0;         // steps sent to the invariant policy (bound, margin)
  std::int64_t rigorous = 0;           // bound: steps accepted on the rigorous enclosure
  std::int64_t first_order = 0;        // bound: steps accepted on the first-order bound
  std::int64_t bound_violations = 0;   // bound: certified steps whose fast token is not the lead
  std::int64_t route_uncertified = 0;  // bound: recomputed steps whose routes were not certified
  std::int64_t verifications = 0;      // window: replays
  std::int64_t rollbacks = 0;          // window: replays that found a mismatch
  std::int64_t replayed = 0;           // window: tokens replayed
  std::int64_t discarded = 0;          // window: fast tokens rolled back
  std::int64_t fast_tokens = 0, fast_passes = 0;
  std::int64_t invariant_tokens = 0, invariant_passes = 0;
  GatedStats& operator+=(const GatedStats& o);
};

struct GatedResult {
  std::vector<std::vector<Token>> tokens;  // per sequence, `steps` tokens
  std::vector<GatedStats> per_sequence;    // the token and gate counts per sequence
  GatedStats total;                        // all sequences; passes counted once per pass
};

// Told after each fast pass how many tokens are committed, of all the
// sequences' `steps` (a progress line, a stop request's check).
using GatedProgress = std::function<void(std::size_t committed, std::size_t total)>;

// Decodes `steps` greedy tokens after each prompt (one Batch row each) under
// `fast` (its per-op precisions are both batches'), gating the first
// `gated` rows (all when `gated` exceeds the batch). The bound gate needs
// `bounds` of the same precision, one for the whole pass. Throws
// std::invalid_argument for an empty prompt, one that would outgrow the
// context, a missing or mismatched `bounds`, or the bound gate under
// per-op precisions. `progress`, when set, is called after every pass
// (it changes no token).
GatedResult gated_decode(const Model& model, const Policy& fast,
                         std::span<const std::vector<Token>> prompts, std::size_t steps,
                         const Gate& gate, StepBounds* bounds = nullptr,
                         std::size_t gated = static_cast<std::size_t>(-1),
                         const GatedProgress& progress = {});

}  // namespace fplab::model
