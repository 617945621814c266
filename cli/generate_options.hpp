// The command line of `fplab generate`, bound to a GenerateRequest
// (sampling/generate_request.hpp): the one parser of its options, shared by
// the command (cli/generate_command.cpp) and the round-trip test
// (tests/test_generate_request.cpp). Every numeric option is range-checked
// here or by check_numeric_options (cli/numeric_options.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "sampling/generate_request.hpp"

namespace fplab::cli {

inline constexpr std::size_t kMaxGenerateBatch = 1024;

// The options that the command's checks ask about after parsing.
struct GenerateOptionHandles {
  CLI::Option* prompt_ids = nullptr;  // given: r.from_ids
  CLI::Option* steps = nullptr;       // given as 0: refused
};

// Declares every option of `app` writing into `r` (which must outlive it).
// After parsing, `r.from_ids` is set by finish_generate_request.
GenerateOptionHandles add_generate_options(CLI::App& app, sampling::GenerateRequest& r);
void finish_generate_request(const GenerateOptionHandles& h, sampling::GenerateRequest& r);

// The request that `fplab generate ARGS...` makes (ARGS: what to_args()
// writes, or a user's). Throws CLI11's ParseError for what the command line
// would refuse.
sampling::GenerateRequest parse_generate_request(const std::vector<std::string>& args);

}  // namespace fplab::cli
