// What `fplab generate` is asked to do, as one value: every option of the
// command, parsed once (cli/generate_options.hpp: add_generate_options binds
// the command line to it) and written back by to_args(), the arguments
// after `fplab generate` that parse to an equal request. The mpirun ranks
// of --tp receive the request that way (mpi/open_mpi_generate_ranks.cpp), so an
// option cannot be left out of what the ranks run:
// tests/test_generate_request.cpp round-trips a request with every option
// set, and fails for an option the parser declares that to_args never
// writes.
//
// to_args() writes an option only where it differs from "not given":
// `steps`, `batch` and `split_k` when not 0, `tp_fail_rank` when not -1,
// text options when not empty, flags when set; every other option always,
// doubles in shortest round-trip decimal (io/numbers.hpp). The prompt is
// `--prompt-ids LIST` when `from_ids`, else the positional text (after
// `--`, so a prompt that starts with '-' stays a prompt).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/prompts.hpp"

namespace fplab::sampling {

struct GenerateRequest {
  std::string prompt = std::string(model::kPrompts[2]);  // the headline's lead example
  std::string prompt_ids;  // with from_ids: the prompt as token ids, instead of `prompt`
  bool from_ids = false;
  std::size_t steps = 0;  // 0: up to 200, as the context allows
  std::size_t samples = 1;
  std::size_t batch = 0;  // 0: as many rows as samples
  bool json = false;
  double temperature = 1.0;
  std::int64_t top_k = 0;
  double top_p = 1.0;
  double presence = 0.0;
  double frequency = 0.0;
  double repetition = 1.0;
  std::string order = "penalties,temperature,top-k,top-p";
  std::uint64_t seed = 0;
  std::string precision = "fp32";
  std::string policy = "batch-invariant";
  std::size_t split_k = 0;  // 0: the split rule's count
  std::string model;
  std::size_t tp = 1;
  std::string allreduce = "ompi-default";
  bool tp_in_process = false;
  std::string logits;
  std::string dump;
  std::string tp_rank_out;  // set: this process is a rank of an mpirun job
  int tp_fail_rank = -1;    // fault injection (tests): this rank dies mid-run
  double timeout = 120;
  std::string gate;  // gated greedy decoding (model/gated_decode.hpp)

  bool operator==(const GenerateRequest&) const = default;

  // The arguments after `fplab generate` (see the top).
  [[nodiscard]] std::vector<std::string> to_args() const;
};

}  // namespace fplab::sampling
