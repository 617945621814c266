// The level programme and the subtree tables of reductions/orders.hpp
// against their references: the depth-first walk over all n! orders (n <= 9)
// and a std::next_permutation loop through fplab::sum itself (n <= 7), on
// data with wide exponents, with many ties and with signed zeros, in float32
// and float64; both split over a team of ranks (threads exchanging the
// levels through a barrier, as MPI_Allgatherv does in mpi/); and
// the 18 default rows of the permutations experiment on 12 and 13 numbers
// against the level programme's results committed before the subtree tables
// (tests/golden/orders/); the step estimate (estimate_level_steps) against
// the level programme's own count of its steps.
#include <algorithm>
#include <barrier>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "reductions/order_estimate.hpp"
#include "reductions/orders.hpp"
#include "reductions/strategy.hpp"
#include "tests/order_brute_force.hpp"

using namespace fplab;

namespace {

const char* const kStrategies[] = {"sequential",
                                   "pairwise",
                                   "pairwise(2)",
                                   "numpy",
                                   "numpy-buffered",
                                   "lanes(2)",
                                   "lanes(3)",
                                   "lanes(4)",
                                   "chunked(3,pairwise,pairwise)",
                                   "chunked(2,numpy,sequential)",
                                   "kahan",
                                   "neumaier",
                                   "exact"};

// Named data sets of n values (float64; float32 rounds them).
std::vector<std::pair<std::string, std::vector<double>>> data_sets(std::size_t n) {
  std::mt19937_64 g(17 + n);
  std::vector<double> wide, ties, zeros, cancel;
  for (std::size_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(g() >> 11) * 0x1p-53 * 2 - 1;
    wide.push_back(std::ldexp(u, static_cast<int>(g() % 41) - 20));
    // Three values only, so most orders meet equal values: many ties.
    const double pick[] = {1.0, -0x1p-30, 0x1.8p-2};
    ties.push_back(pick[g() % 3]);
    // Signed zeros beside values that cancel to zero.
    const double z[] = {0.0, -0.0, -0.0, 1.0, -1.0, 0x1p-60};
    zeros.push_back(z[i % 6]);
    const double c[] = {1e-10, 1e-5, 1e-2, 1, -1e-10, -1e-5, -1e-2, -1, 3e-3};
    cancel.push_back(c[i % 9] * (i >= 9 ? 3.0 : 1.0));
  }
  return {{"wide", wide}, {"ties", ties}, {"zeros", zeros}, {"cancel", cancel}};
}

template <class T>
std::map<std::uint64_t, std::uint64_t> bit_map(const OrderHistogram<T>& h) {
  std::map<std::uint64_t, std::uint64_t> out;
  for (const auto& [b, c] : histogram_bits(h)) out[b] = c;
  return out;
}

using fplab::test::brute_force;

// P threads as the ranks of one team; the exchange is an all-gather.
// levels 0: the subtree tables (tree strategies); else the level programme.
template <class T>
std::vector<OrderHistogram<T>> run_team(const Strategy& s, const std::vector<T>& x,
                                        std::size_t ranks, std::size_t levels) {
  std::vector<std::vector<std::uint64_t>> parts(ranks);
  std::barrier sync(static_cast<std::ptrdiff_t>(ranks));
  std::vector<OrderHistogram<T>> out(ranks);
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      OrderTeam team;
      team.rank = r;
      team.ranks = ranks;
      team.levels = levels;
      team.subtrees = levels == 0;
      team.exchange = [&, r](const std::vector<std::uint64_t>& mine) {
        parts[r] = mine;
        sync.arrive_and_wait();
        std::vector<std::uint64_t> all;
        for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
        sync.arrive_and_wait();
        return all;
      };
      out[r] = enumerate_orders_in_team<T>(s, std::span<const T>(x), team, 1);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

template <class T>
OrderHistogram<T> with_levels(const Strategy& s, const std::vector<T>& x, std::size_t levels,
                              std::size_t budget = std::size_t{256} << 20) {
  OrderTeam team;
  team.levels = levels;
  team.budget_bytes = budget;
  team.subtrees = false;
  return enumerate_orders_in_team<T>(s, std::span<const T>(x), team, 2);
}

}  // namespace

TEST_CASE("orders: the level programme equals the walk, every total's bits and count", "[orders]") {
  for (std::size_t n : {1, 2, 3, 5, 8, 9}) {
    for (const auto& data : data_sets(n)) {
      // Plain references: clang 14 lambdas cannot capture structured bindings.
      const std::string& label = data.first;
      const std::vector<double>& x = data.second;
      if (n == 9 && label != "wide" && label != "zeros") continue;  // the walk's time
      const std::vector<float> xf(x.begin(), x.end());
      for (const char* spelling : kStrategies) {
        INFO("n " << n << " " << label << " " << spelling);
        const Strategy s = parse_strategy(spelling);
        const auto check = [&](const auto& values) {
          using T = typename std::decay_t<decltype(values)>::value_type;
          const std::span<const T> v(values);
          const auto walk = enumerate_orders_by_walk<T>(s, v, 2);
          const auto fastest = enumerate_orders<T>(s, v, 2);  // subtree tables for trees
          CHECK(histogram_bits(fastest) == histogram_bits(walk));
          CHECK(fastest.orders == walk.orders);
          const auto levels = with_levels(s, values, n);
          CHECK(histogram_bits(levels) == histogram_bits(walk));
          if (s.order != Order::exact) CHECK(levels.levels == n - 1);
          // The walk taking over from an earlier level, by count and by budget.
          for (std::size_t l : {std::size_t{0}, n / 2}) {
            CHECK(histogram_bits(with_levels(s, values, l)) == histogram_bits(walk));
          }
          const auto small = with_levels(s, values, n, 256);
          CHECK(histogram_bits(small) == histogram_bits(walk));
          // Distinct data outgrow 256-byte levels; ties and zeros may not.
          if (n >= 8 && label == "wide" && s.order != Order::exact) CHECK(small.levels < n - 1);
        };
        check(x);
        check(xf);
      }
    }
  }
}

TEST_CASE("orders: the subtree tables and the level programme equal brute force, n <= 7",
          "[orders]") {
  for (std::size_t n : {1, 2, 4, 6, 7}) {
    for (const auto& [label, x] : data_sets(n)) {
      const std::vector<float> xf(x.begin(), x.end());
      for (const char* spelling : kStrategies) {
        INFO("n " << n << " " << label << " " << spelling);
        const Strategy s = parse_strategy(spelling);
        CHECK(bit_map(enumerate_orders<double>(s, x, 2)) == brute_force<double>(s, x));
        CHECK(bit_map(enumerate_orders<float>(s, xf, 2)) == brute_force<float>(s, xf));
        CHECK(bit_map(with_levels<double>(s, x, n)) == brute_force<double>(s, x));
      }
    }
  }
  // Negative control: the data decide the totals (one value changed).
  auto x = data_sets(7)[0].second;
  const Strategy seq = parse_strategy("sequential");
  const auto before = bit_map(enumerate_orders<double>(seq, x, 2));
  x[3] *= 3;
  CHECK(bit_map(enumerate_orders<double>(seq, x, 2)) != before);
}

TEST_CASE("orders: ties and signed zeros are counted as n! distinct orders", "[orders]") {
  const Strategy seq = parse_strategy("sequential");
  // Twelve equal values: one group, one state per level, 12! orders.
  const auto ones = enumerate_orders<double>(seq, std::vector<double>(12, 1.0), 2);
  REQUIRE(ones.totals.size() == 1);
  CHECK(ones.totals[0].first == 12.0);
  CHECK(ones.orders == 479001600);
  // Signed zeros: sequential starts from +0, so {-0, -0} gives +0; pairwise
  // is -0 + -0 = -0 (fplab sum -- -0 -0 says the same). Any +0 among them
  // makes it +0 either way.
  const std::vector<double> two{-0.0, -0.0};
  const auto from_zero = enumerate_orders<double>(seq, two, 1);
  REQUIRE(from_zero.totals.size() == 1);
  CHECK(!std::signbit(from_zero.totals[0].first));
  const auto tree = enumerate_orders<double>(parse_strategy("pairwise"), two, 1);
  REQUIRE(tree.totals.size() == 1);
  CHECK(std::signbit(tree.totals[0].first));
  CHECK(tree.orders == 2);
  const auto mixed = enumerate_orders<double>(parse_strategy("pairwise"),
                                              std::vector<double>{-0.0, -0.0, -0.0, 0.0}, 1);
  REQUIRE(mixed.totals.size() == 1);
  CHECK(!std::signbit(mixed.totals[0].first));
  CHECK(mixed.orders == 24);
}

TEST_CASE("orders: the level programme and the subtree tables split over 1..4 ranks", "[orders]") {
  for (const auto& data : data_sets(8)) {
    const std::string& label = data.first;
    const std::vector<double>& x = data.second;
    const std::vector<float> xf(x.begin(), x.end());
    for (const char* spelling : {"sequential", "pairwise", "lanes(3)", "kahan", "neumaier"}) {
      INFO(label << " " << spelling);
      const Strategy s = parse_strategy(spelling);
      const auto check = [&](const auto& values) {
        using T = typename std::decay_t<decltype(values)>::value_type;
        const auto whole = enumerate_orders_by_walk<T>(s, std::span<const T>(values), 2);
        for (std::size_t ranks : {1, 2, 3, 4}) {
          for (std::size_t levels : {std::size_t{0}, std::size_t{2}, std::size_t{16}}) {
            // levels 0 is the subtree tables, for trees only (kahan and
            // neumaier would walk everything on rank 0).
            if (levels == 0 && (s.order == Order::kahan || s.order == Order::neumaier)) continue;
            INFO("ranks " << ranks << " levels " << levels);
            const auto parts = run_team(s, values, ranks, levels);
            std::vector<std::pair<std::uint64_t, std::uint64_t>> all;
            std::uint64_t distinct_summed = 0;
            for (const auto& h : parts) {
              const auto b = histogram_bits(h);
              all.insert(all.end(), b.begin(), b.end());
              distinct_summed += h.distinct();
            }
            const auto merged = histogram_from_bits<T>(all);
            CHECK(histogram_bits(merged) == histogram_bits(whole));
            CHECK(merged.orders == 40320);
            if (ranks > 1) {
              // Negative control: one rank's part is not the whole.
              CHECK(histogram_bits(parts[0]) != histogram_bits(whole));
              CHECK(parts[0].orders < 40320);
              // Why a union: adding the parts' distinct counts overcounts.
              if (label != "ties" || s.order != Order::sequential) {
                CHECK(distinct_summed >= whole.distinct());
              }
            }
          }
        }
      };
      check(x);
      check(xf);
    }
  }
}

namespace {

// A committed golden: per "strategy dtype" its (bits, orders) in file order.
std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>> read_golden(
    std::size_t n) {
  std::ifstream in(std::filesystem::path(FPLAB_SOURCE_DIR) / "tests/golden/orders" /
                   ("permutations_" + std::to_string(n) + ".txt"));
  REQUIRE(in.good());
  std::map<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>> rows;
  std::string line, key;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (first == "end") break;
    if (first == "row") {
      std::string strategy, dtype;
      words >> strategy >> dtype;
      key = strategy + " " + dtype;
      rows[key];
    } else {
      std::uint64_t orders = 0;
      words >> orders;
      rows[key].emplace_back(std::stoull(first, nullptr, 16), orders);
    }
  }
  return rows;
}

}  // namespace

TEST_CASE("orders: the 18 default rows on 12 and 13 numbers equal the committed level programme",
          "[orders]") {
  const std::vector<double> all{1e-10, 1e-5, 1e-2,  1,   -1e-10, -1e-5, -1e-2,
                                -1,    3e-3, -7e-4, 0.5, -0.25,  1e-7};
  for (std::size_t n : {12, 13}) {
    const auto golden = read_golden(n);
    REQUIRE(golden.size() == 18);
    const std::vector<double> x(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    const std::vector<float> xf(x.begin(), x.end());
    for (const char* spelling :
         {"sequential", "pairwise", "numpy", "lanes(2)", "lanes(4)",
          "chunked(2,sequential,sequential)", "kahan", "neumaier", "exact"}) {
      const Strategy s = parse_strategy(spelling);
      INFO(n << " " << s.name());
      const auto team = [&](const auto& values) {
        using T = typename std::decay_t<decltype(values)>::value_type;
        return histogram_bits(
            enumerate_orders_in_team<T>(s, std::span<const T>(values), OrderTeam{}, 2));
      };
      CHECK(team(x) == golden.at(s.name() + " float64"));
      CHECK(team(xf) == golden.at(s.name() + " float32"));
    }
    // Negative control: other numbers give other totals.
    std::vector<double> other = x;
    other[2] = 2e-2;
    CHECK(histogram_bits(enumerate_orders_in_team<double>(parse_strategy("pairwise"), other,
                                                          OrderTeam{}, 2)) !=
          golden.at("pairwise(1) float64"));
  }
}

TEST_CASE("orders: sub-multisets by size", "[orders]") {
  const std::vector<std::uint64_t> distinct{1, 1, 1, 1};
  CHECK(sub_multisets_by_size(distinct) == std::vector<double>{1, 4, 6, 4, 1});
  const std::vector<std::uint64_t> ties{2, 1};  // {a, a, b}: {}, {a} {b}, {a a} {a b}, {a a b}
  CHECK(sub_multisets_by_size(ties) == std::vector<double>{1, 2, 2, 1});
}

TEST_CASE(
    "orders: the step estimate is the level programme's steps where every sub-multiset "
    "has one state",
    "[orders]") {
  // Small integers sum exactly, so every sub-multiset reaches one state and
  // the model (reductions/orders.hpp) is exact: measured on 6 values, it must
  // give the level programme's own steps and levels on 9, with the budget
  // that tabulates every level and with one that makes it walk from level 2.
  const Strategy s = parse_strategy("sequential");
  std::vector<double> x;
  for (int i = 1; i <= 9; ++i) x.push_back(i);
  const std::vector<double> prefix(x.begin(), x.begin() + 6);
  const auto measured = with_levels(s, prefix, kMaxDistributedInputs).work;
  REQUIRE(measured.states == std::vector<std::uint64_t>{1, 6, 15, 20, 15, 6});
  const std::vector<std::uint64_t> six(6, 1), nine(9, 1);
  const auto subsets_m = sub_multisets_by_size(six);
  const auto subsets_n = sub_multisets_by_size(nine);
  for (const std::size_t budget : {std::size_t{256} << 20, std::size_t{1400}}) {
    INFO("budget " << budget);
    const auto actual = with_levels(s, x, kMaxDistributedInputs, budget);
    const auto e = estimate_level_steps(measured, subsets_m, subsets_n, 1, budget);
    CHECK(e.levels == actual.levels);
    CHECK(e.steps == static_cast<double>(actual.work.steps));
    CHECK(e.walk_steps == static_cast<double>(actual.work.walk_steps));
    // Negative control: twice the states per sub-multiset, other steps.
    CHECK(estimate_level_steps(measured, subsets_m, subsets_n, 1, budget, 2).steps !=
          static_cast<double>(actual.work.steps));
  }
  CHECK(with_levels(s, x, kMaxDistributedInputs, 1400).levels == 2);
  CHECK(with_levels(s, x, kMaxDistributedInputs).levels == 8);
  CHECK_THROWS_AS(estimate_level_steps(OrderWork{}, subsets_m, subsets_n, 1, 1 << 20),
                  std::invalid_argument);
}

TEST_CASE("orders: the step estimate of kahan on the default numbers is within 0.5x to 2x",
          "[orders]") {
  // The range the permutations experiment's estimate assumes (measured at 13
  // to 15 numbers in docs/bench.md): from the first 10 numbers to 12.
  const std::vector<double> all{1e-10, 1e-5, 1e-2, 1,     -1e-10, -1e-5,
                                -1e-2, -1,   3e-3, -7e-4, 0.5,    -0.25};
  const std::vector<double> prefix(all.begin(), all.begin() + 10);
  const Strategy s = parse_strategy("kahan");
  const auto measured = enumerate_orders_in_team<double>(s, prefix, OrderTeam{}, 2).work;
  const auto actual = enumerate_orders_in_team<double>(s, all, OrderTeam{}, 2).work;
  REQUIRE(measured.states.size() == 10);
  REQUIRE(actual.states.size() == 12);
  const std::vector<std::uint64_t> ten(10, 1), twelve(12, 1);
  const auto e = estimate_level_steps(measured, sub_multisets_by_size(ten),
                                      sub_multisets_by_size(twelve), 2, OrderTeam{}.budget_bytes);
  const auto steps = static_cast<double>(actual.steps);
  CHECK(e.levels == 11);
  CHECK(e.steps >= 0.5 * steps);
  CHECK(e.steps <= 2 * steps);
  // Not n!: 12! = 479,001,600 orders, about 3e6 steps.
  CHECK(steps < 1e-2 * 479001600.0);
}
