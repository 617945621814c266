// The experiment registry: every experiment fplab can run, each in its own
// file, registering itself at start-up.
//
// An experiment is an id, a title, the published claims it tests (ids into
// lab/claims.hpp's table), typed parameters (lab/param_spec.hpp;
// each with a full default that reproduces the claims and a --quick default
// for CI), a seed, and a run function that fills an ExperimentRecord
// (reports/results.hpp) with tables, figures, notes and one Verdict per
// claim. `fplab run` validates every parameter before any experiment starts
// (lab/planning.hpp), runs them in `order`, and writes results.json
// and the report from the records.
//
// Writing an experiment: one file, experiments/<id>.cpp (the id with '-' as
// '_'; its measuring structs, where tests read them, in experiments/<id>.hpp);
// what it measures runs in the area of that concept. Measure, then record. Each table has
// one measuring function that returns a plain struct (tests check it
// directly, without the registry) and one function that records it; run()
// is the short list of those steps.
//
//   // experiments/my_experiment.cpp
//   #include "lab/experiment.hpp"
//   #include "reports/columns.hpp"
//   namespace {
//   struct Totals { std::int64_t n; float total; };       // what was measured
//   Totals measure_totals(std::int64_t n) { ... }          // no tables here
//   void record_totals(const Totals& m, fplab::ExperimentRecord& out) {
//     fplab::Columns<Totals> columns;                     // each column named once
//     columns.add(fplab::ColumnId{"total"}, "total", &Totals::total, "", /*hex=*/true);
//     fplab::Table t = columns.table(fplab::TableId{"main"}, "Main table", "n");
//     columns.add_row(t, std::to_string(m.n), m);         // the float cell: Value::f32
//     out.add_table(std::move(t));
//     // The claimed figure comes from the claims table: never typed here.
//     out.add_verdict("B2", "ours", fplab::Status::reproduced, "why");
//   }
//   void run(const fplab::Params& p, fplab::RunContext&, fplab::ExperimentRecord& out) {
//     record_totals(measure_totals(p.integer("n")), out);
//   }
//   fplab::Experiment make() {
//     return {.info = {.id = "my-experiment",          // [a-z0-9-], unique
//                      .title = "What it shows",
//                      .description = "One line for `fplab list`",
//                      .order = 200,                   // position in `run all` and the report
//                      .seed = 1,                      // recorded; overridable as --set seed=N
//                      .claims = {"B2"},               // ids in lab/claims.cpp
//                      .params = {fplab::ParamSpec::integer("n", "how many", "1000", "100", 1,
//                                                           1e6)}},
//             .run = run};
//   }
//   FPLAB_REGISTER_EXPERIMENT(make);
//   }  // namespace
//
// and in experiments/CMakeLists.txt, its file in the fplab_add_experiments
// call (defined in lab/CMakeLists.txt) whose libraries it links, or a new one:
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
//   in lab/random.hpp, never std::*_distribution, whose output
//   differs between standard libraries), never the clock. Anything that
//   varies from run to run (timings, thread-order-dependent sums, anything
//   that depends on a buffer's address) goes into out.add_measurement(),
//   which the fingerprint leaves out.
// - Every file it reads (a data set, the model) is a parameter, and is
//   recorded with its sha256 by out.add_input() (reports/results.hpp).
// - Floats go into tables as Value::f32 / Value::f64 (exact bits), counts as
//   Value::integer, labels as Value::text.
// - Errors in parameters that the ParamSpec cannot express are thrown as
//   std::invalid_argument from the run function with a one-line message.
// - Long loops call ctx.progress(done, total); it prints only on a terminal.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "lab/param_spec.hpp"
#include "lab/params.hpp"
#include "lab/planning.hpp"
#include "lab/run_context.hpp"
#include "reports/results.hpp"

namespace fplab {

// When --quick runs a parameter's large_quick_default (lab/param_spec.hpp)
// rather than its quick_default, and a full run (no --quick) its
// large_full_default rather than its full_default: `applies` gets the
// parameters the run would have without the large-run values (a value the
// user set included) and says whether the run is large, e.g. whether a model experiment's model is
// far bigger than the bundled one; it may throw std::invalid_argument (a model that cannot be
// read). `rule` says when, in words, for parameter listings. A value the
// user set is never replaced; the values run are the values recorded.
struct LargeQuickRule {
  std::string rule = {};
  std::function<bool(const Params&)> applies = {};
};

// Every member has a default, so a make() names only what it sets (and
// -Wmissing-field-initializers stays quiet).
struct ExperimentInfo {
  std::string id = {};
  std::string title = {};
  std::string description = {};  // one line, for `fplab list`
  int order = 1000;              // run and report order (A1..A5: 10..60)
  std::uint64_t seed = 0;
  std::vector<std::string> claims = {};  // claim ids (lab/claims.hpp)
  std::vector<ParamSpec> params = {};    // "seed" is added by the registry
  LargeQuickRule large_quick = {};       // none: the defaults are the same whatever the run
};

using RunFunction = std::function<void(const Params&, RunContext&, ExperimentRecord&)>;

struct Experiment {
  ExperimentInfo info = {};
  RunFunction run = {};
};

// Adds an experiment; returns true (for use in a static initialiser).
// Throws std::logic_error for a duplicate or malformed id or parameter, or
// a claim id that is not in the claims table.
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

}  // namespace fplab
