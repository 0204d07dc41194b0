// torch.linalg's norms (vector_norm, matrix_norm, norm), cross products and torch.cdist:
// composites over the norm reduction, svdvals and elementwise ops, so their gradients come from
// their parts (norm's backward gives the subgradient 0 at a zero norm, as PyTorch's).
#include <algorithm>
#include <cmath>

#include "amp/autocast.h"
#include "ember/linalg.h"
#include "ember/ops.h"
#include "ops/linalg_checks.h"

namespace ember {
using namespace linalg_checks;

namespace {

int64_t wrap(int64_t d, int64_t ndim, const char* op) {
  EMBER_CHECK_INDEX(d >= -std::max<int64_t>(ndim, 1) && d < std::max<int64_t>(ndim, 1), op,
                    ": Dimension out of range (expected to be in range of [", -std::max<int64_t>(ndim, 1), ", ",
                    std::max<int64_t>(ndim, 1) - 1, "], but got ", d, ")");
  return d < 0 ? d + ndim : d;
}

Tensor as_dtype(const Tensor& x, std::optional<DType> dtype) { return dtype ? x.to(*dtype) : x; }

std::string ord_str(double ord) {
  if (std::isinf(ord)) return ord > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << ord;
  return os.str();
}

}  // namespace

namespace linalg {

Tensor vector_norm(const Tensor& x, double ord, std::optional<std::vector<int64_t>> dim, bool keepdim,
                   std::optional<DType> dtype) {
  EMBER_AUTOCAST(vector_norm, x, ord, dim, keepdim, dtype);
  EMBER_CHECK_AS(NotImplementedError, is_floating(x.dtype()),
                 "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
                 scalar_type_name(x.dtype()));
  Tensor a = as_dtype(x, dtype);
  std::vector<int64_t> dims;
  if (dim) {
    for (int64_t d : *dim) dims.push_back(wrap(d, a.dim(), "linalg.vector_norm"));
  }
  return ember::norm(a, Scalar(ord), dims, keepdim);
}

namespace {

void check_matrix_dims(const Tensor& A, std::vector<int64_t>& dim) {
  EMBER_CHECK(A.dim() >= 2, "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  check_floating(A, "linalg.matrix_norm");
  EMBER_CHECK(dim.size() == 2, "linalg.matrix_norm: dim must be a 2-tuple. Got ", dim.size(), " dims");
  for (int64_t& d : dim) d = wrap(d, A.dim(), "linalg.matrix_norm");
  EMBER_CHECK(dim[0] != dim[1], "linalg.matrix_norm: dims must be different. Got (", dim[0], ", ", dim[1], ")");
}

// Singular values of the matrices spanned by dim, reduced by f over their last dim, with the two
// dims kept as size 1 when keepdim.
template <class F>
Tensor over_singular_values(const Tensor& A, const std::vector<int64_t>& dim, bool keepdim, F&& f) {
  Tensor s = f(svdvals(A.movedim(IntArrayRef(dim), IntArrayRef{-2, -1})));
  if (keepdim) {
    int64_t lo = std::min(dim[0], dim[1]), hi = std::max(dim[0], dim[1]);
    s = s.unsqueeze(lo).unsqueeze(hi);
  }
  return s;
}

}  // namespace

Tensor matrix_norm(const Tensor& A, const std::string& ord, std::vector<int64_t> dim, bool keepdim,
                   std::optional<DType> dtype) {
  EMBER_AUTOCAST(matrix_norm, A, ord, dim, keepdim, dtype);
  check_matrix_dims(A, dim);
  EMBER_CHECK(ord == "fro" || ord == "nuc", "linalg.matrix_norm: Order ", ord, " not supported.");
  Tensor a = as_dtype(A, dtype);
  if (ord == "fro") return ember::norm(a, Scalar(2.0), dim, keepdim);
  return over_singular_values(a, dim, keepdim, [](const Tensor& s) { return sum(s, {-1}); });
}

Tensor matrix_norm(const Tensor& A, double ord, std::vector<int64_t> dim, bool keepdim, std::optional<DType> dtype) {
  EMBER_AUTOCAST(matrix_norm, A, ord, dim, keepdim, dtype);
  check_matrix_dims(A, dim);
  const double p = std::abs(ord);
  EMBER_CHECK(p == 2 || p == 1 || std::isinf(p), "linalg.matrix_norm: Order ", ord_str(ord), " not supported.");
  Tensor a = as_dtype(A, dtype);
  if (p == 2) {
    return over_singular_values(a, dim, keepdim, [&](const Tensor& s) {
      return ord > 0 ? amax(s, {-1}) : amin(s, {-1});
    });
  }
  // 1: the largest column sum of |A| (sum over rows, then max over columns); inf: of row sums.
  int64_t d0 = dim[0], d1 = dim[1];
  if (std::isinf(p)) std::swap(d0, d1);
  if (!keepdim && d0 < d1) --d1;
  Tensor colsums = sum(abs(a), {d0}, keepdim);
  return ord > 0 ? amax(colsums, {d1}, keepdim) : amin(colsums, {d1}, keepdim);
}

Tensor norm(const Tensor& A, std::optional<double> ord, std::optional<std::vector<int64_t>> dim, bool keepdim,
            std::optional<DType> dtype) {
  if (dim) {
    EMBER_CHECK(dim->size() == 1 || dim->size() == 2,
                "linalg.norm: If dim is specified, it must be of length 1 or 2. Got ", *dim);
    if (dim->size() == 1) return vector_norm(A, ord.value_or(2.0), dim, keepdim, dtype);
    return ord ? matrix_norm(A, *ord, *dim, keepdim, dtype) : matrix_norm(A, "fro", *dim, keepdim, dtype);
  }
  if (!ord) return vector_norm(A, 2.0, std::nullopt, keepdim, dtype);
  EMBER_CHECK(A.dim() == 1 || A.dim() == 2,
              "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got ", A.dim(), "D.");
  if (A.dim() == 1) return vector_norm(A, *ord, std::vector<int64_t>{0}, keepdim, dtype);
  return matrix_norm(A, *ord, {0, 1}, keepdim, dtype);
}

Tensor norm(const Tensor& A, const std::string& ord, std::optional<std::vector<int64_t>> dim, bool keepdim,
            std::optional<DType> dtype) {
  if (dim) {
    EMBER_CHECK(dim->size() == 2, "linalg.norm: If dim is specified, it mut be of length 1 or 2. Got ", *dim);
    return matrix_norm(A, ord, *dim, keepdim, dtype);
  }
  EMBER_CHECK(A.dim() == 2, "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got ",
              A.dim(), "D.");
  return matrix_norm(A, ord, {0, 1}, keepdim, dtype);
}

Tensor cross(const Tensor& a, const Tensor& b, int64_t dim) {
  EMBER_AUTOCAST(cross, a, b, dim);
  EMBER_CHECK(a.dim() == b.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  Shape shape = broadcast_shapes(a.sizes(), b.sizes());
  const int64_t d = wrap(dim, int64_t(shape.size()), "linalg.cross");
  EMBER_CHECK(a.dim() > 0 && b.dim() > 0 && a.size(d - int64_t(shape.size()) + a.dim()) == 3 &&
                  b.size(d - int64_t(shape.size()) + b.dim()) == 3,
              "linalg.cross: inputs dimension ", dim, " must have length 3. Got ",
              a.dim() + d - int64_t(shape.size()) >= 0 ? a.size(d - int64_t(shape.size()) + a.dim()) : 1, " and ",
              b.dim() + d - int64_t(shape.size()) >= 0 ? b.size(d - int64_t(shape.size()) + b.dim()) : 1);
  EMBER_CHECK(a.dtype() == b.dtype(), "linalg.cross: expected a and b to have the same dtype, but got ",
              scalar_type_name(a.dtype()), " and ", scalar_type_name(b.dtype()));
  Tensor x = a.expand(shape), y = b.expand(shape);
  auto c = [&](const Tensor& t, int64_t i) { return t.select(d, i); };
  return stack({c(x, 1) * c(y, 2) - c(x, 2) * c(y, 1), c(x, 2) * c(y, 0) - c(x, 0) * c(y, 2),
                c(x, 0) * c(y, 1) - c(x, 1) * c(y, 0)},
               d);
}

}  // namespace linalg

Tensor cross(const Tensor& a, const Tensor& b, std::optional<int64_t> dim) {
  EMBER_AUTOCAST(cross, a, b, dim);
  if (dim) return linalg::cross(a, b, *dim);
  // torch.cross without dim: the first dim of size 3 (of the broadcast shape).
  Shape shape = broadcast_shapes(a.sizes(), b.sizes());
  auto it = std::find(shape.begin(), shape.end(), 3);
  EMBER_CHECK(it != shape.end(), "no dimension of size 3 in input");
  return linalg::cross(a, b, int64_t(it - shape.begin()));
}

// torch.cdist. p = 2 on large inputs (or compute_mode 1) uses |x|^2 + |y|^2 - 2 x.y through a
// matmul, clamped at 1e-30 before the square root as torch's _euclidean_dist (so a zero distance
// reads 1e-15 there); otherwise the p-norm of every row difference, exact at zero.
Tensor cdist(const Tensor& x1, const Tensor& x2, double p, int64_t compute_mode) {
  EMBER_AUTOCAST(cdist, x1, x2, p, compute_mode);
  EMBER_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  EMBER_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  EMBER_CHECK(is_floating(x1.dtype()), "cdist only supports floating-point dtypes, X1 got: ", scalar_type_name(x1.dtype()));
  EMBER_CHECK(is_floating(x2.dtype()), "cdist only supports floating-point dtypes, X2 got: ", scalar_type_name(x2.dtype()));
  EMBER_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  EMBER_CHECK(p >= 0, "cdist only supports non-negative p values");
  EMBER_CHECK(compute_mode >= 0 && compute_mode <= 2, "cdist: compute_mode must be 0, 1 or 2, got ", compute_mode);
  const int64_t P = x1.size(-2), R = x2.size(-2), M = x1.size(-1);
  Shape batch = broadcast_shapes(Shape(x1.sizes().begin(), x1.sizes().end() - 2),
                                 Shape(x2.sizes().begin(), x2.sizes().end() - 2));
  Shape s1 = batch, s2 = batch, out = batch;
  s1.insert(s1.end(), {P, M});
  s2.insert(s2.end(), {R, M});
  out.insert(out.end(), {P, R});
  Tensor a = x1.expand(s1), b = x2.expand(s2);
  if (P == 0 || R == 0) return empty(out, a.options());
  if (M == 0) return zeros(out, a.options());
  const bool mm = p == 2 && (compute_mode == 1 || (compute_mode == 0 && (P > 25 || R > 25)));
  if (mm) {
    Tensor n1 = sum(a * a, {-1}, /*keepdim=*/true), n2 = sum(b * b, {-1}, /*keepdim=*/true);
    Tensor d2 = n1 - matmul(a, b.mT()) * 2.0 + n2.mT();
    return sqrt(clamp(d2, Scalar(1e-30)));
  }
  return ember::norm(a.unsqueeze(-2) - b.unsqueeze(-3), Scalar(p), {a.dim()}, false);
}

}  // namespace ember
