// The command line of `fplab run`, bound to a RunRequest
// (lab/run_request.hpp): the one parser of its options, shared by the
// command (cli/run_command.cpp) and the round-trip test
// (tests/test_run_request.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "lab/run_request.hpp"

namespace fplab::cli {

// Declares every option of `app` writing into `r` (which must outlive it).
void add_run_options(CLI::App& app, RunRequest& r);

// The request that `fplab run ARGS...` makes (ARGS: what to_args() writes,
// or a user's). Throws CLI11's ParseError for what the command line would
// refuse.
RunRequest parse_run_request(const std::vector<std::string>& args);

}  // namespace fplab::cli
