// Math ops as ember.<op> functions and Tensor methods: the entry point that calls each
// bind_ops_*.cpp part, plus the small helpers they share (bind_ops.h).
#include <map>
#include <string>

#include "bind_ops.h"

namespace ember::python {
namespace {

// name -> namedtuple type, made once at import (ember.return_types.max & co).
std::map<std::string, nb::object>& return_types() {
  static auto* types = new std::map<std::string, nb::object>();
  return *types;
}

void make_return_types(nb::module_& m) {
  nb::module_ sub = m.def_submodule("return_types", "Named-tuple results of max/min/sort/topk/...");
  nb::object namedtuple = nb::module_::import_("collections").attr("namedtuple");
  const std::pair<const char*, const char*> pairs[] = {
      {"max", "values indices"}, {"min", "values indices"},  {"sort", "values indices"},
      {"topk", "values indices"}, {"median", "values indices"}, {"nanmedian", "values indices"}, {"mode", "values indices"},
      {"kthvalue", "values indices"}, {"cummax", "values indices"}, {"cummin", "values indices"},
      {"aminmax", "min max"}};
  for (auto [name, fields] : pairs) {
    nb::object type = namedtuple(name, fields);
    type.attr("__module__") = "ember.return_types";
    sub.attr(name) = type;
    return_types()[name] = type;
  }
}

}  // namespace

nb::tuple tensor_tuple(const std::vector<Tensor>& v) {
  PyObject* t = PyTuple_New(Py_ssize_t(v.size()));
  if (!t) throw nb::python_error();
  nb::tuple out = nb::steal<nb::tuple>(t);
  for (size_t i = 0; i < v.size(); ++i) PyTuple_SET_ITEM(t, Py_ssize_t(i), nb::cast(v[i]).release().ptr());
  return out;
}

nb::object return_pair(const char* name, Tensor first, Tensor second) {
  return return_types().at(name)(std::move(first), std::move(second));
}

std::optional<std::vector<int64_t>> dims_arg(nb::handle h, const char* op, const char* arg) {
  if (h.is_none()) return std::nullopt;
  std::vector<int64_t> dims;
  auto one = [&](nb::handle d) {
    EMBER_CHECK_TYPE(PyIndex_Check(d.ptr()) && !PyBool_Check(d.ptr()), op, "(): argument '", arg,
                     "' must be an int or a tuple of ints, but got ", Py_TYPE(d.ptr())->tp_name);
    long long v = PyLong_AsLongLong(nb::steal(PyNumber_Index(d.ptr())).ptr());
    if (v == -1 && PyErr_Occurred()) throw nb::python_error();
    dims.push_back(v);
  };
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    for (nb::handle d : h) one(d);
  } else {
    one(h);
  }
  return dims;
}

void bind_ops(nb::module_& m, nb::class_<Tensor>& cls) {
  make_return_types(m);
  bind_ops_creation(m, cls);
  bind_ops_shape(m, cls);
  bind_ops_math(m, cls);
  bind_ops_operators(cls);
  bind_ops_reduce(m, cls);
  bind_ops_linalg(m, cls);
}

}  // namespace ember::python
