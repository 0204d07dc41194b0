#pragma once
// The graph IR of ember.compile (src/compile/): what a captured function did, as values and the
// nodes that made them, in program order. A node is one dispatched op with its non-tensor
// arguments frozen; it can re-run on new tensors (its Replay) or, after fusion, be one statement
// of a generated kernel. Values are SSA-like: an in-place op gives its tensor a new value, so a
// later reader names the state it read.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::compiler {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;  // an undefined optional tensor argument

enum class ValueKind : uint8_t { Input, Constant, NodeOutput };

struct ValueInfo {
  ValueKind kind = ValueKind::NodeOutput;
  int32_t producer = -1;     // NodeOutput: the node's index
  int32_t input_index = -1;  // Input: the slot
  Tensor constant;           // Constant: the tensor itself (held by the graph)
  // Constant: a tensor from outside the function (a global, a closure's, an optimizer's state),
  // used as that very tensor on every call: others may write it between calls, so it is never
  // folded into a result, and writes the graph makes land on it as in eager. The other constants
  // (snapshots of data the program put in, folded results) belong to the graph.
  bool external = false;
  // what capture saw (fusion decides on it; the guards keep it true on later calls)
  Shape sizes;
  std::vector<int64_t> strides;
  DType dtype = kFloat32;
  Device device;
  bool requires_grad = false;
  bool wrapped_number = false;  // a Python/C++ scalar turned into a 0-dim tensor
};

// One argument of a node's op, structured, so a saved graph can rebuild the call (ember/export.h).
// Tensor arguments keep only how many tensor slots they fill (their values are the node's inputs).
struct Arg {
  enum Kind : uint8_t { None, Tensors, Int, Double, Bool, String, Ints, Doubles, DType, Options, Generator,
                        Unsupported };
  Kind kind = None;
  int64_t i = 0;  // Int, Bool (0/1), DType (its code), Tensors (slots), Generator (0: the default)
  double d = 0;   // Double
  std::string s;  // String; Options: "<dtype or ->,<device or ->,<requires_grad 0/1>"; Unsupported: what
  std::vector<int64_t> ints;
  std::vector<double> doubles;
};

// Re-runs a node's op on new tensors (its tensor arguments in the order the op takes them) and
// returns the op's tensor results.
using Replay = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct Node {
  const char* op = "";
  std::vector<ValueId> inputs;   // every tensor argument, in order (kNoValue: undefined)
  std::vector<ValueId> outputs;  // every tensor result
  // Every argument, structured: what CSE compares, fusion reads (add's alpha), export saves.
  // Empty for opaque nodes (Python code), which are never merged, folded or saved.
  std::vector<Arg> args;
  bool mutates = false;          // in-place (returns Tensor&) or returns nothing: writes its arguments
  bool grad_enabled = true;      // grad mode when it ran (a `with no_grad()` inside the function)
  Replay replay;
  bool opaque() const { return args.empty(); }
  bool random() const;       // takes a Generator
  std::string attrs() const;  // the non-tensor arguments, printed ("1, 'tanh', None")
};

struct Graph {
  std::vector<ValueInfo> values;
  std::vector<Node> nodes;
  std::vector<ValueId> inputs;   // one per input slot
  std::vector<ValueId> outputs;  // what the function returned, flattened
  // what the passes did (passes.cpp)
  int64_t ops_captured = 0, dead_removed = 0, common_merged = 0, constants_folded = 0;
  int64_t pools_before_relu = 0;  // relu -> max pool pairs turned into max pool -> relu
  int64_t matmul_epilogues = 0;   // addmm -> activation / residual add pairs made one node
  int64_t pieces_joined = 0;      // slices tiling a value (selects of every index) made one split (unbind)
  int64_t masked_fills = 0;       // empty -> copy_ -> masked_fill_ made one where
  bool has_mutation() const;
  // "%3 = mul(%1, %2)" lines, for explain() and logs.
  std::string str() const;
};

}  // namespace ember::compiler
