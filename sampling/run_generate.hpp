// `fplab generate`'s work for one request (sampling/generate_request.hpp):
// check it, load the model, decode, write the output files, and say what to
// print. The command (cli/generate_command.cpp) parses, calls this and
// prints. Four ways to run, chosen by the request:
//  - a rank of an mpirun job (tp_rank_out set): joins the job
//    (`ranks->join()`), decodes with its shard, and rank 0 writes the
//    answer and sample 0's logits into tp_rank_out (kRankText,
//    kRankLogits); nothing to print. An error ends the job (abort);
//  - the launcher (tp > 1 without tp_in_process): the same request for the
//    ranks (the steps resolved, the model's path spelled out, no --logits)
//    run by `ranks->launch`; rank 0's answer is the output;
//  - the gate (gate set): gated greedy decoding (model/gated_decode.hpp);
//    the first row's text, and the counts (with --json in the same line,
//    else on `err`); `progress` is told (committed, total) tokens;
//  - a plain run: every row in one batch (sampling/decode.hpp); the
//    samples' texts ("--- seed S" headers for several, or JSON), --logits
//    and --dump written.
// Output files are checked writable before any work and renamed into
// place. Throws std::invalid_argument or InputError (one line) for a
// request or model it refuses, and what `ranks` throws; `ranks` may be
// null for a request that needs no MPI.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "sampling/generate_ranks.hpp"
#include "sampling/generate_request.hpp"

namespace fplab::sampling {

struct GenerateOutput {
  std::string out;  // for stdout
  std::string err;  // for stderr (the gate's counts without --json)
};

using GateProgress = std::function<void(std::size_t committed, std::size_t total)>;

GenerateOutput run_generate(const GenerateRequest& o, const GenerateRanks* ranks,
                            const GateProgress& progress = {});

}  // namespace fplab::sampling
