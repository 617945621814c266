// The request tests' check that a request's to_args() writes every option
// its CLI parser declares: the parser's long options (positionals and
// --help left out; each test checks its positionals itself), and which of
// them an argument list does not write, as "--flag" or "--flag=value".
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

namespace fplab::test {

inline std::vector<std::string> declared_long_options(const CLI::App& app) {
  std::vector<std::string> flags;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_lnames().empty()) {
      continue;  // a positional
    }
    std::string flag = "--" + o->get_lnames().front();
    if (flag != "--help") {
      flags.push_back(std::move(flag));
    }
  }
  return flags;
}

inline std::vector<std::string> options_not_written(const CLI::App& app,
                                                    const std::vector<std::string>& args) {
  std::vector<std::string> missing;
  for (const std::string& flag : declared_long_options(app)) {
    const bool written = std::any_of(args.begin(), args.end(), [&](const std::string& a) {
      return a == flag || a.rfind(flag + "=", 0) == 0;
    });
    if (!written) {
      missing.push_back(flag);
    }
  }
  return missing;
}

}  // namespace fplab::test
