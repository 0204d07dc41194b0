#pragma once
// How a strided matrix is handed to BLAS (src/cpu/blas_kernels.cpp, addmm_epilogue_kernels.cpp):
// row-major or column-major with a leading dimension as it is, anything else copied first.
#include <cstdint>

#include "ember/tensor.h"

namespace ember::cpu {

// A (batch of) matrix operand: element strides of batch, row and column.
struct Mat {
  Tensor hold;  // the tensor the pointer points into (a contiguous copy when one was needed)
  const char* data = nullptr;
  int64_t bs = 0, rs = 0, cs = 0;
};
Mat mat_of(const Tensor& t);

// How BLAS can read a rows x cols matrix with element strides (rs, cs): row-major
// (NoTrans, ld = rs) or column-major (Trans, ld = cs). Strides of size-1 dims do not matter.
struct BlasLayout {
  bool ok = false;
  bool trans = false;
  int64_t ld = 0;
};
BlasLayout blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs);

// Returns t as BLAS can read it (layout set), copying to contiguous when its strides don't allow.
Mat blas_ready(const Tensor& t, int64_t rows, int64_t cols, BlasLayout& layout);

}  // namespace ember::cpu
