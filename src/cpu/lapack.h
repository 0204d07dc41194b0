#pragma once
// LAPACK as the OpenBLAS build linked here ships it (Fortran symbols, 32-bit integers, matrices
// column-major). The prototypes are declared here rather than taken from LAPACKE, which is not
// installed; character arguments carry gfortran's hidden length parameters at the end (OpenBLAS's
// own C replacements of getrf/potrf ignore them). Overloads on float/double give the kernels one
// spelling per routine.
#include <omp.h>

#include <algorithm>
#include <complex>
#include <cstddef>
#include <vector>

#include "core/thread_pool.h"
#include "ember/tensor.h"

extern "C" {
void sgetrf_(const int* m, const int* n, float* a, const int* lda, int* ipiv, int* info);
void dgetrf_(const int* m, const int* n, double* a, const int* lda, int* ipiv, int* info);
void sgetri_(const int* n, float* a, const int* lda, const int* ipiv, float* work, const int* lwork, int* info);
void dgetri_(const int* n, double* a, const int* lda, const int* ipiv, double* work, const int* lwork, int* info);
void sgesv_(const int* n, const int* nrhs, float* a, const int* lda, int* ipiv, float* b, const int* ldb, int* info);
void dgesv_(const int* n, const int* nrhs, double* a, const int* lda, int* ipiv, double* b, const int* ldb, int* info);
void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info, size_t);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void sgeqrf_(const int* m, const int* n, float* a, const int* lda, float* tau, float* work, const int* lwork, int* info);
void dgeqrf_(const int* m, const int* n, double* a, const int* lda, double* tau, double* work, const int* lwork,
             int* info);
void sorgqr_(const int* m, const int* n, const int* k, float* a, const int* lda, const float* tau, float* work,
             const int* lwork, int* info);
void dorgqr_(const int* m, const int* n, const int* k, double* a, const int* lda, const double* tau, double* work,
             const int* lwork, int* info);
void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u,
             const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork, int* iwork, int* info, size_t);
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info,
             size_t);
void ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w, float* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t, size_t);
void sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr, float* wi,
            float* vl, const int* ldvl, float* vr, const int* ldvr, float* work, const int* lwork, int* info, size_t,
            size_t);
void dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda, double* wr, double* wi,
            double* vl, const int* ldvl, double* vr, const int* ldvr, double* work, const int* lwork, int* info,
            size_t, size_t);
void cgeev_(const char* jobvl, const char* jobvr, const int* n, std::complex<float>* a, const int* lda,
            std::complex<float>* w, std::complex<float>* vl, const int* ldvl, std::complex<float>* vr, const int* ldvr,
            std::complex<float>* work, const int* lwork, float* rwork, int* info, size_t, size_t);
void zgeev_(const char* jobvl, const char* jobvr, const int* n, std::complex<double>* a, const int* lda,
            std::complex<double>* w, std::complex<double>* vl, const int* ldvl, std::complex<double>* vr,
            const int* ldvr, std::complex<double>* work, const int* lwork, double* rwork, int* info, size_t, size_t);
void sgelsy_(const int* m, const int* n, const int* nrhs, float* a, const int* lda, float* b, const int* ldb,
             int* jpvt, const float* rcond, int* rank, float* work, const int* lwork, int* info);
void dgelsy_(const int* m, const int* n, const int* nrhs, double* a, const int* lda, double* b, const int* ldb,
             int* jpvt, const double* rcond, int* rank, double* work, const int* lwork, int* info);
}

namespace ember::cpu::lapack {

// Around every call. LAPACK's blocked algorithms run many short OpenMP regions (one per BLAS call
// they make), so:
// - ember's spinning pool workers are parked first (core/thread_pool.h): a worker spinning on one
//   of two cores made cholesky of 512 x 512 3.3x slower on two threads than on one;
// - below 512 rows and columns the call runs on one thread. There a region's fork and join cost
//   more than the split saves: on this project's 2-core VM, one thread against two took 0.22
//   against 0.90 ms (cholesky of 256), 1.73 against 3.57 (qr of 256); they are even at 512 and
//   two threads win from 1024 (cholesky 6.5 against 5.5 ms, inv 33.7 against 20.6).
class CallScope {
 public:
  static constexpr int64_t kThreadedFrom = 512;
  explicit CallScope(int64_t size) {
    ember::detail::park_idle_workers();
    if (size < kThreadedFrom && !omp_in_parallel() && omp_get_max_threads() > 1) {
      saved_threads_ = omp_get_max_threads();
      omp_set_num_threads(1);
    }
  }
  ~CallScope() {
    if (saved_threads_) omp_set_num_threads(saved_threads_);
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  int saved_threads_ = 0;
};

// size: the largest dimension the routine works on.
#define EMBER_LAPACK_PAIR(name, params, args, size)                                 \
  inline void name(params(float)) { CallScope scope(size); s##name##_ args; }       \
  inline void name(params(double)) { CallScope scope(size); d##name##_ args; }

#define P_GETRF(T) int m, int n, T* a, int lda, int* ipiv, int* info
EMBER_LAPACK_PAIR(getrf, P_GETRF, (&m, &n, a, &lda, ipiv, info), std::max(m, n))
#define P_GETRI(T) int n, T* a, int lda, const int* ipiv, T* work, int lwork, int* info
EMBER_LAPACK_PAIR(getri, P_GETRI, (&n, a, &lda, ipiv, work, &lwork, info), n)
#define P_GESV(T) int n, int nrhs, T* a, int lda, int* ipiv, T* b, int ldb, int* info
EMBER_LAPACK_PAIR(gesv, P_GESV, (&n, &nrhs, a, &lda, ipiv, b, &ldb, info), std::max(n, nrhs))
#define P_POTRF(T) char uplo, int n, T* a, int lda, int* info
EMBER_LAPACK_PAIR(potrf, P_POTRF, (&uplo, &n, a, &lda, info, 1), n)
#define P_GEQRF(T) int m, int n, T* a, int lda, T* tau, T* work, int lwork, int* info
EMBER_LAPACK_PAIR(geqrf, P_GEQRF, (&m, &n, a, &lda, tau, work, &lwork, info), std::max(m, n))
#define P_ORGQR(T) int m, int n, int k, T* a, int lda, const T* tau, T* work, int lwork, int* info
EMBER_LAPACK_PAIR(orgqr, P_ORGQR, (&m, &n, &k, a, &lda, tau, work, &lwork, info), std::max(m, n))
#define P_GESDD(T) \
  char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt, T* work, int lwork, int* iwork, int* info
EMBER_LAPACK_PAIR(gesdd, P_GESDD, (&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1), std::max(m, n))
#define P_SYEVD(T) \
  char jobz, char uplo, int n, T* a, int lda, T* w, T* work, int lwork, int* iwork, int liwork, int* info
EMBER_LAPACK_PAIR(syevd, P_SYEVD, (&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1), n)
#define P_GELSY(T) \
  int m, int n, int nrhs, T* a, int lda, T* b, int ldb, int* jpvt, T rcond, int* rank, T* work, int lwork, int* info
EMBER_LAPACK_PAIR(gelsy, P_GELSY, (&m, &n, &nrhs, a, &lda, b, &ldb, jpvt, &rcond, rank, work, &lwork, info), std::max(m, n))

// geev, right eigenvectors only (jobvr 'V' or 'N'); a real matrix gives (wr, wi), a complex one w
// (and needs rwork of 2n).
inline void geev(char jobvr, int n, float* a, float* wr, float* wi, float* vr, int ldvr, float* work, int lwork,
                 int* info) {
  CallScope scope(n);
  const char no = 'N';
  const int lda = std::max(1, n), one = 1;
  sgeev_(&no, &jobvr, &n, a, &lda, wr, wi, nullptr, &one, vr, &ldvr, work, &lwork, info, 1, 1);
}
inline void geev(char jobvr, int n, double* a, double* wr, double* wi, double* vr, int ldvr, double* work, int lwork,
                 int* info) {
  CallScope scope(n);
  const char no = 'N';
  const int lda = std::max(1, n), one = 1;
  dgeev_(&no, &jobvr, &n, a, &lda, wr, wi, nullptr, &one, vr, &ldvr, work, &lwork, info, 1, 1);
}
inline void geev(char jobvr, int n, std::complex<float>* a, std::complex<float>* w, std::complex<float>* vr, int ldvr,
                 std::complex<float>* work, int lwork, float* rwork, int* info) {
  CallScope scope(n);
  const char no = 'N';
  const int lda = std::max(1, n), one = 1;
  cgeev_(&no, &jobvr, &n, a, &lda, w, nullptr, &one, vr, &ldvr, work, &lwork, rwork, info, 1, 1);
}
inline void geev(char jobvr, int n, std::complex<double>* a, std::complex<double>* w, std::complex<double>* vr,
                 int ldvr, std::complex<double>* work, int lwork, double* rwork, int* info) {
  CallScope scope(n);
  const char no = 'N';
  const int lda = std::max(1, n), one = 1;
  zgeev_(&no, &jobvr, &n, a, &lda, w, nullptr, &one, vr, &ldvr, work, &lwork, rwork, info, 1, 1);
}

#undef EMBER_LAPACK_PAIR
#undef P_GETRF
#undef P_GETRI
#undef P_GESV
#undef P_POTRF
#undef P_GEQRF
#undef P_ORGQR
#undef P_GESDD
#undef P_SYEVD
#undef P_GELSY

// A batch of matrices in LAPACK's layout. `buf` is a fresh contiguous tensor of shape
// (..., cols, rows): row-major A^T, i.e. A column-major with leading dimension rows, which the
// routines may overwrite. matrix(i) points at the i-th matrix of the flattened batch.
struct ColumnMajor {
  Tensor buf;
  int64_t batch = 0, rows = 0, cols = 0;
  template <class T> T* matrix(int64_t i) const { return buf.data_ptr<T>() + i * rows * cols; }
};

// A copy of a (..., rows, cols) tensor in column-major order (never an alias of a).
ColumnMajor column_major(const Tensor& a);
// An empty (uninitialised) column-major batch of rows x cols matrices with the given batch shape.
ColumnMajor column_major_empty(IntArrayRef batch_shape, int64_t rows, int64_t cols, DType dtype);
// The (..., rows, cols) tensor a column-major buffer holds, contiguous in row-major order.
Tensor row_major(const ColumnMajor& m);

// The batch dims of a (..., m, n) tensor.
Shape batch_shape(const Tensor& a);

// Runs f(i) for every matrix of a batch, split over threads when there are several matrices
// (OpenBLAS runs single-threaded inside the parallel region) and one alone otherwise (LAPACK may
// thread its BLAS calls).
template <class F> void for_each_matrix(int64_t batch, F&& f) {
  if (batch <= 1) {
    for (int64_t i = 0; i < batch; ++i) f(i);
    return;
  }
#pragma omp parallel for schedule(dynamic)
  for (int64_t i = 0; i < batch; ++i) f(i);
}

// The workspace size a LAPACK query (lwork = -1) returned in work[0].
template <class T> int workspace_size(T query) { return std::max(1, int(query)); }
template <class T> int workspace_size(std::complex<T> query) { return std::max(1, int(query.real())); }

}  // namespace ember::cpu::lapack
