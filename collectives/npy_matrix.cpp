#include "collectives/npy_matrix.hpp"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

namespace fplab {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& why) {
  throw InputError(path.string() + ": " + why);
}

// The value of `key` in the header dict, up to the next top-level ',' or '}'.
std::string field(const std::string& header, const std::string& key,
                  const std::filesystem::path& path) {
  const auto at = header.find("'" + key + "'");
  if (at == std::string::npos) fail(path, "npy header has no '" + key + "'");
  auto pos = header.find(':', at);
  if (pos == std::string::npos) fail(path, "malformed npy header");
  ++pos;
  while (pos < header.size() && header[pos] == ' ') ++pos;
  std::size_t end = pos;
  if (pos < header.size() && header[pos] == '(') {
    end = header.find(')', pos);
    if (end == std::string::npos) fail(path, "malformed npy shape");
    return header.substr(pos, end - pos + 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  return header.substr(pos, end - pos);
}

std::vector<std::size_t> parse_shape(const std::string& text, const std::filesystem::path& path) {
  std::vector<std::size_t> dims;
  std::size_t i = 1;  // after '('
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i >= text.size() || text[i] == ')') break;
    std::size_t n = 0;
    const std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      n = n * 10 + static_cast<std::size_t>(text[i] - '0');
      if (n > (std::size_t{1} << 40)) fail(path, "npy shape too large");
      ++i;
    }
    if (i == start) fail(path, "malformed npy shape " + text);
    dims.push_back(n);
  }
  return dims;
}

template <class T>
Matrix<T> read_body(std::ifstream& in, std::size_t rows, std::size_t cols,
                    const std::filesystem::path& path) {
  Matrix<T> m{rows, cols, std::vector<T>(rows * cols)};
  in.read(reinterpret_cast<char*>(m.values.data()),
          static_cast<std::streamsize>(m.values.size() * sizeof(T)));
  if (static_cast<std::size_t>(in.gcount()) != m.values.size() * sizeof(T)) {
    fail(path,
         "truncated: expected " + std::to_string(rows) + " x " + std::to_string(cols) + " values");
  }
  return m;
}

}  // namespace

NumberMatrix read_npy_matrix(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  char magic[8] = {};
  in.read(magic, 8);
  if (in.gcount() != 8 || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(path, "not a .npy file");
  std::size_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (std::size_t{b[1]} << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    header_len =
        b[0] | (std::size_t{b[1]} << 8) | (std::size_t{b[2]} << 16) | (std::size_t{b[3]} << 24);
  } else {
    fail(path, "unsupported .npy version");
  }
  if (!in || header_len > (1u << 20)) fail(path, "malformed npy header");
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  if (static_cast<std::size_t>(in.gcount()) != header_len) fail(path, "truncated npy header");
  const std::string descr = field(header, "descr", path);
  if (field(header, "fortran_order", path).find("False") == std::string::npos) {
    fail(path, "Fortran-ordered arrays are not supported (save with C order)");
  }
  const auto dims = parse_shape(field(header, "shape", path), path);
  if (dims.size() != 2) {
    fail(path, "expected a 2-D array (ranks x m), got " + std::to_string(dims.size()) +
                   " dimension" + (dims.size() == 1 ? "" : "s"));
  }
  if (descr.find("<f4") != std::string::npos) return read_body<float>(in, dims[0], dims[1], path);
  if (descr.find("<f8") != std::string::npos) return read_body<double>(in, dims[0], dims[1], path);
  fail(path, "unsupported dtype " + descr + " (float32 <f4 or float64 <f8)");
}

template <class T>
void write_npy_matrix(const std::filesystem::path& path, std::size_t rows, std::size_t cols,
                      std::span<const T> values) {
  if (values.size() != rows * cols) throw std::invalid_argument("write_npy_matrix: bad size");
  std::string header = std::string("{'descr': '") + (sizeof(T) == 4 ? "<f4" : "<f8") +
                       "', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(path.string() + ": cannot write");
  out.write("\x93NUMPY\x01\x00", 8);
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<const char*>(len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(T)));
  if (!out) throw InputError(path.string() + ": write failed");
}

template void write_npy_matrix(const std::filesystem::path&, std::size_t, std::size_t,
                               std::span<const float>);
template void write_npy_matrix(const std::filesystem::path&, std::size_t, std::size_t,
                               std::span<const double>);

}  // namespace fplab
