// Tensor's Python protocol: construction from data, metadata, conversion (to/numpy/DLPack),
// printing, Python number protocols, iteration. Indexing is in bind_indexing.cpp; math ops in
// bind_ops*.cpp; autograd attributes in bind_autograd.cpp.
#include <cstring>

#include <nanobind/ndarray.h>

#include "bind.h"

namespace ember::python {

std::vector<int64_t> sizes_from_args(const nb::args& args, const char* what) {
  std::vector<int64_t> out;
  if (args.size() == 1 && (PyTuple_Check(args[0].ptr()) || PyList_Check(args[0].ptr()))) {
    nb::handle seq = args[0];
    for (nb::handle h : seq) {
      EMBER_CHECK_TYPE(PyIndex_Check(h.ptr()) && !PyBool_Check(h.ptr()), what,
                       "(): argument 'size' must be a tuple of ints, but found element of type ",
                       Py_TYPE(h.ptr())->tp_name);
      out.push_back(PyLong_AsLongLong(h.ptr()));
    }
    return out;
  }
  for (nb::handle h : args) {
    EMBER_CHECK_TYPE(PyIndex_Check(h.ptr()) && !PyBool_Check(h.ptr()), what,
                     "(): argument 'size' must be a tuple of ints, but found element of type ",
                     Py_TYPE(h.ptr())->tp_name);
    out.push_back(PyLong_AsLongLong(h.ptr()));
  }
  return out;
}

namespace {

// ---- torch.tensor(data): nested sequences of numbers -----------------------------------------

enum class Kind { Bool = 0, Int = 1, Float = 2 };

struct DataWalk {
  std::vector<int64_t> shape;
  std::vector<Scalar> values;
  Kind kind = Kind::Bool;
  bool any = false;
};

bool is_sequence(PyObject* o) { return PyList_Check(o) || PyTuple_Check(o); }

void note_kind(DataWalk& w, const Scalar& s) {
  Kind k = s.is_bool() ? Kind::Bool : s.is_integral() ? Kind::Int : Kind::Float;
  if (!w.any || int(k) > int(w.kind)) w.kind = k;
  w.any = true;
}

// The shape is read from the first element at each depth; every other element must agree.
void infer_shape(PyObject* o, DataWalk& w) {
  while (true) {
    if (is_sequence(o)) {
      Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
      w.shape.push_back(n);
      if (n == 0) return;
      o = PySequence_Fast_GET_ITEM(o, 0);
      continue;
    }
    if (nb::isinstance<Tensor>(nb::handle(o))) {
      for (int64_t s : tensor_of(o).sizes()) w.shape.push_back(s);
    }
    return;
  }
}

void flatten(PyObject* o, size_t depth, DataWalk& w) {
  if (depth < w.shape.size() && is_sequence(o)) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    EMBER_CHECK_VALUE(n == w.shape[depth], "expected sequence of length ", w.shape[depth], " at dim ", depth,
                      " (got ", n, ")");
    for (Py_ssize_t i = 0; i < n; ++i) flatten(PySequence_Fast_GET_ITEM(o, i), depth + 1, w);
    return;
  }
  if (nb::isinstance<Tensor>(nb::handle(o))) {
    const Tensor& t = tensor_of(o);
    Shape rest(w.shape.begin() + depth, w.shape.end());
    EMBER_CHECK_VALUE(t.sizes() == rest, "expected sequence of length ", rest.empty() ? 0 : rest[0],
                      " at dim ", depth, " (got a tensor of shape ", t.sizes(), ")");
    Tensor flat = t.detach().reshape({-1});
    Kind k = t.dtype() == kBool ? Kind::Bool : is_floating(t.dtype()) ? Kind::Float : Kind::Int;
    if (!w.any || int(k) > int(w.kind)) w.kind = k;
    w.any = true;
    Tensor f64 = flat.to(k == Kind::Float ? kFloat64 : kInt64).contiguous();
    for (int64_t i = 0; i < f64.numel(); ++i) {
      if (k == Kind::Float) w.values.emplace_back(f64.data_ptr<double>()[i]);
      else if (k == Kind::Bool) w.values.emplace_back(f64.data_ptr<int64_t>()[i] != 0);
      else w.values.emplace_back(f64.data_ptr<int64_t>()[i]);
    }
    return;
  }
  EMBER_CHECK_VALUE(depth == w.shape.size(), "expected sequence of length ",
                    depth < w.shape.size() ? w.shape[depth] : 0, " at dim ", depth, " (got a scalar)");
  Scalar s;
  if (!scalar_from_python(o, true, s)) {
    throw ember::TypeError(detail::cat("Could not infer dtype of ", Py_TYPE(o)->tp_name));
  }
  note_kind(w, s);
  w.values.push_back(s);
}

bool is_numpy_array(nb::handle h) {
  PyTypeObject* t = Py_TYPE(h.ptr());
  return std::strcmp(t->tp_name, "numpy.ndarray") == 0;
}

DType dtype_from_dlpack(nb::dlpack::dtype d) {
  using nb::dlpack::dtype_code;
  switch (dtype_code(d.code)) {
    case dtype_code::Bool: return kBool;
    case dtype_code::Int:
      if (d.bits == 8) return kInt8;
      if (d.bits == 16) return kInt16;
      if (d.bits == 32) return kInt32;
      if (d.bits == 64) return kInt64;
      break;
    case dtype_code::UInt:
      if (d.bits == 8) return kUInt8;
      if (d.bits == 1) return kBool;
      break;
    case dtype_code::Float:
      if (d.bits == 16) return kFloat16;
      if (d.bits == 32) return kFloat32;
      if (d.bits == 64) return kFloat64;
      break;
    case dtype_code::Bfloat:
      if (d.bits == 16) return kBFloat16;
      break;
    default: break;
  }
  throw ember::TypeError(detail::cat("can't convert an array of element type (code ", int(d.code), ", ", int(d.bits),
                                     " bits); the only supported types are: float64, float32, float16, bfloat16, "
                                     "int64, int32, int16, int8, uint8, and bool."));
}

nb::dlpack::dtype dlpack_dtype(DType t) {
  using nb::dlpack::dtype_code;
  switch (t) {
    case kBool: return {uint8_t(dtype_code::Bool), 8, 1};
    case kUInt8: return {uint8_t(dtype_code::UInt), 8, 1};
    case kInt8: return {uint8_t(dtype_code::Int), 8, 1};
    case kInt16: return {uint8_t(dtype_code::Int), 16, 1};
    case kInt32: return {uint8_t(dtype_code::Int), 32, 1};
    case kInt64: return {uint8_t(dtype_code::Int), 64, 1};
    case kFloat16: return {uint8_t(dtype_code::Float), 16, 1};
    case kBFloat16: return {uint8_t(dtype_code::Bfloat), 16, 1};
    case kFloat32: return {uint8_t(dtype_code::Float), 32, 1};
    case kFloat64: return {uint8_t(dtype_code::Float), 64, 1};
  }
  return {};
}

// Wraps an array someone else owns (NumPy, DLPack producer) as a tensor sharing its memory;
// the array stays alive until the last view of the tensor is gone.
Tensor tensor_from_ndarray(const nb::ndarray<>& a, const char* what) {
  EMBER_CHECK(a.device_type() == nb::device::cpu::value, what, ": only CPU arrays can be wrapped, got device type ",
              a.device_type());
  DType dtype = dtype_from_dlpack(a.dtype());
  Shape sizes(a.ndim()), strides(a.ndim());
  int64_t extent = 1;
  bool empty = false;
  for (size_t i = 0; i < a.ndim(); ++i) {
    sizes[i] = int64_t(a.shape(i));
    strides[i] = int64_t(a.stride(i));
    EMBER_CHECK_VALUE(strides[i] >= 0 || sizes[i] <= 1, what,
                      ": at least one stride in the given numpy array is negative, and tensors with negative "
                      "strides are not currently supported. (You can probably work around this by making a copy "
                      "of your array with array.copy().)");
    if (sizes[i] == 0) empty = true;
    else extent += (sizes[i] - 1) * std::max<int64_t>(strides[i], 0);
  }
  if (empty) extent = 0;
  auto* keep = new nb::ndarray<>(a);
  auto deleter = [](void*, void* ctx) {
    if (!Py_IsInitialized()) return;  // interpreter gone: nothing left to release
    nb::gil_scoped_acquire gil;
    delete static_cast<nb::ndarray<>*>(ctx);
  };
  auto storage = std::make_shared<Storage>(const_cast<void*>(a.data()), size_t(extent * element_size(dtype)),
                                           Device(DeviceType::CPU), deleter, keep);
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, std::move(sizes), std::move(strides), 0));
}

}  // namespace

Tensor tensor_from_data(nb::handle data, std::optional<DType> dtype, std::optional<Device> device,
                        bool requires_grad) {
  Tensor out;
  if (nb::isinstance<Tensor>(data)) {
    out = tensor_of(data).detach().clone();
    if (dtype) out = out.to(*dtype);
  } else if (is_numpy_array(data)) {
    nb::ndarray<> a = nb::cast<nb::ndarray<>>(data);
    out = tensor_from_ndarray(a, "tensor").clone();
    if (dtype) out = out.to(*dtype);
  } else {
    DataWalk w;
    infer_shape(data.ptr(), w);
    flatten(data.ptr(), 0, w);
    DType t = dtype ? *dtype
                    : !w.any ? default_dtype()
                    : w.kind == Kind::Bool ? kBool
                    : w.kind == Kind::Int ? kInt64
                                          : default_dtype();
    out = empty(w.shape, {.dtype = t});
    char* dst = static_cast<char*>(out.data_ptr());
    int64_t step = element_size(t);
    for (size_t i = 0; i < w.values.size(); ++i) w.values[i].store(dst + i * step, t);
  }
  if (device && *device != out.device()) out = out.to(*device);
  if (requires_grad) out.requires_grad_(true);
  return out;
}

// Defined here, used by bind_tensor below and by DLPack import.
Tensor from_numpy(nb::handle array) {
  EMBER_CHECK_TYPE(is_numpy_array(array), "expected np.ndarray (got ", Py_TYPE(array.ptr())->tp_name, ")");
  return tensor_from_ndarray(nb::cast<nb::ndarray<>>(array), "from_numpy");
}

void bind_tensor(nb::module_& m, nb::class_<Tensor>& cls) {
  m.def("tensor", &tensor_from_data, nb::arg("data"), nb::kw_only(), nb::arg("dtype") = nb::none(),
        nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);
  m.def("from_numpy", &from_numpy, nb::arg("ndarray"));
  cls.def("__repr__", &Tensor::str);
  cls.def_prop_ro("shape", [](const Tensor& t) { return size_object(t.sizes()); });
  cls.def_prop_ro("dtype", [](const Tensor& t) { return t.dtype(); });
  cls.def_prop_ro("device", [](const Tensor& t) { return t.device(); });
  (void)dlpack_dtype;
}

}  // namespace ember::python
