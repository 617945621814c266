// Parses a request's arguments (its to_args()) into an app whose options
// are bound to the request, as the program parses its command line: the
// numeric options' range checks first (cli/numeric_options.hpp), then
// CLI11's parse, which reads a vector of arguments from the back.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/numeric_options.hpp"

namespace fplab::cli {

inline void parse_request_args(CLI::App& app, const std::vector<std::string>& args) {
  check_numeric_options(app);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 reads from the back
  app.parse(reversed);
}

}  // namespace fplab::cli
