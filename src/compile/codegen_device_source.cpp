// The CUDA C++ of a device group's fused kernels (fusion.h: generate_device_source): the same
// node formulas as the CPU kernels (ops/elementwise_formulas.h, here with StdMath, the policy
// ember's eager CUDA kernels use) in a grid-stride loop, 32-bit indices when the group fits. The
// backward recomputes the forward values and accumulates each node's input gradients in
// reverse, as the CPU's does. Plain text: built at run time by the device's builder
// (device_codegen.h; NVRTC for CUDA), and readable in explain()'s graph_code_source log.
#include <sstream>
#include <unordered_map>

#include "compile/fusion.h"

namespace ember::compiler {
namespace {
using namespace fusion_detail;

// A number operand lives on the host (passed by value in p.s[k]) or on the device (read there).
bool number_on_host(const Graph& g, const FusedOperand& o) { return g.values[size_t(o.value)].device.is_cpu(); }

const char* number_type(DType dt) {
  return dt == kFloat64 ? "double" : dt == kInt64 ? "long long" : dt == kInt32 ? "int" : dt == kBool ? "bool" : "float";
}

bool has_inner_operand(const FusedGroup& grp) {
  for (const auto& o : grp.inputs)
    if (o.kind == FusedOperand::kInner) return true;
  return false;
}

// The operand pointers and numbers, before the loop.
void emit_operands(std::ostringstream& os, const Graph& g, const FusedGroup& grp) {
  for (size_t k = 0; k < grp.inputs.size(); ++k) {
    const auto& o = grp.inputs[k];
    if (o.kind != FusedOperand::kScalar) {
      const char* type = is_16bit_float(o.dtype) ? "unsigned short" : o.dtype == kBool ? "bool" : "float";
      os << "  const " << type << "* __restrict__ in" << k << " = static_cast<const " << type << "*>(p.in[" << k
         << "]);\n";
    }
    else if (number_on_host(g, o))
      os << "  const float in" << k << " = p.s[" << k << "];\n";
    else
      os << "  const float in" << k << " = float(*static_cast<const " << number_type(o.dtype) << "*>(p.in[" << k
         << "]));\n";
  }
}

// The CUDA loop body's lines and elements (element i, j along the kInner operands).
const LoopBody kDeviceBody{"    ", "[i]", "[j]"};

// The loop over elements [0, numel): I is the index type, j the position along the kInner
// operands (a bias over the last dims).
void emit_loop_head(std::ostringstream& os, const FusedGroup& grp) {
  os << "  const I n = I(p.numel);\n"
        "  const I step = I(blockDim.x) * I(gridDim.x);\n"
        "  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < n; i += step) {\n";
  if (has_inner_operand(grp)) os << "    const I j = i % I(p.inner);\n";
}

// The entry: 32-bit indices when every index fits (i + step < 2^32 then), 64-bit otherwise.
void emit_entry(std::ostringstream& os, const char* name, const char* body) {
  os << "extern \"C\" __global__ void __launch_bounds__(256) " << name << "(const " << body
     << "Params p) {\n"
        "  if (p.numel <= 0x7fffffffLL) " << body << "<unsigned>(p);\n"
        "  else " << body << "<long long>(p);\n}\n\n";
}

}  // namespace

std::string fusion_detail::generate_device_source(const Graph& g, const FusedGroup& grp) {
  const size_t n_in = grp.inputs.size(), n_out = grp.outputs.size();
  // (arrays of at least one element: C++ has no empty ones)
  const std::string in_len = std::to_string(n_in ? n_in : 1), out_len = std::to_string(n_out ? n_out : 1);
  std::ostringstream os;
  os << "// ember.compile fused kernel (CUDA):";
  for (int32_t i : grp.nodes) os << " " << g.nodes[size_t(i)].op;
  os << "\n#include \"ops/elementwise_formulas.h\"\n\n"
        "namespace f = ember::formula;\nusing M = f::StdMath;\n\n"
        // the layout DeviceKernelShape describes: the host fills the same fields in this order
        "struct forwardParams { long long numel, inner; const void* in[" << in_len << "]; void* out[" << out_len
     << "]; float s[" << in_len << "]; };\n"
        "struct backwardParams { long long numel, inner; const void* in[" << in_len << "]; const void* gout["
     << out_len << "]; void* gin[" << in_len << "]; float s[" << in_len << "]; };\n\n"
        // bfloat16 in float: widened exactly, rounded to nearest even (NaN -> 0x7fc0) where made
        "__device__ __forceinline__ float ember_bf16_load(unsigned short b) { return __uint_as_float(unsigned(b) << 16); }\n"
        "__device__ __forceinline__ unsigned short ember_bf16_store(float x) {\n"
        "  const unsigned u = __float_as_uint(x);\n"
        "  return (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
        "}\n"
        "__device__ __forceinline__ float ember_bf16_round(float x) { return ember_bf16_load(ember_bf16_store(x)); }\n"
        // float16 in float: ember::Half's conversions (include/ember/core/half.h), nearest even
        "__device__ __forceinline__ float ember_f16_load(unsigned short h) {\n"
        "  const unsigned sign = unsigned(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
        "  if (e == 0) return __uint_as_float(__float_as_uint(float(m) * (1.0f / 16777216.0f)) | sign);\n"
        "  if (e == 31) return __uint_as_float(sign | 0x7f800000u | (m << 13));\n"
        "  return __uint_as_float(sign | ((e + 112) << 23) | (m << 13));\n"
        "}\n"
        "__device__ __forceinline__ unsigned short ember_f16_store(float x) {\n"
        "  unsigned a = __float_as_uint(x);\n"
        "  const unsigned sign = (a >> 16) & 0x8000u;\n"
        "  a &= 0x7fffffffu;\n"
        "  if (a >= 0x7f800000u) return (unsigned short)(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));\n"
        "  if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);\n"
        "  if (a < 0x38800000u) return (unsigned short)(sign | (__float_as_uint(__uint_as_float(a) + 0.5f) - 0x3f000000u));\n"
        "  return (unsigned short)(sign | ((a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13));\n"
        "}\n"
        "__device__ __forceinline__ float ember_f16_round(float x) { return ember_f16_load(ember_f16_store(x)); }\n\n";

  os << "template <class I> __device__ __forceinline__ void forward(const forwardParams& p) {\n";
  emit_operands(os, g, grp);
  auto out_dtype = [&](size_t k) { return g.values[size_t(grp.outputs[k])].dtype; };
  for (size_t k = 0; k < n_out; ++k) {
    const char* type = is_16bit_float(out_dtype(k)) ? "unsigned short" : "float";
    os << "  " << type << "* __restrict__ out" << k << " = static_cast<" << type << "*>(p.out[" << k << "]);\n";
  }
  emit_loop_head(os, grp);
  std::unordered_map<ValueId, std::string> name;
  emit_values(os, g, grp, kDeviceBody, name);
  for (size_t k = 0; k < n_out; ++k) {
    os << "    out" << k << "[i] = " << store_expression(out_dtype(k), name.at(grp.outputs[k])) << ";\n";
  }
  os << "  }\n}\n\n";
  emit_entry(os, "ember_fused", "forward");

  if (!grp.needs_grad) return os.str();
  auto wants_grad = [&](size_t k) { return g.values[size_t(grp.inputs[k].value)].requires_grad; };
  os << "template <class I> __device__ __forceinline__ void backward(const backwardParams& p) {\n";
  emit_operands(os, g, grp);
  for (size_t k = 0; k < n_out; ++k)
    os << "  const float* __restrict__ gout" << k << " = static_cast<const float*>(p.gout[" << k << "]);\n";
  for (size_t k = 0; k < n_in; ++k)
    if (wants_grad(k)) os << "  float* __restrict__ gin" << k << " = static_cast<float*>(p.gin[" << k << "]);\n";
  emit_loop_head(os, grp);
  name.clear();
  emit_values(os, g, grp, kDeviceBody, name);
  emit_gradients(os, g, grp, kDeviceBody, name);
  os << "  }\n}\n\n";
  emit_entry(os, "ember_fused_backward", "backward");
  return os.str();
}

}  // namespace ember::compiler
