// Reductions, scans, sorting and searching with torch's Python signatures: dim= as an int or a
// tuple, keepdim=, dtype=, and torch.return_types namedtuples ((values, indices)) where torch
// returns them.
#include <numeric>

#include "bind_ops.h"
#include "ember/foreach.h"
#include "ember/linalg.h"

namespace ember::python {
namespace {

std::vector<int64_t> all_dims(const Tensor& a) {
  std::vector<int64_t> d(size_t(a.dim()));
  std::iota(d.begin(), d.end(), 0);
  return d;
}

// dim=None (or ()) means every dim; keepdim then keeps them all as size 1.
std::vector<int64_t> reduce_dims(const Tensor& a, nb::handle dim, const char* op) {
  auto d = dims_arg(dim, op);
  if (!d || d->empty()) return all_dims(a);
  return *d;
}

Tensor sum_any(const Tensor& a, nb::handle dim, bool keepdim, std::optional<DType> dtype) {
  if (dim.is_none() && !keepdim) return sum(a, dtype);
  return sum(a, reduce_dims(a, dim, "sum"), keepdim, dtype);
}

Tensor mean_any(const Tensor& a, nb::handle dim, bool keepdim, std::optional<DType> dtype) {
  if (dim.is_none() && !keepdim) return mean(a, dtype);
  return mean(a, reduce_dims(a, dim, "mean"), keepdim, dtype);
}

// var/std's Python spellings: unbiased=bool (also positional: x.var(False)) or correction=
// (a number). Parsed here; the arithmetic is C++'s var(a, dims, correction, keepdim).
struct VarArgs {
  std::vector<int64_t> dims;  // empty: every dim
  std::optional<Scalar> correction;
};
VarArgs var_args(const Tensor& a, nb::handle dim, std::optional<bool> unbiased, nb::handle correction, const char* op) {
  if (PyBool_Check(dim.ptr())) {  // var(unbiased) overload
    unbiased = dim.ptr() == Py_True;
    dim = nb::none();
  }
  VarArgs r;
  if (!correction.is_none()) {
    EMBER_CHECK_TYPE(!unbiased, op, "(): cannot specify both unbiased and correction");
    Scalar c;
    EMBER_CHECK_TYPE(scalar_from_python(correction.ptr(), true, c), op, "(): argument 'correction' must be a number, not ",
                     Py_TYPE(correction.ptr())->tp_name);
    r.correction = c;
  } else if (unbiased) {
    r.correction = Scalar(*unbiased ? 1 : 0);
  }
  if (!dim.is_none()) r.dims = reduce_dims(a, dim, op);
  return r;
}
Tensor var_any(const Tensor& a, nb::handle dim, std::optional<bool> unbiased, bool keepdim, nb::handle correction,
               bool take_sqrt) {
  VarArgs v = var_args(a, dim, unbiased, correction, take_sqrt ? "std" : "var");
  return take_sqrt ? std(a, v.dims, v.correction, keepdim) : var(a, v.dims, v.correction, keepdim);
}
nb::tuple var_mean_any(const Tensor& a, nb::handle dim, std::optional<bool> unbiased, bool keepdim,
                       nb::handle correction, bool take_sqrt) {
  VarArgs v = var_args(a, dim, unbiased, correction, take_sqrt ? "std_mean" : "var_mean");
  auto [spread, mu] = take_sqrt ? std_mean(a, v.dims, v.correction, keepdim) : var_mean(a, v.dims, v.correction, keepdim);
  return nb::make_tuple(spread, mu);
}

// p is a number, None (2) or 'fro' (2 over the given dims, as torch.norm).
Tensor norm_any(const Tensor& a, nb::handle p, nb::handle dim, bool keepdim, std::optional<DType> dtype) {
  Scalar pv = 2;
  if (PyUnicode_Check(p.ptr())) {
    std::string s = nb::cast<std::string>(p);
    if (s == "nuc") {  // torch.norm's matrix norm: linalg.matrix_norm over dim (the last two by default)
      auto dims = dims_arg(dim, "norm");
      return linalg::matrix_norm(a, "nuc", dims ? *dims : std::vector<int64_t>{-2, -1}, keepdim, dtype);
    }
    EMBER_CHECK(s == "fro", "norm(): p='", s, "' is not supported by ember (only numbers, 'fro' and 'nuc')");
  } else if (!p.is_none()) {
    EMBER_CHECK_TYPE(scalar_from_python(p.ptr(), true, pv), "norm(): argument 'p' must be a number or 'fro', not ",
                     Py_TYPE(p.ptr())->tp_name);
  }
  std::vector<int64_t> dims = dim.is_none() ? std::vector<int64_t>{} : reduce_dims(a, dim, "norm");
  if (dtype) return norm(a, pv, dims, keepdim, *dtype);
  return norm(a, pv, dims, keepdim);
}

Tensor any_all(const Tensor& a, nb::handle dim, bool keepdim, bool is_any) {
  std::vector<int64_t> dims = dim.is_none() ? std::vector<int64_t>{} : reduce_dims(a, dim, is_any ? "any" : "all");
  return is_any ? any(a, dims, keepdim) : all(a, dims, keepdim);
}

}  // namespace

void bind_ops_reduce(nb::module_& m, TensorClass& cls) {
  using OptDT = std::optional<DType>;
  def_both(m, cls, "sum", &sum_any, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
           nb::arg("dtype") = nb::none());
  def_both(m, cls, "mean", &mean_any, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
           nb::arg("dtype") = nb::none());
  def_both(m, cls, "nansum", [](const Tensor& a, nb::handle dim, bool keepdim, OptDT dtype) {
    return nansum(a, dim.is_none() ? std::vector<int64_t>{} : reduce_dims(a, dim, "nansum"), keepdim, dtype);
  }, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(), nb::arg("dtype") = nb::none());
  def_both(m, cls, "prod", [](const Tensor& a, std::optional<int64_t> dim, bool keepdim, OptDT dtype) {
    if (!dim) return prod(a, dtype);
    return prod(a, *dim, keepdim, dtype);
  }, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(), nb::arg("dtype") = nb::none());

  // max/min: full reduction, (values, indices) along a dim, or elementwise against a tensor.
  def_both(m, cls, "max", [](const Tensor& a) { return max(a); });
  def_both(m, cls, "max", [](const Tensor& a, int64_t dim, bool keepdim) {
    auto [v, i] = max(a, dim, keepdim);
    return return_pair("max", v, i);
  }, nb::arg("dim"), nb::arg("keepdim") = false);
  def_both(m, cls, "max", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, nb::arg("other"));
  def_both(m, cls, "min", [](const Tensor& a) { return min(a); });
  def_both(m, cls, "min", [](const Tensor& a, int64_t dim, bool keepdim) {
    auto [v, i] = min(a, dim, keepdim);
    return return_pair("min", v, i);
  }, nb::arg("dim"), nb::arg("keepdim") = false);
  def_both(m, cls, "min", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, nb::arg("other"));
  def_both(m, cls, "amax", [](const Tensor& a, nb::handle dim, bool keepdim) {
    auto d = dims_arg(dim, "amax");
    return amax(a, d ? IntArrayRef(*d) : IntArrayRef(), keepdim);
  }, nb::arg("dim") = nb::tuple(), nb::arg("keepdim") = false);
  def_both(m, cls, "amin", [](const Tensor& a, nb::handle dim, bool keepdim) {
    auto d = dims_arg(dim, "amin");
    return amin(a, d ? IntArrayRef(*d) : IntArrayRef(), keepdim);
  }, nb::arg("dim") = nb::tuple(), nb::arg("keepdim") = false);
  def_both(m, cls, "aminmax", [](const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
    auto [lo, hi] = aminmax(a, dim, keepdim);
    return return_pair("aminmax", lo, hi);
  }, nb::kw_only(), nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);
  def_both(m, cls, "argmax", [](const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
    return argmax(a, dim, keepdim);
  }, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);
  def_both(m, cls, "argmin", [](const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
    return argmin(a, dim, keepdim);
  }, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);

  // ---- statistics
  def_both(m, cls, "var", [](const Tensor& a, nb::handle dim, std::optional<bool> ub, bool keepdim, nb::handle c) {
    return var_any(a, dim, ub, keepdim, c, false);
  }, nb::arg("dim") = nb::none(), nb::arg("unbiased") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
           nb::arg("correction") = nb::none());
  def_both(m, cls, "std", [](const Tensor& a, nb::handle dim, std::optional<bool> ub, bool keepdim, nb::handle c) {
    return var_any(a, dim, ub, keepdim, c, true);
  }, nb::arg("dim") = nb::none(), nb::arg("unbiased") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
           nb::arg("correction") = nb::none());
  m.def("var_mean", [](const Tensor& a, nb::handle dim, std::optional<bool> ub, bool keepdim, nb::handle c) {
    return var_mean_any(a, dim, ub, keepdim, c, false);
  }, nb::arg("input"), nb::arg("dim") = nb::none(), nb::arg("unbiased") = nb::none(), nb::arg("keepdim") = false,
        nb::kw_only(), nb::arg("correction") = nb::none());
  m.def("std_mean", [](const Tensor& a, nb::handle dim, std::optional<bool> ub, bool keepdim, nb::handle c) {
    return var_mean_any(a, dim, ub, keepdim, c, true);
  }, nb::arg("input"), nb::arg("dim") = nb::none(), nb::arg("unbiased") = nb::none(), nb::arg("keepdim") = false,
        nb::kw_only(), nb::arg("correction") = nb::none());
  def_both(m, cls, "norm", &norm_any, nb::arg("p") = "fro", nb::arg("dim") = nb::none(), nb::arg("keepdim") = false,
           nb::arg("dtype") = nb::none());
  def_both(m, cls, "logsumexp", [](const Tensor& a, nb::handle dim, bool keepdim) {
    return logsumexp(a, reduce_dims(a, dim, "logsumexp"), keepdim);
  }, nb::arg("dim"), nb::arg("keepdim") = false);
  def_both(m, cls, "any", [](const Tensor& a, nb::handle dim, bool keepdim) { return any_all(a, dim, keepdim, true); },
           nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);
  def_both(m, cls, "all", [](const Tensor& a, nb::handle dim, bool keepdim) { return any_all(a, dim, keepdim, false); },
           nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);
  def_both(m, cls, "count_nonzero", [](const Tensor& a, nb::handle dim) {
    auto d = dims_arg(dim, "count_nonzero");
    return count_nonzero(a, d ? IntArrayRef(*d) : IntArrayRef());
  }, nb::arg("dim") = nb::none());
  def_both(m, cls, "median", [](const Tensor& a) { return median(a); });
  def_both(m, cls, "median", [](const Tensor& a, int64_t dim, bool keepdim) {
    auto [v, i] = median(a, dim, keepdim);
    return return_pair("median", v, i);
  }, nb::arg("dim"), nb::arg("keepdim") = false);
  def_both(m, cls, "nanmedian", [](const Tensor& a) { return nanmedian(a); });
  def_both(m, cls, "nanmedian", [](const Tensor& a, int64_t dim, bool keepdim) {
    auto [v, i] = nanmedian(a, dim, keepdim);
    return return_pair("nanmedian", v, i);
  }, nb::arg("dim"), nb::arg("keepdim") = false);
  def_both(m, cls, "kthvalue", [](const Tensor& a, int64_t k, int64_t dim, bool keepdim) {
    auto [v, i] = kthvalue(a, k, dim, keepdim);
    return return_pair("kthvalue", v, i);
  }, nb::arg("k"), nb::arg("dim") = -1, nb::arg("keepdim") = false);

  // ---- scans and normalisations
  def_both(m, cls, "cumsum", [](const Tensor& a, int64_t dim, OptDT dtype) { return cumsum(a, dim, dtype); },
           nb::arg("dim"), nb::kw_only(), nb::arg("dtype") = nb::none());
  def_both(m, cls, "cumprod", [](const Tensor& a, int64_t dim, OptDT dtype) { return cumprod(a, dim, dtype); },
           nb::arg("dim"), nb::kw_only(), nb::arg("dtype") = nb::none());
  def_both(m, cls, "softmax", [](const Tensor& a, int64_t dim, OptDT dtype) { return softmax(a, dim, dtype); },
           nb::arg("dim"), nb::arg("dtype") = nb::none());
  def_both(m, cls, "log_softmax", [](const Tensor& a, int64_t dim, OptDT dtype) {
    return log_softmax(a, dim, dtype);
  }, nb::arg("dim"), nb::arg("dtype") = nb::none());
  def_both(m, cls, "diff", [](const Tensor& a, int64_t n, int64_t dim, const std::optional<Tensor>& prepend,
                              const std::optional<Tensor>& append) { return diff(a, n, dim, prepend, append); },
           nb::arg("n") = 1, nb::arg("dim") = -1, nb::arg("prepend") = nb::none(), nb::arg("append") = nb::none());

  // ---- sorting and searching
  def_both(m, cls, "sort", [](const Tensor& a, int64_t dim, bool descending, bool stable) {
    auto [v, i] = sort(a, dim, descending, stable);
    return return_pair("sort", v, i);
  }, nb::arg("dim") = -1, nb::arg("descending") = false, nb::arg("stable") = false);
  def_both(m, cls, "argsort", [](const Tensor& a, int64_t dim, bool descending, bool stable) {
    return argsort(a, dim, descending, stable);
  }, nb::arg("dim") = -1, nb::arg("descending") = false, nb::arg("stable") = false);
  def_both(m, cls, "msort", [](const Tensor& a) { return msort(a); });
  def_both(m, cls, "topk", [](const Tensor& a, int64_t k, int64_t dim, bool largest, bool sorted) {
    auto [v, i] = topk(a, k, dim, largest, sorted);
    return return_pair("topk", v, i);
  }, nb::arg("k"), nb::arg("dim") = -1, nb::arg("largest") = true, nb::arg("sorted") = true);
  def_both(m, cls, "unique", [](const Tensor& a, bool sorted, bool inverse, bool counts,
                                std::optional<int64_t> dim) -> nb::object {
    auto [values, inv, cnt] = unique(a, sorted, inverse, counts, dim);
    if (!inverse && !counts) return nb::cast(values);
    if (inverse && counts) return nb::make_tuple(values, inv, cnt);
    return nb::make_tuple(values, inverse ? inv : cnt);
  }, nb::arg("sorted") = true, nb::arg("return_inverse") = false, nb::arg("return_counts") = false,
           nb::arg("dim") = nb::none());
  def_both(m, cls, "bincount", [](const Tensor& a, std::optional<Tensor> weights, int64_t minlength) {
    return bincount(a, weights, minlength);
  }, nb::arg("weights") = nb::none(), nb::arg("minlength") = 0);
  def_both(m, cls, "nonzero", [](const Tensor& a, bool as_tuple) -> nb::object {
    if (as_tuple) return tensor_tuple(nonzero_numpy(a));
    return nb::cast(nonzero(a));
  }, nb::kw_only(), nb::arg("as_tuple") = false);
  def_both(m, cls, "argwhere", [](const Tensor& a) { return argwhere(a); });
  // torch._foreach_norm / _foreach_mul_: multi-tensor ops (a few launches on CUDA for a list).
  m.def("_foreach_norm", [](std::vector<Tensor> tensors, double ord) {
    nb::gil_scoped_release nogil;
    return _foreach_norm(tensors, ord);
  }, nb::arg("self"), nb::arg("ord") = 2.0);
  m.def("_foreach_mul_", [](std::vector<Tensor> tensors, const Tensor& scale) {
    nb::gil_scoped_release nogil;
    _foreach_mul_(tensors, scale);
  }, nb::arg("self"), nb::arg("other"));
  m.def("_foreach_mul_", [](std::vector<Tensor> tensors, const Scalar& scale) {
    nb::gil_scoped_release nogil;
    _foreach_mul_(tensors, scale);
  }, nb::arg("self"), nb::arg("scalar"));
}

}  // namespace ember::python
