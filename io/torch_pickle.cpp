#include "io/torch_pickle.hpp"

#include <array>
#include <bit>
#include <unordered_map>
#include <utility>

#include "io/input_error.hpp"

namespace fplab {

namespace {

using Kind = PickleNode::Kind;
using Callable = PickleNode::Callable;

struct StorageName {
  const char* name;
  TorchDType dtype;
};
constexpr std::array<StorageName, 10> kStorages{{{"DoubleStorage", TorchDType::float64},
                                                 {"FloatStorage", TorchDType::float32},
                                                 {"HalfStorage", TorchDType::float16},
                                                 {"BFloat16Storage", TorchDType::bfloat16},
                                                 {"LongStorage", TorchDType::int64},
                                                 {"IntStorage", TorchDType::int32},
                                                 {"ShortStorage", TorchDType::int16},
                                                 {"CharStorage", TorchDType::int8},
                                                 {"ByteStorage", TorchDType::uint8},
                                                 {"BoolStorage", TorchDType::boolean}}};

constexpr const char* kAllowed =
    "a tensor file needs only torch._utils._rebuild_tensor_v2, torch._utils._rebuild_parameter, "
    "torch.<T>Storage and collections.OrderedDict";

class Unpickler {
 public:
  Unpickler(std::span<const unsigned char> bytes, const std::string& label)
      : bytes_(bytes), label_(label) {}

  TorchPickle run() {
    while (step()) {
    }
    out_.end = pos_;
    return std::move(out_);
  }

 private:
  std::span<const unsigned char> bytes_;
  const std::string& label_;
  std::size_t pos_ = 0;
  std::size_t op_at_ = 0;  // the offset of the opcode being read
  TorchPickle out_;
  std::vector<std::size_t> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, std::size_t> memo_;

  [[noreturn]] void fail(const std::string& why) const {
    throw InputError(label_ + ": pickle offset " + std::to_string(op_at_) + ": " + why);
  }

  std::uint64_t take(std::size_t n) {
    if (n > bytes_.size() - pos_) fail("truncated");
    std::uint64_t v = 0;
    for (std::size_t k = n; k-- > 0;) v = (v << 8) | bytes_[pos_ + k];
    pos_ += n;
    return v;
  }

  std::string take_text(std::uint64_t n) {
    if (n > bytes_.size() - pos_) fail("a string runs past the end of the pickle");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }

  // A line of GLOBAL's text: at most 200 bytes, up to '\n'.
  std::string take_line() {
    for (std::size_t k = pos_; k < bytes_.size() && k < pos_ + 200; ++k) {
      if (bytes_[k] == '\n') {
        std::string s = take_text(k - pos_);
        ++pos_;
        return s;
      }
    }
    fail("GLOBAL without a line end");
  }

  const PickleNode& node(std::size_t i) const { return out_.nodes[i]; }

  void push(PickleNode n) {
    out_.nodes.push_back(std::move(n));
    stack_.push_back(out_.nodes.size() - 1);
  }
  void push_kind(Kind k) {
    PickleNode n;
    n.kind = k;
    push(std::move(n));
  }
  void push_integer(std::int64_t v, Kind k = Kind::integer) {
    PickleNode n;
    n.kind = k;
    n.integer = v;
    push(std::move(n));
  }
  std::size_t pop() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("pops an empty stack");
    const std::size_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::size_t top() {
    const std::size_t v = pop();
    stack_.push_back(v);
    return v;
  }
  std::vector<std::size_t> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    std::vector<std::size_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()),
                                   stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  void push_tuple(std::vector<std::size_t> items) {
    PickleNode n;
    n.kind = Kind::tuple;
    n.items = std::move(items);
    push(std::move(n));
  }
  void push_tuple_of(std::size_t count) {
    std::vector<std::size_t> items(count);
    for (std::size_t k = count; k-- > 0;) items[k] = pop();
    push_tuple(std::move(items));
  }
  void add_to(Kind container, const std::vector<std::size_t>& items) {
    const std::size_t target = top();
    if (node(target).kind != container) {
      fail(container == Kind::dict ? "SETITEM on a value that is not a dict"
                                   : "APPEND on a value that is not a list");
    }
    if (container == Kind::dict && items.size() % 2 != 0) fail("SETITEMS with an odd count");
    auto& dest = out_.nodes[target].items;
    dest.insert(dest.end(), items.begin(), items.end());
  }
  void memo_put(std::uint64_t index) { memo_[index] = top(); }
  void memo_get(std::uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail("memo " + std::to_string(index) + " was never put");
    stack_.push_back(it->second);
  }

  void global(const std::string& module, const std::string& name);
  void persistent_id();
  void reduce();
  void rebuild_tensor(const std::vector<std::size_t>& args);
  void build();
  bool step();
  bool step_container(unsigned char op);
  bool step_memo_and_calls(unsigned char op);
};

void Unpickler::global(const std::string& module, const std::string& name) {
  PickleNode n;
  if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
    n.kind = Kind::callable;
    n.callable = Callable::rebuild_tensor_v2;
  } else if (module == "torch._utils" && name == "_rebuild_parameter") {
    n.kind = Kind::callable;
    n.callable = Callable::rebuild_parameter;
  } else if (module == "collections" && name == "OrderedDict") {
    n.kind = Kind::callable;
    n.callable = Callable::ordered_dict;
  } else {
    for (const auto& s : kStorages) {
      if (module == "torch" && name == s.name) {
        n.kind = Kind::storage_type;
        n.dtype = s.dtype;
      }
    }
    if (n.kind != Kind::storage_type) {
      fail("global '" + module + "." + name + "' is refused (" + kAllowed + ")");
    }
  }
  push(std::move(n));
}

void Unpickler::persistent_id() {
  const PickleNode pid = node(pop());
  const auto is = [&](std::size_t i, Kind k) { return node(pid.items[i]).kind == k; };
  const bool shape_ok = pid.kind == Kind::tuple &&
                        (pid.items.size() == 5 || (pid.items.size() == 6 && is(5, Kind::none)));
  if (!shape_ok || !is(0, Kind::text) || node(pid.items[0]).text != "storage" ||
      !is(1, Kind::storage_type) || !is(2, Kind::text) || !is(3, Kind::text) ||
      !is(4, Kind::integer) || node(pid.items[4]).integer < 0) {
    fail("a persistent id that is not ('storage', <T>Storage, key, location, numel)");
  }
  PickleNode s;
  s.kind = Kind::storage;
  s.dtype = node(pid.items[1]).dtype;
  s.text = node(pid.items[2]).text;
  s.numel = static_cast<std::uint64_t>(node(pid.items[4]).integer);
  push(std::move(s));
}

// A tuple of non-negative integers, or a refusal naming `what`.
std::vector<std::uint64_t> dims(const std::vector<PickleNode>& nodes, std::size_t i, bool& ok) {
  std::vector<std::uint64_t> out;
  if (nodes[i].kind != Kind::tuple) ok = false;
  for (const std::size_t e : nodes[i].items) {
    if (nodes[e].kind != Kind::integer || nodes[e].integer < 0) ok = false;
    out.push_back(static_cast<std::uint64_t>(nodes[e].integer));
  }
  return ok ? out : std::vector<std::uint64_t>{};
}

void Unpickler::rebuild_tensor(const std::vector<std::size_t>& args) {
  bool ok = (args.size() == 6 || args.size() == 7) && node(args[0]).kind == Kind::storage &&
            node(args[1]).kind == Kind::integer && node(args[1]).integer >= 0 &&
            node(args[4]).kind == Kind::boolean;
  PickleNode t;
  t.kind = Kind::tensor;
  if (ok) {
    t.storage = args[0];
    t.offset = static_cast<std::uint64_t>(node(args[1]).integer);
    t.sizes = dims(out_.nodes, args[2], ok);
    t.strides = dims(out_.nodes, args[3], ok);
  }
  if (!ok || t.sizes.size() != t.strides.size()) {
    fail("_rebuild_tensor_v2 without (storage, offset, size, stride, requires_grad, hooks)");
  }
  push(std::move(t));
}

void Unpickler::reduce() {
  const std::size_t args_at = pop();
  const std::size_t f = pop();
  if (node(f).kind != Kind::callable) fail("REDUCE of a value that is not an allowed callable");
  if (node(args_at).kind != Kind::tuple) fail("REDUCE with arguments that are not a tuple");
  const std::vector<std::size_t> args = node(args_at).items;
  switch (node(f).callable) {
    case Callable::ordered_dict:
      if (!args.empty()) fail("OrderedDict called with arguments");
      push_kind(Kind::dict);
      return;
    case Callable::rebuild_tensor_v2:
      rebuild_tensor(args);
      return;
    case Callable::rebuild_parameter:
      if (args.size() != 3 || node(args[0]).kind != Kind::tensor) {
        fail("_rebuild_parameter without (tensor, requires_grad, hooks)");
      }
      stack_.push_back(args[0]);
      return;
  }
}

void Unpickler::build() {
  (void)pop();  // the state: a state_dict's _metadata, dropped
  if (node(top()).kind != Kind::dict) fail("BUILD on a value that is not a dict");
}

bool Unpickler::step_container(unsigned char op) {
  switch (op) {
    case ')':
      push_tuple({});
      return true;
    case 't':
      push_tuple(pop_mark());
      return true;
    case 0x85:
    case 0x86:
    case 0x87:
      push_tuple_of(op - 0x84u);
      return true;
    case ']':
      push_kind(Kind::list);
      return true;
    case '}':
      push_kind(Kind::dict);
      return true;
    case 'a':
      add_to(Kind::list, {pop()});
      return true;
    case 'e':
      add_to(Kind::list, pop_mark());
      return true;
    case 's': {
      const std::size_t value = pop();
      const std::size_t key = pop();
      add_to(Kind::dict, {key, value});
      return true;
    }
    case 'u':
      add_to(Kind::dict, pop_mark());
      return true;
    default:
      return step_memo_and_calls(op);
  }
}

bool Unpickler::step_memo_and_calls(unsigned char op) {
  switch (op) {
    case 'q':
      memo_put(take(1));
      return true;
    case 'r':
      memo_put(take(4));
      return true;
    case 0x94:
      memo_put(memo_.size());
      return true;
    case 'h':
      memo_get(take(1));
      return true;
    case 'j':
      memo_get(take(4));
      return true;
    case 'c': {
      const std::string module = take_line();
      global(module, take_line());
      return true;
    }
    case 0x93: {
      const std::size_t name = pop();
      const std::size_t module = pop();
      if (node(name).kind != Kind::text || node(module).kind != Kind::text) {
        fail("STACK_GLOBAL of values that are not strings");
      }
      global(node(module).text, node(name).text);
      return true;
    }
    case 'Q':
      persistent_id();
      return true;
    case 'R':
      reduce();
      return true;
    case 'b':
      build();
      return true;
    default: {
      static constexpr const char* kHex = "0123456789abcdef";
      fail(std::string("opcode 0x") + kHex[op >> 4] + kHex[op & 15] +
           " is refused (not one a tensor file needs)");
    }
  }
}

bool Unpickler::step() {
  op_at_ = pos_;
  const auto op = static_cast<unsigned char>(take(1));
  switch (op) {
    case 0x80:
      if (const auto v = take(1); v < 2 || v > 5) fail("pickle protocol " + std::to_string(v));
      return true;
    case 0x95:
      if (take(8) > bytes_.size() - pos_) fail("a frame runs past the end of the pickle");
      return true;
    case '.':
      out_.root = pop();
      return false;
    case '(':
      marks_.push_back(stack_.size());
      return true;
    case 'N':
      push_kind(Kind::none);
      return true;
    case 0x88:
    case 0x89:
      push_integer(op == 0x88 ? 1 : 0, Kind::boolean);
      return true;
    case 'J':
      push_integer(static_cast<std::int32_t>(static_cast<std::uint32_t>(take(4))));
      return true;
    case 'K':
      push_integer(static_cast<std::int64_t>(take(1)));
      return true;
    case 'M':
      push_integer(static_cast<std::int64_t>(take(2)));
      return true;
    case 0x8a: {
      const auto n = static_cast<std::size_t>(take(1));
      if (n > 8) fail("LONG1 of " + std::to_string(n) + " bytes (at most 8 are read)");
      const std::uint64_t v = n == 0 ? 0 : take(n);
      const unsigned shift = 64 - 8 * static_cast<unsigned>(n);  // sign-extend
      push_integer(n == 0 ? 0 : static_cast<std::int64_t>(v << shift) >> shift);
      return true;
    }
    case 'G': {
      PickleNode n;
      n.kind = Kind::real;
      std::uint64_t big_endian = 0;
      for (int k = 0; k < 8; ++k) big_endian = (big_endian << 8) | take(1);
      n.real = std::bit_cast<double>(big_endian);
      push(std::move(n));
      return true;
    }
    case 'X':
    case 0x8c:
    case 0x8d: {
      PickleNode n;
      n.kind = Kind::text;
      n.text = take_text(take(op == 'X' ? 4 : op == 0x8c ? 1 : 8));
      push(std::move(n));
      return true;
    }
    default:
      return step_container(op);
  }
}

}  // namespace

std::string_view name(TorchDType t) {
  switch (t) {
    case TorchDType::float64:
      return "float64";
    case TorchDType::float32:
      return "float32";
    case TorchDType::float16:
      return "float16";
    case TorchDType::bfloat16:
      return "bfloat16";
    case TorchDType::int64:
      return "int64";
    case TorchDType::int32:
      return "int32";
    case TorchDType::int16:
      return "int16";
    case TorchDType::int8:
      return "int8";
    case TorchDType::uint8:
      return "uint8";
    case TorchDType::boolean:
      return "bool";
  }
  return "?";
}

std::size_t element_bytes(TorchDType t) {
  switch (t) {
    case TorchDType::float64:
    case TorchDType::int64:
      return 8;
    case TorchDType::float32:
    case TorchDType::int32:
      return 4;
    case TorchDType::float16:
    case TorchDType::bfloat16:
    case TorchDType::int16:
      return 2;
    case TorchDType::int8:
    case TorchDType::uint8:
    case TorchDType::boolean:
      return 1;
  }
  return 1;
}

TorchPickle read_torch_pickle(std::span<const unsigned char> bytes, const std::string& label) {
  return Unpickler(bytes, label).run();
}

}  // namespace fplab
