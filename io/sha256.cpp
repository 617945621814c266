#include "io/sha256.hpp"

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

namespace fplab {

struct Sha256::Context {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(ctx); }
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
};

namespace {

// OpenSSL reports failure by return value; none is expected for SHA-256 on
// memory, so any is a broken library and not bad input.
void check(int ok, const char* what) {
  if (ok != 1) throw std::runtime_error(std::string("OpenSSL SHA-256: ") + what + " failed");
}

}  // namespace

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  if (context_->ctx == nullptr) throw std::runtime_error("OpenSSL SHA-256: out of memory");
  check(EVP_DigestInit_ex(context_->ctx, EVP_sha256(), nullptr), "init");
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::span<const std::byte> data) {
  check(EVP_DigestUpdate(context_->ctx, data.data(), data.size()), "update");
}

void Sha256::update(std::string_view text) { update(std::as_bytes(std::span(text))); }

std::string Sha256::hex_digest() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  check(EVP_DigestFinal_ex(context_->ctx, digest.data(), &length), "final");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::size_t{2} * length);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xf];
  }
  return out;
}

std::string sha256_hex(std::span<const std::byte> data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

std::string sha256_hex(std::string_view text) {
  Sha256 h;
  h.update(text);
  return h.hex_digest();
}

}  // namespace fplab
