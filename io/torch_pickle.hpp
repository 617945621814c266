// A restricted unpickler for the pickle inside a torch.save file (its
// data.pkl; io/torch_pt.hpp reads the rest). It never runs code: it builds
// a tree of plain values and accepts only what a file of tensors needs.
//
// Opcodes (protocol 2, as torch.save writes by default, and the protocol
// 4 forms): PROTO, FRAME, STOP, MARK, NONE, NEWTRUE, NEWFALSE, BININT,
// BININT1, BININT2, LONG1 (at most 8 bytes), BINFLOAT, BINUNICODE,
// SHORT_BINUNICODE, BINUNICODE8, EMPTY_TUPLE, TUPLE, TUPLE1-3, EMPTY_LIST,
// APPEND, APPENDS, EMPTY_DICT, SETITEM, SETITEMS, BINPUT, LONG_BINPUT,
// MEMOIZE, BINGET, LONG_BINGET, GLOBAL, STACK_GLOBAL, BINPERSID, REDUCE,
// BUILD. Any other opcode is refused, naming it and its offset.
//
// Globals: only torch._utils._rebuild_tensor_v2, torch._utils.
// _rebuild_parameter, collections.OrderedDict and torch.<T>Storage for T in
// Double, Float, Half, BFloat16, Long, Int, Short, Char, Byte, Bool. Any
// other global is refused when it is named, before anything is called.
// REDUCE calls nothing: it builds a node, and only for
//   OrderedDict()                                      -> an empty dict
//   _rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
//                      hooks[, metadata])              -> a tensor
//   _rebuild_parameter(tensor, requires_grad, hooks)   -> that tensor
// A persistent id (BINPERSID) must be ('storage', <T>Storage, key: str,
// location: str, numel: int[, None]) and becomes a storage. BUILD is taken
// only on a dict (the _metadata of a state_dict) and its state dropped.
//
// Limits: nothing is sized by a field before the bytes that hold it are
// checked; the memo is a map (an index is a key, not a size); every node
// comes from an opcode, so the tree has at most as many nodes as the pickle
// has bytes. A node may refer to itself through the memo: the tree can
// have cycles, which its reader (io/torch_pt.cpp) bounds by depth.
// Errors are InputError("<label>: <why>").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fplab {

// The element types of torch storages this reader takes.
enum class TorchDType {
  float64,
  float32,
  float16,
  bfloat16,
  int64,
  int32,
  int16,
  int8,
  uint8,
  boolean
};

std::string_view name(TorchDType t);  // "float64", ..., "bool"
std::size_t element_bytes(TorchDType t);

struct PickleNode {
  enum class Kind {
    none,
    boolean,
    integer,
    real,
    text,
    tuple,
    list,
    dict,
    callable,
    storage_type,
    storage,
    tensor
  };
  enum class Callable { rebuild_tensor_v2, rebuild_parameter, ordered_dict };
  Kind kind = Kind::none;
  std::int64_t integer = 0;        // boolean (0/1), integer
  double real = 0.0;               // real
  std::string text;                // text; a storage's key
  std::vector<std::size_t> items;  // tuple/list elements; dict: key, value, key, value, ...
  Callable callable = Callable::ordered_dict;
  TorchDType dtype = TorchDType::float32;  // storage_type, storage
  std::uint64_t numel = 0;                 // storage: its element count
  // tensor: a view of a storage node.
  std::size_t storage = 0;
  std::uint64_t offset = 0;
  std::vector<std::uint64_t> sizes, strides;
};

struct TorchPickle {
  std::vector<PickleNode> nodes;
  std::size_t root = 0;  // the value STOP returned
  std::size_t end = 0;   // the offset just past STOP
};

// Reads one pickle from the start of `bytes` up to its STOP.
TorchPickle read_torch_pickle(std::span<const unsigned char> bytes, const std::string& label);

}  // namespace fplab
