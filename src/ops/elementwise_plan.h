#pragma once
// ElementwisePlan: what every backend's elementwise engine needs to know before it runs a loop,
// worked out once and device-neutrally. It broadcasts operands to one shape, picks the dtype the
// op computes in (PyTorch's promotion, wrapped numbers included), allocates or checks the
// outputs (on the inputs' device), optionally casts inputs to the compute dtype, and reduces the
// geometry to as few dimensions as possible: size-1 dims dropped, neighbours that every operand
// walks as one run merged, byte strides per operand, inner dimension first.
//
// The CPU's TensorIter (cpu/tensor_iter.h) runs its loops over this plan; the CUDA engine
// (cuda/elementwise.cuh) hands the same numbers to a kernel. Backends that convert dtypes inside
// their loops (cast_in_loop) get the operands as they are, with their own dtypes.
#include <optional>
#include <vector>

#include "ember/tensor.h"

namespace ember {

inline constexpr int kMaxIterOperands = 8;
inline constexpr int kMaxIterDims = 16;

struct IterConfig {
  const char* op_name = "op";
  std::optional<DType> compute_dtype{};  // force the dtype inputs are cast to
  std::optional<DType> output_dtype{};   // the result's dtype (e.g. bool for comparisons)
  bool int_to_float = false;            // integral/bool inputs compute in the default float
  bool cast_inputs = true;              // false: inputs keep their dtypes (copy, where's cond)
  bool upcast_reduced_float = true;     // float16/bfloat16 compute in float32
  // The backend's loop converts every operand from its own dtype to the compute dtype and the
  // result to each output's dtype (CUDA): no input is cast beforehand and no output is staged
  // in a temporary. Host 0-dim inputs stay on the host (the backend passes them by value).
  bool cast_in_loop = false;
  // float16/bfloat16 operands of an op computing in float32 are neither cast beforehand nor
  // staged: the loop converts blocks of them (the CPU's cpu_kernel does; TensorIter sets this).
  bool reduced_in_loop = false;
  // Shapes, dtypes and outputs only (the meta device's kernels): the plan stops before the
  // geometry, the one step that reads operands' data (casts of meta operands are meta too).
  bool shapes_only = false;
};

class ElementwisePlan {
 public:
  // outputs may hold undefined Tensors (allocated here) or tensors to write (in-place / out=).
  ElementwisePlan(std::vector<Tensor> outputs, std::vector<Tensor> inputs, const IterConfig& cfg);

  DType compute_dtype() const { return compute_dtype_; }
  DType dtype(int operand) const { return ops_[operand].dtype; }
  int ntensors() const { return ntensors_; }
  int noutputs() const { return noutputs_; }
  int64_t numel() const { return numel_; }
  const Shape& shape() const { return shape_; }  // the broadcast shape
  // True when every operand is one dense run in the same order (the fast path).
  bool is_contiguous() const { return contiguous_; }

  // The result. For in-place ops this is the tensor passed in.
  const Tensor& output(int i = 0) const { return ops_[i].original; }
  // What the loop reads or writes for operand i (outputs first): a cast temporary or the tensor.
  const Tensor& operand(int i) const { return ops_[i].tensor; }
  char* data(int i) const { return ops_[i].data; }
  // The merged geometry: ndim() dims, inner first; byte strides per operand (0 = broadcast).
  int ndim() const { return ndim_; }
  int64_t size(int d) const { return iter_shape_[d]; }
  int64_t stride(int operand, int d) const { return ops_[operand].strides[d]; }

  // Writes results computed in a temporary dtype back into the real outputs (after the loop).
  void finish();

 protected:
  struct Operand {
    Tensor tensor;    // what the loop reads/writes (cast temporary when needed)
    Tensor original;  // for outputs: what the user gets
    DType dtype;
    char* data = nullptr;
    int64_t strides[kMaxIterDims];  // bytes per step along each iteration dim (inner first)
  };

  Operand ops_[kMaxIterOperands];
  int ntensors_ = 0, noutputs_ = 0;
  Shape shape_;
  int64_t iter_shape_[kMaxIterDims];  // after merging dims, inner first
  int ndim_ = 0;
  int64_t numel_ = 0;
  DType compute_dtype_ = DType::Float32;
  bool contiguous_ = false;
};

}  // namespace ember
