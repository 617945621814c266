#include "io/npy.hpp"

#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>

namespace fplab {

namespace {

static_assert(std::endian::native == std::endian::little, "fplab assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& why) {
  throw InputError(path.string() + ": " + why);
}

std::string dict_value(const std::string& header, const std::string& key) {
  const std::regex re("'" + key + "'\\s*:\\s*('[^']*'|True|False|\\([^)]*\\))");
  std::smatch m;
  if (!std::regex_search(header, m, re)) return {};
  return m[1].str();
}

template <class T>
std::vector<T> decode(const std::filesystem::path& path, const std::string& data,
                      std::size_t offset, std::size_t count) {
  if ((data.size() - offset) / sizeof(T) < count) {
    fail(path, "truncated: header promises " + std::to_string(count) + " values, file holds " +
                   std::to_string((data.size() - offset) / sizeof(T)));
  }
  if ((data.size() - offset) != count * sizeof(T)) fail(path, "trailing bytes after the data");
  std::vector<T> out(count);
  if (count != 0) std::memcpy(out.data(), data.data() + offset, count * sizeof(T));
  return out;
}

template <class T>
void write(const std::filesystem::path& path, std::span<const T> x, const char* descr) {
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': (" + std::to_string(x.size()) + ",), }";
  // Pad so the data starts on a 64-byte boundary, header ending in '\n'.
  const std::size_t unpadded = kMagicLen + 4 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(path.string() + ": cannot open for writing");
  out.write(kMagic, kMagicLen);
  const char version[2] = {1, 0};
  out.write(version, 2);
  const auto len = static_cast<std::uint16_t>(header.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xFF), static_cast<char>(len >> 8)};
  out.write(len_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(x.size_bytes()));
  if (!out) throw InputError(path.string() + ": write failed");
}

}  // namespace

NumberArray read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < kMagicLen + 4 || data.compare(0, kMagicLen, kMagic, kMagicLen) != 0) {
    fail(path, "not a .npy file (bad magic)");
  }
  const int major = static_cast<unsigned char>(data[kMagicLen]);
  std::size_t header_len = 0;
  std::size_t offset = 0;
  const auto byte = [&](std::size_t i) {
    return static_cast<std::size_t>(static_cast<unsigned char>(data[i]));
  };
  if (major == 1) {
    header_len = byte(8) | (byte(9) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) fail(path, "truncated header");
    header_len = byte(8) | (byte(9) << 8) | (byte(10) << 16) | (byte(11) << 24);
    offset = 12;
  } else {
    fail(path, "unsupported .npy version " + std::to_string(major));
  }
  if (data.size() < offset + header_len) fail(path, "truncated header");
  const std::string header = data.substr(offset, header_len);
  offset += header_len;

  const std::string descr = dict_value(header, "descr");
  const std::string fortran = dict_value(header, "fortran_order");
  const std::string shape = dict_value(header, "shape");
  if (descr.empty() || fortran.empty() || shape.empty()) fail(path, "malformed header");
  if (fortran != "False") fail(path, "Fortran-ordered arrays are not supported");
  // Shape "(n,)" or "(n)"; "()" is a 0-d scalar, which we do not take.
  static const std::regex one_dim(R"(\(\s*(\d+)\s*,?\s*\))");
  std::smatch m;
  if (!std::regex_match(shape, m, one_dim)) fail(path, "expected a 1-D array, shape is " + shape);
  std::size_t count = 0;
  try {
    count = std::stoull(m[1].str());
  } catch (const std::exception&) {
    fail(path, "shape too large: " + shape);
  }
  if (descr == "'<f4'") return decode<float>(path, data, offset, count);
  if (descr == "'<f8'") return decode<double>(path, data, offset, count);
  fail(path, "unsupported dtype " + descr + " (need little-endian float32 '<f4' or float64 '<f8')");
}

void write_npy(const std::filesystem::path& path, std::span<const float> x) {
  write(path, x, "<f4");
}
void write_npy(const std::filesystem::path& path, std::span<const double> x) {
  write(path, x, "<f8");
}

}  // namespace fplab
