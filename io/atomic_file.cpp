#include "io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/input_error.hpp"

namespace fplab {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const fs::path& path, const char* what, int error) {
  throw InputError(path.string() + ": " + what + ": " + std::strerror(error));
}

// 0666 less the umask. Read once (umask can only be read by setting it),
// on the first file a process writes.
mode_t creation_mode() {
  static const mode_t mode = [] {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return static_cast<mode_t>(0666 & ~mask);
  }();
  return mode;
}

// mkstemp beside `final_path`; returns the open descriptor and fills `temporary`.
int create_temporary(const fs::path& final_path, fs::path& temporary) {
  const fs::path dir = final_path.has_parent_path() ? final_path.parent_path() : fs::path(".");
  std::string name = (dir / ("." + final_path.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkstemp(name.data());
  if (fd < 0) fail(final_path, "cannot write", errno);
  temporary = name;
  // mkstemp makes the file 0600; a final file gets what open(2) would give it.
  if (::fchmod(fd, creation_mode()) != 0) {
    const int error = errno;
    ::close(fd);
    ::unlink(name.c_str());
    fail(final_path, "cannot write", error);
  }
  return fd;
}

void write_all(int fd, std::string_view bytes, const fs::path& final_path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(final_path, "cannot write", n < 0 ? errno : EIO);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// fsync, so that after the rename the final name never names a file whose
// data is still only in the page cache (ext4 with delayed allocation).
void sync_and_close(int fd, const fs::path& final_path) {
  const int sync_status = ::fsync(fd);
  const int sync_error = errno;
  const int close_status = ::close(fd);
  if (sync_status != 0 && sync_error != EINVAL) fail(final_path, "cannot write", sync_error);
  if (close_status != 0) fail(final_path, "cannot write", errno);
}

}  // namespace

StagedFiles::StagedFiles(StagedFiles&& other) noexcept : entries_(std::move(other.entries_)) {
  other.entries_.clear();
}

StagedFiles::~StagedFiles() { discard(); }

void StagedFiles::discard() noexcept {
  for (const auto& e : entries_) ::unlink(e.temporary.c_str());
  entries_.clear();
}

void StagedFiles::write(const fs::path& final_path, std::string_view bytes) {
  fs::path temporary;
  const int fd = create_temporary(final_path, temporary);
  // Staged before writing, so that a failed write still removes it.
  entries_.push_back({temporary, final_path});
  try {
    write_all(fd, bytes, final_path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  sync_and_close(fd, final_path);
}

fs::path StagedFiles::reserve(const fs::path& final_path) {
  fs::path temporary;
  const int fd = create_temporary(final_path, temporary);
  entries_.push_back({temporary, final_path, true});
  if (::close(fd) != 0) fail(final_path, "cannot write", errno);
  return temporary;
}

void StagedFiles::append(StagedFiles&& other) {
  entries_.insert(entries_.end(), other.entries_.begin(), other.entries_.end());
  other.entries_.clear();
}

fs::path StagedFiles::temporary_for(const fs::path& final_path) const {
  for (const auto& e : entries_) {
    if (e.final_path == final_path) return e.temporary;
  }
  return {};
}

std::vector<fs::path> StagedFiles::final_paths() const {
  std::vector<fs::path> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.push_back(e.final_path);
  return out;
}

void StagedFiles::commit() {
  // Files filled by another program (reserve) reach the disk before their rename too.
  for (const auto& e : entries_) {
    if (!e.filled_elsewhere) continue;
    const int fd = ::open(e.temporary.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(e.final_path, "cannot write", errno);
    sync_and_close(fd, e.final_path);
  }
  std::vector<fs::path> folders;
  while (!entries_.empty()) {
    const Entry e = entries_.front();
    if (std::rename(e.temporary.c_str(), e.final_path.c_str()) != 0) {
      fail(e.final_path, "cannot write", errno);
    }
    entries_.erase(entries_.begin());
    const fs::path folder = e.final_path.has_parent_path() ? e.final_path.parent_path() : ".";
    if (std::find(folders.begin(), folders.end(), folder) == folders.end())
      folders.push_back(folder);
  }
  // The renames themselves reach the disk with their folders (best effort:
  // the files are complete under their final names already).
  for (const auto& folder : folders) {
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) continue;
    ::fsync(fd);
    ::close(fd);
  }
}

void write_file_atomically(const fs::path& path, std::string_view bytes) {
  StagedFiles files;
  files.write(path, bytes);
  files.commit();
}

namespace {

// The reason a file cannot be made in the folder `dir`, or "" when one can
// (a probe file made and removed at once).
std::string probe_folder(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return dir.string() + " is not a folder";
  const fs::path probe = dir / (".fplab-probe-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  fs::remove(probe, ec);
  return {};
}

}  // namespace

void check_writable_file(const fs::path& path) {
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  std::string why = fs::is_directory(path, ec) ? std::string("it is a folder")
                    : !fs::exists(folder, ec)  ? "no folder " + folder.string()
                                               : probe_folder(folder);
  if (!why.empty()) throw InputError(path.string() + ": cannot write: " + why);
}

void check_writable_folder(const fs::path& dir) {
  std::error_code ec;
  fs::path existing = dir.empty() ? fs::path(".") : dir;
  while (!fs::exists(existing, ec) && existing.has_parent_path() &&
         existing != existing.parent_path())
    existing = existing.parent_path();
  if (!fs::exists(existing, ec)) existing = ".";  // relative, no part of it exists
  const std::string why = probe_folder(existing);
  if (!why.empty()) throw InputError("cannot write to " + dir.string() + ": " + why);
}

}  // namespace fplab
