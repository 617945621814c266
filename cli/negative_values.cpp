#include "cli/negative_values.hpp"

#include <cstddef>
#include <exception>

#include "io/numbers.hpp"

namespace fplab::cli {

namespace {

// The option a word names ("--dtype=float32" -> "--dtype", "-sexact" ->
// "-s"), or nullptr when the word is not one of `app`'s options.
const CLI::Option* named_option(const CLI::App& app, const std::string& word, bool& inline_value) {
  inline_value = false;
  if (word.size() > 2 && word.starts_with("--")) {
    const auto eq = word.find('=');
    inline_value = eq != std::string::npos;
    return app.get_option_no_throw(word.substr(0, eq));
  }
  if (word.size() >= 2 && word[0] == '-') {
    inline_value = word.size() > 2;
    return app.get_option_no_throw(word.substr(0, 2));
  }
  return nullptr;
}

// A word that starts with '-' and is meant as a number: it parses as one,
// or starts as numbers do ("-1...", "-.5..."), so that a mistyped number is
// reported by the number parser ("'-.5x' is not a number"), not as an option.
bool negative_number(const std::string& word) {
  if (word.size() < 2 || word[0] != '-') return false;
  if ((word[1] >= '0' && word[1] <= '9') || word[1] == '.') return true;
  try {
    (void)parse_number<double>(word);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::vector<std::string> negative_values_as_positionals(const CLI::App& app,
                                                        std::string_view subcommand,
                                                        std::vector<std::string> args) {
  // The subcommand is the first word that is not an option: fplab's own
  // options (--help, --version) take no value.
  std::size_t at = 0;
  while (at < args.size() && args[at].starts_with('-')) ++at;
  if (at == args.size() || args[at] != subcommand) return args;
  const CLI::App* sub = app.get_subcommand(std::string(subcommand));

  std::vector<std::string> options;
  std::vector<std::string> values;
  bool dash_value = false;  // a value that CLI11 would take for an option
  for (std::size_t i = at + 1; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") {
      values.insert(values.end(), args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    bool inline_value = false;
    if (const CLI::Option* opt = named_option(*sub, word, inline_value)) {
      options.push_back(word);
      const bool takes_value = opt->get_expected_max() > 0 && opt->get_type_size_max() > 0;
      if (takes_value && !inline_value && i + 1 < args.size()) options.push_back(args[++i]);
      continue;
    }
    if (negative_number(word)) {
      dash_value = true;
      values.push_back(word);
    } else if (word.starts_with('-')) {
      return args;  // an unknown option: CLI11 reports it, as before
    } else {
      values.push_back(word);
    }
  }
  if (!dash_value) return args;
  std::vector<std::string> out(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  out.insert(out.end(), options.begin(), options.end());
  out.emplace_back("--");
  out.insert(out.end(), values.begin(), values.end());
  return out;
}

}  // namespace fplab::cli
