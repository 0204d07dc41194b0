// CPU kernels of the LU and Cholesky based linalg ops (op_list.h "linalg (LAPACK)"): inverse,
// LU factorisation, solve, det, slogdet, cholesky. Each copies the batch to column-major order, runs one LAPACK
// routine per matrix and reports LAPACK's info per matrix; src/ops/linalg_factor.cpp turns a
// nonzero info into torch's error.
#include <algorithm>
#include <cmath>

#include "core/dtype_dispatch.h"
#include "cpu/lapack.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember::cpu {
namespace {

using namespace lapack;

Tensor info_tensor(IntArrayRef batch) {
  return zeros(batch, {.dtype = kInt32, .device = Device(DeviceType::CPU)});
}

std::tuple<Tensor, Tensor> inv_ex_cpu(const Tensor& a) {
  ColumnMajor m = column_major(a);
  Tensor info = info_tensor(batch_shape(a));
  const int n = int(m.rows);
  if (n > 0) {
    visit_dtype<kFloatTypes>(a.dtype(), "linalg_inv", [&]<class T>() {
      int* infos = info.data_ptr<int32_t>();
      T query = 0;
      int qinfo = 0;
      getri(n, nullptr, n, nullptr, &query, -1, &qinfo);
      const int lwork = workspace_size(query);
      for_each_matrix(m.batch, [&](int64_t i) {
        std::vector<int> ipiv(n);
        std::vector<T> work(lwork);
        T* x = m.matrix<T>(i);
        getrf(n, n, x, n, ipiv.data(), &infos[i]);
        if (infos[i] == 0) getri(n, x, n, ipiv.data(), work.data(), lwork, &infos[i]);
      });
    });
  }
  return {row_major(m), info};
}

std::tuple<Tensor, Tensor, Tensor> lu_factor_ex_cpu(const Tensor& a) {
  ColumnMajor m = column_major(a);
  Shape batch = batch_shape(a);
  Tensor info = info_tensor(batch);
  const int M = int(m.rows), N = int(m.cols), K = std::min(M, N);
  Shape pshape = batch;
  pshape.push_back(K);
  Tensor piv = empty(pshape, {.dtype = kInt32, .device = Device(DeviceType::CPU)});
  if (K > 0) {
    visit_dtype<kFloatTypes>(a.dtype(), "linalg_lu_factor", [&]<class T>() {
      int* infos = info.data_ptr<int32_t>();
      int* pv = piv.data_ptr<int32_t>();
      for_each_matrix(m.batch, [&](int64_t i) { getrf(M, N, m.matrix<T>(i), std::max(1, M), pv + i * K, &infos[i]); });
    });
  }
  return {row_major(m), piv, info};
}

std::tuple<Tensor, Tensor> solve_ex_cpu(const Tensor& a, const Tensor& b) {
  ColumnMajor ma = column_major(a), mb = column_major(b);
  Tensor info = info_tensor(batch_shape(a));
  const int n = int(ma.rows), k = int(mb.cols);
  if (n > 0 && k > 0) {
    visit_dtype<kFloatTypes>(a.dtype(), "linalg_solve", [&]<class T>() {
      int* infos = info.data_ptr<int32_t>();
      for_each_matrix(ma.batch, [&](int64_t i) {
        std::vector<int> ipiv(n);
        gesv(n, k, ma.matrix<T>(i), n, ipiv.data(), mb.matrix<T>(i), n, &infos[i]);
      });
    });
  }
  return {row_major(mb), info};
}

// LU of each matrix; f(i, lu, ipiv) reads the factors of matrix i. A singular matrix still
// factors (info > 0 only says some U[k,k] is exactly zero), so det and slogdet need no info.
template <class T, class F> void for_each_lu(const Tensor& a, F&& f) {
  ColumnMajor m = column_major(a);
  const int n = int(m.rows);
  for_each_matrix(m.batch, [&](int64_t i) {
    std::vector<int> ipiv(n);
    int info = 0;
    if (n > 0) getrf(n, n, m.matrix<T>(i), n, ipiv.data(), &info);
    f(i, m.matrix<T>(i), ipiv.data());
  });
}

Tensor det_cpu(const Tensor& a) {
  Tensor out = empty(batch_shape(a), a.options());
  const int n = int(a.size(-1));
  visit_dtype<kFloatTypes>(a.dtype(), "linalg_det", [&]<class T>() {
    T* o = out.data_ptr<T>();
    for_each_lu<T>(a, [&](int64_t i, const T* lu, const int* ipiv) {
      T d = 1;
      for (int k = 0; k < n; ++k) d *= ipiv[k] != k + 1 ? -lu[k * n + k] : lu[k * n + k];
      o[i] = d;
    });
  });
  return out;
}

std::tuple<Tensor, Tensor> slogdet_cpu(const Tensor& a) {
  Tensor sign = empty(batch_shape(a), a.options()), logabs = empty(batch_shape(a), a.options());
  const int n = int(a.size(-1));
  visit_dtype<kFloatTypes>(a.dtype(), "linalg_slogdet", [&]<class T>() {
    T *s = sign.data_ptr<T>(), *l = logabs.data_ptr<T>();
    for_each_lu<T>(a, [&](int64_t i, const T* lu, const int* ipiv) {
      // The sign is the product of the pivots' signs and the permutation's (sign(0) = 0, as
      // torch, which gives -0 or 0 for a singular matrix).
      T sg = 1, la = 0;
      for (int k = 0; k < n; ++k) {
        T d = lu[k * n + k];
        sg *= (d > 0 ? T(1) : d < 0 ? T(-1) : T(0)) * (ipiv[k] != k + 1 ? T(-1) : T(1));
        la += std::log(std::abs(d));
      }
      s[i] = sg;
      l[i] = la;
    });
  });
  return {sign, logabs};
}

std::tuple<Tensor, Tensor> cholesky_ex_cpu(const Tensor& a, bool upper) {
  ColumnMajor m = column_major(a);
  Tensor info = info_tensor(batch_shape(a));
  const int n = int(m.rows);
  if (n > 0) {
    visit_dtype<kFloatTypes>(a.dtype(), "linalg_cholesky", [&]<class T>() {
      int* infos = info.data_ptr<int32_t>();
      // potrf reads the lower triangle of A (column-major, so A itself) and leaves the other
      // triangle untouched: tril below clears it.
      for_each_matrix(m.batch, [&](int64_t i) { potrf('L', n, m.matrix<T>(i), n, &infos[i]); });
    });
  }
  Tensor l = row_major(m).tril();
  return {upper ? l.mT().contiguous() : l, info};
}

EMBER_REGISTER_KERNEL(linalg_inv_ex, CPU, inv_ex_cpu);
EMBER_REGISTER_KERNEL(linalg_solve_ex, CPU, solve_ex_cpu);
EMBER_REGISTER_KERNEL(linalg_lu_factor_ex, CPU, lu_factor_ex_cpu);
EMBER_REGISTER_KERNEL(linalg_det, CPU, det_cpu);
EMBER_REGISTER_KERNEL(linalg_slogdet, CPU, slogdet_cpu);
EMBER_REGISTER_KERNEL(linalg_cholesky_ex, CPU, cholesky_ex_cpu);

}  // namespace
}  // namespace ember::cpu
