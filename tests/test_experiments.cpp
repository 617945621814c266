// The experiments' headline figures, the registry and the order enumerator.
#include <fmt/format.h>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <vector>

#include "experiments/associativity.hpp"
#include "experiments/error_growth.hpp"
#include "experiments/groupings.hpp"
#include "experiments/spacing.hpp"
#include "io/input_error.hpp"
#include "io/npy.hpp"
#include "lab/experiment.hpp"
#include "lab/python_replay.hpp"
#include "lab/random.hpp"
#include "reductions/orders.hpp"
#include "reductions/strategy.hpp"
#include "tests/order_brute_force.hpp"

using namespace fplab;

namespace {

ExperimentRecord run_one(const std::string& id, std::vector<std::string> settings = {},
                         bool quick = true) {
  const auto plan = plan_runs({id}, quick, settings);
  REQUIRE(plan.size() == 1);
  return run_experiment(plan.front(), quick, false);
}

std::int64_t int_at(const ExperimentRecord& r, const std::string& table, const std::string& row,
                    const std::string& col) {
  const Table* t = r.table(table);
  REQUIRE(t != nullptr);
  const Value* v = t->get(row, col);
  REQUIRE(v != nullptr);
  return v->as_int();
}

std::string text_at(const ExperimentRecord& r, const std::string& table, const std::string& row,
                    const std::string& col) {
  const Value* v = r.table(table)->get(row, col);
  REQUIRE(v != nullptr);
  return v->hex();
}

using fplab::test::brute_force;

}  // namespace

TEST_CASE("registry: the six experiments, in claim order", "[experiments]") {
  std::vector<std::string> ids;
  for (const auto* e : registered_experiments()) ids.push_back(e->info.id);
  const std::vector<std::string> mine{"associativity", "permutations", "groupings",
                                      "chunked",       "spacing",      "error-growth"};
  std::vector<std::size_t> positions;
  for (const auto& id : mine) {
    const auto it = std::find(ids.begin(), ids.end(), id);
    REQUIRE(it != ids.end());
    positions.push_back(static_cast<std::size_t>(it - ids.begin()));
  }
  CHECK(std::is_sorted(positions.begin(), positions.end()));
  CHECK(find_experiment("permutations")->info.claims.front() == "A2");
}

TEST_CASE("plan_runs: settings, quick defaults and one-line errors", "[experiments]") {
  auto plan = plan_runs({"permutations"}, false, {"shuffles=50", "permutations.seed=9"});
  CHECK(plan.front().params.integer("shuffles") == 50);
  CHECK(plan.front().seed == 9);
  plan = plan_runs({"chunked"}, true, {});
  CHECK(plan.front().params.int_list("lanes") == std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64});
  plan = plan_runs({"chunked"}, false, {"k=1..3,8"});
  CHECK(plan.front().params.int_list("k") == std::vector<std::int64_t>{1, 2, 3, 8});
  plan = plan_runs({"error-growth"}, false, {"n_max=1e4"});
  CHECK(plan.front().params.integer("n_max") == 10000);

  const auto message = [](std::vector<std::string> ids, std::vector<std::string> settings) {
    try {
      (void)plan_runs(ids, true, settings);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message({"nosuch"}, {}) == "unknown experiment 'nosuch' (see 'fplab list')");
  CHECK(message({"permutations"}, {"nosuch=1"}) ==
        "unknown parameter 'nosuch' for experiment 'permutations' (see 'fplab list')");
  CHECK(message({"permutations"}, {"shuffles=abc"}) ==
        "permutations: parameter 'shuffles': 'abc' is not an integer");
  CHECK(message({"permutations"}, {"numbers=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"}) ==
        "permutations: parameter 'numbers': 17 items; at most 16");
  CHECK(message({"permutations"}, {"strategies=parallel(2)"}) ==
        "permutations: parameter 'strategies': 'parallel(2)' cannot be enumerated (a "
        "thread-dependent or library "
        "order)");
  CHECK(message({"chunked"}, {"strategies=nosuch"}).find("bad strategy 'nosuch'") !=
        std::string::npos);
  CHECK(message({"groupings"}, {"n=0"}) ==
        "groupings: parameter 'n': '0' is out of range 1..10000000");
  CHECK(message({"associativity"}, {"formats=fp99"}).find("parameter 'formats'") !=
        std::string::npos);
  CHECK(message({"spacing"}, {"bad"}) ==
        "--set 'bad': expected name=value or experiment.name=value");
  CHECK(message({"spacing"}, {"chunked.k=1"}) ==
        "--set 'chunked.k=1': experiment 'chunked' is not being run");
}

TEST_CASE("orders: the enumerator agrees with brute force over fplab::sum",
          "[experiments][orders]") {
  std::mt19937_64 g(3);
  std::vector<double> x;
  for (int i = 0; i < 7; ++i)
    x.push_back(rnd::normal(g) * std::ldexp(1.0, static_cast<int>(rnd::below(g, 40)) - 20));
  const std::vector<float> xf(x.begin(), x.end());
  for (const char* spelling : {"sequential", "pairwise", "pairwise(2)", "numpy", "numpy-buffered",
                               "lanes(3)", "chunked(3,pairwise,pairwise)",
                               "chunked(2,numpy,sequential)", "kahan", "neumaier", "exact"}) {
    INFO(spelling);
    const Strategy s = parse_strategy(spelling);
    const auto program_check = [&](const auto& values) {
      using T = typename std::decay_t<decltype(values)>::value_type;
      const auto h = enumerate_orders<T>(s, std::span<const T>(values), 2);
      const auto expected = brute_force<T>(s, values);
      std::map<std::uint64_t, std::uint64_t> got;
      for (const auto& [v, c] : h.totals) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &v, sizeof(T));
        got[bits] = c;
      }
      CHECK(got == expected);
      CHECK(h.orders == 5040);
    };
    program_check(x);
    program_check(xf);
    if (s.order != Order::kahan && s.order != Order::neumaier && s.order != Order::exact) {
      const auto p = ReductionProgram::of(s, x.size());
      CHECK(Value::of(p.evaluate(std::span<const double>(x))) ==
            Value::of(sum(s, std::span<const double>(x))));
    }
  }
  CHECK_FALSE(enumerable(parse_strategy("omp-reduction(2)")));
  CHECK_THROWS_AS(
      enumerate_orders<double>(parse_strategy("sequential"), std::vector<double>(13, 1.0)),
      std::invalid_argument);
}

TEST_CASE("orders: shares of the walk merge into the whole, by bit pattern",
          "[experiments][orders]") {
  std::mt19937_64 g(5);
  std::vector<double> x;
  for (int i = 0; i < 8; ++i)
    x.push_back(rnd::normal(g) * std::ldexp(1.0, static_cast<int>(rnd::below(g, 30)) - 15));
  const std::vector<float> xf(x.begin(), x.end());
  for (const char* spelling : {"sequential", "pairwise", "lanes(3)", "kahan", "exact"}) {
    INFO(spelling);
    const Strategy s = parse_strategy(spelling);
    const auto check = [&](const auto& values) {
      using T = typename std::decay_t<decltype(values)>::value_type;
      const std::span<const T> v(values);
      const auto whole = enumerate_orders<T>(s, v, 2);
      for (std::size_t parts : {1, 2, 3, 4, 7, 500}) {
        for (std::size_t prefix : {0, 1, 3, 7}) {
          INFO("parts " << parts << " prefix " << prefix);
          std::vector<std::pair<std::uint64_t, std::uint64_t>> all;
          std::uint64_t orders = 0, distinct_summed = 0;
          for (std::size_t part = 0; part < parts; ++part) {
            const OrderShare share{part, parts, prefix};
            const auto h = enumerate_order_share<T>(s, v, share, 1);
            CHECK(h.orders == order_share_orders(v.size(), share));
            orders += h.orders;
            distinct_summed += h.distinct();
            const auto b = histogram_bits(h);
            all.insert(all.end(), b.begin(), b.end());
          }
          CHECK(orders == 40320);
          const auto merged = histogram_from_bits<T>(all);
          CHECK(histogram_bits(merged) == histogram_bits(whole));
          // Why a union: adding each share's distinct count overcounts.
          if (parts > 1 && s.order != Order::exact) CHECK(distinct_summed > whole.distinct());
        }
      }
      // Negative control: one share alone is not the whole.
      const auto half = enumerate_order_share<T>(s, v, OrderShare{0, 2, 0}, 1);
      CHECK(half.orders == 20160);
      CHECK(histogram_bits(half) != histogram_bits(whole));
    };
    check(x);
    check(xf);
  }
  // Up to 16 numbers in a share (here one task of 9! orders of 13), 12 in one process.
  const std::vector<double> thirteen(13, 1.0);
  const OrderShare one{0, 13 * 12 * 11 * 10, 4};
  const auto h = enumerate_order_share<double>(parse_strategy("sequential"), thirteen, one, 1);
  CHECK(h.orders == 362880);
  CHECK(h.distinct() == 1);
  CHECK_THROWS_AS(enumerate_orders<double>(parse_strategy("sequential"), thirteen),
                  std::invalid_argument);
  CHECK_THROWS_AS(enumerate_order_share<double>(parse_strategy("sequential"),
                                                std::vector<double>(17, 1.0), one),
                  std::invalid_argument);
  CHECK_THROWS_AS(enumerate_order_share<double>(parse_strategy("sequential"), thirteen, {2, 2, 0}),
                  std::invalid_argument);
}

TEST_CASE("permutations: more than 12 numbers need ranks", "[experiments][A2]") {
  std::string message;
  try {
    (void)run_one("permutations", {"numbers=1,2,3,4,5,6,7,8,9,10,11,12,13", "mode=exhaustive"});
  } catch (const InputError& e) {
    message = e.what();
  }
  CHECK(message ==
        "permutations: 13 numbers: at most 12 in one process; set ranks=P to enumerate them "
        "across P MPI ranks (up to 16 numbers)");
  // Sampling needs no enumeration: 13 numbers run in one process.
  const auto r = run_one("permutations", {"numbers=1,2,3,4,5,6,7,8,9,10,11,12,13", "mode=sampling",
                                          "shuffles=10", "strategies=sequential"});
  CHECK(r.table("sampled") != nullptr);
}

TEST_CASE("python replay: CPython's Mersenne Twister and shuffle", "[experiments][python]") {
  // random.seed(42); v = list(range(8)); random.shuffle(v) on Debian 12's python3.11.
  python::Random r(42);
  std::vector<int> v{0, 1, 2, 3, 4, 5, 6, 7};
  r.shuffle(std::span<int>(v));
  CHECK(v == std::vector<int>{3, 4, 6, 7, 2, 5, 0, 1});
  // random.seed(42); random.getrandbits(32)
  python::Random r2(42);
  CHECK(r2.getrandbits(32) == 2746317213U);
  const std::vector<python::Number> xs{
      {false, 0, 0.1}, {true, 1, 0.0}, {false, 0, 1e-17}, {false, 0, -0.1}};
  CHECK(python::builtin_sum(xs, python::SumVersion::cpython311) ==
        (((0 + 0.1) + 1.0) + 1e-17) + -0.1);
}

TEST_CASE("A1 associativity: 0 and 0.1 in double, float32 and bf16", "[experiments][A1]") {
  const auto r = run_one("associativity");
  CHECK(text_at(r, "groupings", "float64", "left") == "0x0p+0");
  CHECK(text_at(r, "groupings", "float64", "right") == "0x1.999999999999ap-4");
  CHECK(text_at(r, "groupings", "float32", "right") == "0x1.99999ap-4");
  CHECK(text_at(r, "groupings", "bf16", "left") == "0x0p+0");
  CHECK(text_at(r, "groupings", "bf16", "right") == "0x1.9ap-4");  // 0.10009765625
  CHECK(r.verdict("A1")->status == Status::reproduced);
}

TEST_CASE("A2 permutations: 275 / 137 / 27 distinct totals, TML's 102 replayed",
          "[experiments][A2]") {
  const auto r = run_one("permutations", {"strategies=sequential,pairwise,kahan", "shuffles=1000"});
  CHECK(int_at(r, "exhaustive", "sequential float64", "distinct") == 275);
  CHECK(int_at(r, "exhaustive", "sequential float32", "distinct") == 137);
  CHECK(int_at(r, "exhaustive", "pairwise(1) float64", "distinct") == 27);
  CHECK(int_at(r, "exhaustive", "pairwise(1) float32", "distinct") == 27);
  CHECK(int_at(r, "exhaustive", "sequential float64", "orders") == 40320);
  CHECK(int_at(r, "exhaustive", "sequential float64", "zeros") == 12604);
  CHECK(int_at(r, "exhaustive", "pairwise(1) float64", "zeros") == 28544);
  CHECK(int_at(r, "tml-replay", "CPython 3.12+ (compensated)", "distinct") == 102);
  CHECK(text_at(r, "tml-replay", "CPython 3.12+ (compensated)", "max") ==
        "0x1.8p-54");  // 8.326672684688674e-17
  // Debian 12's python3.11 running TML's script prints 258 unique results.
  CHECK(int_at(r, "tml-replay", "CPython 3.11 and older (plain)", "distinct") == 258);
  CHECK(r.table("hist-sequential-float64")->rows.size() == 275);
  const auto* v = r.verdict("A2");
  REQUIRE(v != nullptr);
  CHECK(v->status == Status::differs);
  CHECK(v->ours.find("275") != std::string::npos);
  CHECK(v->reason.find("10,000") != std::string::npos);
  CHECK(int_at(r, "sampled", "sequential float64", "shuffles") == 1000);
}

TEST_CASE("A2 permutations: user numbers, n = 10, sampling only", "[experiments][A2]") {
  auto r = run_one("permutations",
                   {"numbers=1,2,3,4,5,6,7,8,9,0.1", "strategies=sequential", "dtypes=float32"});
  CHECK(int_at(r, "exhaustive", "sequential float32", "orders") == 3628800);
  CHECK(r.verdict("A2")->status == Status::differs);
  r = run_one("permutations", {"mode=sampling", "shuffles=10", "strategies=sequential"});
  CHECK(r.table("exhaustive") == nullptr);
  CHECK(int_at(r, "sampled", "sequential float64", "shuffles") == 10);
}

TEST_CASE("A3 groupings: the recipe's count, pinned", "[experiments][A3]") {
  const auto r = run_one("groupings", {"seeds=2"});
  CHECK(int_at(r, "by-seed", "1", "distinct") == 44);
  CHECK(int_at(r, "by-seed", "2", "distinct") == 20);
  CHECK(r.verdict("A3")->status == Status::differs);
}

TEST_CASE("A4 chunked: the table digit for digit", "[experiments][A4]") {
  const auto r = run_one(
      "chunked", {"k=1,4", "lanes=8", "threads=1,2", "repeats=1", "strategies=sequential,exact"});
  const Table* t = r.table("a4");
  REQUIRE(t != nullptr);
  const std::map<std::string, std::pair<std::string, std::string>> claimed{
      {"sequential", {"0x1.f3483ap+9", "6.393e-03"}},
      {"pairwise (numpy)", {"0x1.f34908p+9", "1.061e-04"}},
      {"in 4 chunks", {"0x1.f34906p+9", "1.672e-04"}},
      {"in 8 chunks", {"0x1.f34908p+9", "1.061e-04"}},
      {"in 16 chunks", {"0x1.f3490cp+9", "1.594e-05"}},
  };
  for (const auto& [row, expected] : claimed) {
    INFO(row);
    CHECK(t->get(row, "total")->hex() == expected.first);
    CHECK(fmt::format("{:.3e}", t->get(row, "error")->as_f64()) == expected.second);
    CHECK(t->get(row, "match")->as_text() == "yes");
  }
  CHECK(t->get("numpy 1.x np.sum (buffered)", "total")->hex() == "0x1.f3490ep+9");  // 998.570739746
  CHECK(t->get("float64 reference", "match")->as_text() == "yes");
  CHECK(r.verdict("A4")->status == Status::reproduced);
  // chunked(4,numpy,sequential) of the sweep is the table's 4-chunk row.
  CHECK(*r.table("sweep-k")->get("4", "total") == *t->get("in 4 chunks", "total"));
  CHECK(r.table("threads")->get("2", "total") != nullptr);
}

TEST_CASE("A4 chunked: a data file with other bytes is refused", "[experiments][A4]") {
  const auto dir = std::filesystem::temp_directory_path() / "fplab-test-experiments";
  std::filesystem::create_directories(dir);
  NumberArray data = read_npy(std::string(FPLAB_SOURCE_DIR) + "/experiments/data/a4_normals.npy");
  auto x = std::get<std::vector<float>>(data);
  x[123] = 0.5f;
  write_npy(dir / "tampered.npy", std::span<const float>(x));
  const auto plan = plan_runs({"chunked"}, true, {"data=" + (dir / "tampered.npy").string()});
  try {
    (void)run_experiment(plan.front(), true, false);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("sha256 of the data is") != std::string::npos);
  }
}

TEST_CASE("A5 spacing: bf16 near 16 and the table", "[experiments][A5]") {
  const auto r = run_one("spacing");
  const Table* b = r.table("bf16-near-16");
  CHECK(b->get("spacing", "value")->as_f64() == 0.125);
  CHECK(b->get("largest rounding error", "value")->as_f64() == 0.0625);
  CHECK(b->get("value below", "value")->as_f64() == 16.0);
  CHECK(b->get("value above", "value")->as_f64() == 16.125);
  CHECK(b->get("next value up", "value")->as_f64() == 16.25);
  CHECK(r.table("spacing")->get("16", "bf16")->as_f64() == 0.125);
  CHECK(r.table("spacing")->get("16", "fp32")->as_f64() == std::ldexp(1.0, -19));
  CHECK(r.table("spacing")->get("0.0625", "e4m3")->as_f64() == std::ldexp(1.0, -7));
  CHECK(r.table("max-error")->get("128", "bf16")->as_f64() == 0.5);
  CHECK(r.table("spacing")->rows.size() == 12);
  CHECK(r.verdict("A5")->status == Status::reproduced);
}

TEST_CASE("error-growth: every measured error within its bound", "[experiments]") {
  const auto r = run_one("error-growth", {"n_max=1e4", "strategies=sequential,pairwise,kahan"});
  for (const char* id : {"well", "ill"}) {
    const Table* t = r.table(id);
    REQUIRE(t != nullptr);
    CHECK(t->rows.size() == 7);  // 10, 32, 100, 316, 1000, 3162, 10000
    for (const auto& row : t->rows) {
      INFO(id << " n=" << row.key);
      CHECK(row.get("rel_sequential")->as_f64() <= row.get("bound_sequential")->as_f64());
      CHECK(row.get("rel_pairwise_1")->as_f64() <= row.get("bound_pairwise")->as_f64());
    }
  }
  CHECK(r.table("ill")->get("10000", "cond")->as_f64() > 1000);
}

// associativity's measuring function on its own (issue 15: measure, then
// record).
TEST_CASE("associativity's measurement: the two groupings per format, as data",
          "[experiments][A1]") {
  const Groupings d = groupings_in(kFP64, 0.1, 1e20, -1e20);
  CHECK(d.left == Value::f64(0.0));
  CHECK(d.right == Value::f64(0.1));
  CHECK(d.exact == Value::f64(0.1));
  const Groupings f = groupings_in(kFP32, 0.1, 1e20, -1e20);
  CHECK(f.left == Value::f32(0.0F));
  CHECK(f.right == Value::f32(0.1F));
  // Negative control: values of one magnitude associate, left == right.
  const Groupings same = groupings_in(kFP64, 1, 2, 3);
  CHECK(same.left == same.right);
  CHECK(same.left == Value::f64(6.0));
  const Groupings bf = groupings_in(parse_format("bf16"), 0.1, 1e20, -1e20);
  CHECK(bf.left == Value::f64(0.0));
  CHECK(bf.right == bf.a);  // bf16's rounding of 0.1 survives
  CHECK(bf.a != Value::f64(0.1));
}

// groupings' measuring functions on their own.
TEST_CASE("groupings' measurement: distinct totals of one data set, as data", "[experiments][A3]") {
  const auto x = float32_normals(4096, 1);
  REQUIRE(x.size() == 4096);
  CHECK(x != float32_normals(4096, 2));  // the seed picks the data
  const GroupingCount one = count_groupings(x, 1, "sequential", "sequential");
  CHECK(one.distinct == 1);  // negative control: one grouping, one total
  CHECK(one.lo == one.hi);
  const GroupingCount many = count_groupings(x, 255, "sequential", "sequential");
  CHECK(many.distinct > 1);
  CHECK(many.distinct <= 255);
  CHECK(many.lo < many.hi);
  CHECK(many.lo <= one.lo);
  CHECK(one.hi <= many.hi);

  const CountSpread odd = count_spread({17, 3, 40});
  CHECK(odd.first == 17);
  CHECK(odd.lo == 3);
  CHECK(odd.hi == 40);
  CHECK(odd.median == 17.0);
  CHECK(count_spread({4, 1, 2, 9}).median == 3.0);  // mean of the two middle counts
}

// spacing's measuring function on its own.
TEST_CASE("spacing's measurement: bfloat16 around a probe, as data", "[experiments][A5]") {
  const Bf16Probe near16 = bf16_probe(16.07);
  CHECK(near16.below == 16.0);
  CHECK(near16.above == 16.125);
  CHECK(near16.next_up == 16.25);
  CHECK(near16.spacing == 0.125);
  CHECK(near16.max_error == 0.0625);
  // Negative control: one binade lower the grid is twice as fine, and a
  // representable probe is its own neighbour on both sides.
  const Bf16Probe near8 = bf16_probe(8.0);
  CHECK(near8.below == 8.0);
  CHECK(near8.above == 8.0);
  CHECK(near8.next_up == 8.0625);
  CHECK(near8.spacing == 0.0625);
}

// error-growth's measuring functions on their own.
TEST_CASE("error-growth's measurements: sizes, data and errors against the bounds, as data",
          "[experiments]") {
  CHECK(error_growth_sizes(1000, 2) == std::vector<std::size_t>{10, 32, 100, 316, 1000});
  CHECK(error_growth_sizes(50, 1) == std::vector<std::size_t>{10, 50});
  const std::vector<Strategy> strategies{parse_strategy("sequential"), parse_strategy("pairwise"),
                                         parse_strategy("kahan")};
  // Well-conditioned: four ones sum exactly, condition number 1.
  const std::vector<float> ones(4, 1.0F);
  const ErrorFigures well = measure_errors(ones, strategies);
  CHECK(well.cond == 1.0);
  CHECK(well.rel == std::vector<double>{0.0, 0.0, 0.0});
  // Ill-conditioned: the cancelling pairs make the condition number grow
  // with n, and the measured errors stay below their bounds.
  const auto x = ill_conditioned_float32(10001, 7);
  REQUIRE(x.size() == 10001);
  CHECK(x != ill_conditioned_float32(10001, 8));
  const ErrorFigures ill = measure_errors(x, strategies);
  CHECK(ill.cond > 100);
  REQUIRE(ill.rel.size() == 3);
  CHECK(ill.rel[0] > 0.0);  // the recursive sum does not cancel exactly
  CHECK(ill.rel[0] <= ill.bound_sequential);
  CHECK(ill.rel[1] <= ill.bound_pairwise);
  CHECK(ill.rel[2] <= ill.bound_kahan);
  CHECK(ill.bound_pairwise < ill.bound_sequential);
}
