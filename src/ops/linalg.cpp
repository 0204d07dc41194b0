// Linear algebra: mm, bmm, addmm and dot are dispatched ops (CPU kernels in
// src/cpu/blas_kernels.cpp); mv, outer, baddbmm and matmul are composites built on them.
// Argument checks live here, with PyTorch's messages, so every backend shares them.
#include "ember/dispatch/op_recording.h"
#include "amp/autocast.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember {

namespace {


void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.device() == b.device(), "Expected all tensors to be on the same device, but found at least two devices, ",
              a.device().str(), " and ", b.device().str(), "! (when checking argument for ", op, ")");
}

void check_mm_dtypes(const Tensor& m1, const Tensor& m2) {
  EMBER_CHECK(m1.dtype() == m2.dtype(), "expected m1 and m2 to have the same dtype, but got: ",
              torch_cpp_type_name(m1.dtype()), " != ", torch_cpp_type_name(m2.dtype()));
}

void check_scalars(const Tensor& t, const Scalar& beta, const Scalar& alpha) {
  if (!is_floating(t.dtype())) {
    EMBER_CHECK(!beta.is_floating(), "For integral input tensors, argument beta must not be a floating point number.");
    EMBER_CHECK(!alpha.is_floating(), "For integral input tensors, argument alpha must not be a floating point number.");
  }
}

void check_mm_shapes(const Tensor& m1, const Tensor& m2) {
  EMBER_CHECK(m1.sizes()[1] == m2.sizes()[0], "mat1 and mat2 shapes cannot be multiplied (", m1.sizes()[0], "x",
              m1.sizes()[1], " and ", m2.sizes()[0], "x", m2.sizes()[1], ")");
}

void check_bmm(const Tensor& b1, const Tensor& b2) {
  EMBER_CHECK(b1.dim() == 3, "batch1 must be a 3D tensor");
  EMBER_CHECK(b2.dim() == 3, "batch2 must be a 3D tensor");
  int64_t bs = b1.sizes()[0], k = b1.sizes()[2];
  EMBER_CHECK(b2.sizes()[0] == bs && b2.sizes()[1] == k,
              "Expected size for first two dimensions of batch2 tensor to be: [", bs, ", ", k, "] but got: [",
              b2.sizes()[0], ", ", b2.sizes()[1], "].");
  EMBER_CHECK(b1.dtype() == b2.dtype(), "expected scalar type ", scalar_type_name(b1.dtype()), " but found ",
              scalar_type_name(b2.dtype()));
  check_same_device("bmm", b1, b2);
}

// "The expanded size of the tensor (2) must match the existing size (3) at non-singleton
// dimension 0.  Target sizes: [2, 5].  Tensor sizes: [3, 5]": self must broadcast to the result.
void check_expandable(const Tensor& self, IntArrayRef target) {
  int64_t nd = self.dim(), nt = int64_t(target.size());
  EMBER_CHECK(nd <= nt, "expand(", to_string(self.dtype()), "{", self.sizes(), "}, size=", target.vec(),
              "): the number of sizes provided (", nt, ") must be greater or equal to the number of dimensions in the tensor (",
              nd, ")");
  for (int64_t i = 0; i < nd; ++i) {
    int64_t s = self.sizes()[nd - 1 - i], t = target[nt - 1 - i];
    EMBER_CHECK(s == t || s == 1, "The expanded size of the tensor (", t, ") must match the existing size (", s,
                ") at non-singleton dimension ", nt - 1 - i, ".  Target sizes: ", target.vec(),
                ".  Tensor sizes: ", self.sizes());
  }
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b) {
  EMBER_AUTOCAST(mm, a, b);
  EMBER_CHECK(a.dim() == 2, "self must be a matrix");
  EMBER_CHECK(b.dim() == 2, "mat2 must be a matrix");
  check_mm_shapes(a, b);
  check_mm_dtypes(a, b);
  check_same_device("mm", a, b);
  return ops::mm()(a, b);
}

Tensor addmm(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) {
  EMBER_AUTOCAST(addmm, self, m1, m2, beta, alpha);
  EMBER_CHECK(m1.dim() == 2, "mat1 must be a matrix, got ", m1.dim(), "-D tensor");
  EMBER_CHECK(m2.dim() == 2, "mat2 must be a matrix, got ", m2.dim(), "-D tensor");
  check_mm_shapes(m1, m2);
  check_mm_dtypes(m1, m2);
  EMBER_CHECK(self.dtype() == m2.dtype(), "self and mat2 must have the same dtype");
  check_same_device("addmm", self, m1);
  check_same_device("addmm", m1, m2);
  check_expandable(self, {m1.sizes()[0], m2.sizes()[1]});
  check_scalars(m1, beta, alpha);
  return ops::addmm()(self, m1, m2, beta, alpha);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  EMBER_AUTOCAST(bmm, a, b);
  check_bmm(a, b);
  return ops::bmm()(a, b);
}

Tensor baddbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) {
  EMBER_AUTOCAST(baddbmm, self, b1, b2, beta, alpha);
  check_bmm(b1, b2);
  EMBER_CHECK(self.dtype() == b1.dtype(), "Input dtypes must be the same, got: input ", torch_cpp_type_name(self.dtype()),
              ", batch1: ", torch_cpp_type_name(b1.dtype()), ", batch2: ", torch_cpp_type_name(b2.dtype()));
  check_same_device("baddbmm", self, b1);
  check_expandable(self, {b1.sizes()[0], b1.sizes()[1], b2.sizes()[2]});
  check_scalars(b1, beta, alpha);
  Tensor prod = ops::bmm()(b1, b2);
  bool alpha_one = alpha.is_floating() ? alpha.to_double() == 1.0 : alpha.to_int() == 1;
  if (!alpha_one) prod = mul(prod, alpha);
  if (beta.to_double() == 0.0) return prod;  // self is ignored, NaN included
  return add(prod, self, beta);
}

Tensor dot(const Tensor& a, const Tensor& b) {
  EMBER_AUTOCAST(dot, a, b);
  EMBER_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(), "D tensors");
  EMBER_CHECK(a.dtype() == b.dtype(), "dot : expected both vectors to have same dtype, but found ",
              scalar_type_name(a.dtype()), " and ", scalar_type_name(b.dtype()));
  EMBER_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(), "] and src [",
              b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ", b.numel(),
              " elements respectively");
  check_same_device("dot", a, b);
  return ops::dot()(a, b);
}

Tensor mv(const Tensor& a, const Tensor& v) {
  EMBER_AUTOCAST(mv, a, v);
  EMBER_CHECK(a.dim() == 2 && v.dim() == 1, "vector + matrix @ vector expected, got 1, ", a.dim(), ", ", v.dim());
  EMBER_CHECK(a.sizes()[1] == v.sizes()[0], "size mismatch, got ", a.sizes()[0], ", ", a.sizes()[0], "x",
              a.sizes()[1], ",", v.sizes()[0]);
  EMBER_CHECK(a.dtype() == v.dtype(), "expected scalar type ", scalar_type_name(a.dtype()), " but found ",
              scalar_type_name(v.dtype()));
  check_same_device("mv", a, v);
  // (M, K) @ (K, 1): the vector as a one-column matrix view (no copy).
  Tensor out = ops::mm()(a, v.unsqueeze(1));
  return out.view({a.sizes()[0]});
}

Tensor outer(const Tensor& a, const Tensor& b) {
  EMBER_CHECK(a.dim() == 1, "outer: Expected 1-D argument self, but got ", a.dim(), "-D");
  EMBER_CHECK(b.dim() == 1, "outer: Expected 1-D argument vec2, but got ", b.dim(), "-D");
  return mul(a.unsqueeze(1), b);
}

// tensordot over the last dims: every row of a (as a matrix) against every row of b.
Tensor inner(const Tensor& a, const Tensor& b) {
  if (a.dim() == 0 || b.dim() == 0) return mul(a, b);
  EMBER_CHECK(a.size(-1) == b.size(-1), "inner() the last dimension must match on both input tensors but got shapes ",
              a.sizes(), " and ", b.sizes());
  int64_t n = a.size(-1);
  Shape out(a.sizes().begin(), a.sizes().end() - 1);
  out.insert(out.end(), b.sizes().begin(), b.sizes().end() - 1);
  return matmul(a.reshape({-1, n}), b.reshape({-1, n}).t()).reshape(out);
}

Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha) {
  EMBER_AUTOCAST(addmv, self, mat, vec, beta, alpha);
  EMBER_CHECK(mat.dim() == 2 && vec.dim() == 1 && self.dim() <= 1, "vector + matrix @ vector expected, got ",
              self.dim(), ", ", mat.dim(), ", ", vec.dim());
  Tensor prod = mv(mat, vec);
  // beta == 0: self is not read, so NaN or inf in it does not propagate (as PyTorch).
  if (beta.to_double() == 0.0) return mul(prod, alpha).expand(broadcast_shapes(self.sizes(), prod.sizes()));
  return add(mul(self, beta), prod, alpha);
}

Tensor trace(const Tensor& a) {
  EMBER_AUTOCAST(trace, a);
  EMBER_CHECK(a.dim() == 2, "trace: expected a matrix, but got tensor with dim ", a.dim());
  return sum(diagonal(a, 0, 0, 1));
}

namespace {

// Batch dims of a matmul operand can be folded into its rows (a view, no copy): each batch
// stride equals the next stride times the next size.
bool foldable(const Tensor& t) {
  if (t.numel() == 0) return true;
  for (int64_t i = 0; i + 2 < t.dim(); ++i)
    if (t.strides()[i] != t.strides()[i + 1] * t.sizes()[i + 1]) return false;
  return true;
}

}  // namespace

// torch.matmul: the rank rules of PyTorch's _matmul_impl.
Tensor matmul(const Tensor& t1, const Tensor& t2) {
  EMBER_RECORD_COMPOSITE("matmul", t1, t2);
  EMBER_AUTOCAST(matmul, t1, t2);
  const int64_t d1 = t1.dim(), d2 = t2.dim();
  EMBER_CHECK(d1 > 0 && d2 > 0, "both arguments to matmul need to be at least 1D, but they are ", d1, "D and ", d2,
              "D");
  if (d1 == 1 && d2 == 1) return dot(t1, t2);
  if (d1 == 2 && d2 == 1) return mv(t1, t2);
  if (d1 == 1 && d2 == 2) return mm(t1.unsqueeze(0), t2).squeeze(0);
  if (d1 == 2 && d2 == 2) return mm(t1, t2);

  // One side has batch dims and the other is a vector or matrix: fold the batch into the rows
  // of one mm/mv when that needs no copy. For (vector @ batch) the batch side is transposed.
  if (d1 >= 3 && d2 <= 2 && foldable(t1)) {
    Shape out_shape(t1.sizes().begin(), t1.sizes().end() - 1);
    int64_t rows = shape_numel(out_shape);
    Tensor folded = t1.reshape({rows, t1.sizes().back()});
    if (d2 == 2) {
      out_shape.push_back(t2.sizes()[1]);
      return mm(folded, t2).view(out_shape);
    }
    return mv(folded, t2).view(out_shape);
  }
  if (d2 >= 3 && d1 == 1 && foldable(t2.mT())) {
    Tensor t = t2.mT();  // (..., p, m): rows are the output's entries
    Shape out_shape(t.sizes().begin(), t.sizes().end() - 1);
    int64_t rows = shape_numel(out_shape);
    return mv(t.reshape({rows, t.sizes().back()}), t1).view(out_shape);
  }

  // General case: broadcast the batch dims, flatten them and run one bmm. A 1-D operand is a
  // one-row (left) or one-column (right) matrix whose extra dim is removed at the end.
  const int64_t n = d1 > 1 ? t1.sizes()[d1 - 2] : 1;
  const int64_t m1 = t1.sizes().back();
  Shape batch1(t1.sizes().begin(), t1.sizes().begin() + std::max<int64_t>(d1 - 2, 0));
  const int64_t m2 = d2 > 1 ? t2.sizes()[d2 - 2] : t2.sizes()[0];
  const int64_t p = d2 > 1 ? t2.sizes().back() : 1;
  Shape batch2(t2.sizes().begin(), t2.sizes().begin() + std::max<int64_t>(d2 - 2, 0));
  Shape out_shape = broadcast_shapes(batch1, batch2);
  const int64_t nbatch = shape_numel(out_shape);

  Shape e1 = out_shape;
  e1.push_back(n);
  e1.push_back(m1);
  Tensor a = t1.expand(e1).reshape({nbatch, n, m1});
  Shape e2 = out_shape;
  e2.push_back(m2);
  Tensor b;
  if (d2 == 1) {
    b = t2.expand(e2).reshape({nbatch, m2, 1});
  } else {
    e2.push_back(p);
    b = t2.expand(e2).reshape({nbatch, m2, p});
  }
  if (d1 > 1) out_shape.push_back(n);
  if (d2 > 1) out_shape.push_back(p);
  return bmm(a, b).view(out_shape);
}

}  // namespace ember

// ---------------------------------------------------------------- gradients
// d(A B) = dA B + A dB: grad_A = G B^T, grad_B = A^T G. Each side saves the other operand only
// when that gradient can be needed (as PyTorch), so an in-place change of an operand whose
// partner does not require grad is not an error.
#include "autograd/record.h"
#include "ops/product_grads.h"

namespace ember::product_grads {

bool column_major(const Tensor& m) {
  return m.dim() == 2 && m.sizes()[0] > 1 && m.sizes()[1] > 1 && m.strides()[0] == 1 && m.strides()[1] == m.sizes()[0];
}
Tensor mat1_grad(const Tensor& g, const Tensor& m2, bool m1_column_major) {
  return m1_column_major ? mm(conj(m2), g.t()).t() : mm(g, conj(m2).t());
}
Tensor mat2_grad(const Tensor& g, const Tensor& m1, bool m2_column_major) {
  return m2_column_major ? mm(g.t(), conj(m1)).t() : mm(conj(m1).t(), g);
}

}  // namespace ember::product_grads

namespace ember {
namespace {
using namespace autograd;  // record, below_autograd, saved_input, grad_for, ...

bool scalar_is_one(const Scalar& s) { return s.is_floating() ? s.to_double() == 1.0 : s.to_int() == 1; }
Tensor maybe_multiply(const Tensor& t, const Scalar& s) { return scalar_is_one(s) ? t : t * s; }
Tensor saved_if(bool needed, const Tensor& t) { return needed ? t : Tensor(); }

using product_grads::column_major, product_grads::mat1_grad, product_grads::mat2_grad;

Tensor mm_ag(const Tensor& a, const Tensor& b) {
  Tensor out = below_autograd([&] { return ops::mm()(a, b); });
  record("MmBackward0", {a, b}, {out}, {saved_input(saved_if(b.requires_grad(), a)), saved_input(saved_if(a.requires_grad(), b))},
         [a_cm = column_major(a), b_cm = column_major(b)](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return mat1_grad(g[0], n.unpack(1), a_cm); }),
                   grad_for(n, 1, [&] { return mat2_grad(g[0], n.unpack(0), b_cm); })};
         });
  return out;
}

Tensor bmm_ag(const Tensor& a, const Tensor& b) {
  Tensor out = below_autograd([&] { return ops::bmm()(a, b); });
  record("BmmBackward0", {a, b}, {out}, {saved_input(saved_if(b.requires_grad(), a)), saved_input(saved_if(a.requires_grad(), b))},
         [](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return bmm(g[0], conj(n.unpack(1)).transpose(1, 2)); }),
                   grad_for(n, 1, [&] { return bmm(conj(n.unpack(0)).transpose(1, 2), g[0]); })};
         });
  return out;
}

// out = beta * self + alpha * (m1 @ m2); self broadcasts to the result.
Tensor addmm_ag(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) {
  Tensor out = below_autograd([&] { return ops::addmm()(self, m1, m2, beta, alpha); });
  record("AddmmBackward0", {self, m1, m2}, {out},
         {saved_input(saved_if(m2.requires_grad(), m1)), saved_input(saved_if(m1.requires_grad(), m2))},
         [s = self.sizes(), beta, alpha, m1_cm = column_major(m1), m2_cm = column_major(m2)](
             const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return sum_to(maybe_multiply(g[0], beta), s); }),
                   grad_for(n, 1, [&] { return maybe_multiply(mat1_grad(g[0], n.unpack(1), m1_cm), alpha); }),
                   grad_for(n, 2, [&] { return maybe_multiply(mat2_grad(g[0], n.unpack(0), m2_cm), alpha); })};
         });
  return out;
}

Tensor dot_ag(const Tensor& a, const Tensor& b) {
  Tensor out = below_autograd([&] { return ops::dot()(a, b); });
  record("DotBackward0", {a, b}, {out}, {saved_input(saved_if(b.requires_grad(), a)), saved_input(saved_if(a.requires_grad(), b))},
         [](const variable_list& g, LambdaNode& n) -> variable_list {
           return {grad_for(n, 0, [&] { return g[0] * conj(n.unpack(1)); }),
                   grad_for(n, 1, [&] { return g[0] * conj(n.unpack(0)); })};
         });
  return out;
}

EMBER_REGISTER_KERNEL(mm, Autograd, mm_ag);
EMBER_REGISTER_KERNEL(bmm, Autograd, bmm_ag);
EMBER_REGISTER_KERNEL(addmm, Autograd, addmm_ag);
EMBER_REGISTER_KERNEL(dot, Autograd, dot_ag);

}  // namespace
}  // namespace ember
