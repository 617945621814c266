// SHA-256 (FIPS 180-4), for verifying shipped data files and for the
// fingerprint of a results file. OpenSSL's implementation (libcrypto's EVP
// interface); tests/test_reports.cpp checks it against the NIST example
// vectors.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace fplab {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  void update(std::span<const std::byte> data);
  void update(std::string_view text);
  // The digest as 64 lower-case hex digits. Finishes the hash: call once.
  [[nodiscard]] std::string hex_digest();

 private:
  struct Context;  // OpenSSL's EVP_MD_CTX, kept out of this header
  std::unique_ptr<Context> context_;
};

std::string sha256_hex(std::span<const std::byte> data);
std::string sha256_hex(std::string_view text);

}  // namespace fplab
