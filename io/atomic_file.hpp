// Files that appear under their final name only once they are complete.
//
// StagedFiles writes each file to a temporary name in the same folder as
// its final path (`.<name>.tmp-XXXXXX`, created with mkstemp, so on the
// same file system), flushes it to disk (fsync), and renames the whole set
// into place in commit(), in the order the files were staged. rename(2)
// within one file system is atomic: a reader sees the old complete file or
// the new complete one, never a partial one. Whatever was not committed
// (an error, an exception, an interrupted run) is removed by the
// destructor, so a failure leaves no temporary behind and no partial file
// under a final name.
//
// Errors (a full disk, an unwritable folder, a final name that is a
// folder) throw InputError with one line naming the path and the system's
// reason, e.g. "report/report.md: cannot write: No space left on device".
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace fplab {

class StagedFiles {
 public:
  StagedFiles() = default;
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;
  StagedFiles(StagedFiles&& other) noexcept;
  StagedFiles& operator=(StagedFiles&&) = delete;
  ~StagedFiles();  // removes every temporary not committed

  // Writes `bytes` to a new temporary beside `final_path` and stages it.
  void write(const std::filesystem::path& final_path, std::string_view bytes);

  // Creates an empty temporary beside `final_path`, stages it and returns
  // its path, for a program that writes the file itself (gnuplot). The
  // caller fills it before commit(); commit() flushes it to disk first.
  std::filesystem::path reserve(const std::filesystem::path& final_path);

  // Moves every file staged in `other` to the end of this set.
  void append(StagedFiles&& other);

  // The temporary path that stands for `final_path`, or empty if not staged.
  [[nodiscard]] std::filesystem::path temporary_for(const std::filesystem::path& final_path) const;

  // Renames every staged file to its final name, in staging order. Throws
  // InputError on the first rename that fails (the rest stay temporaries
  // and are removed).
  void commit();

  // The final paths, in staging order.
  [[nodiscard]] std::vector<std::filesystem::path> final_paths() const;

  // Removes every temporary now (what the destructor does).
  void discard() noexcept;

 private:
  struct Entry {
    std::filesystem::path temporary;
    std::filesystem::path final_path;
    bool filled_elsewhere = false;  // reserve(): flushed to disk by commit()
  };
  std::vector<Entry> entries_;
};

// Writes one file through a temporary and a rename (a StagedFiles of one).
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// Checks, changing nothing, that a file could be written at `path`, before
// the work that fills it starts: its folder exists, a file can be made in
// it (a probe, made and removed at once) and `path` is not a folder.
// Throws InputError "PATH: cannot write: REASON" (one line) otherwise.
void check_writable_file(const std::filesystem::path& path);

// The same for a folder `dir` that is created when written to: `dir` is a
// folder a file can be made in, or does not exist and its nearest existing
// ancestor is one (nothing is created). Throws InputError "cannot write to
// DIR: REASON" (one line) otherwise.
void check_writable_folder(const std::filesystem::path& dir);

}  // namespace fplab
