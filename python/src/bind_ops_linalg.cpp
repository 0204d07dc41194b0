// Linear algebra (matmul family, einsum) and the indexing ops that are functions rather than
// x[...] syntax (gather, scatter, index_add, masked_fill, index_put_, ...). The matmul family
// releases the GIL: those kernels are long enough for other Python threads to run meanwhile.
#include "bind_ops.h"

namespace ember::python {
namespace {

using Self = nb::handle_t<Tensor>;
using NoGil = nb::call_guard<nb::gil_scoped_release>;

std::vector<std::optional<Tensor>> index_list(nb::handle indices) {
  EMBER_CHECK_TYPE(PyTuple_Check(indices.ptr()) || PyList_Check(indices.ptr()),
                   "index_put_(): argument 'indices' must be a tuple of Tensors, not ", Py_TYPE(indices.ptr())->tp_name);
  std::vector<std::optional<Tensor>> out;
  for (nb::handle h : indices) {
    if (h.is_none()) {
      out.emplace_back(std::nullopt);
      continue;
    }
    EMBER_CHECK_TYPE(nb::isinstance<Tensor>(h), "index_put_(): expected Tensor or None as index ", out.size(),
                     ", but got ", Py_TYPE(h.ptr())->tp_name);
    out.emplace_back(tensor_of(h));
  }
  return out;
}

}  // namespace

void bind_ops_linalg(nb::module_& m, TensorClass& cls) {
  // ---- products
  def_both(m, cls, "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, nb::arg("other"), NoGil());
  def_both(m, cls, "mm", [](const Tensor& a, const Tensor& b) { return mm(a, b); }, nb::arg("mat2"), NoGil());
  def_both(m, cls, "bmm", [](const Tensor& a, const Tensor& b) { return bmm(a, b); }, nb::arg("mat2"), NoGil());
  def_both(m, cls, "mv", [](const Tensor& a, const Tensor& b) { return mv(a, b); }, nb::arg("vec"), NoGil());
  def_both(m, cls, "dot", [](const Tensor& a, const Tensor& b) { return dot(a, b); }, nb::arg("other"), NoGil());
  // vdot conjugates its first operand (a no-op for real tensors), as torch.vdot.
  def_both(m, cls, "vdot", [](const Tensor& a, const Tensor& b) { return dot(conj(a), b); }, nb::arg("other"), NoGil());
  def_both(m, cls, "inner", [](const Tensor& a, const Tensor& b) { return inner(a, b); }, nb::arg("other"), NoGil());
  def_both(m, cls, "outer", [](const Tensor& a, const Tensor& b) { return outer(a, b); }, nb::arg("vec2"));
  def_both(m, cls, "ger", [](const Tensor& a, const Tensor& b) { return outer(a, b); }, nb::arg("vec2"));
  def_both(m, cls, "addmm", [](const Tensor& a, const Tensor& m1, const Tensor& m2, const Scalar& beta,
                               const Scalar& alpha) { return addmm(a, m1, m2, beta, alpha); },
           nb::arg("mat1"), nb::arg("mat2"), nb::kw_only(), nb::arg("beta") = 1, nb::arg("alpha") = 1, NoGil());
  cls.def("addmm_", [](Self self, const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) {
    Tensor& t = tensor_of(self);
    {
      nb::gil_scoped_release nogil;
      t.addmm_(m1, m2, beta, alpha);
    }
    return nb::borrow(self);
  }, nb::arg("mat1"), nb::arg("mat2"), nb::kw_only(), nb::arg("beta") = 1, nb::arg("alpha") = 1);
  def_both(m, cls, "addmv", [](const Tensor& a, const Tensor& mat, const Tensor& vec, const Scalar& beta,
                               const Scalar& alpha) { return addmv(a, mat, vec, beta, alpha); },
           nb::arg("mat"), nb::arg("vec"), nb::kw_only(), nb::arg("beta") = 1, nb::arg("alpha") = 1, NoGil());
  def_both(m, cls, "baddbmm", [](const Tensor& a, const Tensor& b1, const Tensor& b2, const Scalar& beta,
                                 const Scalar& alpha) { return baddbmm(a, b1, b2, beta, alpha); },
           nb::arg("batch1"), nb::arg("batch2"), nb::kw_only(), nb::arg("beta") = 1, nb::arg("alpha") = 1, NoGil());
  // einsum("ij,jk->ik", a, b) and einsum("ij,jk->ik", [a, b])
  m.def("einsum", [](const std::string& eq, nb::args operands) {
    std::vector<Tensor> ops;
    if (operands.size() == 1 && !nb::isinstance<Tensor>(operands[0])) ops = nb::cast<std::vector<Tensor>>(operands[0]);
    else ops = nb::cast<std::vector<Tensor>>(operands);
    nb::gil_scoped_release nogil;
    return einsum(eq, ops);
  }, nb::arg("equation"), nb::arg("operands"));

  // ---- gather / scatter
  def_both(m, cls, "index_select", [](const Tensor& a, int64_t dim, const Tensor& index) {
    return index_select(a, dim, index);
  }, nb::arg("dim"), nb::arg("index"));
  def_both(m, cls, "gather", [](const Tensor& a, int64_t dim, const Tensor& index, bool) {
    return gather(a, dim, index);
  }, nb::arg("dim"), nb::arg("index"), nb::kw_only(), nb::arg("sparse_grad") = false);
  def_both(m, cls, "take", [](const Tensor& a, const Tensor& index) { return take(a, index); }, nb::arg("index"));
  def_both(m, cls, "take_along_dim", [](const Tensor& a, const Tensor& index, std::optional<int64_t> dim) {
    return take_along_dim(a, index, dim);
  }, nb::arg("indices"), nb::arg("dim") = nb::none());
  using OptStr = std::optional<std::string>;
  def_both(m, cls, "scatter", [](const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src, OptStr reduce) {
    return reduce ? scatter(a, dim, index, src, *reduce) : scatter(a, dim, index, src);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("src"), nb::kw_only(), nb::arg("reduce") = nb::none());
  def_both(m, cls, "scatter", [](const Tensor& a, int64_t dim, const Tensor& index, const Scalar& value,
                                 OptStr reduce) {
    return reduce ? scatter(a, dim, index, value, *reduce) : scatter(a, dim, index, value);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("value"), nb::kw_only(), nb::arg("reduce") = nb::none());
  cls.def("scatter_", [](Self self, int64_t dim, const Tensor& index, const Tensor& src, OptStr reduce) {
    if (reduce) tensor_of(self).scatter_(dim, index, src, *reduce);
    else tensor_of(self).scatter_(dim, index, src);
    return nb::borrow(self);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("src"), nb::kw_only(), nb::arg("reduce") = nb::none());
  cls.def("scatter_", [](Self self, int64_t dim, const Tensor& index, const Scalar& value, OptStr reduce) {
    if (reduce) tensor_of(self).scatter_(dim, index, value, *reduce);
    else tensor_of(self).scatter_(dim, index, value);
    return nb::borrow(self);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("value"), nb::kw_only(), nb::arg("reduce") = nb::none());
  def_both(m, cls, "scatter_add", [](const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
    return scatter_add(a, dim, index, src);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("src"));
  cls.def("scatter_add_", [](Self self, int64_t dim, const Tensor& index, const Tensor& src) {
    tensor_of(self).scatter_add_(dim, index, src);
    return nb::borrow(self);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("src"));
  def_both(m, cls, "index_add", [](const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src,
                                   const Scalar& alpha) { return index_add(a, dim, index, src, alpha); },
           nb::arg("dim"), nb::arg("index"), nb::arg("source"), nb::kw_only(), nb::arg("alpha") = 1);
  cls.def("index_add_", [](Self self, int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha) {
    tensor_of(self).index_add_(dim, index, src, alpha);
    return nb::borrow(self);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("source"), nb::kw_only(), nb::arg("alpha") = 1);
  def_both(m, cls, "index_fill", [](const Tensor& a, int64_t dim, const Tensor& index, const Scalar& v) {
    return index_fill(a, dim, index, v);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("value"));
  def_both(m, cls, "index_fill", [](const Tensor& a, int64_t dim, const Tensor& index, const Tensor& v) {
    return index_fill(a, dim, index, v);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("value"));
  cls.def("index_fill_", [](Self self, int64_t dim, const Tensor& index, const Scalar& v) {
    tensor_of(self).index_fill_(dim, index, v);
    return nb::borrow(self);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("value"));
  cls.def("index_fill_", [](Self self, int64_t dim, const Tensor& index, const Tensor& v) {
    tensor_of(self).index_fill_(dim, index, v);
    return nb::borrow(self);
  }, nb::arg("dim"), nb::arg("index"), nb::arg("value"));

  // ---- masks
  def_both(m, cls, "masked_fill", [](const Tensor& a, const Tensor& mask, const Scalar& v) {
    return masked_fill(a, mask, v);
  }, nb::arg("mask"), nb::arg("value"));
  def_both(m, cls, "masked_fill", [](const Tensor& a, const Tensor& mask, const Tensor& v) {
    return masked_fill(a, mask, v);
  }, nb::arg("mask"), nb::arg("value"));
  cls.def("masked_fill_", [](Self self, const Tensor& mask, const Scalar& v) {
    tensor_of(self).masked_fill_(mask, v);
    return nb::borrow(self);
  }, nb::arg("mask"), nb::arg("value"));
  cls.def("masked_fill_", [](Self self, const Tensor& mask, const Tensor& v) {
    tensor_of(self).masked_fill_(mask, v);
    return nb::borrow(self);
  }, nb::arg("mask"), nb::arg("value"));
  def_both(m, cls, "masked_select", [](const Tensor& a, const Tensor& mask) { return masked_select(a, mask); },
           nb::arg("mask"));

  // ---- index_put
  def_both(m, cls, "index_put", [](const Tensor& a, nb::handle indices, const Tensor& values, bool accumulate) {
    auto idx = index_list(indices);
    return index_put(a, idx, values, accumulate);
  }, nb::arg("indices"), nb::arg("values"), nb::arg("accumulate") = false);
  cls.def("index_put_", [](Self self, nb::handle indices, const Tensor& values, bool accumulate) {
    auto idx = index_list(indices);
    tensor_of(self).index_put_(idx, values, accumulate);
    return nb::borrow(self);
  }, nb::arg("indices"), nb::arg("values"), nb::arg("accumulate") = false);
  m.def("index_put_", [](Self self, nb::handle indices, const Tensor& values, bool accumulate) {
    auto idx = index_list(indices);
    tensor_of(self).index_put_(idx, values, accumulate);
    return nb::borrow(self);
  }, nb::arg("input"), nb::arg("indices"), nb::arg("values"), nb::arg("accumulate") = false);
  m.def("result_type", [](const Tensor& a, const Tensor& b) { return result_type(a, b); }, nb::arg("tensor1"),
        nb::arg("tensor2"));
  m.def("result_type", [](const Tensor& a, const Scalar& b) { return result_type(a, b); }, nb::arg("tensor1"),
        nb::arg("tensor2"));
  m.def("can_cast", [](DType from, DType to) { return can_cast(from, to); }, nb::arg("from_"), nb::arg("to"));
}

}  // namespace ember::python
