// The experiment registry: every experiment fplab can run, each in its own
// file, registering itself at start-up.
//
// An experiment is an id, a title, the published claims it tests, typed
// parameters (each with a full default that reproduces the claims and a
// --quick default for CI), a seed, and a run function that fills an
// ExperimentRecord (reports/results.hpp) with tables, figures, notes and
// one Verdict per claim. `fplab run` validates every parameter before any
// experiment starts, runs them in `order`, and writes results.json and the
// report from the records.
//
// Writing an experiment (any folder):
//
//   // foo/my_experiment.cpp
//   #include "experiments/experiment.hpp"
//   namespace {
//   fplab::Experiment make() {
//     fplab::Experiment e;
//     e.info.id = "my-experiment";            // [a-z0-9-], unique
//     e.info.title = "What it shows";
//     e.info.description = "One line for `fplab list`";
//     e.info.order = 200;                     // position in `run all` and the report
//     e.info.seed = 1;                        // recorded; overridable as --set seed=N
//     e.info.claims = {{"B2", "claim text", "source"}};
//     e.info.params = {fplab::ParamSpec::integer("n", "how many", "1000", "100", 1, 1e6)};
//     e.run = [](const fplab::Params& p, fplab::RunContext& ctx, fplab::ExperimentRecord& out) {
//       fplab::Table t{"main", "Main table", "n"};
//       t.add_column("total", "total", "", /*hex=*/true);
//       t.add_row("1000").set("total", fplab::Value::f32(1.5f));
//       out.add_table(std::move(t));
//       out.add_verdict("B2", "ours", "claimed", fplab::Status::reproduced, "why");
//     };
//     return e;
//   }
//   FPLAB_REGISTER_EXPERIMENT(make);
//   }  // namespace
//
// and in foo/CMakeLists.txt, one call (defined in experiments/CMakeLists.txt,
// which is added before model/, sampling/ and the other areas):
//
//   fplab_add_experiments(fplab_foo_experiments my_experiment.cpp)
//   target_link_libraries(fplab_foo_experiments PRIVATE fplab_foo)   # its own deps
//
// fplab_add_experiments builds an OBJECT library (so the linker cannot drop
// the self-registering static initialisers, as it would from a static
// archive), links it into `fplab`, and records it so the experiment tests
// (tests/test_experiments*.cpp) link it too. Nothing else changes: no list
// of experiments to edit, no line in cli/.
//
// Rules an experiment follows:
// - Results are deterministic: fixed seeds (std::mt19937_64 and the helpers
//   in experiments/random.hpp, never std::*_distribution, whose output
//   differs between standard libraries), never the clock. Anything that
//   varies from run to run (timings, thread-order-dependent sums) goes into
//   out.add_measurement(), which the fingerprint leaves out.
// - Floats go into tables as Value::f32 / Value::f64 (exact bits), counts as
//   Value::integer, labels as Value::text.
// - Errors in parameters that the ParamSpec cannot express are thrown as
//   std::invalid_argument from the run function with a one-line message.
// - Long loops call ctx.progress(done, total); it prints only on a terminal.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "reports/results.hpp"

namespace fplab {

enum class ParamType { integer, real, text, int_list, real_list, text_list };
std::string_view to_string(ParamType t);

using ParamValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>,
                                std::vector<double>, std::vector<std::string>>;

struct ParamSpec {
  std::string name;  // [a-z0-9_]
  std::string description;
  ParamType type = ParamType::integer;
  std::string full_default;                               // text form, as on the command line
  std::string quick_default;                              // empty: the same as full_default
  double min = -std::numeric_limits<double>::infinity();  // numbers and list items
  double max = std::numeric_limits<double>::infinity();
  std::size_t min_items = 0;  // lists
  std::size_t max_items = std::numeric_limits<std::size_t>::max();
  std::vector<std::string> choices;  // text and text lists: allowed values (empty: any)
  // Further validation of a parsed value: throws std::invalid_argument with
  // a one-line message. Runs when `fplab run` plans, before any experiment.
  std::function<void(const ParamValue&)> check;

  static ParamSpec integer(std::string name, std::string description, std::string full,
                           std::string quick, double min, double max);
  static ParamSpec real(std::string name, std::string description, std::string full,
                        std::string quick = {});
  static ParamSpec text(std::string name, std::string description, std::string full,
                        std::string quick = {}, std::vector<std::string> choices = {});
  static ParamSpec int_list(std::string name, std::string description, std::string full,
                            std::string quick, double min, double max);
  static ParamSpec real_list(std::string name, std::string description, std::string full,
                             std::string quick = {});
  static ParamSpec text_list(std::string name, std::string description, std::string full,
                             std::string quick = {}, std::vector<std::string> choices = {});
  // A text list of strategy spellings, each checked by parse_strategy().
  static ParamSpec strategy_list(std::string name, std::string description, std::string full,
                                 std::string quick = {});
};

// Parses `text` as the spec says; throws std::invalid_argument with a
// one-line message ("parameter 'n': '13' is out of range 1..12") otherwise.
// Lists are comma-separated, integer lists may hold ranges ("1..64");
// integers may use a power of ten ("1e7");
// reals are read exactly (io/numbers.hpp) and may be hex.
ParamValue parse_param(const ParamSpec& spec, std::string_view text);
// The canonical text of a value (what results.json records).
std::string param_text(const ParamValue& v);

// The validated parameters of one run of one experiment.
class Params {
 public:
  Params() = default;
  Params(std::vector<ParamSpec> specs, std::vector<ParamValue> values)
      : specs_(std::move(specs)), values_(std::move(values)) {}

  [[nodiscard]] std::int64_t integer(std::string_view name) const;
  [[nodiscard]] double real(std::string_view name) const;
  [[nodiscard]] const std::string& text(std::string_view name) const;
  [[nodiscard]] const std::vector<std::int64_t>& int_list(std::string_view name) const;
  [[nodiscard]] const std::vector<double>& real_list(std::string_view name) const;
  [[nodiscard]] const std::vector<std::string>& text_list(std::string_view name) const;
  [[nodiscard]] std::vector<ParamRecord> records() const;

 private:
  [[nodiscard]] const ParamValue& get(std::string_view name) const;
  std::vector<ParamSpec> specs_;
  std::vector<ParamValue> values_;
};

// What a running experiment can ask of the driver.
class RunContext {
 public:
  RunContext(std::string id, bool quick, std::uint64_t seed, bool show_progress)
      : id_(std::move(id)), quick_(quick), seed_(seed), show_progress_(show_progress) {}
  [[nodiscard]] bool quick() const { return quick_; }
  [[nodiscard]] std::uint64_t seed() const { return seed_; }
  // Reports progress on stderr, only when it is a terminal; cheap to call
  // often (prints only when the whole percentage changes).
  void progress(std::uint64_t done, std::uint64_t total, std::string_view what = {});
  void finish_progress();

 private:
  std::string id_;
  bool quick_;
  std::uint64_t seed_;
  bool show_progress_;
  int last_percent_ = -1;
  bool printed_ = false;
};

struct ExperimentInfo {
  std::string id;
  std::string title;
  std::string description;  // one line, for `fplab list`
  int order = 1000;         // run and report order (A1..A5: 10..60)
  std::uint64_t seed = 0;
  std::vector<ClaimRef> claims;
  std::vector<ParamSpec> params;  // "seed" is added by the registry
};

using RunFunction = std::function<void(const Params&, RunContext&, ExperimentRecord&)>;

struct Experiment {
  ExperimentInfo info;
  RunFunction run;
};

// Adds an experiment; returns true (for use in a static initialiser).
// Throws std::logic_error for a duplicate or malformed id or parameter.
bool register_experiment(Experiment e);

// Every registered experiment, by (order, id).
std::vector<const Experiment*> registered_experiments();
const Experiment* find_experiment(std::string_view id);

#define FPLAB_CONCAT_INNER(a, b) a##b
#define FPLAB_CONCAT(a, b) FPLAB_CONCAT_INNER(a, b)
// Registers the Experiment returned by `factory()` at start-up.
#define FPLAB_REGISTER_EXPERIMENT(factory)                                   \
  [[maybe_unused]] const bool FPLAB_CONCAT(fplab_registered_, __COUNTER__) = \
      ::fplab::register_experiment(factory())

// ---- running ---------------------------------------------------------------

struct PlannedRun {
  const Experiment* experiment;
  Params params;
  std::uint64_t seed;
};

// Resolves ids ("all" for every experiment) and settings ("name=value" for
// every chosen experiment that has the parameter, "id.name=value" for one)
// into validated runs. Throws std::invalid_argument with a one-line message
// for an unknown experiment or parameter, or a bad value.
std::vector<PlannedRun> plan_runs(const std::vector<std::string>& ids, bool quick,
                                  const std::vector<std::string>& settings);

// Runs one planned experiment into a record (timing it).
ExperimentRecord run_experiment(const PlannedRun& run, bool quick, bool show_progress);

}  // namespace fplab
