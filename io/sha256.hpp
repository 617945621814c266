// SHA-256 (FIPS 180-4), for verifying shipped data files and for the
// fingerprint of a results file. Small and dependency-free; tested against
// the NIST example vectors.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace fplab {

class Sha256 {
 public:
  Sha256();
  void update(std::span<const std::byte> data);
  void update(std::string_view text);
  // The digest as 64 lower-case hex digits. Finishes the hash: call once.
  [[nodiscard]] std::string hex_digest();

 private:
  void block(const std::uint8_t* p);

  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t length_ = 0;  // bytes hashed so far
};

std::string sha256_hex(std::span<const std::byte> data);
std::string sha256_hex(std::string_view text);

}  // namespace fplab
