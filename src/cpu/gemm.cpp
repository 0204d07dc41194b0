// GEMM dispatch to oneDNN (float32) or OpenBLAS: see gemm.h.
#include "cpu/gemm.h"

#include <cblas.h>

#include "core/parallel.h"
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

void gemm_call(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
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

// Threads. Below kSplitMinWork one thread does the whole product; above, it is cut into row (or
// column) blocks of C, one per thread of ember's pool, each a single-threaded library call, at
// every size. The libraries' own (OpenMP) threads are never used: their team spins after each
// call and fights ember's pool for the cores in the ops that follow. Alone, a library-threaded
// product is as fast or a little faster (2048^3: 79-81 against 81-88 ms), but in a model the
// pool wins: a GPT block's train step (8x128x256) 35-36 -> 30-31 ms and GPT-2's (6 layers x
// 384, batch 8 x 256) 1092-1141 -> 1001-1043 ms, when products from 512^3 on were threaded by
// the library. Each block packs its share of the operands itself; from a few rows per thread
// up that costs a few percent at most.
constexpr int64_t kSplitMinWork = 2 * 64 * 64 * 64;
constexpr int64_t kMinBlock = 32;  // rows or columns per block at least

// Runs one single-threaded call, or splits C into blocks on the pool. With `before`/`then`
// (gemm_then), each block is prepared before its call and finished right after it, on the same
// thread.
template <class T, class Call>
void gemm_threaded(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
                   int64_t ldb, T* C, int64_t ldc, const Call& call, const GemmBlockFn* before = nullptr,
                   const GemmBlockFn* then = nullptr) {
  const int64_t work = M * N * K;
  const int threads = ember::detail::max_parallel_threads();
  int64_t blocks = threads > 1 ? std::min<int64_t>(threads, work / kSplitMinWork) : 1;
  const bool by_rows = M >= N;
  blocks = std::min(blocks, (by_rows ? M : N) / kMinBlock);
  // One block still runs through the pool: that makes the library call single-threaded.
  blocks = std::max<int64_t>(blocks, 1);
  const int64_t len = by_rows ? M : N, per = (len + blocks - 1) / blocks;
  parallel_chunks(blocks, [&](int64_t i, int64_t) {
    const int64_t b = i * per, e = std::min(len, b + per);
    if (b >= e) return;
    const int64_t r0 = by_rows ? b : 0, r1 = by_rows ? e : M, c0 = by_rows ? 0 : b, c1 = by_rows ? N : e;
    if (before && *before) (*before)(r0, r1, c0, c1);
    if (by_rows)  // rows b..e of op(A) and C
      call(e - b, N, A + (ta ? b : b * lda), B, C + b * ldc);
    else  // columns b..e of op(B) and C
      call(M, e - b, A, B + (tb ? b * ldb : b), C + b);
    if (then && *then) (*then)(r0, r1, c0, c1);
  });
}
}  // namespace

void gemm_then(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
               int64_t ldb, float* C, int64_t ldc, const GemmBlockFn& before, const GemmBlockFn& then) {
  const float beta = before ? 1.0f : 0.0f;
  if (M <= 0 || N <= 0) return;
  gemm_threaded(ta, tb, M, N, K, A, lda, B, ldb, C, ldc,
                [&](int64_t m, int64_t n, const float* a, const float* b, float* c) {
                  gemm_call(ta, tb, m, n, K, 1.0f, a, lda, b, ldb, beta, c, ldc);
                }, &before, &then);
}

void gemm_then(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B,
               int64_t ldb, double* C, int64_t ldc, const GemmBlockFn& before, const GemmBlockFn& then) {
  const double beta = before ? 1.0 : 0.0;
  if (M <= 0 || N <= 0) return;
  gemm_threaded(ta, tb, M, N, K, A, lda, B, ldb, C, ldc,
                [&](int64_t m, int64_t n, const double* a, const double* b, double* c) {
                  cblas_dgemm(CblasRowMajor, tr(ta), tr(tb), blasint(m), blasint(n), blasint(K), 1.0, a,
                              blasint(lda), b, blasint(ldb), beta, c, blasint(ldc));
                }, &before, &then);
}

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  gemm_threaded(ta, tb, M, N, K, A, lda, B, ldb, C, ldc,
                [&](int64_t m, int64_t n, const float* a, const float* b, float* c) {
                  gemm_call(ta, tb, m, n, K, alpha, a, lda, b, ldb, beta, c, ldc);
                });
}

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  gemm_threaded(ta, tb, M, N, K, A, lda, B, ldb, C, ldc,
                [&](int64_t m, int64_t n, const double* a, const double* b, double* c) {
                  cblas_dgemm(CblasRowMajor, tr(ta), tr(tb), blasint(m), blasint(n), blasint(K), alpha, a,
                              blasint(lda), b, blasint(ldb), beta, c, blasint(ldc));
                });
}

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, std::complex<float> alpha, const std::complex<float>* A,
          int64_t lda, const std::complex<float>* B, int64_t ldb, std::complex<float> beta, std::complex<float>* C,
          int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  gemm_threaded(ta, tb, M, N, K, A, lda, B, ldb, C, ldc,
                [&](int64_t m, int64_t n, const std::complex<float>* a, const std::complex<float>* b,
                    std::complex<float>* c) {
                  cblas_cgemm(CblasRowMajor, tr(ta), tr(tb), blasint(m), blasint(n), blasint(K), &alpha, a,
                              blasint(lda), b, blasint(ldb), &beta, c, blasint(ldc));
                });
}

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, std::complex<double> alpha, const std::complex<double>* A,
          int64_t lda, const std::complex<double>* B, int64_t ldb, std::complex<double> beta, std::complex<double>* C,
          int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  gemm_threaded(ta, tb, M, N, K, A, lda, B, ldb, C, ldc,
                [&](int64_t m, int64_t n, const std::complex<double>* a, const std::complex<double>* b,
                    std::complex<double>* c) {
                  cblas_zgemm(CblasRowMajor, tr(ta), tr(tb), blasint(m), blasint(n), blasint(K), &alpha, a,
                              blasint(lda), b, blasint(ldb), &beta, c, blasint(ldc));
                });
}

}  // namespace ember::cpu
