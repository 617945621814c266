#include "precision/round_request.hpp"

#include <cmath>

#include "io/input_error.hpp"
#include "io/numbers.hpp"

namespace fplab {

std::vector<std::string> RoundRequest::to_args() const {
  std::vector<std::string> args{"--mode=" + mode, "--seed=" + std::to_string(seed)};
  for (const auto& f : formats) args.push_back("--format=" + f);
  if (via_float) args.emplace_back("--via-float");
  if (json) args.emplace_back("--json");
  if (limits) args.emplace_back("--limits");
  if (narrow) args.emplace_back("--narrow");
  args.emplace_back("--");
  args.insert(args.end(), values.begin(), values.end());
  return args;
}

RoundQuery round_query(double x, const Format& f, const RoundingOptions& base) {
  RoundingOptions o = base;
  o.format = f;
  RoundQuery q;
  q.format = f;
  q.rounded = round(x, o);
  // One IEEE subtraction: the difference of two doubles correctly rounded
  // (tests/test_round_request.cpp checks it against the exact sum).
  q.error = x - q.rounded;
  q.around = neighbours(x, f);
  q.exact = std::isfinite(x) && q.around.below == x && q.around.above == x;
  q.next_below = next_down(x, f);
  q.next_above = next_up(x, f);
  q.spacing = spacing(x, f);
  q.max_error = max_rounding_error(x, f, o.rounding);
  q.bits = bit_fields(q.rounded, f);
  return q;
}

RoundAnswer run_round(const RoundRequest& r) {
  RoundAnswer a;
  for (const auto& f : r.formats) a.formats.push_back(parse_format(f));
  if (a.formats.empty()) {
    const auto named = named_formats();
    a.formats.assign(named.begin(), named.end());
  }
  if (r.limits) {
    if (!r.values.empty()) throw InputError("--limits takes no values");
    return a;
  }
  if (r.values.empty()) throw InputError("give one or more values to round (or --limits)");
  a.options.rounding = parse_rounding(r.mode);
  a.options.via_float = r.via_float;
  a.options.seed = r.seed;
  for (const auto& v : r.values) a.xs.push_back(parse_number<double>(v));
  for (const double x : a.xs) {
    std::vector<RoundQuery> row;
    row.reserve(a.formats.size());
    for (const auto& f : a.formats) row.push_back(round_query(x, f, a.options));
    a.rows.push_back(std::move(row));
  }
  return a;
}

}  // namespace fplab
