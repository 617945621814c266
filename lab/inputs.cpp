#include "lab/inputs.hpp"

#include <array>
#include <fstream>

#include "io/input_error.hpp"
#include "io/sha256.hpp"

namespace fplab {

std::string file_sha256(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot be read");
  Sha256 h;
  std::array<char, 1 << 16> buffer{};
  while (in) {
    in.read(buffer.data(), buffer.size());
    const auto got = static_cast<std::size_t>(in.gcount());
    h.update(std::as_bytes(std::span<const char>(buffer.data(), got)));
  }
  if (in.bad()) throw InputError(path.string() + ": read error");
  return h.hex_digest();
}

void record_input(ExperimentRecord& out, std::string role, const std::filesystem::path& path) {
  out.add_input({std::move(role), path.string(), file_sha256(path)});
}

}  // namespace fplab
