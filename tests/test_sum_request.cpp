// fplab sum's request (reductions/sum_request.hpp) and its one parser
// (cli/sum_options.hpp): to_args() parses back to an equal request with
// every option set, and every option the parser declares is written by
// to_args(). Negative controls: an option left out of the arguments gives a
// different request, and so does a request differing in one field. And the
// run's parts: strategy_totals' same-bits groups (reductions/
// strategy_totals.hpp) and array_slices (io/array_slices.hpp).
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/sum_options.hpp"
#include "cli_options_written.hpp"
#include "io/array_slices.hpp"
#include "reductions/strategy_totals.hpp"
#include "reductions/sum_request.hpp"

namespace {

using fplab::SumRequest;

// Every option away from its default. --csv excludes --json and
// --show-tree, so two requests between them set every option.
SumRequest every_option_set(bool csv) {
  SumRequest r;
  r.numbers = {"-0.1", "0x1.8p-3", "-inf"};
  r.file = "/some/dir/data file.npy";
  r.dtype = "float32";
  r.strategies = {"chunked(2,parallel(3),pairwise)", "kahan"};
  r.axis = 2;
  r.tensor = "layers.0.weight";
  r.bfloat16_void = true;
  r.csv = csv;
  r.json = !csv;
  r.show_tree = !csv;
  r.narrow = true;
  r.no_gpu = true;
  return r;
}

}  // namespace

TEST_CASE("sum request: to_args parses back to the same request, every option set",
          "[sum][request]") {
  for (const bool csv : {false, true}) {
    const SumRequest r = every_option_set(csv);
    REQUIRE_FALSE(r == SumRequest{});
    CHECK(fplab::cli::parse_sum_request(r.to_args()) == r);
  }
  CHECK(fplab::cli::parse_sum_request(SumRequest{}.to_args()) == SumRequest{});
  SumRequest axis0;  // axis 0 is given, not absent
  axis0.axis = 0;
  CHECK(fplab::cli::parse_sum_request(axis0.to_args()) == axis0);
}

TEST_CASE("sum request: every option the parser declares is written by to_args", "[sum][request]") {
  SumRequest bound;
  CLI::App app("fplab sum");
  fplab::cli::add_sum_options(app, bound);
  std::vector<std::string> args = every_option_set(false).to_args();
  const std::vector<std::string> csv_args = every_option_set(true).to_args();
  args.insert(args.end(), csv_args.begin(), csv_args.end());
  CHECK(fplab::test::options_not_written(app, args).empty());
  CHECK(fplab::test::declared_long_options(app).size() == 11);
}

TEST_CASE("sum request: an option left out or one field changed gives another request",
          "[sum][request]") {
  const SumRequest r = every_option_set(false);
  std::vector<std::string> args = r.to_args();
  const auto axis = std::find(args.begin(), args.end(), "--axis=2");
  REQUIRE(axis != args.end());
  args.erase(axis);
  CHECK_FALSE(fplab::cli::parse_sum_request(args) == r);
  // One field apart, each kind: text, number, list element, flag.
  SumRequest other = r;
  other.tensor = "layers.1.weight";
  CHECK(other.to_args() != r.to_args());
  CHECK_FALSE(fplab::cli::parse_sum_request(other.to_args()) == r);
  other = r;
  other.axis.reset();
  CHECK_FALSE(fplab::cli::parse_sum_request(other.to_args()) == r);
  other = r;
  other.numbers.front() = "-0.2";
  CHECK_FALSE(fplab::cli::parse_sum_request(other.to_args()) == r);
  other = r;
  other.strategies.back() = "pairwise";
  CHECK_FALSE(fplab::cli::parse_sum_request(other.to_args()) == r);
  other = r;
  other.bfloat16_void = false;
  CHECK_FALSE(fplab::cli::parse_sum_request(other.to_args()) == r);
}

TEST_CASE("sum: totals agreeing bit for bit are grouped, a NaN by its bits, -0 apart from +0",
          "[sum][request]") {
  // 0.1 + 1e20 - 1e20: sequential loses 0.1 (+0), exact and kahan keep it.
  const std::vector<double> x{0.1, 1e20, -1e20};
  const std::vector<fplab::Strategy> strategies{
      fplab::parse_strategy("sequential"), fplab::parse_strategy("exact"),
      fplab::parse_strategy("sequential"), fplab::parse_strategy("pairwise")};
  const auto t = fplab::strategy_totals(std::span<const double>(x), strategies);
  REQUIRE(t.rows.size() == 4);
  CHECK(std::bit_cast<std::uint64_t>(t.exact) == std::bit_cast<std::uint64_t>(0.1));
  CHECK(t.rows[1].total == t.exact);
  CHECK(t.rows[0].total == 0.0);
  const auto groups = fplab::same_bits_groups(t.rows);
  // A strategy named twice does not agree with itself; the others that match do.
  CHECK(fplab::same_bits_as(t.rows, 0) == fplab::same_bits_as(t.rows, 2));
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const auto same = fplab::same_bits_as(t.rows, i);
    for (std::size_t j = 0; j < t.rows.size(); ++j) {
      const bool listed = std::count(same.begin(), same.end(), t.rows[j].name) > 0;
      CHECK(listed == (t.rows[j].name != t.rows[i].name &&
                       std::bit_cast<std::uint64_t>(t.rows[j].total) ==
                           std::bit_cast<std::uint64_t>(t.rows[i].total)));
    }
  }
  CHECK(groups.size() >= 2);  // sequential's +0 and exact's 0.1
  std::size_t names = 0;
  for (const auto& g : groups) names += g.names.size();
  CHECK(names == 4);
  CHECK(groups.front().names.front() == "sequential");
  // Negative control: -0 and +0 compare equal but are two groups.
  std::vector<fplab::StrategyTotal<double>> zeros{{"a", 0.0, {}, {}}, {"b", -0.0, {}, {}}};
  CHECK(fplab::same_bits_groups(zeros).size() == 2);
  zeros[1].total = 0.0;
  CHECK(fplab::same_bits_groups(zeros).size() == 1);
  CHECK(fplab::same_bits_as(zeros, 0) == std::vector<std::string>{"b"});
  // Two NaNs: one group only when their bits agree.
  std::vector<fplab::StrategyTotal<float>> nans{{"a", std::bit_cast<float>(0x7fc00000u), {}, {}},
                                                {"b", std::bit_cast<float>(0xffc00000u), {}, {}}};
  CHECK(fplab::same_bits_groups(nans).size() == 2);
  nans[1].total = nans[0].total;
  CHECK(fplab::same_bits_groups(nans).size() == 1);
}

TEST_CASE("sum: an array's slices along an axis, labelled by the other axes' indices",
          "[sum][request]") {
  fplab::Array a;
  a.shape = {2, 3};
  a.bits.resize(6);
  const auto rows = fplab::array_slices(a, 1);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].label == "[1, :]");
  CHECK(rows[1].indices == std::vector<std::size_t>{3, 4, 5});
  const auto cols = fplab::array_slices(a, 0);
  REQUIRE(cols.size() == 3);
  CHECK(cols[2].label == "[:, 2]");
  CHECK(cols[2].indices == std::vector<std::size_t>{2, 5});
  const auto whole = fplab::array_slices(a, std::nullopt);
  REQUIRE(whole.size() == 1);
  CHECK(whole[0].label.empty());
  CHECK(whole[0].indices.size() == 6);
  CHECK_THROWS_AS(fplab::array_slices(a, 2), fplab::InputError);
  a.shape = {2, 0};
  a.bits.clear();
  CHECK(fplab::array_slices(a, 0).empty());
  CHECK(fplab::array_slices(a, 1).empty());
}
