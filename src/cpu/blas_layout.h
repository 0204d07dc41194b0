#pragma once
// How a strided matrix is handed to BLAS (src/cpu/blas_kernels.cpp, addmm_epilogue_kernels.cpp):
// row-major or column-major with a leading dimension as it is, anything else copied first; and
// addmm's blocked form that the fused epilogues build on.
#include <cstdint>

#include "cpu/gemm.h"
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

// out (M, N), contiguous float32/float64 = self (broadcast to (M, N); undefined: nothing) + m1 @ m2
// with K > 0, in gemm()'s blocks: each block first copies its part of self, the product
// accumulates onto it, and then(r0, r1, c0, c1) finishes the block on the same thread while it
// is warm (cpu::gemm_then). Same library calls as copy_ + gemm, so the same bits.
void addmm_then(Tensor& out, const Tensor& self, const Tensor& m1, const Tensor& m2, const GemmBlockFn& then);

}  // namespace ember::cpu
