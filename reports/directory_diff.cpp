#include "reports/directory_diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "io/input_error.hpp"

namespace fplab {

namespace {

std::set<std::string> files_below(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) throw InputError(dir.string() + ": not a directory");
  std::set<std::string> out;
  for (auto it = std::filesystem::recursive_directory_iterator(dir);
       it != std::filesystem::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (!name.empty() && name.front() == '.') {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) {
      out.insert(std::filesystem::relative(it->path(), dir).generic_string());
    }
  }
  return out;
}

const char* verdict_word(int exit_code) {
  if (exit_code == 0) return "pass";
  return exit_code == 1 ? "DRIFT" : "ERROR";
}

}  // namespace

DirectoryPairing pair_directory_files(const std::filesystem::path& dir_a,
                                      const std::filesystem::path& dir_b) {
  const auto a = files_below(dir_a);
  const auto b = files_below(dir_b);
  DirectoryPairing p;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(p.both));
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(p.only_a));
  std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(p.only_b));
  return p;
}

int DirectoryDiff::exit_code() const {
  int code = pairing.only_a.empty() && pairing.only_b.empty() ? 0 : 1;
  for (const auto& f : files) code = std::max(code, f.exit_code);
  return code;
}

std::string format_directory_diff(const DirectoryDiff& d) {
  std::string out = fmt::format(
      "fplab diff: directory {} vs {}: {} paired files, {} missing from "
      "B, {} extra in B\n\n",
      d.dir_a, d.dir_b, d.files.size(), d.pairing.only_a.size(), d.pairing.only_b.size());
  for (const auto& f : d.files) {
    out += fmt::format("  {:<6} {:<40} {}\n", verdict_word(f.exit_code), f.path, f.summary);
  }
  for (const auto& p : d.pairing.only_a)
    out += fmt::format("  {:<6} {:<40} missing from B\n", "MISS", p);
  for (const auto& p : d.pairing.only_b)
    out += fmt::format("  {:<6} {:<40} extra in B\n", "EXTRA", p);
  for (const auto& f : d.files) {
    if (f.exit_code == 1) out += "\n" + f.text;
  }
  const int code = d.exit_code();
  out += fmt::format("\n{}\n", code == 0   ? "PASS: every file within tolerance"
                               : code == 1 ? "DRIFT"
                                           : "ERROR: a file could not be compared");
  return out;
}

std::string format_directory_diff_markdown(const DirectoryDiff& d) {
  const int code = d.exit_code();
  std::string out =
      fmt::format("## fplab diff: {} `{}` vs `{}`\n\n",
                  code == 0 ? "✅ within tolerance" : (code == 1 ? "❌ drift" : "⚠️ error"),
                  d.dir_a, d.dir_b);
  out += "| file | result | |\n|---|---|---|\n";
  for (const auto& f : d.files) {
    out += fmt::format("| `{}` | {} | {} |\n", f.path, verdict_word(f.exit_code), f.summary);
  }
  for (const auto& p : d.pairing.only_a) out += fmt::format("| `{}` | MISSING | not in B |\n", p);
  for (const auto& p : d.pairing.only_b) out += fmt::format("| `{}` | EXTRA | not in A |\n", p);
  for (const auto& f : d.files) {
    if (f.exit_code == 1) out += "\n" + f.markdown;
  }
  return out;
}

nlohmann::json directory_diff_to_json(const DirectoryDiff& d) {
  nlohmann::json j{{"a", d.dir_a},
                   {"b", d.dir_b},
                   {"missing", d.pairing.only_a},
                   {"extra", d.pairing.only_b},
                   {"files", nlohmann::json::array()}};
  for (const auto& f : d.files) {
    nlohmann::json fj{{"path", f.path}, {"exit_code", f.exit_code}, {"summary", f.summary}};
    if (!f.json.is_null()) fj["report"] = f.json;
    j["files"].push_back(std::move(fj));
  }
  j["exit_code"] = d.exit_code();
  return j;
}

}  // namespace fplab
