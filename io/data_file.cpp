#include "io/data_file.hpp"

#include <system_error>

#include "build_info.hpp"

namespace fplab {

namespace {

// The installed data directory for a program at `program`
// (<program's dir>/../share/fplab), whether or not it exists.
std::filesystem::path installed_data_dir(const std::filesystem::path& program) {
  return program.parent_path().parent_path() / "share" / "fplab";
}

}  // namespace

std::filesystem::path data_file(std::string_view relative) {
  std::error_code ec;
  const auto program = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto installed = installed_data_dir(program) / relative;
    if (std::filesystem::is_regular_file(installed, ec)) return installed;
  }
  return std::filesystem::path(build::kSourceDir) / relative;
}

}  // namespace fplab
