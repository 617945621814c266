// The command line of `fplab round`, bound to a RoundRequest
// (precision/round_request.hpp): the one parser of its options, shared by
// the command (cli/round_command.cpp) and the round-trip test
// (tests/test_round_request.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "precision/round_request.hpp"

namespace fplab::cli {

// Declares every option of `app` writing into `r` (which must outlive it).
void add_round_options(CLI::App& app, RoundRequest& r);

// The request that `fplab round ARGS...` makes (ARGS: what to_args()
// writes, or a user's). Throws CLI11's ParseError for what the command line
// would refuse.
RoundRequest parse_round_request(const std::vector<std::string>& args);

}  // namespace fplab::cli
