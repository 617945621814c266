#include "model/first_order_remainder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>

#include "model/first_order_bound.hpp"

namespace fplab::model {

namespace {

// splitmix64: the sign of element `i` of op `op` at `pos`.
double sign(std::uint64_t seed, std::size_t pos, std::size_t op, std::size_t i) {
  std::uint64_t z = seed ^ (pos * 0x9e3779b97f4a7c15ULL) ^ (op * 0xbf58476d1ce4e5b9ULL) ^
                    (i * 0x94d049bb133111ebULL);
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (z & 1) != 0 ? 1.0 : -1.0;
}

std::vector<double> logits_after(const Model& m, std::span<const Token> prefix,
                                 FirstOrderOptions o) {
  FirstOrderSequence seq(m, std::move(o));
  for (std::size_t i = 0; i + 1 < prefix.size(); ++i) seq.push(prefix[i], false);
  return seq.push(prefix.back()).centre;
}

}  // namespace

std::vector<RemainderSample> measure_remainder(const Model& model, PrecisionPolicy precision,
                                               std::span<const Token> prefix,
                                               std::span<const double> scales, std::uint64_t seed) {
  if (prefix.empty()) throw std::invalid_argument("measure_remainder: empty prefix");
  if (!rows_per_logit(model.config())) {
    throw std::invalid_argument(
        "measure_remainder: it reads a row per logit, which this vocabulary takes the cover of");
  }
  const std::size_t V = model.config().vocab_size;
  // The unperturbed pass: every op output's base perturbation |v| s, and
  // J base accumulated from the adjoints.
  std::map<std::pair<std::size_t, std::size_t>, std::vector<double>> base;
  std::vector<double> linear(V, 0.0);
  FirstOrderOptions o{.precision = precision};
  o.perturb = [&](std::size_t pos, std::size_t op, std::span<double> out) {
    auto& b = base[{pos, op}];
    b.resize(out.size());
    for (std::size_t i = 0; i < out.size(); ++i) b[i] = std::abs(out[i]) * sign(seed, pos, op, i);
  };
  o.adjoint = [&](std::size_t pos, std::size_t op, std::size_t rows, std::size_t cols,
                  std::span<const double> a) {
    const auto& b = base.at({pos, op});
    for (std::size_t c = 0; c < cols; ++c)
      for (std::size_t r = 0; r < rows; ++r) linear[r] += a[c * rows + r] * b[c];
  };
  FirstOrderSequence seq(model, o);
  for (std::size_t i = 0; i + 1 < prefix.size(); ++i) seq.push(prefix[i], false);
  const FirstOrderStep step = seq.push(prefix.back());
  const std::vector<double>& centre = step.centre;
  const auto lead = static_cast<std::size_t>(step.lead);
  double gap_bound = std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < V; ++j) {
    if (j == lead) continue;
    if (centre[lead] - centre[j] == step.gap) gap_bound = step.gap_bound[j];
  }
  std::vector<RemainderSample> out;
  for (const double c : scales) {
    FirstOrderOptions p{.precision = precision};
    p.perturb = [&](std::size_t pos, std::size_t op, std::span<double> v) {
      const auto it = base.find({pos, op});
      if (it != base.end() && it->second.size() == v.size()) {
        for (std::size_t i = 0; i < v.size(); ++i) v[i] += c * it->second[i];
        return;
      }
      // An op the centre's pass did not run: an expert the moved router
      // chose. Its output moves by the same rule, c |v| s, from its own value.
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] += c * std::abs(v[i]) * sign(seed, pos, op, i);
    };
    const auto moved = logits_after(model, prefix, p);
    RemainderSample s;
    s.scale = c;
    s.gap_bound = gap_bound;
    s.gap = step.gap;
    std::vector<double> rest(V);
    for (std::size_t j = 0; j < V; ++j) {
      rest[j] = moved[j] - centre[j] - c * linear[j];
      s.linear = std::max(s.linear, std::abs(c * linear[j]));
      s.remainder = std::max(s.remainder, std::abs(rest[j]));
    }
    for (std::size_t j = 0; j < V; ++j)
      s.gap_remainder = std::max(s.gap_remainder, std::abs(rest[lead] - rest[j]));
    out.push_back(s);
  }
  return out;
}

}  // namespace fplab::model
