// The classroom page's arithmetic: fplab's own reductions/ and precision/
// compiled to WebAssembly (em++), called from classroom/page.html. Every
// total, rounding and argmax the page shows comes from these functions, so
// the page and `fplab sum` / `fplab round` give the same bits.
//
// Each function takes text and returns JSON text (valid until the next
// call); errors come back as {"error": "one line"}, never as a trap.
#include <emscripten/emscripten.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "io/numbers.hpp"
#include "precision/format.hpp"
#include "precision/rounding.hpp"
#include "reductions/error.hpp"
#include "reductions/strategy.hpp"

namespace {

using nlohmann::json;

std::string g_reply;        // the last reply, kept alive for the caller
std::vector<float> g_data;  // the A4 data set, handed over once by the page

const char* reply(const json& j) {
  g_reply = j.dump();
  return g_reply.c_str();
}

template <class T>
json exact_value(T v) {
  return {{"hex", fplab::to_hex(v)}, {"decimal", fplab::to_decimal(v)}};
}

std::vector<std::string> words(const char* text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

template <class T>
json sums(const std::vector<T>& x, const std::vector<fplab::Strategy>& strategies) {
  const std::span<const T> xs(x);
  json out{{"n", x.size()},
           {"dtype", sizeof(T) == 4 ? "float32" : "float64"},
           {"exact", exact_value(fplab::exact_sum(xs))},
           {"strategies", json::array()}};
  for (const auto& s : strategies) {
    const T total = fplab::sum(s, xs);
    const fplab::Accuracy acc = fplab::accuracy(xs, total);
    out["strategies"].push_back({{"name", s.name()},
                                 {"total", exact_value(total)},
                                 {"rel_error", exact_value(acc.rel_error)}});
  }
  return out;
}

template <class F>
const char* guarded(F&& f) {
  try {
    return reply(f());
  } catch (const std::exception& e) {
    return reply(json{{"error", e.what()}});
  }
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

}  // extern "C"
