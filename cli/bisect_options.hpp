// The command line of `fplab bisect`, bound to a BisectRequest
// (bisect/bisect_request.hpp): the one parser of its options, shared by the
// command (cli/bisect_command.cpp) and the round-trip test
// (tests/test_bisect_request.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "bisect/bisect_request.hpp"

namespace fplab::cli {

// Declares every option of `app` writing into `r` (which must outlive it).
void add_bisect_options(CLI::App& app, bisect::BisectRequest& r);

// The request that `fplab bisect ARGS...` makes (ARGS: what to_args()
// writes, or a user's). Throws CLI11's ParseError for what the command line
// would refuse.
bisect::BisectRequest parse_bisect_request(const std::vector<std::string>& args);

}  // namespace fplab::cli
