#include "collectives/npy_matrix.hpp"

#include <bit>
#include <cstdint>
#include <fstream>
#include <string>
#include <type_traits>

#include "io/input_error.hpp"
#include "io/npy.hpp"

namespace fplab {

namespace {

template <class T>
Matrix<T> to_matrix(const Array& a) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  Matrix<T> m{a.shape[0], a.shape[1], std::vector<T>(a.size())};
  for (std::size_t i = 0; i < a.size(); ++i) {
    m.values[i] = std::bit_cast<T>(static_cast<Bits>(a.bits[i]));
  }
  return m;
}

}  // namespace

NumberMatrix read_npy_matrix(const std::filesystem::path& path) {
  const Array a = read_npy_array(path);
  if (a.shape.size() != 2) {
    fail_input(path, "expected a 2-D array (ranks x m), got " + std::to_string(a.shape.size()) +
                         " dimension" + (a.shape.size() == 1 ? "" : "s"));
  }
  if (a.type == ElementType::float32) return to_matrix<float>(a);
  if (a.type == ElementType::float64) return to_matrix<double>(a);
  fail_input(path,
             "unsupported dtype " + std::string(name(a.type)) + " (float32 <f4 or float64 <f8)");
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
  // Little-endian bytes whatever the host's order, as the header says.
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  std::string data(values.size() * sizeof(T), '\0');
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto bits = std::bit_cast<Bits>(values[i]);
    for (std::size_t k = 0; k < sizeof(T); ++k) {
      data[i * sizeof(T) + k] = static_cast<char>((bits >> (8 * k)) & 0xFF);
    }
  }
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw InputError(path.string() + ": write failed");
}

template void write_npy_matrix(const std::filesystem::path&, std::size_t, std::size_t,
                               std::span<const float>);
template void write_npy_matrix(const std::filesystem::path&, std::size_t, std::size_t,
                               std::span<const double>);

}  // namespace fplab
