// Negative numbers on the command line as values, not options.
//
// CLI11 reads "-inf", "-.5" and "-nan" as short options ("-i", "-.", "-n")
// and fails with "The following argument was not expected"; only a dash
// followed by a digit ("-1e-3") reaches a positional. A teacher types
// `fplab sum -inf 1 -.5` and means three numbers.
//
// negative_values_as_positionals(app, "sum", args) rewrites the arguments of
// one subcommand before CLI11 sees them. After the subcommand's name it
// walks the words:
//   - a word that names one of the subcommand's options ("-s", "--file",
//     "--dtype=float32", "-sexact", "-h") stays an option, and the next word
//     is its value when it takes one and has none inline ("-s kahan");
//   - a word that starts with '-' and is a number (fplab::parse_number:
//     "-inf", "-nan", "-0x1p-3", "-.5") or starts like one ("-1", "-.") is
//     a value;
//   - any other word starting with '-' is an unknown option: the arguments
//     come back unchanged, and CLI11 reports it (exit 2) as before;
//   - after "--" every word is a value, as before.
// When a value starts with '-', the values (all of them, in their order:
// order is what `fplab sum` is about) move behind one "--" after the
// options; otherwise the arguments come back unchanged. Arguments for
// another subcommand come back unchanged.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace fplab::cli {

// `args` without the program name (argv[1..]); returns them rewritten.
std::vector<std::string> negative_values_as_positionals(const CLI::App& app,
                                                        std::string_view subcommand,
                                                        std::vector<std::string> args);

}  // namespace fplab::cli
