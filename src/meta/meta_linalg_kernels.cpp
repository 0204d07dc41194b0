// Meta kernels of the LAPACK-backed linalg ops: the result shapes of the CPU kernels
// (cpu/lapack_*.cpp) for (..., m, n) inputs, which arrive checked and with their batch dims
// broadcast (ops/linalg_*.cpp). nn.init.orthogonal_ (qr) then works on a meta model, as in torch.
#include "ember/ops.h"
#include "meta/meta_utils.h"
#include "ops/op_handles.h"

namespace ember::meta {
namespace {

Shape batch_of(const Tensor& a) { return Shape(a.sizes().begin(), a.sizes().end() - 2); }
Shape with(Shape batch, std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail.begin(), tail.end());
  return batch;
}
int64_t rows(const Tensor& a) { return a.sizes()[a.dim() - 2]; }
int64_t cols(const Tensor& a) { return a.sizes()[a.dim() - 1]; }
DType real_of(DType t) { return is_complex(t) ? complex_to_real(t) : t; }
Tensor info_of(const Tensor& a) { return new_meta(batch_of(a), kInt32); }
Tensor none_like(const Tensor& a) { return new_meta({0}, a.dtype()); }  // the CPU's "not computed"

void check_matrix(const Tensor& a) {
  check_on_meta(a);
  EMBER_CHECK(a.dim() >= 2, "linalg: expected a tensor of at least 2 dims, got ", a.dim());
}

std::tuple<Tensor, Tensor> inv_ex_meta(const Tensor& a) {
  check_matrix(a);
  return {new_meta(a.sizes(), a.dtype()), info_of(a)};
}
std::tuple<Tensor, Tensor, Tensor> lu_factor_ex_meta(const Tensor& a) {
  check_matrix(a);
  return {new_meta(a.sizes(), a.dtype()), new_meta(with(batch_of(a), {std::min(rows(a), cols(a))}), kInt32), info_of(a)};
}
std::tuple<Tensor, Tensor> solve_ex_meta(const Tensor& a, const Tensor& b) {
  check_matrix(a);
  check_on_meta(b);
  return {new_meta(b.sizes(), b.dtype()), info_of(a)};
}
Tensor det_meta(const Tensor& a) {
  check_matrix(a);
  return new_meta(batch_of(a), a.dtype());
}
std::tuple<Tensor, Tensor> slogdet_meta(const Tensor& a) {
  check_matrix(a);
  return {new_meta(batch_of(a), a.dtype()), new_meta(batch_of(a), real_of(a.dtype()))};
}
std::tuple<Tensor, Tensor> cholesky_ex_meta(const Tensor& a, bool) {
  check_matrix(a);
  return {new_meta(a.sizes(), a.dtype()), info_of(a)};
}
// mode 0 reduced (Q m x k, R k x n), 1 complete (m x m, m x n), 2 r only (R k x n)
std::tuple<Tensor, Tensor> qr_meta(const Tensor& a, int64_t mode) {
  check_matrix(a);
  const int64_t m = rows(a), n = cols(a), k = std::min(m, n);
  const Shape batch = batch_of(a);
  Tensor r = new_meta(with(batch, {mode == 1 ? m : k, n}), a.dtype());
  return {mode == 2 ? none_like(a) : new_meta(with(batch, {m, mode == 1 ? m : k}), a.dtype()), r};
}
std::tuple<Tensor, Tensor, Tensor> svd_meta(const Tensor& a, bool full, bool compute_uv) {
  check_matrix(a);
  const int64_t m = rows(a), n = cols(a), k = std::min(m, n);
  const Shape batch = batch_of(a);
  Tensor s = new_meta(with(batch, {k}), real_of(a.dtype()));
  if (!compute_uv) return {none_like(a), s, none_like(a)};
  return {new_meta(with(batch, {m, full ? m : k}), a.dtype()), s, new_meta(with(batch, {full ? n : k, n}), a.dtype())};
}
std::tuple<Tensor, Tensor> eigh_meta(const Tensor& a, bool, bool compute_v) {
  check_matrix(a);
  return {new_meta(with(batch_of(a), {cols(a)}), real_of(a.dtype())),
          compute_v ? new_meta(a.sizes(), a.dtype()) : none_like(a)};
}
std::tuple<Tensor, Tensor> eig_meta(const Tensor& a, bool compute_v) {
  check_matrix(a);
  const DType c = is_complex(a.dtype()) ? a.dtype() : real_to_complex(a.dtype());
  return {new_meta(with(batch_of(a), {cols(a)}), c), compute_v ? new_meta(a.sizes(), c) : new_meta({0}, c)};
}
std::tuple<Tensor, Tensor> lstsq_meta(const Tensor& a, const Tensor& b, double) {
  check_matrix(a);
  check_matrix(b);
  return {new_meta(with(batch_of(a), {cols(a), cols(b)}), a.dtype()), new_meta(batch_of(a), kInt64)};
}

EMBER_REGISTER_KERNEL(linalg_inv_ex, Meta, inv_ex_meta);
EMBER_REGISTER_KERNEL(linalg_lu_factor_ex, Meta, lu_factor_ex_meta);
EMBER_REGISTER_KERNEL(linalg_solve_ex, Meta, solve_ex_meta);
EMBER_REGISTER_KERNEL(linalg_det, Meta, det_meta);
EMBER_REGISTER_KERNEL(linalg_slogdet, Meta, slogdet_meta);
EMBER_REGISTER_KERNEL(linalg_cholesky_ex, Meta, cholesky_ex_meta);
EMBER_REGISTER_KERNEL(linalg_qr, Meta, qr_meta);
EMBER_REGISTER_KERNEL(linalg_svd, Meta, svd_meta);
EMBER_REGISTER_KERNEL(linalg_eigh, Meta, eigh_meta);
EMBER_REGISTER_KERNEL(linalg_eig, Meta, eig_meta);
EMBER_REGISTER_KERNEL(linalg_lstsq_gelsy, Meta, lstsq_meta);

}  // namespace
}  // namespace ember::meta
