// The classroom page's arithmetic: fplab's own reductions/ and precision/
// compiled to WebAssembly (em++), called from classroom/page.html. Every
// total, rounding and argmax the page shows comes from these functions, so
// the page and `fplab sum` / `fplab round` give the same bits.
//
// Each function takes text and returns JSON text (classroom/reply.hpp);
// every_order.cpp and token_flip.cpp hold the other two widgets' functions.
#include <emscripten/emscripten.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "classroom/reply.hpp"
#include "io/exact_decimal.hpp"
#include "io/numbers.hpp"
#include "precision/format.hpp"
#include "precision/queries.hpp"
#include "precision/round_json.hpp"
#include "precision/round_request.hpp"
#include "precision/rounding.hpp"
#include "reductions/error.hpp"
#include "reductions/exact.hpp"
#include "reductions/strategy.hpp"
#include "reductions/strategy_totals.hpp"

namespace {

using fplab::classroom::exact_value;
using fplab::classroom::guarded;
using fplab::classroom::json;
using fplab::classroom::words;

std::vector<float> g_data;  // the A4 data set, handed over once by the page

// The sum widget: reductions/strategy_totals.hpp, as `fplab sum` computes it.
template <class T>
json sums(const std::vector<T>& x, const std::vector<fplab::Strategy>& strategies) {
  const fplab::StrategyTotals<T> t = fplab::strategy_totals(std::span<const T>(x), strategies);
  json out{{"n", x.size()},
           {"dtype", sizeof(T) == 4 ? "float32" : "float64"},
           {"exact", exact_value(t.exact)},
           {"strategies", json::array()}};
  for (const auto& r : t.rows) {
    out["strategies"].push_back({{"name", r.name},
                                 {"total", exact_value(r.total)},
                                 {"rel_error", exact_value(r.acc.rel_error)}});
  }
  return out;
}

// The words of `text` reordered by their values in T: ascending, or by
// magnitude (stable: equal keys keep their order).
template <class T>
json sorted_words(const std::vector<std::string>& text, bool by_magnitude) {
  std::vector<std::pair<T, std::string>> keyed;
  for (const auto& w : text) {
    const T v = fplab::parse_number<T>(w);
    keyed.emplace_back(by_magnitude ? std::abs(v) : v, w);
  }
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  json out = json::array();
  for (const auto& [key, w] : keyed) out.push_back(w);
  return json{{"words", out}};
}

// x in format f, as `fplab round --json` writes it (precision/round_json.hpp),
// rounded to nearest even.
json describe(double x, const fplab::Format& f) {
  return fplab::round_query_json(fplab::round_query(x, f, fplab::RoundingOptions{}));
}

}  // namespace

extern "C" {

// The numbers of `numbers_text` (decimal or hex, separated by spaces), in
// that order, summed in `dtype` ("float32" or "float64") by every strategy
// of `strategies_text` (spellings separated by spaces; empty: fplab's
// default list) and exactly.
EMSCRIPTEN_KEEPALIVE const char* fplab_sum(const char* numbers_text, const char* dtype,
                                           const char* strategies_text) {
  return guarded([&] {
    std::vector<fplab::Strategy> strategies;
    for (const auto& w : words(strategies_text)) strategies.push_back(fplab::parse_strategy(w));
    if (strategies.empty()) strategies = fplab::default_strategies();
    const auto text = words(numbers_text);
    if (text.empty()) throw std::invalid_argument("type some numbers");
    if (std::string_view(dtype) == "float32") {
      std::vector<float> x;
      for (const auto& w : text) x.push_back(fplab::parse_number<float>(w));
      return sums(x, strategies);
    }
    std::vector<double> x;
    for (const auto& w : text) x.push_back(fplab::parse_number<double>(w));
    return sums(x, strategies);
  });
}

// Room for the A4 data set (n float32 values): the page copies them there,
// then calls fplab_a4_chunked.
EMSCRIPTEN_KEEPALIVE float* fplab_a4_buffer(std::uint32_t n) {
  g_data.assign(n, 0.0f);
  return g_data.data();
}

// The A4 data summed as claims.md's recipe does: K chunks, each numpy's
// pairwise sum in float32, the chunk totals added left to right; with the
// float64 reference (the float64 sum of the values, exactly rounded) and
// the error against it.
EMSCRIPTEN_KEEPALIVE const char* fplab_a4_chunked(std::uint32_t k) {
  return guarded([&] {
    if (g_data.empty()) throw std::invalid_argument("the A4 data is not loaded");
    const std::span<const float> x(g_data);
    const auto strategy = fplab::parse_strategy(
        k == 1 ? std::string("numpy") : "chunked(" + std::to_string(k) + ",numpy,sequential)");
    const float total = fplab::sum(strategy, x);
    std::vector<double> wide(x.begin(), x.end());
    const double reference = fplab::exact_sum(std::span<const double>(wide));
    // Nine decimals of the float itself, as claims.md's table prints them
    // (the shortest round-trip decimal would print 998.57056).
    return json{{"strategy", strategy.name()},
                {"total", exact_value(total)},
                {"total_9f", fmt::format("{:.9f}", total)},
                {"reference_9f", fmt::format("{:.9f}", reference)},
                {"reference", exact_value(reference)},
                {"abs_error", exact_value(std::abs(static_cast<double>(total) - reference))}};
  });
}

// Each value of `values_text` rounded to `format` (any spelling of
// precision/format.hpp) with round-to-nearest-even, and the argmax of the
// values before and after (the lowest index wins a tie, as numpy's argmax).
EMSCRIPTEN_KEEPALIVE const char* fplab_round_logits(const char* values_text, const char* format) {
  return guarded([&] {
    fplab::RoundingOptions o;
    o.format = fplab::parse_format(format);
    std::vector<double> x, r;
    for (const auto& w : words(values_text)) x.push_back(fplab::parse_number<double>(w));
    if (x.empty()) throw std::invalid_argument("type some logits");
    json rounded = json::array();
    for (const double v : x) {
      r.push_back(fplab::round(v, o));
      rounded.push_back(exact_value(r.back()));
    }
    const auto argmax = [](const std::vector<double>& v) {
      return std::max_element(v.begin(), v.end()) - v.begin();
    };
    return json{{"format", o.format.name},
                {"rounded", rounded},
                {"argmax", argmax(x)},
                {"argmax_rounded", argmax(r)}};
  });
}

// The words of `numbers_text` sorted by their values in `dtype` ("float32"
// or "float64"; hex as well as decimal), ascending, or by magnitude when
// `by_magnitude` is nonzero.
EMSCRIPTEN_KEEPALIVE const char* fplab_sort(const char* numbers_text, const char* dtype,
                                            int by_magnitude) {
  return guarded([&] {
    const auto text = words(numbers_text);
    if (std::string_view(dtype) == "float32") return sorted_words<float>(text, by_magnitude != 0);
    return sorted_words<double>(text, by_magnitude != 0);
  });
}

// The number `x_text` (decimal or hex, read as the nearest double) in
// fp64, fp32, bf16, fp16, fp8 e4m3 and e5m2: rounded (nearest even), the
// rounding error, the neighbours, the spacing and the bit fields, as
// `fplab round --json` gives them; and the exact decimal expansion of x (as
// a double) and of each stored value (io/exact_decimal.hpp).
EMSCRIPTEN_KEEPALIVE const char* fplab_bits(const char* x_text) {
  return guarded([&] {
    const double x = fplab::parse_number<double>(x_text);
    json formats = json::array();
    for (const fplab::Format* f :
         {&fplab::kFP64, &fplab::kFP32, &fplab::kBF16, &fplab::kFP16, &fplab::kE4M3, &fplab::kE5M2})
      formats.push_back(describe(x, *f));
    return json{{"x", exact_value(x)}, {"x_exact", fplab::exact_decimal(x)}, {"formats", formats}};
  });
}

// The value of the encoding `bits_text` (hex) in `format`: what a bit
// flipped in the bits widget gives.
EMSCRIPTEN_KEEPALIVE const char* fplab_decode(const char* format, const char* bits_text) {
  return guarded([&] {
    const fplab::Format f = fplab::parse_format(format);
    const std::uint64_t bits = std::stoull(bits_text, nullptr, 16);
    return json{{"value", exact_value(fplab::decode(bits, f))}};
  });
}

}  // extern "C"
