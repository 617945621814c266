#include "io/npy.hpp"

#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <regex>
#include <stdexcept>

namespace fplab {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

std::string dict_value(const std::string& header, const std::string& key) {
  const std::regex re("'" + key + "'\\s*:\\s*('[^']*'|True|False|\\([^)]*\\))");
  std::smatch m;
  if (!std::regex_search(header, m, re)) return {};
  return m[1].str();
}

// "(2, 3)", "(5,)", "()" -> dimensions; false on anything else.
bool parse_shape(const std::string& text, std::vector<std::size_t>& shape) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') return false;
  const std::string inner = text.substr(1, text.size() - 2);
  std::size_t i = 0;
  const auto skip_space = [&] {
    while (i < inner.size() && (inner[i] == ' ' || inner[i] == '\t')) ++i;
  };
  skip_space();
  while (i < inner.size()) {
    std::size_t value = 0;
    const std::size_t start = i;
    while (i < inner.size() && inner[i] >= '0' && inner[i] <= '9') {
      const auto digit = static_cast<std::size_t>(inner[i] - '0');
      if (value > (std::numeric_limits<std::size_t>::max() - digit) / 10) return false;
      value = value * 10 + digit;
      ++i;
    }
    if (i == start) return false;
    shape.push_back(value);
    skip_space();
    if (i == inner.size()) break;
    if (inner[i] != ',') return false;
    ++i;
    skip_space();
  }
  // "(5)" is not what numpy writes for 1-D, but it means the same.
  return true;
}

struct Descr {
  ElementType type;
  bool big_endian;
};

bool parse_descr(const std::string& descr, const NpyReadOptions& options, Descr& out,
                 std::string& why) {
  // descr is quoted: "'<f4'".
  const std::string d = descr.size() >= 2 ? descr.substr(1, descr.size() - 2) : descr;
  if (d == "<V2" || d == "|V2") {
    if (!options.void2_as_bfloat16) {
      why = "dtype '" + d +
            "' is a 2-byte void type (how np.save writes ml_dtypes' bfloat16); "
            "pass --bfloat16-void to read it as bfloat16";
      return false;
    }
    out = {ElementType::bfloat16, false};
    return true;
  }
  if (d.size() == 3 && (d[0] == '<' || d[0] == '>' || d[0] == '=') && d[1] == 'f') {
    // '=' is native order; np.save never writes it, but a hand-made file may.
    const bool big = d[0] == '>' || (d[0] == '=' && std::endian::native == std::endian::big);
    if (d[2] == '2') out = {ElementType::float16, big};
    if (d[2] == '4') out = {ElementType::float32, big};
    if (d[2] == '8') out = {ElementType::float64, big};
    if (d[2] == '2' || d[2] == '4' || d[2] == '8') return true;
  }
  why = "unsupported dtype '" + d +
        "' (need float64 '<f8', float32 '<f4', float16 '<f2' in either byte order, or "
        "bfloat16 '<V2' with --bfloat16-void)";
  return false;
}

// Element i of `data` (width bytes, the given byte order) as an integer.
std::uint64_t load(const unsigned char* p, std::size_t width, bool big_endian) {
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < width; ++k) {
    const std::size_t byte = big_endian ? k : width - 1 - k;
    v = (v << 8) | p[byte];
  }
  return v;
}

// Fortran (column-major) element order to C (row-major).
std::vector<std::uint64_t> fortran_to_c(const std::vector<std::uint64_t>& f,
                                        const std::vector<std::size_t>& shape) {
  std::vector<std::uint64_t> c(f.size());
  std::vector<std::size_t> index(shape.size(), 0);
  for (std::size_t linear = 0; linear < f.size(); ++linear) {
    std::size_t offset = 0;
    for (std::size_t d = shape.size(); d-- > 0;) offset = offset * shape[d] + index[d];
    c[linear] = f[offset];
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return c;
}

template <class T>
void write(const std::filesystem::path& path, std::span<const T> x) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  Array a;
  a.type = sizeof(T) == 4 ? ElementType::float32 : ElementType::float64;
  a.shape = {x.size()};
  for (const T v : x) a.bits.push_back(std::bit_cast<Bits>(v));
  write_npy_array(path, a);
}

}  // namespace

namespace {

// The header's dict text after the magic and the version's length field
// (2 bytes in version 1, 4 in 2 and 3); `offset` is left where the data
// begins. Every length is checked against the file's size before reading.
std::string read_header(std::ifstream& in, const std::filesystem::path& path,
                        std::uint64_t file_size, std::uint64_t& offset) {
  unsigned char prefix[12] = {};
  const std::size_t prefix_len = file_size < 12 ? static_cast<std::size_t>(file_size) : 12;
  in.read(reinterpret_cast<char*>(prefix), static_cast<std::streamsize>(prefix_len));
  if (prefix_len < kMagicLen + 4 || std::memcmp(prefix, kMagic, kMagicLen) != 0) {
    fail_input(path, "not a .npy file (bad magic)");
  }
  const int major = prefix[kMagicLen];
  std::uint64_t header_len = 0;
  if (major == 1) {
    header_len = prefix[8] | (std::uint64_t{prefix[9]} << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (prefix_len < 12) fail_input(path, "truncated header");
    header_len = prefix[8] | (std::uint64_t{prefix[9]} << 8) | (std::uint64_t{prefix[10]} << 16) |
                 (std::uint64_t{prefix[11]} << 24);
    offset = 12;
  } else {
    fail_input(path, "unsupported .npy version " + std::to_string(major));
  }
  if (file_size < offset + header_len) fail_input(path, "truncated header");
  std::string header(static_cast<std::size_t>(header_len), '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  if (!in) fail_input(path, "cannot read the header");
  offset += header_len;
  return header;
}

// The number of values the shape promises, checked against the data's
// bytes before anything is read: no overflow, not truncated, nothing after.
std::uint64_t promised_count(const std::filesystem::path& path,
                             const std::vector<std::size_t>& shape, const std::string& shape_text,
                             std::size_t width, std::uint64_t data_bytes) {
  std::uint64_t count = 1;
  for (std::size_t dim : shape) {
    if (dim != 0 && count > std::numeric_limits<std::uint64_t>::max() / width / dim) {
      fail_input(path, "shape " + shape_text + " is too large");
    }
    count *= dim;
  }
  if (data_bytes / width < count) {
    fail_input(path, "truncated: header promises " + std::to_string(count) + " values of " +
                         std::to_string(width) + " bytes, file holds " +
                         std::to_string(data_bytes) + " bytes of data");
  }
  if (data_bytes != count * width) fail_input(path, "trailing bytes after the data");
  return count;
}

// `count` values of `width` bytes each, in the file's byte order, as bits.
std::vector<std::uint64_t> read_values(std::ifstream& in, const std::filesystem::path& path,
                                       std::uint64_t count, std::size_t width, bool big_endian) {
  std::vector<unsigned char> raw(static_cast<std::size_t>(count * width));
  if (!raw.empty()) {
    in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
    if (!in) fail_input(path, "cannot read the data");
  }
  std::vector<std::uint64_t> bits(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < bits.size(); ++i)
    bits[i] = load(raw.data() + i * width, width, big_endian);
  return bits;
}

}  // namespace

Array read_npy_array(const std::filesystem::path& path, const NpyReadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input(path, "cannot open");
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  if (end < 0) fail_input(path, "cannot read");
  const auto file_size = static_cast<std::uint64_t>(end);
  in.seekg(0);
  std::uint64_t offset = 0;
  const std::string header = read_header(in, path, file_size, offset);

  const std::string descr = dict_value(header, "descr");
  const std::string fortran = dict_value(header, "fortran_order");
  const std::string shape_text = dict_value(header, "shape");
  if (descr.empty() || fortran.empty() || shape_text.empty()) fail_input(path, "malformed header");
  Descr d{};
  std::string why;
  if (!parse_descr(descr, options, d, why)) fail_input(path, why);
  Array a;
  a.type = d.type;
  if (!parse_shape(shape_text, a.shape)) fail_input(path, "malformed shape " + shape_text);

  const std::size_t width = element_bits(d.type) / 8;
  const std::uint64_t count = promised_count(path, a.shape, shape_text, width, file_size - offset);
  a.bits = read_values(in, path, count, width, d.big_endian);
  if (fortran == "True" && a.shape.size() > 1) {
    a.bits = fortran_to_c(a.bits, a.shape);
  } else if (fortran != "True" && fortran != "False") {
    fail_input(path, "malformed fortran_order " + fortran);
  }
  return a;
}

NumberArray read_npy(const std::filesystem::path& path) {
  const Array a = read_npy_array(path);
  if (a.shape.size() != 1) fail_input(path, "expected a 1-D array, shape is " + a.shape_text());
  if (a.type == ElementType::float32) {
    std::vector<float> out(a.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = std::bit_cast<float>(static_cast<std::uint32_t>(a.bits[i]));
    }
    return out;
  }
  if (a.type == ElementType::float64) {
    std::vector<double> out(a.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::bit_cast<double>(a.bits[i]);
    return out;
  }
  fail_input(path,
             "unsupported dtype " + std::string(name(a.type)) + " here (need float32 or float64)");
}

void write_npy(const std::filesystem::path& path, std::span<const float> x) { write(path, x); }
void write_npy(const std::filesystem::path& path, std::span<const double> x) { write(path, x); }

void write_npy_array(const std::filesystem::path& path, const Array& a) {
  if (a.type == ElementType::bfloat16) {
    throw std::invalid_argument("write_npy_array: numpy has no bfloat16 dtype");
  }
  const char* descr = a.type == ElementType::float16   ? "<f2"
                      : a.type == ElementType::float32 ? "<f4"
                                                       : "<f8";
  std::string shape;
  for (std::size_t i = 0; i < a.shape.size(); ++i) {
    shape += (i == 0 ? "" : ", ") + std::to_string(a.shape[i]);
  }
  shape = "(" + shape + (a.shape.size() == 1 ? ",)" : ")");
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
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
  // Little-endian bytes whatever the host's order.
  const std::size_t bytes = element_bits(a.type) / 8;
  std::string data(a.bits.size() * bytes, '\0');
  for (std::size_t i = 0; i < a.bits.size(); ++i) {
    for (std::size_t k = 0; k < bytes; ++k) {
      data[i * bytes + k] = static_cast<char>((a.bits[i] >> (8 * k)) & 0xFF);
    }
  }
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) throw InputError(path.string() + ": write failed");
}

}  // namespace fplab
