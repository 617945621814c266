// The CLI in a lecture hall (issues 32, 46): `fplab sum`, `round` and `list`
// with --narrow (or on a terminal narrower than 100 columns) in 80 columns,
// `fplab list strategies | experiments` and `fplab generate --split-k S`
// (the classroom's split-K slider).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <sstream>
#include <string>

#include "cli_runner.hpp"

using fplab::test::run_fplab;

namespace {
std::size_t widest_line(const std::string& text) {
  std::istringstream in(text);
  std::size_t widest = 0;
  for (std::string line; std::getline(in, line);) widest = std::max(widest, line.size());
  return widest;
}
std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
// The output of `fplab ARGS` on a terminal `columns` wide (script(1) from
// util-linux gives one), carriage returns dropped.
std::string on_terminal(const std::string& args, int columns) {
  const std::string command = "script -qec 'stty cols " + std::to_string(columns) + "; " +
                              FPLAB_BINARY + " " + args + "' /dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  for (int c; (c = std::fgetc(pipe)) != EOF;) {
    if (c != '\r') out += static_cast<char>(c);
  }
  pclose(pipe);
  return out;
}
}  // namespace

TEST_CASE("fplab sum --narrow fits 80 columns, the wide table does not", "[cli]") {
  for (const char* args :
       {"0.1 1e20 -1e20", "--dtype float32 1e8 1 -1e8 0.5 3 -0.25 7e-3", "1 nan 2", "-inf 1 -.5"}) {
    const auto wide = run_fplab(std::string("sum ") + args);
    const auto narrow = run_fplab(std::string("sum --narrow ") + args);
    REQUIRE(narrow.exit_code == 0);
    CHECK(widest_line(narrow.output) <= 80);
    CHECK(widest_line(wide.output) > 80);  // the control: the width is the option's doing
    // The same strategies, totals and verdicts, just laid out again.
    for (const char* s : {"sequential", "kahan", "neumaier", "exact"}) {
      CHECK(occurrences(narrow.output, std::string("\n") + s + " ") ==
            occurrences(wide.output, std::string("\n") + s + " "));
    }
  }
  // Without --narrow, on a terminal 80 columns wide (script(1) from
  // util-linux gives one): the narrow table; 200 wide: the wide one.
  CHECK(widest_line(on_terminal("sum 0.1 1e20 -1e20", 80)) <= 80);
  CHECK(widest_line(on_terminal("sum 0.1 1e20 -1e20", 200)) == 148);

  const auto r = run_fplab("sum --narrow 0.1 1e20 -1e20");
  CHECK(r.output.find("0x1.999999999999ap-4") != std::string::npos);
  CHECK(r.output.find("all digits lost") != std::string::npos);
}

TEST_CASE("every teaching command has --narrow, and takes it by itself below 100 columns",
          "[cli]") {
  // (command, the wide layout's widest line, measured): sum --show-tree
  // over 16 numbers, round over every format, list with the parameters.
  const std::string sixteen = "1e16 1 -1e16 0.5 3 -0.25 7 0.1 0.2 0.3 1e8 -1e8 2 4 8 16";
  for (const std::string& args :
       {"sum --show-tree " + sixteen, std::string("round 0.1"), std::string("round 5e-324"),
        std::string("round --limits"), std::string("list"), std::string("list experiments")}) {
    INFO(args);
    const auto wide = run_fplab(args);
    const auto narrow = run_fplab(args + " --narrow");
    REQUIRE(wide.exit_code == 0);
    REQUIRE(narrow.exit_code == 0);
    CHECK(widest_line(wide.output) > 80);  // the control: the width is the option's doing
    CHECK(widest_line(narrow.output) <= 80);
    // Automatic on a 99-column terminal; a 200-column one keeps the wide layout.
    CHECK(widest_line(on_terminal(args, 99)) <= 80);
    CHECK(widest_line(on_terminal(args, 200)) == widest_line(wide.output));
  }
  // The same facts, laid out again: every tree, every hex value.
  const auto tree =
      run_fplab("sum --show-tree --narrow -s 'pairwise(2)' 1 2 3 4 5 6 7 8 9 10 11 12");
  CHECK(tree.output.find("pairwise(2)\n    ") != std::string::npos);
  const auto round = run_fplab("round 0.1 --narrow");
  for (const char* hex : {"0x1.99999ap-4", "0x3dcccccd", "-0x1.9999998p-30", "0x1p-27"})
    CHECK(round.output.find(hex) != std::string::npos);
}

TEST_CASE("fplab list strategies | experiments", "[cli]") {
  const auto strategies = run_fplab("list strategies");
  REQUIRE(strategies.exit_code == 0);
  CHECK(strategies.output.find("numpy-buffered") != std::string::npos);
  CHECK(strategies.output.find("permutations") == std::string::npos);
  const auto experiments = run_fplab("list experiments");
  REQUIRE(experiments.exit_code == 0);
  CHECK(experiments.output.find("  permutations ") != std::string::npos);
  CHECK(experiments.output.find("numpy-buffered") == std::string::npos);
  const auto both = run_fplab("list");
  REQUIRE(both.exit_code == 0);
  CHECK(both.output.find("  permutations ") != std::string::npos);
  CHECK(both.output.find("numpy-buffered") != std::string::npos);
  // Alone, `list` leaves the parameters to `list experiments`.
  CHECK(occurrences(both.output, "\n") < occurrences(experiments.output, "\n"));
  const auto bad = run_fplab("list nosuch");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output == "fplab: error: list: 'nosuch' is not 'strategies' or 'experiments'\n");
}

TEST_CASE("fplab generate --split-k: the split count flips a bf16 token", "[cli][model]") {
  const std::string base = "generate 'In the beginning ' -n 100 -t 0 --policy split-k ";
  const auto one = run_fplab(base + "--precision bf16 --split-k 1");
  const auto three = run_fplab(base + "--precision bf16 --split-k 3");
  REQUIRE(one.exit_code == 0);
  REQUIRE(three.exit_code == 0);
  CHECK(one.output != three.output);  // measured: they part at step 35
  // fp32 keeps the text for the same two counts (the control).
  CHECK(run_fplab(base + "--precision fp32 --split-k 1").output ==
        run_fplab(base + "--precision fp32 --split-k 3").output);
  const auto wrong = run_fplab("generate 'In the' -n 3 --split-k 2");
  CHECK(wrong.exit_code == 2);
  CHECK(wrong.output == "fplab: error: --split-k needs --policy split-k\n");
}
