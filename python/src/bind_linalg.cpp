// ember.linalg (the C++ side, ember._C._linalg), torch's top-level linalg aliases (det, svd,
// qr, ...) as functions and Tensor methods, and ember.cdist. Glue only: every check and formula
// is in src/ops/linalg_*.cpp. Results that torch returns as torch.return_types namedtuples
// (linalg_svd, linalg_eigh, ...) are namedtuples with torch's field names.
#include <cmath>
#include <map>

#include "bind_ops.h"
#include "ember/linalg.h"

namespace ember::python {
namespace {

using NoGil = nb::call_guard<nb::gil_scoped_release>;

std::map<std::string, nb::object>& tuple_types() {
  static auto* types = new std::map<std::string, nb::object>();
  return *types;
}

void make_tuple_types(nb::module_& m) {
  nb::object rt = m.attr("return_types");
  nb::object namedtuple = nb::module_::import_("collections").attr("namedtuple");
  const std::pair<const char*, const char*> kinds[] = {
      {"linalg_inv_ex", "inverse info"},       {"linalg_cholesky_ex", "L info"},
      {"linalg_slogdet", "sign logabsdet"},    {"slogdet", "sign logabsdet"},
      {"linalg_qr", "Q R"},                    {"qr", "Q R"},
      {"linalg_svd", "U S Vh"},                {"svd", "U S V"},
      {"linalg_eigh", "eigenvalues eigenvectors"},
      {"linalg_eig", "eigenvalues eigenvectors"},
      {"linalg_lstsq", "solution residuals rank singular_values"},
      {"linalg_lu_factor", "LU pivots"},       {"linalg_lu_factor_ex", "LU pivots info"},
      {"linalg_lu", "P L U"},                  {"lu_unpack", "P L U"},
      {"triangular_solve", "solution cloned_coefficient"}};
  for (auto [name, fields] : kinds) {
    nb::object type = namedtuple(name, fields);
    type.attr("__module__") = "ember.return_types";
    rt.attr(name) = type;
    tuple_types()[name] = type;
  }
}

template <class... T> nb::object named(const char* name, T... parts) { return tuple_types().at(name)(parts...); }

std::optional<std::vector<int64_t>> opt_dims(nb::handle dim, const char* op) { return dims_arg(dim, op); }

// ord: None, a number (inf included) or "fro"/"nuc".
Tensor linalg_norm(const Tensor& A, nb::handle ord, nb::handle dim, bool keepdim, std::optional<DType> dtype) {
  auto dims = opt_dims(dim, "linalg_norm");
  if (PyUnicode_Check(ord.ptr())) return linalg::norm(A, nb::cast<std::string>(ord), dims, keepdim, dtype);
  std::optional<double> o;
  if (!ord.is_none()) o = nb::cast<double>(ord);
  nb::gil_scoped_release nogil;
  return linalg::norm(A, o, dims, keepdim, dtype);
}

Tensor matrix_norm(const Tensor& A, nb::handle ord, nb::handle dim, bool keepdim, std::optional<DType> dtype) {
  auto dims = opt_dims(dim, "linalg_matrix_norm");
  std::vector<int64_t> d = dims ? *dims : std::vector<int64_t>{-2, -1};
  if (PyUnicode_Check(ord.ptr())) return linalg::matrix_norm(A, nb::cast<std::string>(ord), d, keepdim, dtype);
  EMBER_CHECK_TYPE(PyNumber_Check(ord.ptr()), "linalg_matrix_norm(): argument 'ord' must be str or Number, not ",
                   Py_TYPE(ord.ptr())->tp_name);
  return linalg::matrix_norm(A, nb::cast<double>(ord), d, keepdim, dtype);
}

Tensor vector_norm(const Tensor& x, nb::handle ord, nb::handle dim, bool keepdim, std::optional<DType> dtype) {
  EMBER_CHECK_TYPE(PyNumber_Check(ord.ptr()) && !PyUnicode_Check(ord.ptr()),
                   "linalg_vector_norm(): argument 'ord' must be Number, not ", Py_TYPE(ord.ptr())->tp_name);
  return linalg::vector_norm(x, nb::cast<double>(ord), opt_dims(dim, "linalg_vector_norm"), keepdim, dtype);
}

int64_t cdist_mode(const std::string& mode) {
  if (mode == "use_mm_for_euclid_dist_if_necessary") return 0;
  if (mode == "use_mm_for_euclid_dist") return 1;
  if (mode == "donot_use_mm_for_euclid_dist") return 2;
  throw ValueError(detail::cat(mode, " is not a valid value for compute_mode"));
}

}  // namespace

void bind_linalg(nb::module_& m, TensorClass& cls) {
  make_tuple_types(m);
  nb::module_ l = m.def_submodule("_linalg", "ember.linalg's C++ side");
  using OptD = std::optional<double>;

  l.def("inv", [](const Tensor& A) { return linalg::inv(A); }, nb::arg("A"), NoGil());
  l.def("inv_ex", [](const Tensor& A, bool check) {
    auto [X, info] = linalg::inv_ex(A, check);
    return named("linalg_inv_ex", X, info);
  }, nb::arg("A"), nb::kw_only(), nb::arg("check_errors") = false);
  l.def("solve", [](const Tensor& A, const Tensor& B, bool left) { return linalg::solve(A, B, left); },
        nb::arg("A"), nb::arg("B"), nb::kw_only(), nb::arg("left") = true, NoGil());
  l.def("det", [](const Tensor& A) { return linalg::det(A); }, nb::arg("A"), NoGil());
  l.def("slogdet", [](const Tensor& A) {
    auto [s, la] = linalg::slogdet(A);
    return named("linalg_slogdet", s, la);
  }, nb::arg("A"));
  l.def("cholesky", [](const Tensor& A, bool upper) { return linalg::cholesky(A, upper); }, nb::arg("A"),
        nb::kw_only(), nb::arg("upper") = false, NoGil());
  l.def("cholesky_ex", [](const Tensor& A, bool upper, bool check) {
    auto [L, info] = linalg::cholesky_ex(A, upper, check);
    return named("linalg_cholesky_ex", L, info);
  }, nb::arg("A"), nb::kw_only(), nb::arg("upper") = false, nb::arg("check_errors") = false);
  l.def("qr", [](const Tensor& A, const std::string& mode) {
    auto [Q, R] = linalg::qr(A, mode);
    return named("linalg_qr", Q, R);
  }, nb::arg("A"), nb::arg("mode") = "reduced");
  l.def("svd", [](const Tensor& A, bool full, nb::handle) {
    auto [U, S, Vh] = linalg::svd(A, full);
    return named("linalg_svd", U, S, Vh);
  }, nb::arg("A"), nb::arg("full_matrices") = true, nb::kw_only(), nb::arg("driver") = nb::none());
  l.def("svdvals", [](const Tensor& A, nb::handle) { return linalg::svdvals(A); }, nb::arg("A"), nb::kw_only(),
        nb::arg("driver") = nb::none());
  l.def("eigh", [](const Tensor& A, const std::string& uplo) {
    auto [L, V] = linalg::eigh(A, uplo);
    return named("linalg_eigh", L, V);
  }, nb::arg("A"), nb::arg("UPLO") = "L");
  l.def("eig", [](const Tensor& A) {
    auto [L, V] = linalg::eig(A);
    return named("linalg_eig", L, V);
  }, nb::arg("A"));
  l.def("eigvals", [](const Tensor& A) { return linalg::eigvals(A); }, nb::arg("A"));
  l.def("eigvalsh", [](const Tensor& A, const std::string& uplo) { return linalg::eigvalsh(A, uplo); },
        nb::arg("A"), nb::arg("UPLO") = "L");
  l.def("lstsq", [](const Tensor& A, const Tensor& B, OptD rcond, std::optional<std::string> driver) {
    linalg::LstsqResult r = linalg::lstsq(A, B, rcond, driver);
    return named("linalg_lstsq", r.solution, r.residuals, r.rank, r.singular_values);
  }, nb::arg("A"), nb::arg("B"), nb::arg("rcond") = nb::none(), nb::kw_only(), nb::arg("driver") = nb::none());
  // rcond is the older spelling of rtol (torch still accepts it).
  l.def("pinv", [](const Tensor& A, OptD atol, OptD rtol, bool hermitian, OptD rcond) {
    return linalg::pinv(A, atol, rcond ? rcond : rtol, hermitian);
  }, nb::arg("A"), nb::kw_only(), nb::arg("atol") = nb::none(), nb::arg("rtol") = nb::none(),
        nb::arg("hermitian") = false, nb::arg("rcond") = nb::none());
  l.def("matrix_rank", [](const Tensor& A, OptD atol, OptD rtol, bool hermitian, OptD tol) {
    return tol ? linalg::matrix_rank(A, tol, 0.0, hermitian) : linalg::matrix_rank(A, atol, rtol, hermitian);
  }, nb::arg("A"), nb::kw_only(), nb::arg("atol") = nb::none(), nb::arg("rtol") = nb::none(),
        nb::arg("hermitian") = false, nb::arg("tol") = nb::none());
  l.def("norm", &linalg_norm, nb::arg("A"), nb::arg("ord") = nb::none(), nb::arg("dim") = nb::none(),
        nb::arg("keepdim") = false, nb::kw_only(), nb::arg("dtype") = nb::none());
  l.def("vector_norm", &vector_norm, nb::arg("x"), nb::arg("ord") = 2, nb::arg("dim") = nb::none(),
        nb::arg("keepdim") = false, nb::kw_only(), nb::arg("dtype") = nb::none());
  l.def("matrix_norm", &matrix_norm, nb::arg("A"), nb::arg("ord") = "fro", nb::arg("dim") = nb::make_tuple(-2, -1),
        nb::arg("keepdim") = false, nb::kw_only(), nb::arg("dtype") = nb::none());
  l.def("cross", [](const Tensor& a, const Tensor& b, int64_t dim) { return linalg::cross(a, b, dim); },
        nb::arg("input"), nb::arg("other"), nb::kw_only(), nb::arg("dim") = -1);
  l.def("matmul", [](const Tensor& a, const Tensor& b) { return linalg::matmul(a, b); }, nb::arg("input"),
        nb::arg("other"), NoGil());

  auto check_pivot = [](bool pivot) {
    EMBER_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  };
  l.def("lu_factor", [check_pivot](const Tensor& A, bool pivot) {
    check_pivot(pivot);
    auto [LU, piv] = linalg::lu_factor(A);
    return named("linalg_lu_factor", LU, piv);
  }, nb::arg("A"), nb::kw_only(), nb::arg("pivot") = true);
  l.def("lu_factor_ex", [check_pivot](const Tensor& A, bool pivot, bool check) {
    check_pivot(pivot);
    auto [LU, piv, info] = linalg::lu_factor_ex(A, check);
    return named("linalg_lu_factor_ex", LU, piv, info);
  }, nb::arg("A"), nb::kw_only(), nb::arg("pivot") = true, nb::arg("check_errors") = false);
  l.def("lu", [check_pivot](const Tensor& A, bool pivot) {
    check_pivot(pivot);
    auto [P, L, U] = linalg::lu(A);
    return named("linalg_lu", P, L, U);
  }, nb::arg("A"), nb::kw_only(), nb::arg("pivot") = true);
  l.def("lu_solve", [](const Tensor& LU, const Tensor& piv, const Tensor& B, bool left, bool adjoint) {
    return linalg::lu_solve(LU, piv, B, left, adjoint);
  }, nb::arg("LU"), nb::arg("pivots"), nb::arg("B"), nb::kw_only(), nb::arg("left") = true,
        nb::arg("adjoint") = false);
  m.def("lu_unpack", [](const Tensor& LU, const Tensor& piv, bool unpack_data, bool unpack_pivots) {
    auto [P, L, U] = lu_unpack(LU, piv);
    return named("lu_unpack", P, L, U);
  }, nb::arg("LU_data"), nb::arg("LU_pivots"), nb::arg("unpack_data") = true, nb::arg("unpack_pivots") = true);
  l.def("solve_triangular", [](const Tensor& A, const Tensor& B, bool upper, bool left, bool unit) {
    return linalg::solve_triangular(A, B, upper, left, unit);
  }, nb::arg("A"), nb::arg("B"), nb::kw_only(), nb::arg("upper"), nb::arg("left") = true,
        nb::arg("unitriangular") = false, NoGil());
  l.def("matrix_power", [](const Tensor& A, int64_t n) { return linalg::matrix_power(A, n); }, nb::arg("A"),
        nb::arg("n"), NoGil());
  l.def("matrix_exp", [](const Tensor& A) { return linalg::matrix_exp(A); }, nb::arg("A"), NoGil());
  def_both(m, cls, "matrix_exp", [](const Tensor& A) { return linalg::matrix_exp(A); }, NoGil());
  l.def("cond", [](const Tensor& A, nb::handle p) {
    if (PyUnicode_Check(p.ptr())) return linalg::cond(A, nb::cast<std::string>(p));
    std::optional<double> pv;
    if (!p.is_none()) pv = nb::cast<double>(p);
    return linalg::cond(A, pv);
  }, nb::arg("A"), nb::arg("p") = nb::none());
  m.def("triangular_solve", [](const Tensor& b, const Tensor& A, bool upper, bool transpose, bool unit) {
    auto [x, a] = triangular_solve(b, A, upper, transpose, unit);
    return named("triangular_solve", x, a);
  }, nb::arg("input"), nb::arg("A"), nb::arg("upper") = true, nb::arg("transpose") = false,
        nb::arg("unitriangular") = false);
  m.def("chain_matmul", [](nb::args ms) { return chain_matmul(nb::cast<std::vector<Tensor>>(ms)); });
  m.def("pdist", [](const Tensor& x, double p) { return pdist(x, p); }, nb::arg("input"), nb::arg("p") = 2.0);
  l.def("multi_dot", [](std::vector<Tensor> ts) { return linalg::multi_dot(ts); }, nb::arg("tensors"), NoGil());
  l.def("vecdot", [](const Tensor& x, const Tensor& y, int64_t dim) { return linalg::vecdot(x, y, dim); },
        nb::arg("x"), nb::arg("y"), nb::kw_only(), nb::arg("dim") = -1);
  l.def("diagonal", [](const Tensor& A, int64_t offset, int64_t d1, int64_t d2) {
    return linalg::diagonal(A, offset, d1, d2);
  }, nb::arg("A"), nb::kw_only(), nb::arg("offset") = 0, nb::arg("dim1") = -2, nb::arg("dim2") = -1);

  // ---- torch's top-level names, as functions and methods
  def_both(m, cls, "matrix_power", [](const Tensor& A, int64_t n) { return linalg::matrix_power(A, n); },
           nb::arg("n"), NoGil());
  def_both(m, cls, "cholesky_solve", [](const Tensor& B, const Tensor& L, bool upper) {
    return cholesky_solve(B, L, upper);
  }, nb::arg("input2"), nb::arg("upper") = false, NoGil());
  def_both(m, cls, "cholesky_inverse", [](const Tensor& L, bool upper) { return cholesky_inverse(L, upper); },
           nb::arg("upper") = false, NoGil());
  def_both(m, cls, "det", [](const Tensor& A) { return det(A); }, NoGil());
  def_both(m, cls, "logdet", [](const Tensor& A) { return logdet(A); }, NoGil());
  def_both(m, cls, "slogdet", [](const Tensor& A) {
    auto [s, la] = slogdet(A);
    return named("slogdet", s, la);
  });
  def_both(m, cls, "inverse", [](const Tensor& A) { return inverse(A); }, NoGil());
  def_both(m, cls, "cholesky", [](const Tensor& A, bool upper) { return cholesky(A, upper); },
           nb::arg("upper") = false, NoGil());
  def_both(m, cls, "qr", [](const Tensor& A, bool some) {
    auto [Q, R] = qr(A, some);
    return named("qr", Q, R);
  }, nb::arg("some") = true);
  def_both(m, cls, "svd", [](const Tensor& A, bool some, bool compute_uv) {
    auto [U, S, V] = svd(A, some, compute_uv);
    return named("svd", U, S, V);
  }, nb::arg("some") = true, nb::arg("compute_uv") = true);
  def_both(m, cls, "pinverse", [](const Tensor& A, double rcond) { return pinverse(A, rcond); },
           nb::arg("rcond") = 1e-15, NoGil());
  def_both(m, cls, "cross", [](const Tensor& a, const Tensor& b, std::optional<int64_t> dim) {
    return cross(a, b, dim);
  }, nb::arg("other"), nb::arg("dim") = nb::none());
  m.def("cdist", [](const Tensor& x1, const Tensor& x2, double p, const std::string& mode) {
    int64_t cm = cdist_mode(mode);
    nb::gil_scoped_release nogil;
    return cdist(x1, x2, p, cm);
  }, nb::arg("x1"), nb::arg("x2"), nb::arg("p") = 2.0,
        nb::arg("compute_mode") = "use_mm_for_euclid_dist_if_necessary");
}

}  // namespace ember::python
