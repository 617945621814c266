#include "io/torch_pt.hpp"

#include <bit>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "io/input_error.hpp"
#include "io/torch_pickle.hpp"
#include "io/zip_stored.hpp"

namespace fplab {

namespace {

using Kind = PickleNode::Kind;
using StorageBytes = std::function<std::span<const unsigned char>(const PickleNode&)>;

constexpr int kMaxDepth = 64;
constexpr std::size_t kMaxVisits = std::size_t{1} << 20;
constexpr std::uint64_t kExactIntegers = std::uint64_t{1} << 53;
// The legacy format's first pickle: protocol 2, LONG1 of the magic number
// 0x1950a86a20f9469cfc6c, STOP.
constexpr unsigned char kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                          0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e};

// a * b, or false where it overflows.
bool multiply(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return false;
  out = a * b;
  return true;
}
bool add_checked(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  if (b > std::numeric_limits<std::uint64_t>::max() - a) return false;
  out = a + b;
  return true;
}

class Flattener {
 public:
  Flattener(const TorchPickle& p, StorageBytes bytes_of, bool big_endian, std::string label,
            std::uint64_t element_budget)
      : p_(p),
        bytes_of_(std::move(bytes_of)),
        big_endian_(big_endian),
        label_(std::move(label)),
        budget_(element_budget) {}

  std::vector<Array> run() {
    visit(p_.root, "", 0);
    return std::move(out_);
  }

 private:
  const TorchPickle& p_;
  StorageBytes bytes_of_;
  bool big_endian_;
  std::string label_;
  std::uint64_t budget_;
  std::size_t visits_ = 0;
  std::vector<Array> out_;
  std::set<std::string> names_;

  [[noreturn]] void fail(const std::string& name, const std::string& why) const {
    throw InputError(label_ + ": '" + name + "': " + why);
  }
  static std::string join(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
  }

  void visit(std::size_t i, const std::string& name, int depth);
  std::string key_text(std::size_t key, const std::string& parent) const;
  void add(Array a);
  void add_number(const PickleNode& n, const std::string& name);
  void add_tensor(const PickleNode& t, const std::string& name);
  std::uint64_t element_count(const PickleNode& t, std::uint64_t numel,
                              const std::string& name) const;
  std::uint64_t element(TorchDType dtype, const unsigned char* at, const std::string& name) const;
};

void Flattener::visit(std::size_t i, const std::string& name, int depth) {
  if (depth > kMaxDepth) fail(name, "nested deeper than 64 (or a cycle)");
  if (++visits_ > kMaxVisits) fail(name, "more than 2^20 values to visit");
  const PickleNode& n = p_.nodes[i];
  switch (n.kind) {
    case Kind::none:
    case Kind::text:
      return;  // no numbers
    case Kind::boolean:
    case Kind::integer:
    case Kind::real:
      add_number(n, name);
      return;
    case Kind::tensor:
      add_tensor(n, name);
      return;
    case Kind::tuple:
    case Kind::list:
      for (std::size_t k = 0; k < n.items.size(); ++k) {
        visit(n.items[k], join(name, std::to_string(k)), depth + 1);
      }
      return;
    case Kind::dict:
      for (std::size_t k = 0; k + 1 < n.items.size(); k += 2) {
        visit(n.items[k + 1], join(name, key_text(n.items[k], name)), depth + 1);
      }
      return;
    case Kind::callable:
    case Kind::storage_type:
    case Kind::storage:
      fail(name, "a callable or storage outside a tensor");
  }
}

std::string Flattener::key_text(std::size_t key, const std::string& parent) const {
  const PickleNode& k = p_.nodes[key];
  if (k.kind == Kind::text) return k.text;
  if (k.kind == Kind::integer) return std::to_string(k.integer);
  fail(parent, "a dict key that is not a str or an int");
}

void Flattener::add(Array a) {
  if (!names_.insert(a.name).second) fail(a.name, "two values have this name");
  out_.push_back(std::move(a));
}

void Flattener::add_number(const PickleNode& n, const std::string& name) {
  if (budget_ == 0) fail(name, "more elements than the file's limit");
  --budget_;
  Array a;
  a.name = name;
  a.type = ElementType::float64;
  if (n.kind == Kind::real) {
    a.bits.push_back(std::bit_cast<std::uint64_t>(n.real));
  } else {
    const std::uint64_t magnitude = n.integer < 0 ? 0 - static_cast<std::uint64_t>(n.integer)
                                                  : static_cast<std::uint64_t>(n.integer);
    if (magnitude > kExactIntegers) fail(name, "an int beyond +-2^53 has no exact float64");
    a.bits.push_back(std::bit_cast<std::uint64_t>(static_cast<double>(n.integer)));
  }
  add(std::move(a));
}

std::uint64_t Flattener::element_count(const PickleNode& t, std::uint64_t numel,
                                       const std::string& name) const {
  std::uint64_t count = 1;
  std::uint64_t last = t.offset;  // the highest storage index the view reaches
  bool ok = true;
  for (std::size_t d = 0; d < t.sizes.size(); ++d) {
    ok = ok && multiply(count, t.sizes[d], count);
    ok = ok && t.sizes[d] <= std::numeric_limits<std::size_t>::max();
  }
  if (!ok) fail(name, "its shape's element count overflows");
  if (count == 0) return 0;
  for (std::size_t d = 0; d < t.sizes.size(); ++d) {
    std::uint64_t reach = 0;
    ok = ok && multiply(t.sizes[d] - 1, t.strides[d], reach) && add_checked(last, reach, last);
  }
  if (!ok || last >= numel) {
    fail(name, "its view (offset " + std::to_string(t.offset) +
                   ", shape and strides) reaches past its storage of " + std::to_string(numel) +
                   " elements");
  }
  return count;
}

std::uint64_t Flattener::element(TorchDType dtype, const unsigned char* at,
                                 const std::string& name) const {
  const std::size_t width = element_bytes(dtype);
  std::uint64_t raw = 0;
  for (std::size_t k = 0; k < width; ++k) {
    raw = (raw << 8) | at[big_endian_ ? k : width - 1 - k];
  }
  const auto sign_extend = [&](std::uint64_t v) {
    const unsigned shift = 64 - 8 * static_cast<unsigned>(width);
    return static_cast<std::int64_t>(v << shift) >> shift;
  };
  switch (dtype) {
    case TorchDType::float64:
    case TorchDType::float32:
    case TorchDType::float16:
    case TorchDType::bfloat16:
      return raw;
    case TorchDType::int64:
    case TorchDType::int32:
    case TorchDType::int16:
    case TorchDType::int8: {
      const std::int64_t v = sign_extend(raw);
      if (v > static_cast<std::int64_t>(kExactIntegers) ||
          v < -static_cast<std::int64_t>(kExactIntegers)) {
        fail(name, "an int64 element beyond +-2^53 has no exact float64");
      }
      return std::bit_cast<std::uint64_t>(static_cast<double>(v));
    }
    case TorchDType::uint8:
      return std::bit_cast<std::uint64_t>(static_cast<double>(raw));
    case TorchDType::boolean:
      return std::bit_cast<std::uint64_t>(raw != 0 ? 1.0 : 0.0);
  }
  return 0;
}

ElementType array_type(TorchDType t) {
  switch (t) {
    case TorchDType::float32:
      return ElementType::float32;
    case TorchDType::float16:
      return ElementType::float16;
    case TorchDType::bfloat16:
      return ElementType::bfloat16;
    default:
      return ElementType::float64;  // float64, and the integers widened to it
  }
}

void Flattener::add_tensor(const PickleNode& t, const std::string& name) {
  const PickleNode& s = p_.nodes[t.storage];
  const std::span<const unsigned char> data = bytes_of_(s);
  const std::uint64_t count = element_count(t, s.numel, name);
  if (count > budget_) fail(name, "more elements than the file's limit (2^24 + 4 x its bytes)");
  budget_ -= count;
  Array a;
  a.name = name;
  a.type = array_type(s.dtype);
  a.shape.assign(t.sizes.begin(), t.sizes.end());
  a.bits.reserve(static_cast<std::size_t>(count));
  const std::size_t width = element_bytes(s.dtype);
  std::vector<std::uint64_t> index(t.sizes.size(), 0);  // odometer over the shape
  std::uint64_t at = t.offset;
  for (std::uint64_t e = 0; e < count; ++e) {
    a.bits.push_back(element(s.dtype, data.data() + at * width, name));
    for (std::size_t d = index.size(); d-- > 0;) {
      at += t.strides[d];
      if (++index[d] < t.sizes[d]) break;
      at -= t.strides[d] * index[d];
      index[d] = 0;
    }
  }
  add(std::move(a));
}

// The bytes of a storage, checked against its element count and width.
std::span<const unsigned char> checked_storage(std::span<const unsigned char> data,
                                               const PickleNode& s, const std::string& label) {
  const std::size_t width = element_bytes(s.dtype);
  if (s.numel > data.size() / width || s.numel * width != data.size()) {
    throw InputError(label + ": storage '" + s.text + "' holds " + std::to_string(data.size()) +
                     " bytes, not " + std::to_string(s.numel) + " " + std::string(name(s.dtype)) +
                     " elements");
  }
  return data;
}

std::uint64_t element_budget(std::size_t bytes) {
  return (std::uint64_t{1} << 24) + 4 * static_cast<std::uint64_t>(bytes);
}

std::vector<Array> read_zip(std::span<const unsigned char> bytes, const std::string& label) {
  const StoredZip zip(bytes, label);
  std::string prefix;
  int found = 0;
  for (const auto& n : zip.names()) {
    const auto slash = n.find('/');
    if (slash != std::string::npos && slash > 0 && n.substr(slash) == "/data.pkl") {
      prefix = n.substr(0, slash);
      ++found;
    }
  }
  if (found != 1) throw InputError(label + ": a zip archive without one <archive>/data.pkl");
  bool big_endian = false;
  if (zip.contains(prefix + "/byteorder")) {
    const auto order = zip.member(prefix + "/byteorder");
    const std::string text(order.begin(), order.end());
    if (text != "little" && text != "big") throw InputError(label + ": byteorder '" + text + "'");
    big_endian = text == "big";
  }
  const TorchPickle p = read_torch_pickle(zip.member(prefix + "/data.pkl"), label);
  const auto bytes_of = [&](const PickleNode& s) {
    return checked_storage(zip.member(prefix + "/data/" + s.text), s, label);
  };
  return Flattener(p, bytes_of, big_endian, label, element_budget(bytes.size())).run();
}

bool starts_legacy(std::span<const unsigned char> bytes) {
  return bytes.size() >= sizeof kLegacyMagic &&
         std::memcmp(bytes.data(), kLegacyMagic, sizeof kLegacyMagic) == 0;
}

// The legacy format, after its magic number: the protocol-version and
// system-info pickles, the object, the storage keys, then each storage.
std::vector<Array> read_legacy(std::span<const unsigned char> bytes, const std::string& label) {
  std::size_t at = sizeof kLegacyMagic;
  const auto next_pickle = [&] {
    TorchPickle p = read_torch_pickle(bytes.subspan(at), label);
    at += p.end;
    return p;
  };
  const TorchPickle version = next_pickle();
  const PickleNode& v = version.nodes[version.root];
  if (v.kind != Kind::integer || v.integer != 1001) {
    throw InputError(label + ": legacy torch.save protocol other than 1001");
  }
  const TorchPickle sys_info = next_pickle();
  bool big_endian = false;
  const PickleNode& info = sys_info.nodes[sys_info.root];
  for (std::size_t k = 0; info.kind == Kind::dict && k + 1 < info.items.size(); k += 2) {
    const PickleNode& value = sys_info.nodes[info.items[k + 1]];
    if (sys_info.nodes[info.items[k]].text == "little_endian" && value.kind == Kind::boolean) {
      big_endian = value.integer == 0;
    }
  }
  const TorchPickle object = next_pickle();
  const TorchPickle keys = next_pickle();
  std::map<std::string, std::span<const unsigned char>> storages;
  for (const std::size_t key : keys.nodes[keys.root].items) {
    const PickleNode& k = keys.nodes[key];
    // Its dtype, hence its width, is the one the object's storage of that key has.
    const PickleNode* s = nullptr;
    for (const auto& n : object.nodes) s = n.kind == Kind::storage && n.text == k.text ? &n : s;
    if (k.kind != Kind::text || s == nullptr || storages.count(k.text) != 0) {
      throw InputError(label + ": the legacy storage keys do not match the object's storages");
    }
    if (bytes.size() - at < 8) throw InputError(label + ": truncated before storage " + k.text);
    std::uint64_t numel = 0;
    for (std::size_t b = 0; b < 8; ++b) {
      numel = (numel << 8) | bytes[at + (big_endian ? b : 7 - b)];
    }
    at += 8;
    const std::size_t width = element_bytes(s->dtype);
    if (numel > (bytes.size() - at) / width) {
      throw InputError(label + ": storage " + k.text + " runs past the end of the file");
    }
    storages[k.text] = bytes.subspan(at, static_cast<std::size_t>(numel) * width);
    at += static_cast<std::size_t>(numel) * width;
  }
  const auto bytes_of = [&](const PickleNode& s) {
    const auto it = storages.find(s.text);
    if (it == storages.end()) throw InputError(label + ": storage '" + s.text + "' is missing");
    return checked_storage(it->second, s, label);
  };
  return Flattener(object, bytes_of, big_endian, label, element_budget(bytes.size())).run();
}

}  // namespace

bool starts_like_pt(std::span<const unsigned char> bytes) {
  return starts_like_zip(bytes) || starts_legacy(bytes);
}

std::vector<Array> read_pt_arrays(std::span<const unsigned char> bytes, const std::string& label) {
  if (starts_like_zip(bytes)) return read_zip(bytes, label);
  if (starts_legacy(bytes)) return read_legacy(bytes, label);
  throw InputError(label + ": not a torch.save file (neither a zip archive nor the legacy format)");
}

std::vector<Array> read_pt_arrays(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_input(path, "cannot open");
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  if (in.bad()) fail_input(path, "cannot read");
  return read_pt_arrays(bytes, path.string());
}

}  // namespace fplab
