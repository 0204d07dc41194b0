#pragma once
// Shared by every binding file of ember._C: how Python values become ember's C++ types (type
// casters for Scalar, DType, IntArrayRef, TensorList) and the bind_* entry points module.cpp
// calls. The bindings are glue only: each forwards to the C++ API (include/ember/*.h).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/pair.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "ember/ember.h"

namespace nb = nanobind;

namespace ember::python {

// The object behind ember.float32, ember.int64, ...: one singleton per DType.
struct PyDType {
  DType value;
};
// The singleton Python object for t (ember.float32 ...).
nb::handle dtype_object(DType t);
// ember.Size(sizes): a tuple subclass, as torch.Size.
nb::object size_object(IntArrayRef sizes);
// TensorOptions from the keyword arguments factory functions take.
inline TensorOptions make_options(std::optional<DType> dtype, std::optional<Device> device,
                                  bool requires_grad = false) {
  return {.dtype = dtype, .device = device, .requires_grad = requires_grad};
}
// A Python number (bool/int/float, or a NumPy scalar) as a Scalar; false if it is not one.
bool scalar_from_python(PyObject* o, bool convert, Scalar& out);
// The Python number for a Scalar.
PyObject* scalar_to_python(const Scalar& s);
// Tensor from any data torch.tensor accepts (nested sequences, numbers, NumPy arrays, tensors).
Tensor tensor_from_data(nb::handle data, std::optional<DType> dtype, std::optional<Device> device,
                        bool requires_grad);

// Sizes given either way torch accepts them: f(2, 3), f((2, 3)), f([2, 3]), f(x.shape).
// `what` names the op in the error for anything else.
std::vector<int64_t> sizes_from_args(const nb::args& args, const char* what);
// The Tensor inside a Python object known to be one (no checks).
inline Tensor& tensor_of(nb::handle h) { return *nb::inst_ptr<Tensor>(h); }

// Entry points, one per binding file; module.cpp calls them in this order.
void bind_core(nb::module_& m);                              // dtype, device, Size, Generator, errors
void bind_tensor(nb::module_& m, nb::class_<Tensor>& cls);   // Tensor basics, numpy, DLPack
void bind_indexing(nb::class_<Tensor>& cls);                 // x[...] and x[...] = v
void bind_numpy_operators(nb::class_<Tensor>& cls);          // ndarray <op> tensor (after bind_ops)
void bind_ops(nb::module_& m, nb::class_<Tensor>& cls);      // math ops as functions and methods
void bind_autograd(nb::module_& m, nb::class_<Tensor>& cls);
void bind_nn(nb::module_& m);                                // nn.functional, nn.init, C++ modules
void bind_nn_layers(nb::module_& m);                         // issue 15 layers: interpolate, ... (into _C._nn)
void bind_optim(nb::module_& m);
void bind_lr_scheduler(nb::module_& m);                      // _C._lr_rules: the schedulers' formulas
void bind_serialize(nb::module_& m);                         // Value <-> Python, save/load
void bind_data(nb::module_& m);
void bind_vision(nb::module_& m);                            // ember.vision: datasets and transforms
void bind_special(nb::module_& m, nb::class_<Tensor>& cls);  // special functions and scans (issue 15)

}  // namespace ember::python

namespace nanobind::detail {

template <> struct type_caster<ember::Scalar> {
  NB_TYPE_CASTER(ember::Scalar, const_name("Number"))
  bool from_python(handle src, uint8_t flags, cleanup_list*) noexcept {
    return ember::python::scalar_from_python(src.ptr(), flags & (uint8_t)cast_flags::convert, value);
  }
  static handle from_cpp(const ember::Scalar& s, rv_policy, cleanup_list*) noexcept {
    return ember::python::scalar_to_python(s);
  }
};

template <> struct type_caster<ember::DType> {
  NB_TYPE_CASTER(ember::DType, const_name("ember.dtype"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    PyObject* o = src.ptr();
    // torch accepts the Python types as dtypes: float -> float64, int -> int64, bool -> bool.
    if (o == (PyObject*)&PyFloat_Type) { value = ember::kFloat64; return true; }
    if (o == (PyObject*)&PyLong_Type) { value = ember::kInt64; return true; }
    if (o == (PyObject*)&PyBool_Type) { value = ember::kBool; return true; }
    if (!nanobind::isinstance<ember::python::PyDType>(src)) return false;
    value = nanobind::inst_ptr<ember::python::PyDType>(src)->value;
    return true;
  }
  static handle from_cpp(ember::DType t, rv_policy, cleanup_list*) noexcept {
    return ember::python::dtype_object(t).inc_ref();
  }
};

// Shapes and dim lists: a tuple/list/ember.Size of ints, or one int (x.sum(1), x.view(-1)).
template <> struct type_caster<ember::IntArrayRef> {
  std::vector<int64_t> storage;
  NB_TYPE_CASTER(ember::IntArrayRef, const_name("Sequence[int]"))
  bool from_python(handle src, uint8_t flags, cleanup_list*) noexcept {
    PyObject* o = src.ptr();
    storage.clear();
    if (PyLong_Check(o) && !PyBool_Check(o)) {
      storage.push_back(PyLong_AsLongLong(o));
      value = ember::IntArrayRef(storage);
      return !PyErr_Occurred();
    }
    if (!PyTuple_Check(o) && !PyList_Check(o)) return false;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    PyObject** items = PySequence_Fast_ITEMS(o);
    storage.reserve(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* it = items[i];
      if (PyBool_Check(it)) return false;
      if (!PyLong_Check(it)) {
        // NumPy integers and 0-dim integer tensors have __index__.
        if (!(flags & (uint8_t)cast_flags::convert) || !PyIndex_Check(it)) return false;
      }
      long long v = PyLong_AsLongLong(it);
      if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); return false; }
      storage.push_back(v);
    }
    value = ember::IntArrayRef(storage);
    return true;
  }
  static handle from_cpp(ember::IntArrayRef v, rv_policy, cleanup_list*) noexcept {
    PyObject* t = PyTuple_New((Py_ssize_t)v.size());
    for (size_t i = 0; i < v.size(); ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(v[i]));
    return t;
  }
};

// cat/stack and friends: a tuple or list of tensors.
template <> struct type_caster<ember::TensorList> {
  std::vector<ember::Tensor> storage;
  NB_TYPE_CASTER(ember::TensorList, const_name("Sequence[ember.Tensor]"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    PyObject* o = src.ptr();
    if (!PyTuple_Check(o) && !PyList_Check(o)) return false;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    PyObject** items = PySequence_Fast_ITEMS(o);
    storage.clear();
    storage.reserve(n);
    for (Py_ssize_t i = 0; i < n; ++i) {
      ember::Tensor* t = nullptr;
      if (!nanobind::try_cast<ember::Tensor*>(handle(items[i]), t) || !t) return false;
      storage.push_back(*t);
    }
    value = ember::TensorList(storage);
    return true;
  }
  static handle from_cpp(ember::TensorList, rv_policy, cleanup_list*) noexcept { return nullptr; }
};

}  // namespace nanobind::detail
