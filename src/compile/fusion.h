#pragma once
// Fusion (fusion.cpp): chains of elementwise nodes over one shape become one kernel, whose C++
// source calls the same scalar formulas as the eager CPU kernels (ops/elementwise_formulas.h
// with cpu::CpuMath), so a fused result has the eager result's bits.
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/compile/graph.h"

namespace ember::compiler {

struct FusedOperand {
  // the output's shape; one number; the last dims; (row groups) one number per row
  enum Kind : uint8_t { kFull, kScalar, kInner, kRow };
  ValueId value;
  Kind kind;
  DType dtype;  // kScalar: float32/float64/int64/int32/bool (read, then converted to float);
                // kFull/kInner: float32, bfloat16 or float16 (fusible_dtype)
};

struct FusedGroup {
  std::vector<int32_t> nodes;  // in program order
  std::vector<FusedOperand> inputs;
  std::vector<ValueId> outputs;  // values read after the group (or returned)
  std::vector<Shape> output_sizes;  // each output's shape (sizes, or a row group's per-row values)
  Shape sizes;                   // every value of the group has this shape, contiguous (fusible_dtype)
  Device device;                 // where its tensors live: the CPU, or a device with a codegen (device_codegen.h)
  int64_t inner = 0;             // the kInner operands' length (0: none); a row group's row length
  // A row group (fusion_rows.cpp): reductions over the last dim (sum, mean, amax, amin with
  // keepdim) with the elementwise nodes before and after them; its values are full-size or one
  // number per row (sizes with the last dim 1). No backward: formed only where nothing wants a
  // gradient.
  bool rows = false;
  bool needs_grad = false;       // some output wants a gradient: the source has a backward kernel too
  std::string source;            // the kernel, `extern "C" void ember_fused(...)` (and ember_fused_backward);
                                 // a device group's: `extern "C" __global__ void ember_fused(Params)` (CUDA C++)
};

// Groups of two or more fusible nodes (elementwise float32 on the CPU): row groups first, then
// elementwise chains among the other nodes.
std::vector<FusedGroup> find_fusion_groups(const Graph& g);

namespace fusion_detail {
struct ValueUses;
}
// Row groups alone (fusion_rows.cpp).
std::vector<FusedGroup> find_row_groups(const Graph& g, const fusion_detail::ValueUses& uses);

// What both kinds of group share (fusion.cpp).
namespace fusion_detail {
// The CUDA C++ of a device group's kernels (codegen_device_source.cpp), compiled at run time by
// the device's builder (device_codegen.h).
std::string generate_device_source(const Graph& g, const FusedGroup& grp);
// The C++ expression of elementwise node n over operand expressions a (nullopt: not fusible).
std::optional<std::string> expression(const Graph& g, const Node& n, const std::vector<std::string>& a);
// Each input's share of the gradient of elementwise node n (its operands a, output y, output's
// gradient gr; "" for none), nullopt when there is no fused backward for it.
std::optional<std::vector<std::string>> derivative(const Graph& g, const Node& n, const std::vector<std::string>& a,
                                                   const std::string& y, const std::string& gr);
bool is_contiguous(const ValueInfo& v);
// The dtypes elementwise groups hold (float32, bfloat16, float16: computed in float, a 16-bit
// value rounded where it is made, as eager's kernels round each op's result, so results keep
// eager's bits).
bool fusible_dtype(DType dt);
// Operand o's element read as float (a 16-bit float widened), node n's value from its formula
// (rounded to n's 16-bit dtype when it makes one), and float v stored as dtype's element; the
// helpers they call (ember_bf16_*, ember_f16_*) are each generator's.
std::string load_expression(const FusedOperand& o, const std::string& element);
std::string node_value(const Graph& g, const Node& n, const std::string& formula);
std::string store_expression(DType dt, const std::string& v);
bool is_16bit_float(DType dt);  // stored as 16-bit words by the generated code
// How a generated loop body reads its elements: the indent of its lines and the element of a
// full-size operand and of a kInner one (CPU: "[base + j]" and "[j]"; CUDA: "[i]" and "[j]").
struct LoopBody {
  const char* indent;
  const char* full;
  const char* inner;
  // a kInner operand's gradient: accumulated into its chunk's row ("gin<k>[j] +=", the CPU's, see
  // kGradientChunks) or stored full-size for the caller to sum (a device's)
  bool inner_gradients_in_chunks = false;
};
// Inside a loop body: each operand loaded (a<k>), then each node's value in program order (t<v>),
// their names recorded in `name`.
void emit_values(std::ostringstream& os, const Graph& g, const FusedGroup& grp, const LoopBody& at,
                 std::unordered_map<ValueId, std::string>& name);
// After emit_values, the backward: the outputs' gradients read from gout<k>, each node's input
// shares accumulated in reverse program order (d<v>), and gin<k> stored for the operands that
// wanted a gradient at capture.
void emit_gradients(std::ostringstream& os, const Graph& g, const FusedGroup& grp, const LoopBody& at,
                    const std::unordered_map<ValueId, std::string>& name);
int64_t numel(const Shape& s);
// `in<k>` for each operand: a converted number, or a float pointer
void emit_operand_pointers(std::ostringstream& os, const FusedGroup& grp);
// The extern "C" entry that runs `body` over the rows on ember's threads.
std::string entry(const char* name, const char* params, const char* args_init, const char* body);
// The CPU backward's argument struct, and its entry (after the source's anonymous namespace, which
// defines backward_body): the rows split into the chunks of kGradientChunks,
// `backward_body(ctx, r0, r1, chunk)` run over each on ember's threads.
extern const char* const kBackwardArgs;
std::string backward_entry();
// The backward body's gout<k> and gin<k> pointers (a kInner operand's at its chunk's row of
// partial sums, zeroed), after emit_operand_pointers.
void emit_gradient_pointers(std::ostringstream& os, const Graph& g, const FusedGroup& grp);
// Which nodes read each value and which values the graph returns, built once per graph: a
// group's outputs are its values read outside it (or returned).
struct ValueUses {
  explicit ValueUses(const Graph& g);
  std::vector<ValueId> outputs_of(const Graph& g, const std::vector<int32_t>& nodes) const;
  std::vector<std::vector<int32_t>> readers;
  std::vector<char> returned;
};
}  // namespace fusion_detail

// The generated kernel's entry: rows x inner elements (rows of `inner` consecutive elements; the
// last row may be short when there are no kInner operands), operands in group order. `parallel`
// runs body(ctx, begin_row, end_row) over [0, rows) on ember's threads.
using ParallelFn = void (*)(int64_t rows, int64_t grain, void* ctx, void (*body)(void*, int64_t, int64_t));
using FusedKernelFn = void (*)(int64_t numel, int64_t inner, const void* const* in, void* const* out,
                               ParallelFn parallel);
// The backward of a group (groups that need a gradient): from the forward operands `in` and the
// gradients of the group's outputs `grad_out` (one full-size float buffer each), the gradient of
// every operand that required grad at capture, into its grad_in slot (the other slots are not
// read): a full-size float buffer (the caller sums a broadcast operand's back to its shape) or, for
// a kInner operand (a bias, a norm's weight), min(rows, kGradientChunks) rows of `inner` floats:
// each chunk of consecutive rows sums its share there, and the caller sums the chunks. That
// spares a full-size buffer written, zeroed and summed per such operand, and the sum's order is
// fixed by the sizes alone (the same bits at any thread count). The group's intermediates are recomputed from the
// operands, not saved: they cost a few flops per element, saving them a pass over memory each.
constexpr int64_t kGradientChunks = 64;
using FusedBackwardFn = void (*)(int64_t numel, int64_t inner, const void* const* in, const void* const* grad_out,
                                 void* const* grad_in, ParallelFn parallel);

// Builds (or finds in the disk cache) the kernel of `source`; throws with the compiler's output
// if it does not build.
struct BuiltKernel {
  FusedKernelFn fn = nullptr;
  FusedBackwardFn backward = nullptr;  // when the source defines one
  bool from_cache = false;
  double seconds = 0;
};
BuiltKernel build_cpu_kernel(const std::string& source);

}  // namespace ember::compiler
