#pragma once
// Host-side helpers of the CUDA indexing, sorting and shape ops (index_ops.cpp, sort_ops.cpp,
// shape_ops.cpp): device checks, scratch memory from the caching allocator, and the
// IndexGeometry of an iteration (merged dims, byte strides) that their kernels walk.
#include <array>
#include <vector>

#include "cuda/cuda_state.h"
#include "cuda/index_launchers.h"
#include "ember/ops.h"

namespace ember::cuda {

// A 0-dim tensor walks as one element of a 1-dim shape (the CPU kernels' convention).
inline Shape sizes1(const Tensor& t) { return t.dim() ? t.sizes() : Shape{1}; }
inline Shape strides1(const Tensor& t) { return t.dim() ? t.strides() : Shape{1}; }

// Every tensor on `device`; torch's message naming the first one that is not.
inline void check_device(const char* op, Device device, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    if (!t->defined() || t->device() == device) continue;
    throw Error(detail::cat("Expected all tensors to be on the same device, but found at least two devices, ",
                            device.str(), " and ", t->device().str(), "! (when checking arguments for ", op, ")"));
  }
}

// Scratch memory as uint8 tensors on one GPU, kept until this object goes away.
class TensorScratch final : public Scratch {
 public:
  explicit TensorScratch(Device device) : device_(device) {}
  void* allocate(size_t bytes) override {
    keep_.push_back(empty({int64_t(bytes ? bytes : 1)}, {.dtype = kUInt8, .device = device_}));
    return keep_.back().data_ptr();
  }

 private:
  Device device_;
  std::vector<Tensor> keep_;
};

// One operand of an iteration: its data, element strides over the iteration shape, element size.
struct Walk {
  char* data = nullptr;
  Shape strides;  // elements, one per dim of the iteration shape (outer first)
  int64_t element_size = 1;
};

// The IndexGeometry of `sizes` (outer first) for up to three operands: size-1 dims dropped,
// then neighbouring dims merged where every operand steps through them as through one. Both
// keep the row-major order of positions, so a kernel may still derive coordinates of the
// original shape from a position.
inline IndexGeometry make_geometry(const char* op, IntArrayRef sizes, std::initializer_list<const Walk*> operands) {
  const int nops = int(operands.size());
  std::vector<const Walk*> ops(operands);
  // Innermost first, in bytes.
  struct Dim {
    int64_t size;
    std::array<int64_t, 3> stride;
  };
  std::vector<Dim> dims;
  const int64_t nd = int64_t(sizes.size());
  for (int64_t d = nd - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    Dim x{sizes[d], {0, 0, 0}};
    for (int k = 0; k < nops; ++k) x.stride[k] = ops[k]->strides[d] * ops[k]->element_size;
    bool merged = false;
    if (!dims.empty()) {
      Dim& in = dims.back();
      bool ok = true;
      for (int k = 0; k < nops; ++k) ok = ok && x.stride[k] == in.stride[k] * in.size;
      if (ok) {
        in.size *= x.size;
        merged = true;
      }
    }
    if (!merged) dims.push_back(x);
  }
  EMBER_CHECK(int64_t(dims.size()) <= kMaxDims, op, ": the CUDA kernel supports at most ", kMaxDims,
              " dims that cannot be merged, got ", dims.size());
  IndexGeometry g;
  g.ndim = int(dims.size());
  for (int d = 0; d < g.ndim; ++d) {
    g.sizes[d] = dims[d].size;
    for (int k = 0; k < 3; ++k) g.strides[d][k] = dims[d].stride[k];
  }
  return g;
}

}  // namespace ember::cuda
