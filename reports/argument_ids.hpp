// The ids of every table and column that the report's argument
// (reports/argument.cpp) reads, one namespace per experiment and table:
// argument_ids::<experiment>::<table>::table is the TableId, the other names
// in it that table's ColumnIds, and argument_ids::<experiment>::experiment
// the experiment's id; a ParamId names a parameter the argument quotes, and
// argument_ids::perturbation the table that several experiments write for
// the headline figure (headline_record). The experiments that write these tables declare them
// with Columns<Row> (reports/columns.hpp) through the same constants, so an
// id is spelled once, here, and renaming it renames writer and reader both.
//
// argument_reads() lists every (experiment, table, columns) above, for the
// test that runs the experiments and checks each table declares each column
// (tests/test_reports.cpp); a constant added here belongs in that list too.
// Row keys ("sequential float64", "greedy") are data, not ids: they stay in
// argument.cpp, and argument_misses() still reports a missing one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "reports/columns.hpp"

namespace fplab::argument_ids {

// An experiment parameter's name, as its ParamSpec declares it.
struct ParamId {
  std::string_view id;
  [[nodiscard]] std::string str() const { return std::string(id); }
};

namespace permutations {
inline constexpr std::string_view experiment{"permutations"};
namespace exhaustive {
inline constexpr TableId table{"exhaustive"};
inline constexpr ColumnId orders{"orders"};
inline constexpr ColumnId distinct{"distinct"};
}  // namespace exhaustive
}  // namespace permutations

namespace associativity {
inline constexpr std::string_view experiment{"associativity"};
namespace groupings {
inline constexpr TableId table{"groupings"};
inline constexpr ColumnId a{"a"};
inline constexpr ColumnId b{"b"};
inline constexpr ColumnId c{"c"};
inline constexpr ColumnId left{"left"};
inline constexpr ColumnId right{"right"};
}  // namespace groupings
}  // namespace associativity

namespace batch_variance {
inline constexpr std::string_view experiment{"batch-variance"};
namespace batching {
inline constexpr TableId table{"batching"};
inline constexpr ColumnId policy{"policy"};
inline constexpr ColumnId differing{"differing"};
inline constexpr ColumnId share{"share"};
inline constexpr ColumnId max_change{"max_change"};
}  // namespace batching
}  // namespace batch_variance

namespace top2_gaps {
inline constexpr std::string_view experiment{"top2-gaps"};
namespace stats {
inline constexpr TableId table{"stats"};
inline constexpr ColumnId n{"n"};
inline constexpr ColumnId min{"min"};
}  // namespace stats
namespace perturbations {
inline constexpr TableId table{"perturbations"};
inline constexpr ColumnId size{"size"};
inline constexpr ColumnId greedy_below{"greedy_below"};
inline constexpr ColumnId heldout_below{"heldout_below"};
}  // namespace perturbations
// The headline figure (headline_record) reads a marker's share of gaps below
// from the quantiles: each share column of `perturbations` from its gap
// list's quantile column and that quantile's rank.
namespace gap_quantiles {
inline constexpr TableId table{"gap-quantiles"};
inline constexpr ColumnId greedy{"greedy"};
inline constexpr ColumnId greedy_rank{"greedy_rank"};
inline constexpr ColumnId heldout{"heldout"};
inline constexpr ColumnId heldout_rank{"heldout_rank"};
struct Source {
  ColumnId share;  // perturbations' share column
  ColumnId gap;    // this table's quantile of the gaps
  ColumnId rank;   // that quantile's rank among the sorted gaps
};
inline constexpr Source sources[] = {{perturbations::greedy_below, greedy, greedy_rank},
                                     {perturbations::heldout_below, heldout, heldout_rank}};
}  // namespace gap_quantiles
}  // namespace top2_gaps

// The headline figure's lines from other experiments: every experiment's
// `perturbation` table (other than top2-gaps), one line per row at `size`.
// `writers` are the experiments that write one today.
namespace perturbation {
inline constexpr TableId table{"perturbation"};
inline constexpr ColumnId size{"size"};
inline constexpr std::string_view writers[] = {"quantization-scales", "precision-ladder",
                                               "chunked-prefill", "tensor-parallel"};
}  // namespace perturbation

namespace flip_prediction {
inline constexpr std::string_view experiment{"flip-prediction"};
namespace flips {
inline constexpr TableId table{"flips"};
inline constexpr ColumnId flips{"flips"};
inline constexpr ColumnId steps{"steps"};
inline constexpr ColumnId observed{"observed"};
}  // namespace flips
}  // namespace flip_prediction

namespace precision_flips {
inline constexpr std::string_view experiment{"precision-flips"};
namespace summary {
inline constexpr TableId table{"summary"};
inline constexpr ColumnId diverged{"diverged"};
inline constexpr ColumnId prompts{"prompts"};
}  // namespace summary
// The parameter the argument quotes ("within N steps").
inline constexpr ParamId steps{"steps"};
}  // namespace precision_flips

namespace batch_answers {
inline constexpr std::string_view experiment{"batch-answers"};
namespace lead {
inline constexpr TableId table{"lead"};
inline constexpr ColumnId value{"value"};
inline constexpr ColumnId logit{"logit"};
}  // namespace lead
}  // namespace batch_answers

namespace gpu_generations {
inline constexpr std::string_view experiment{"gpu-generations"};
namespace pairs {
inline constexpr TableId table{"pairs"};
inline constexpr ColumnId a{"a"};
inline constexpr ColumnId b{"b"};
inline constexpr ColumnId max_change{"max_change"};
}  // namespace pairs
}  // namespace gpu_generations

// The router-flips sentence: its flips table (one row per "PRECISION
// POLICY" run) and its amplification table's ratio.
namespace router_flips {
inline constexpr std::string_view experiment{"router-flips"};
namespace flips {
inline constexpr TableId table{"flips"};
inline constexpr ColumnId pairs{"pairs"};
inline constexpr ColumnId flips{"flips"};
inline constexpr ColumnId answers{"answers"};
inline constexpr ColumnId changed{"changed"};
inline constexpr ColumnId changed_after_flip{"changed_after_flip"};
}  // namespace flips
namespace amplification {
inline constexpr TableId table{"amplification"};
inline constexpr ColumnId ratio{"ratio"};
}  // namespace amplification
}  // namespace router_flips

struct TableRead {
  std::string_view experiment;
  TableId table;
  std::vector<ColumnId> columns;
};

inline std::vector<TableRead> argument_reads() {
  namespace perm = permutations::exhaustive;
  namespace assoc = associativity::groupings;
  namespace batching = batch_variance::batching;
  namespace stats = top2_gaps::stats;
  namespace pert = top2_gaps::perturbations;
  namespace flips = flip_prediction::flips;
  namespace summary = precision_flips::summary;
  namespace lead = batch_answers::lead;
  namespace gpu_pairs = gpu_generations::pairs;
  std::vector<TableRead> reads{
      {permutations::experiment, perm::table, {perm::orders, perm::distinct}},
      {associativity::experiment,
       assoc::table,
       {assoc::a, assoc::b, assoc::c, assoc::left, assoc::right}},
      {batch_variance::experiment,
       batching::table,
       {batching::policy, batching::differing, batching::share, batching::max_change}},
      {top2_gaps::experiment, stats::table, {stats::n, stats::min}},
      {top2_gaps::experiment, pert::table, {pert::size, pert::heldout_below}},
      {flip_prediction::experiment, flips::table, {flips::flips, flips::steps, flips::observed}},
      {precision_flips::experiment, summary::table, {summary::diverged, summary::prompts}},
      {batch_answers::experiment, lead::table, {lead::value, lead::logit}},
      {gpu_generations::experiment,
       gpu_pairs::table,
       {gpu_pairs::a, gpu_pairs::b, gpu_pairs::max_change}},
  };
  reads.push_back({top2_gaps::experiment, pert::table, {pert::greedy_below}});
  namespace router = router_flips::flips;
  reads.push_back({router_flips::experiment,
                   router::table,
                   {router::pairs, router::flips, router::answers, router::changed,
                    router::changed_after_flip}});
  reads.push_back({router_flips::experiment,
                   router_flips::amplification::table,
                   {router_flips::amplification::ratio}});
  namespace quantiles = top2_gaps::gap_quantiles;
  reads.push_back(
      {top2_gaps::experiment,
       quantiles::table,
       {quantiles::greedy, quantiles::greedy_rank, quantiles::heldout, quantiles::heldout_rank}});
  for (const std::string_view writer : perturbation::writers) {
    reads.push_back({writer, perturbation::table, {perturbation::size}});
  }
  return reads;
}

}  // namespace fplab::argument_ids
