// fplab diff DIR_A DIR_B: two directory trees of dumped arrays (or
// results.json files), their files paired by relative path.
//
// Every regular file below each directory is taken, recursively, except
// those whose name starts with '.'; paths are compared in their generic
// form ("layer0/out.npy"). A file only under A is missing from B, one only
// under B is extra; either makes the comparison fail (exit 1), as drift in
// a paired file does. A paired file that cannot be compared (unreadable, a
// shape or dtype mismatch) is reported with its error and exits 2.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fplab {

struct DirectoryPairing {
  std::vector<std::string> both;    // sorted relative paths
  std::vector<std::string> only_a;  // missing from B
  std::vector<std::string> only_b;  // extra in B
};

// Throws InputError unless both are directories.
DirectoryPairing pair_directory_files(const std::filesystem::path& dir_a,
                                      const std::filesystem::path& dir_b);

// One paired file's comparison, as the single-file diff reported it.
// (clang-tidy 14 sees nlohmann::json's members as able to throw inside the
// implicit special members; they cannot for a null or moved value.)
// NOLINTNEXTLINE(bugprone-exception-escape)
struct FileDiffOutcome {
  std::string path;      // relative
  int exit_code = 0;     // 0 within tolerance, 1 drift, 2 bad input
  std::string summary;   // one line: "max ulps 3, 2 beyond tolerance", or the error
  std::string text;      // the single-file report (empty on an error)
  std::string markdown;  // idem
  nlohmann::json json;   // idem (null on an error)
};

struct DirectoryDiff {
  std::string dir_a;
  std::string dir_b;
  DirectoryPairing pairing;
  std::vector<FileDiffOutcome> files;  // in pairing.both's order
  // 2 when a file could not be compared, else 1 on drift or a missing or
  // extra file, else 0.
  [[nodiscard]] int exit_code() const;
};

// A table of files, the missing and extra ones, then the report of every
// file that is not within tolerance.
std::string format_directory_diff(const DirectoryDiff& d);
std::string format_directory_diff_markdown(const DirectoryDiff& d);
nlohmann::json directory_diff_to_json(const DirectoryDiff& d);

}  // namespace fplab
