// fplab diff --update: a baseline written, or refreshed, from fresh output.
//
// update_baseline(baseline, fresh) makes `baseline` hold what `fresh`
// holds, byte for byte: a file is copied; a directory's files (as
// pair_directory_files in reports/directory_diff.hpp takes them: regular
// files below it, names starting with '.' skipped) are copied where they
// are new or differ, and those only in the baseline are removed. A missing
// baseline (and its folders) is created. Every file is written to a
// temporary beside its final name and renamed into place (io/atomic_file.hpp):
// a reader sees the old file or the new one, never a partial one. Files that
// already hold the same bytes are not touched.
//
// Throws InputError when `fresh` does not exist, or when one is a
// directory and the other an existing file.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fplab {

struct BaselineUpdate {
  bool created = false;              // the baseline did not exist
  std::vector<std::string> written;  // relative paths ("" for a single file)
  std::vector<std::string> removed;  // relative paths
  [[nodiscard]] bool changed() const { return !written.empty() || !removed.empty(); }
  // "baseline base.npy written from out.npy", "... refreshed from ...: 2
  // files written, 1 removed", "... unchanged"
  [[nodiscard]] std::string describe(const std::string& baseline, const std::string& fresh) const;
};

BaselineUpdate update_baseline(const std::filesystem::path& baseline,
                               const std::filesystem::path& fresh);

}  // namespace fplab
