#pragma once
// Shared by the bind_ops_*.cpp files: the math ops of include/ember/ops.h bound as ember.<op>
// module functions and Tensor methods with torch's Python signatures. Split over several files
// so each one compiles in reasonable time.
#include <optional>
#include <vector>

#include "bind.h"

namespace ember::python {

using TensorClass = nb::class_<Tensor>;

void bind_ops_creation(nb::module_& m, TensorClass& cls);   // zeros, rand, arange, *_like, new_*
void bind_ops_shape(nb::module_& m, TensorClass& cls);      // views, cat/stack, split, ...
void bind_ops_math(nb::module_& m, TensorClass& cls);       // elementwise functions and methods
void bind_ops_operators(TensorClass& cls);                  // + - * / ... on Tensor
void bind_ops_reduce(nb::module_& m, TensorClass& cls);     // sum/max/sort/..., namedtuple results
void bind_ops_linalg(nb::module_& m, TensorClass& cls);     // matmul family, einsum, indexing ops, random

// Binds f as the module function ember.<name>(input, ...) and as the method Tensor.<name>(...).
// extra are the annotations after the tensor argument (nanobind leaves self out for methods).
template <class F, class... Extra>
void def_both(nb::module_& m, TensorClass& cls, const char* name, const F& f, const Extra&... extra) {
  m.def(name, f, nb::arg("input"), extra...);
  cls.def(name, f, extra...);
}

// A tuple of tensors (torch returns tuples from split/chunk/unbind/broadcast_tensors).
nb::tuple tensor_tuple(const std::vector<Tensor>& v);
// torch.return_types.<name>(first, second): a namedtuple with torch's field names
// (values/indices for max, min, sort, topk, median, ...).
nb::object return_pair(const char* name, Tensor first, Tensor second);

// An operand that may be a Python number, for C++ ops that only take tensors: a number becomes
// a 0-dim wrapped-number tensor (on the host, as torch's), a tensor passes through.
inline const Tensor& as_tensor(const Tensor& t) { return t; }
inline Tensor as_tensor(const Scalar& s) { return wrapped_scalar(s); }
// A dim argument: None -> nullopt, an int -> {dim}, a tuple/list of ints -> the dims.
std::optional<std::vector<int64_t>> dims_arg(nb::handle h, const char* op, const char* arg = "dim");

}  // namespace ember::python
