#include "reductions/strategy.hpp"

#include <array>
#include <charconv>
#include <string>

#include "io/split_top_level.hpp"

namespace fplab {

namespace {

constexpr std::size_t kMaxParam = 1 << 20;
// Every chunk is reduced and combined, empty or not, so nested chunk counts
// multiply whatever n is: chunked(878,chunked(58107,pairwise(2),pairwise),
// pairwise) is 51 million chunks for a sum of 3 numbers (fuzz_strategy found
// it as a 20 s timeout; three levels would run for hours). The product of
// the counts along the nesting is held to the limit of one count.
constexpr std::size_t kMaxChunks = kMaxParam;

std::size_t chunks_per_sum(const Strategy& s) {
  return s.order == Order::chunked ? s.param * chunks_per_sum(s.inner.front()) : 1;
}

struct Family {
  std::string_view name;
  Order order;
  int params;  // 0: none; 1: one count, optional; 3: chunked's (K, inner, combine)
};

constexpr std::array<Family, 12> kFamilies{{
    {"sequential", Order::sequential, 0},
    {"pairwise", Order::pairwise, 1},
    {"numpy", Order::numpy, 0},
    {"numpy-buffered", Order::numpy_buffered, 0},
    {"chunked", Order::chunked, 3},
    {"lanes", Order::lanes, 1},
    {"parallel", Order::parallel, 1},
    {"omp-reduction", Order::omp_reduction, 1},
    {"kahan", Order::kahan, 0},
    {"neumaier", Order::neumaier, 0},
    {"exact", Order::exact, 0},
    {"eigen", Order::eigen, 0},
}};

constexpr std::array<StrategyInfo, 12> kCatalogue{{
    {"sequential", "left to right from +0: ((0 + x0) + x1) + ..."},
    {"pairwise(LEAF)",
     "balanced recursive halving; blocks of <= LEAF summed left to right (default 1)"},
    {"numpy", "numpy >= 2.3 np.sum: numpy's pairwise sum over the whole array, bit for bit"},
    {"numpy-buffered", "numpy 1.x np.sum: numpy's pairwise sum per 8192-element buffer"},
    {"chunked(K,INNER,COMBINE)",
     "K contiguous chunks (np.array_split), each by INNER, combined sequential|pairwise"},
    {"lanes(L)",
     "L interleaved accumulators (SIMD/warp order), combined by a balanced tree (default 8)"},
    {"parallel(T)",
     "T contiguous parts on up to 256 OpenMP threads, partials added in part order (default 2)"},
    {"omp-reduction(T)",
     "OpenMP reduction(+:) clause with T threads (1..256): the runtime's order (default 2)"},
    {"kahan", "Kahan compensated summation"},
    {"neumaier", "Neumaier's improved Kahan summation"},
    {"exact", "correctly rounded exact sum (superaccumulator); the reference"},
    {"eigen", "Eigen's .sum()/.dot() over a Map (native float/double only)"},
}};

std::size_t default_param(Order o) {
  switch (o) {
    case Order::pairwise:
      return 1;
    case Order::lanes:
      return 8;
    case Order::parallel:
    case Order::omp_reduction:
      return 2;
    default:
      return 0;
  }
}

[[noreturn]] void fail(std::string_view spec, const std::string& why) {
  throw std::invalid_argument("bad strategy '" + std::string(spec) + "': " + why);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Splits "a,b(c,d),e" at top-level commas, each piece trimmed.
std::vector<std::string_view> split_args(std::string_view s) {
  std::vector<std::string_view> out = split_top_level(s);
  for (auto& piece : out) piece = trim(piece);
  return out;
}

std::size_t parse_count(std::string_view spec, std::string_view text, std::size_t max = kMaxParam) {
  std::size_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v == 0 || v > max) {
    fail(spec, "'" + std::string(text) + "' is not a count from 1 to " + std::to_string(max));
  }
  return v;
}

// The largest count a family takes: omp-reduction's T is a team of OpenMP
// threads (reductions/parallel.hpp), every other count sizes work only.
std::size_t max_count(Order o) { return o == Order::omp_reduction ? kMaxOmpThreads : kMaxParam; }

}  // namespace

Strategy parse_strategy(std::string_view spec) {
  spec = trim(spec);
  const std::size_t open = spec.find('(');
  const std::string_view head = trim(spec.substr(0, open));
  std::string_view args;
  const bool has_args = open != std::string_view::npos;
  if (has_args) {
    if (spec.back() != ')') fail(spec, "missing ')'");
    args = spec.substr(open + 1, spec.size() - open - 2);
  }
  const Family* family = nullptr;
  for (const auto& f : kFamilies) {
    if (f.name == head) family = &f;
  }
  if (family == nullptr) fail(spec, "unknown strategy (see 'fplab list')");

  Strategy s;
  s.order = family->order;
  s.param = default_param(s.order);
  if (family->params == 0) {
    if (has_args) fail(spec, "takes no parameters");
  } else if (family->params == 1) {
    if (has_args) s.param = parse_count(spec, args, max_count(s.order));
  } else {
    const auto parts = has_args ? split_args(args) : std::vector<std::string_view>{};
    if (parts.size() != 3) fail(spec, "expected chunked(K,INNER,COMBINE)");
    s.param = parse_count(spec, parts[0]);
    s.inner.push_back(parse_strategy(parts[1]));
    // The inner product is at most kMaxChunks (checked when it was parsed),
    // so this one cannot overflow: at most 2^20 * 2^20.
    if (const std::size_t chunks = chunks_per_sum(s); chunks > kMaxChunks) {
      fail(spec, "the nested chunk counts multiply to " + std::to_string(chunks) +
                     " chunks per sum, over the limit of " + std::to_string(kMaxChunks));
    }
    if (parts[2] == "sequential") {
      s.combine = Combine::sequential;
    } else if (parts[2] == "pairwise") {
      s.combine = Combine::pairwise;
    } else {
      fail(spec, "COMBINE must be 'sequential' or 'pairwise'");
    }
  }
  return s;
}

std::string Strategy::name() const {
  std::string head;
  int params = 0;
  for (const auto& f : kFamilies) {
    if (f.order == order) {
      head = f.name;
      params = f.params;
    }
  }
  // Appending piecewise: GCC 12 warns falsely (-Wrestrict, PR105651) on
  // chains of std::string operator+.
  if (params == 1) {
    head += '(';
    head += std::to_string(param);
    head += ')';
  } else if (params == 3) {
    head += '(';
    head += std::to_string(param);
    head += ',';
    head += inner.front().name();
    head += combine == Combine::sequential ? ",sequential)" : ",pairwise)";
  }
  return head;
}

std::vector<Strategy> default_strategies() {
  std::vector<Strategy> out;
  for (std::string_view spec :
       {"sequential", "pairwise", "numpy", "numpy-buffered", "chunked(4,numpy,sequential)",
        "lanes(8)", "parallel(2)", "omp-reduction(2)", "kahan", "neumaier", "exact", "eigen"}) {
    out.push_back(parse_strategy(spec));
  }
  return out;
}

std::span<const StrategyInfo> strategy_catalogue() { return kCatalogue; }

}  // namespace fplab
