// The report's opening: the argument the lab makes, from its own results.
//
// argument_blocks() appends, when the experiments they read are in the
// results (each part is left out when its experiment is not):
// - "The argument": five sentences following the chain
//   numbers -> order -> logits -> gaps -> flipped token, one per link,
//   each ending in a link to the section its numbers come from
//   (permutations or associativity, batch-variance, top2-gaps,
//   precision-flips and flip-prediction, batch-answers). Each figure is a
//   value of that section's tables (or their ratio, said as one), never
//   recomputed from other figures: the logits sentence names every
//   reduction policy with its own largest share, count and change (the one
//   moving the most logits first), the gaps sentence the policy whose
//   change it divides by, and the flips sentence gives decoding's counts
//   with their sizes as measurements of their own, not as a consequence
//   of the largest changes before it; when router-flips ran, a sentence
//   after it sets router flips beside those token flips (router-flips'
//   flips table: its run with the most flips, its pairs and changed
//   answers, the batch-invariant runs' flips; the amplification ratio);
// - the headline's own figure (batch-answers' lead-gap), then the gap CDF
//   (top2-gaps' gap-cdf with a line per perturbation, the cross-GPU one
//   included; see headline_record);
// - the lead example (batch-answers' `lead` table): the two greedy texts
//   with the first differing character highlighted, and at that step the
//   top-2 characters, their logits (exact hex beside) and the gap.
// Numbers in the sentences are printed with 4 significant digits; the
// tables keep the exact hex.
#pragma once

#include <string>
#include <vector>

#include "reports/report_document.hpp"

namespace fplab::report {

void argument_blocks(const Results& r, bool plots, Document& d);

// What argument_blocks() reads and `r` lacks, one line each ("batch-variance:
// no table 'batching'", "table 'exhaustive': no row 'sequential float64'
// with a column 'distinct'"): every table, row, column and figure id it
// names, for each experiment of `r` it reads (an experiment not in `r` is
// none: its part is left out). Empty on the results of those experiments as
// they are; tests/test_reports.cpp runs them and holds them to it, so an
// experiment that renames an id the argument reads fails that test instead
// of dropping a sentence from the report.
std::vector<std::string> argument_misses(const Results& r);

// The figure shown first (top2-gaps' gap-cdf), which its own section then
// only points to.
bool is_headline(const ExperimentRecord& e, const Figure& f);
// The headline's own figure (batch-answers' lead-gap: the lead example's
// top-2 gap over the decode steps, alone vs batched), shown first.
bool is_lead_figure(const ExperimentRecord& e, const Figure& f);

// The record the headline figure is drawn from: top2-gaps' `e`, with one
// line more for each row of every other experiment's `perturbation` table
// (a `size` column: tensor parallelism, the fp8 scale, chunked prefill,
// LayerCast ...), keyed "ROW (EXPERIMENT)", and, when gpu-generations ran,
// one for the cross-GPU perturbation: the largest `max_change` of its
// `pairs` table between two architectures' kernels (rows whose `a` and `b`
// are gpu(ARCH...) with different ARCH and no fp8 input; the first such row
// reaching it names the line, "cross-GPU, largest change: A vs B
// (gpu-generations)"; its size is that cell, bits unchanged). Their shares of gaps below come
// from e's `gap-quantiles` table (1,001 quantiles with their ranks): at
// least the count up to the last quantile below the size, at most the count
// before the first one at or above it; the midpoint, within 0.05 percentage
// point of the exact share. `e` unchanged when nothing is to be added.
ExperimentRecord headline_record(const Results& r, const ExperimentRecord& e);

// A source as a reference entry: its text, with "arXiv NNNN.NNNNN" linked
// to arxiv.org.
Spans reference_spans(const std::string& source);

}  // namespace fplab::report
