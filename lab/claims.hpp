// The published claims the lab reproduces, in one table: id, the claim as
// published, who published it, and the claimed figure a verdict compares
// ours with. /work/shared/claims.md (docs/claims.md's source) is the
// authority for the texts; they are copied here without its Markdown
// (backticks, bold). An experiment names its claims by id
// (ExperimentInfo::claims); run_experiment() copies each one's row into the
// record, and ExperimentRecord::add_verdict(id, ours, status, reason) takes
// the claimed figure from it, so no figure is typed twice.
//
// Ids: A arithmetic, B inference, C sampling, D collectives and tensor
// parallelism, P platforms and compilers. A new claim is one row here.
#pragma once

#include <span>
#include <string_view>

#include "reports/results.hpp"

namespace fplab {

struct Claim {
  std::string_view id;      // "A1"
  std::string_view text;    // the claim as published
  std::string_view source;  // who published it
  std::string_view figure;  // the claimed figure, as a verdict's "claimed" shows it
};

// Every claim, in id order (A, B, C, D, P; numbers ascending).
std::span<const Claim> claims_table();

// The claim with this id; throws std::logic_error for an unknown id (a
// programming error: experiments name ids from the table).
const Claim& find_claim(std::string_view id);

// The claim as an experiment record carries it.
ClaimRef claim_ref(std::string_view id);

}  // namespace fplab
