#pragma once
// The one place ember calls a GEMM library: C = alpha * op(A) @ op(B) + beta * C, row-major,
// op = transpose when ta / tb. float32 goes to oneDNN's sgemm where the build found oneDNN
// (EMBER_HAVE_DNNL): on this AVX-512 machine it is 10-40% faster than OpenBLAS at every shape
// ember's workloads use (docs/PERFORMANCE.md); float64, and float32 without oneDNN, go to
// OpenBLAS. Threads: a product is cut into blocks of C on ember's pool (core/thread_pool.h),
// each a single-threaded library call (gemm.cpp says why never the library's threads). Called
// inside a parallel region it runs single-threaded. With beta == 0, C's old contents (NaN
// included) are ignored.
#include <complex>
#include <cstdint>
#include <functional>

namespace ember::cpu {

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc);
// complex64/complex128: OpenBLAS's cgemm/zgemm (op = plain transpose, no conjugation).
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, std::complex<float> alpha, const std::complex<float>* A,
          int64_t lda, const std::complex<float>* B, int64_t ldb, std::complex<float> beta, std::complex<float>* C,
          int64_t ldc);
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, std::complex<double> alpha, const std::complex<double>* A,
          int64_t lda, const std::complex<double>* B, int64_t ldb, std::complex<double> beta, std::complex<double>* C,
          int64_t ldc);

// C = op(A) @ op(B) split as gemm() splits it, each block of C handed to then(r0, r1, c0, c1)
// (rows r0..r1, columns c0..c1) right after its product, on the thread that computed it, while
// it is still warm in cache: a matmul's epilogue (activation, residual) without another op
// (ember.compile's _addmm_epilogue). With `before`, each block's C is written first and the
// product accumulates onto it (beta 1: a bias, as addmm adds it); without, beta is 0. The
// library calls are gemm()'s own, so the product has gemm()'s bits.
using GemmBlockFn = std::function<void(int64_t r0, int64_t r1, int64_t c0, int64_t c1)>;
void gemm_then(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
               int64_t ldb, float* C, int64_t ldc, const GemmBlockFn& before, const GemmBlockFn& then);
void gemm_then(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B,
               int64_t ldb, double* C, int64_t ldc, const GemmBlockFn& before, const GemmBlockFn& then);

}  // namespace ember::cpu
