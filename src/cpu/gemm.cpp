// GEMM dispatch to oneDNN (float32) or OpenBLAS: see gemm.h.
#include "cpu/gemm.h"

#include <cblas.h>

#include "ember/core/errors.h"
#if EMBER_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

namespace ember::cpu {
namespace {
CBLAS_TRANSPOSE tr(bool t) { return t ? CblasTrans : CblasNoTrans; }
// At and below 64^3 multiply-adds OpenBLAS's small-matrix path wins (16^3: 0.13 vs 0.32 us,
// 64^3: 3.6 vs 5.0 us); from 80^3 up oneDNN does (6.0 vs 6.9 us; 128^3: 18 vs 47 us).
[[maybe_unused]] constexpr int64_t kDnnlMinWork = 64 * 64 * 64;
}  // namespace

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
#if EMBER_HAVE_DNNL
  if (M * N * K > kDnnlMinWork) {
    dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    EMBER_CHECK(st == dnnl_success, "matmul: oneDNN sgemm failed with status ", int(st), " for M=", M, ", N=", N,
                ", K=", K);
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, tr(ta), tr(tb), blasint(M), blasint(N), blasint(K), alpha, A, blasint(lda), B,
              blasint(ldb), beta, C, blasint(ldc));
}

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, tr(ta), tr(tb), blasint(M), blasint(N), blasint(K), alpha, A, blasint(lda), B,
              blasint(ldb), beta, C, blasint(ldc));
}

}  // namespace ember::cpu
