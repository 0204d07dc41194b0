// CPU kernels of the decompositions in op_list.h's "linalg (LAPACK)" section: QR (geqrf +
// orgqr), SVD (gesdd, divide and conquer, as torch's CPU default), symmetric eigendecomposition
// (syevd) and least squares (gelsy, torch's CPU default driver). Workspace sizes are queried
// once per call (they depend only on the shape) and each matrix gets its own buffers, so the
// batch can be split over threads.
#include <algorithm>
#include <atomic>

#include "core/dtype_dispatch.h"
#include "cpu/lapack.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

using namespace lapack;

Shape with(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail);
  return s;
}

// An identity (full) or empty matrix batch: the factors of an empty matrix.
Tensor eye_batch(IntArrayRef batch, int64_t n, DType dt) {
  return eye(n, std::nullopt, {.dtype = dt, .device = Device(DeviceType::CPU)})
      .expand(with(Shape(batch.begin(), batch.end()), {n, n}))
      .contiguous();
}

std::tuple<Tensor, Tensor> qr_cpu(const Tensor& a, int64_t mode) {
  ColumnMajor m = column_major(a);
  const Shape batch = batch_shape(a);
  const int M = int(m.rows), N = int(m.cols), K = std::min(M, N);
  const int qcols = mode == 1 ? M : K;  // complete: M x M, reduced: M x K
  ColumnMajor q;
  if (mode != 2) q = column_major_empty(batch, M, qcols, a.dtype());
  if (M > 0 && N > 0) {
    visit_dtype<kFloatTypes>(a.dtype(), "linalg_qr", [&]<class T>() {
      const int lda = std::max(1, M);
      T query = 0, query2 = 0;
      int info = 0;
      geqrf(M, N, nullptr, lda, nullptr, &query, -1, &info);
      if (mode != 2) orgqr(M, qcols, K, nullptr, lda, nullptr, &query2, -1, &info);
      const int lwork = std::max(workspace_size(query), workspace_size(query2));
      for_each_matrix(m.batch, [&](int64_t i) {
        std::vector<T> tau(std::max(1, K)), work(lwork);
        int inf = 0;
        T* r = m.matrix<T>(i);
        geqrf(M, N, r, lda, tau.data(), work.data(), lwork, &inf);
        if (mode == 2) return;
        // Q starts from the reflectors (the first columns of geqrf's output); orgqr sets the
        // columns beyond the K-th to those of the identity before applying them.
        T* qm = q.matrix<T>(i);
        std::copy(r, r + int64_t(M) * std::min(N, qcols), qm);
        orgqr(M, qcols, K, qm, lda, tau.data(), work.data(), lwork, &inf);
      });
    });
  } else if (mode != 2) {
    q.buf = mode == 1 ? eye_batch(batch, M, a.dtype()) : q.buf;  // reduced: M x 0 (or 0 x 0)
  }
  Tensor r = row_major(m);
  r = (mode == 1 ? r : r.narrow(-2, 0, K)).triu().contiguous();
  Tensor qt = mode == 2 ? empty({0}, a.options()) : row_major(q);
  return {qt, r};
}

std::tuple<Tensor, Tensor, Tensor> svd_cpu(const Tensor& a, bool full, bool compute_uv) {
  ColumnMajor m = column_major(a);
  const Shape batch = batch_shape(a);
  const int M = int(m.rows), N = int(m.cols), K = std::min(M, N);
  const int ucols = full ? M : K, vrows = full ? N : K;
  Tensor s = empty(with(batch, {K}), a.options());
  ColumnMajor u, vt;
  if (compute_uv) {
    u = column_major_empty(batch, M, ucols, a.dtype());
    vt = column_major_empty(batch, vrows, N, a.dtype());
  }
  std::atomic<int> failed{0};
  if (K > 0) {
    visit_dtype<kFloatTypes>(a.dtype(), "linalg_svd", [&]<class T>() {
      const char jobz = compute_uv ? (full ? 'A' : 'S') : 'N';
      const int lda = std::max(1, M), ldu = std::max(1, M), ldvt = std::max(1, vrows);
      T query = 0;
      int info = 0;
      std::vector<int> iwork_q(8 * K);
      gesdd(jobz, M, N, nullptr, lda, nullptr, nullptr, ldu, nullptr, ldvt, &query, -1, iwork_q.data(), &info);
      const int lwork = workspace_size(query);
      T* sp = s.data_ptr<T>();
      for_each_matrix(m.batch, [&](int64_t i) {
        std::vector<T> work(lwork);
        std::vector<int> iwork(8 * K);
        T dummy = 0;
        int inf = 0;
        gesdd(jobz, M, N, m.matrix<T>(i), lda, sp + i * K, compute_uv ? u.matrix<T>(i) : &dummy, ldu,
              compute_uv ? vt.matrix<T>(i) : &dummy, ldvt, work.data(), lwork, iwork.data(), &inf);
        if (inf > 0) failed = inf;
      });
    });
  } else if (compute_uv) {
    if (full) {
      u.buf = eye_batch(batch, M, a.dtype());
      vt.buf = eye_batch(batch, N, a.dtype());
    }
  }
  EMBER_CHECK(failed == 0, "linalg.svd: The algorithm failed to converge because the input matrix is ill-conditioned "
              "or has too many repeated singular values (error code: ", int(failed), ").");
  if (!compute_uv) return {empty({0}, a.options()), s, empty({0}, a.options())};
  return {row_major(u), s, row_major(vt)};
}

std::tuple<Tensor, Tensor> eigh_cpu(const Tensor& a, bool upper, bool compute_v) {
  ColumnMajor m = column_major(a);
  const Shape batch = batch_shape(a);
  const int n = int(m.rows);
  Tensor w = empty(with(batch, {n}), a.options());
  std::atomic<int> failed{0};
  if (n > 0) {
    visit_dtype<kFloatTypes>(a.dtype(), "linalg_eigh", [&]<class T>() {
      const char jobz = compute_v ? 'V' : 'N', uplo = upper ? 'U' : 'L';
      T query = 0;
      int iquery = 0, info = 0;
      syevd(jobz, uplo, n, nullptr, n, nullptr, &query, -1, &iquery, -1, &info);
      const int lwork = workspace_size(query), liwork = std::max(1, iquery);
      T* wp = w.data_ptr<T>();
      for_each_matrix(m.batch, [&](int64_t i) {
        std::vector<T> work(lwork);
        std::vector<int> iwork(liwork);
        int inf = 0;
        syevd(jobz, uplo, n, m.matrix<T>(i), n, wp + i * n, work.data(), lwork, iwork.data(), liwork, &inf);
        if (inf > 0) failed = inf;
      });
    });
  }
  EMBER_CHECK(failed == 0, "linalg.eigh: The algorithm failed to converge because the input matrix is ill-conditioned "
              "or has too many repeated eigenvalues (error code: ", int(failed), ").");
  // The eigenvectors are the columns of the column-major result: row_major gives V itself.
  return {w, compute_v ? row_major(m) : empty({0}, a.options())};
}

std::tuple<Tensor, Tensor> lstsq_gelsy_cpu(const Tensor& a, const Tensor& b, double rcond) {
  ColumnMajor ma = column_major(a);
  const Shape batch = batch_shape(a);
  const int M = int(ma.rows), N = int(ma.cols), K = int(b.size(-1));
  const int ldb = std::max({1, M, N});
  // B goes in the first M rows of an ldb-row buffer: gelsy writes the N-row solution there.
  ColumnMajor mb = column_major_empty(batch, ldb, K, a.dtype());
  mb.buf.zero_();
  mb.buf.narrow(-1, 0, M).copy_(b.mT());
  Tensor rank = zeros(batch, {.dtype = kInt64, .device = Device(DeviceType::CPU)});
  if (M > 0 && N > 0 && K > 0) {
    visit_dtype<kFloatTypes>(a.dtype(), "linalg_lstsq", [&]<class T>() {
      const int lda = std::max(1, M);
      T query = 0;
      int info = 0, rk = 0;
      gelsy(M, N, K, nullptr, lda, nullptr, ldb, nullptr, T(rcond), &rk, &query, -1, &info);
      const int lwork = workspace_size(query);
      int64_t* rp = rank.data_ptr<int64_t>();
      for_each_matrix(ma.batch, [&](int64_t i) {
        std::vector<T> work(lwork);
        std::vector<int> jpvt(N, 0);  // every column free to move
        int inf = 0, r = 0;
        gelsy(M, N, K, ma.matrix<T>(i), lda, mb.matrix<T>(i), ldb, jpvt.data(), T(rcond), &r, work.data(), lwork,
              &inf);
        rp[i] = r;
      });
    });
  }
  return {mb.buf.narrow(-1, 0, N).mT().contiguous(), rank};
}

// Eigendecomposition of a general matrix (geev): complex eigenvalues and right eigenvectors of
// unit 2-norm with their largest component real, as LAPACK returns them and torch passes on. A
// real matrix's complex pairs come back as (re, im) column pairs (wi > 0 on the first), unpacked
// here into conjugate complex columns.
std::tuple<Tensor, Tensor> eig_cpu(const Tensor& a, bool compute_v) {
  ColumnMajor m = column_major(a);
  const Shape batch = batch_shape(a);
  const int n = int(m.rows);
  const DType ct = is_complex(a.dtype()) ? a.dtype() : (a.dtype() == kFloat64 ? kComplex128 : kComplex64);
  const TensorOptions opts{.dtype = ct, .device = Device(DeviceType::CPU)};
  Tensor L = empty(with(batch, {n}), opts);
  Tensor V = compute_v ? empty(with(batch, {n, n}), opts) : empty({0}, opts);  // row-major
  std::atomic<int> failed{0};
  if (n > 0) {
    visit_dtype<kFloatAndComplex>(a.dtype(), "linalg_eig", [&]<class T>() {
      const char jobvr = compute_v ? 'V' : 'N';
      const int ldvr = compute_v ? n : 1;
      if constexpr (std::is_same_v<T, complex64> || std::is_same_v<T, complex128>) {
        using R = typename T::value_type;
        // The workspace query runs through trevc3, which reads its arrays even then: real buffers.
        std::vector<T> qa(size_t(n) * n), qw(n), qv(size_t(n) * n);
        std::vector<R> qr(2 * size_t(n));
        T query{};
        int info = 0;
        geev(jobvr, n, qa.data(), qw.data(), qv.data(), ldvr, &query, -1, qr.data(), &info);
        const int lwork = workspace_size(query);
        for_each_matrix(m.batch, [&](int64_t i) {
          std::vector<T> work(lwork), vr(compute_v ? size_t(n) * n : 1);
          std::vector<R> rwork(2 * size_t(n));
          int inf = 0;
          T* w = L.data_ptr<T>() + i * n;
          geev(jobvr, n, m.matrix<T>(i), w, vr.data(), ldvr, work.data(), lwork, rwork.data(), &inf);
          if (inf > 0) failed = inf;
          if (!compute_v) return;
          T* v = V.data_ptr<T>() + i * n * n;
          for (int r = 0; r < n; ++r)
            for (int c = 0; c < n; ++c) v[r * n + c] = vr[size_t(c) * n + r];
        });
      } else {
        using C = std::complex<T>;
        std::vector<T> qa(size_t(n) * n), qwr(n), qwi(n), qv(size_t(n) * n);
        T query = 0;
        int info = 0;
        geev(jobvr, n, qa.data(), qwr.data(), qwi.data(), qv.data(), ldvr, &query, -1, &info);
        const int lwork = workspace_size(query);
        for_each_matrix(m.batch, [&](int64_t i) {
          std::vector<T> work(lwork), wr(n), wi(n), vr(compute_v ? size_t(n) * n : 1);
          int inf = 0;
          geev(jobvr, n, m.matrix<T>(i), wr.data(), wi.data(), vr.data(), ldvr, work.data(), lwork, &inf);
          if (inf > 0) failed = inf;
          C* w = L.data_ptr<C>() + i * n;
          for (int j = 0; j < n; ++j) w[j] = C(wr[j], wi[j]);
          if (!compute_v) return;
          C* v = V.data_ptr<C>() + i * n * n;
          for (int j = 0; j < n; ++j) {
            const T* col = vr.data() + size_t(j) * n;
            if (wi[j] == 0) {
              for (int r = 0; r < n; ++r) v[r * n + j] = C(col[r], 0);
            } else if (wi[j] > 0 && j + 1 < n) {  // the pair (j, j + 1): re in column j, im in j + 1
              const T* im = col + n;
              for (int r = 0; r < n; ++r) {
                v[r * n + j] = C(col[r], im[r]);
                v[r * n + j + 1] = C(col[r], -im[r]);
              }
              ++j;
            }
          }
        });
      }
    });
  }
  EMBER_CHECK(failed == 0, "linalg.eig: The algorithm failed to converge because the input matrix is ill-conditioned "
              "or has too many repeated eigenvalues (error code: ", int(failed), ").");
  return {L, V};
}

EMBER_REGISTER_KERNEL(linalg_qr, CPU, qr_cpu);
EMBER_REGISTER_KERNEL(linalg_eig, CPU, eig_cpu);
EMBER_REGISTER_KERNEL(linalg_svd, CPU, svd_cpu);
EMBER_REGISTER_KERNEL(linalg_eigh, CPU, eigh_cpu);
EMBER_REGISTER_KERNEL(linalg_lstsq_gelsy, CPU, lstsq_gelsy_cpu);

}  // namespace
}  // namespace ember::cpu
