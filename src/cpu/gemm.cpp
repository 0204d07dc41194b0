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

// Threads. Below kSplitMinWork one thread does the whole product. Up to kLibraryThreadsWork the
// product is cut into row (or column) blocks of C run on ember's pool, each a single-threaded
// library call: the pool never waits for a thread that has not started, where the libraries'
// OpenMP teams wait at a barrier for every thread, a scheduler timeslice each time another
// process holds a core. Above it the libraries thread the call themselves: their 2-D blocking
// and shared packing win there, and a timeslice is small beside the product.
constexpr int64_t kSplitMinWork = 2 * 64 * 64 * 64;
constexpr int64_t kLibraryThreadsWork = int64_t(512) * 512 * 512;
constexpr int64_t kMinBlock = 32;  // rows or columns per block at least

// Runs one (single- or library-threaded) call, or splits C into blocks on the pool.
template <class T, class Call>
void gemm_threaded(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
                   int64_t ldb, T* C, int64_t ldc, const Call& call) {
  const int64_t work = M * N * K;
  const int threads = ember::detail::max_parallel_threads();
  if (work >= kLibraryThreadsWork && threads > 1) {
    call(M, N, A, B, C);
    return;
  }
  int64_t blocks = threads > 1 ? std::min<int64_t>(threads, work / kSplitMinWork) : 1;
  const bool by_rows = M >= N;
  blocks = std::min(blocks, (by_rows ? M : N) / kMinBlock);
  // One block still runs through the pool: that makes the library call single-threaded.
  blocks = std::max<int64_t>(blocks, 1);
  const int64_t len = by_rows ? M : N, per = (len + blocks - 1) / blocks;
  parallel_chunks(blocks, [&](int64_t i, int64_t) {
    const int64_t b = i * per, e = std::min(len, b + per);
    if (b >= e) return;
    if (by_rows)  // rows b..e of op(A) and C
      call(e - b, N, A + (ta ? b : b * lda), B, C + b * ldc);
    else  // columns b..e of op(B) and C
      call(M, e - b, A, B + (tb ? b * ldb : b), C + b);
  });
}
}  // namespace

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
