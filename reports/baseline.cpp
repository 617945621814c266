#include "reports/baseline.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "io/atomic_file.hpp"
#include "io/input_error.hpp"
#include "reports/directory_diff.hpp"

namespace fplab {

namespace {

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(p.string() + ": cannot read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Stages `fresh` over `baseline` unless it already holds the same bytes.
bool stage_if_different(StagedFiles& staged, const std::filesystem::path& baseline,
                        const std::filesystem::path& fresh) {
  std::string bytes = read_bytes(fresh);
  if (std::filesystem::is_regular_file(baseline) && read_bytes(baseline) == bytes) return false;
  std::filesystem::create_directories(baseline.parent_path().empty() ? "."
                                                                     : baseline.parent_path());
  staged.write(baseline, bytes);
  return true;
}

}  // namespace

std::string BaselineUpdate::describe(const std::string& baseline, const std::string& fresh) const {
  if (created) return fmt::format("baseline {} written from {}", baseline, fresh);
  if (!changed()) return fmt::format("baseline {} unchanged (same bytes as {})", baseline, fresh);
  return fmt::format("baseline {} refreshed from {}: {} file{} written, {} removed", baseline,
                     fresh, written.size(), written.size() == 1 ? "" : "s", removed.size());
}

BaselineUpdate update_baseline(const std::filesystem::path& baseline,
                               const std::filesystem::path& fresh) {
  if (!std::filesystem::exists(fresh)) throw InputError(fresh.string() + ": no such file");
  BaselineUpdate u;
  u.created = !std::filesystem::exists(baseline);
  const bool dir = std::filesystem::is_directory(fresh);
  if (!u.created && dir != std::filesystem::is_directory(baseline)) {
    throw InputError("cannot update " + baseline.string() + " from " + fresh.string() +
                     ": one is a directory, the other a file");
  }
  StagedFiles staged;
  if (!dir) {
    if (stage_if_different(staged, baseline, fresh)) u.written.emplace_back();
    staged.commit();
    return u;
  }
  std::filesystem::create_directories(baseline);
  const DirectoryPairing p = pair_directory_files(baseline, fresh);
  for (const auto* list : {&p.both, &p.only_b}) {
    for (const auto& rel : *list) {
      if (stage_if_different(staged, baseline / rel, fresh / rel)) u.written.push_back(rel);
    }
  }
  staged.commit();
  for (const auto& rel : p.only_a) {
    std::filesystem::remove(baseline / rel);
    u.removed.push_back(rel);
  }
  return u;
}

}  // namespace fplab
