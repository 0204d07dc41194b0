// Tensor's Python protocol: construction from data, metadata, conversion (to/numpy/DLPack),
// printing, Python number protocols, iteration. Indexing is in bind_indexing.cpp; math ops in
// bind_ops*.cpp; autograd attributes in bind_autograd.cpp.
#include <cstring>
#include <iterator>

#include <nanobind/ndarray.h>

#include "bind.h"
#include "ember/compile/capture.h"

namespace ember::python {

std::vector<int64_t> sizes_from_args(const nb::args& args, const char* what) {
  std::vector<int64_t> out;
  // f((2, 3)) / f([2, 3]) / f(x.shape) name the sizes in one sequence; f(2, 3) spells them out.
  bool one_sequence = args.size() == 1 && (PyTuple_Check(args[0].ptr()) || PyList_Check(args[0].ptr()));
  nb::handle items = one_sequence ? nb::handle(args[0]) : nb::handle(args);
  for (nb::handle h : items) {
    EMBER_CHECK_TYPE(PyIndex_Check(h.ptr()) && !PyBool_Check(h.ptr()), what,
                     "(): argument 'size' must be a tuple of ints, but found element of type ",
                     Py_TYPE(h.ptr())->tp_name);
    out.push_back(PyLong_AsLongLong(h.ptr()));
  }
  return out;
}

namespace {

// ---- torch.tensor(data): nested sequences of numbers -----------------------------------------

enum class Kind { Bool = 0, Int = 1, Float = 2, Complex = 3 };

struct DataWalk {
  std::vector<int64_t> shape;
  std::vector<Scalar> values;
  Kind kind = Kind::Bool;
  bool any = false;
};

bool is_sequence(PyObject* o) { return PyList_Check(o) || PyTuple_Check(o); }

void note_kind(DataWalk& w, const Scalar& s) {
  Kind k = s.is_bool() ? Kind::Bool : s.is_integral() ? Kind::Int : s.is_complex() ? Kind::Complex : Kind::Float;
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
    Kind k = t.dtype() == kBool ? Kind::Bool : is_complex(t.dtype()) ? Kind::Complex
             : is_floating(t.dtype()) ? Kind::Float : Kind::Int;
    if (!w.any || int(k) > int(w.kind)) w.kind = k;
    w.any = true;
    Tensor f64 = flat.to(k == Kind::Complex ? kComplex128 : k == Kind::Float ? kFloat64 : kInt64).contiguous();
    for (int64_t i = 0; i < f64.numel(); ++i) {
      if (k == Kind::Complex) w.values.emplace_back(f64.data_ptr<complex128>()[i]);
      else if (k == Kind::Float) w.values.emplace_back(f64.data_ptr<double>()[i]);
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
    case dtype_code::Complex:
      if (d.bits == 64) return kComplex64;
      if (d.bits == 128) return kComplex128;
      break;
    case dtype_code::Bfloat:
      if (d.bits == 16) return kBFloat16;
      break;
    default: break;
  }
  throw ember::TypeError(detail::cat("can't convert an array of element type (code ", int(d.code), ", ", int(d.bits),
                                     " bits); the only supported types are: float64, float32, float16, complex64, complex128, "
                                     "bfloat16, int64, int32, int16, int8, uint8, and bool."));
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
    case kComplex64: return {uint8_t(dtype_code::Complex), 64, 1};
    case kComplex128: return {uint8_t(dtype_code::Complex), 128, 1};
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
  if (nb::isinstance<Tensor>(data) || is_numpy_array(data)) {
    // A copy, converted on the way when a dtype is given (one pass either way).
    Tensor src = nb::isinstance<Tensor>(data) ? tensor_of(data).detach()
                                              : tensor_from_ndarray(nb::cast<nb::ndarray<>>(data), "tensor");
    out = src.to(dtype ? *dtype : src.dtype(), /*copy=*/true);
    if (!device && !nb::isinstance<Tensor>(data)) device = default_device();  // a NumPy array: like a list
  } else {
    DataWalk w;
    infer_shape(data.ptr(), w);
    flatten(data.ptr(), 0, w);
    DType t = dtype ? *dtype
                    : !w.any ? default_dtype()
                    : w.kind == Kind::Bool ? kBool
                    : w.kind == Kind::Int ? kInt64
                    : w.kind == Kind::Complex ? real_to_complex(default_dtype())
                                          : default_dtype();
    // Written on the host, then moved where it belongs (the default device when none is named,
    // which may be a GPU: torch.set_default_device("cuda") then torch.tensor([1, 2])).
    out = empty(w.shape, {.dtype = t, .device = Device(DeviceType::CPU)});
    char* dst = static_cast<char*>(out.data_ptr());
    int64_t step = element_size(t);
    for (size_t i = 0; i < w.values.size(); ++i) w.values[i].store(dst + i * step, t);
    if (!device) device = default_device();
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

namespace {

// ---- Tensor.to(...) / conversions ------------------------------------------------------------

// Parses torch's forms: to(dtype), to(device[, dtype]), to(tensor), to(dtype=..., device=...),
// plus non_blocking / copy / memory_format keywords.
Tensor tensor_to(const Tensor& self, const nb::args& args, const nb::kwargs& kwargs) {
  std::optional<DType> dtype;
  std::optional<Device> device;
  bool copy = false, non_blocking = false;
  int positional_bools = 0;
  for (nb::handle a : args) {
    if (nb::isinstance<PyDType>(a)) {
      dtype = nb::inst_ptr<PyDType>(a)->value;
    } else if (nb::isinstance<Tensor>(a)) {
      dtype = tensor_of(a).dtype();
      device = tensor_of(a).device();
    } else if (nb::isinstance<Device>(a)) {
      device = *nb::inst_ptr<Device>(a);
    } else if (PyUnicode_Check(a.ptr())) {
      device = Device(nb::cast<std::string>(a));
    } else if (PyBool_Check(a.ptr())) {
      // to(dtype, non_blocking, copy) positional booleans
      (positional_bools++ == 0 ? non_blocking : copy) = a.ptr() == Py_True;
    } else {
      throw ember::TypeError(detail::cat("to() received an invalid combination of arguments - got an argument of type ",
                                         Py_TYPE(a.ptr())->tp_name,
                                         "; expected a dtype, a device (or device string) or a Tensor"));
    }
  }
  for (auto [k, v] : kwargs) {
    std::string key = nb::cast<std::string>(k);
    if (key == "dtype") {
      if (!v.is_none()) dtype = nb::cast<DType>(v);
    } else if (key == "device") {
      if (!v.is_none()) device = nb::isinstance<Device>(v) ? *nb::inst_ptr<Device>(v) : Device(nb::cast<std::string>(v));
    } else if (key == "copy") {
      copy = nb::cast<bool>(v);
    } else if (key == "non_blocking") {
      non_blocking = nb::cast<bool>(v);
    } else if (key == "memory_format") {
    } else {
      throw ember::TypeError(detail::cat("to() got an unexpected keyword argument '", key, "'"));
    }
  }
  Device dev = device ? *device : self.device();
  DType dt = dtype ? *dtype : self.dtype();
  return self.to(dev, dt, copy, non_blocking);
}

nb::object tolist_rec(const char* data, DType t, IntArrayRef sizes, size_t dim, int64_t offset, IntArrayRef strides) {
  if (dim == sizes.size()) {
    const char* p = data + offset * element_size(t);
    switch (t) {
      case kBool: return nb::bool_(*reinterpret_cast<const bool*>(p));
      case kInt64: return nb::int_(*reinterpret_cast<const int64_t*>(p));
      case kComplex128: {
        auto z = *reinterpret_cast<const complex128*>(p);
        return nb::steal(PyComplex_FromDoubles(z.real(), z.imag()));
      }
      default: return nb::float_(*reinterpret_cast<const double*>(p));
    }
  }
  nb::list out;
  for (int64_t i = 0; i < sizes[dim]; ++i) out.append(tolist_rec(data, t, sizes, dim + 1, offset + i * strides[dim], strides));
  return std::move(out);
}

nb::object tensor_tolist(const Tensor& self) {
  compiler::detail::note_break("Tensor.tolist() reads values into Python");
  DType t = self.dtype() == kBool ? kBool : is_complex(self.dtype()) ? kComplex128
             : is_floating(self.dtype()) ? kFloat64 : kInt64;
  Tensor c = self.detach().to(Device(DeviceType::CPU), t).contiguous();
  Shape strides = contiguous_strides(c.sizes());
  return tolist_rec(static_cast<const char*>(c.data_ptr()), t, c.sizes(), 0, 0, strides);
}

void check_one_element(const Tensor& t) {
  EMBER_CHECK_VALUE(t.numel() == 1, "only one element tensors can be converted to Python scalars");
}

// ---- NumPy and DLPack export -------------------------------------------------------------------

template <class... Framework>
nb::ndarray<Framework...> as_ndarray(const Tensor& self, const char* what) {
  EMBER_CHECK(self.device().is_cpu(), "can't convert ", self.device().str(),
              " device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.");
  if constexpr (sizeof...(Framework) > 0) {  // NumPy: torch's extra checks
    EMBER_CHECK(!self.requires_grad(),
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
    EMBER_CHECK_TYPE(self.dtype() != kBFloat16, "Got unsupported ScalarType BFloat16");
  }
  auto* keep = new Tensor(self.detach());
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape(self.sizes().begin(), self.sizes().end());
  std::vector<int64_t> strides(self.strides().begin(), self.strides().end());
  return nb::ndarray<Framework...>(keep->data_ptr(), shape.size(), shape.data(), owner, strides.data(),
                                dlpack_dtype(self.dtype()), nb::device::cpu::value, 0);
}

Tensor legacy_construct(const nb::args& args, DType dtype) {
  if (args.size() == 0) return empty({0}, {.dtype = dtype});
  if (args.size() == 1 && nb::isinstance<Tensor>(args[0])) return tensor_of(args[0]);
  // (NumPy arrays have __index__, so they are checked before the size form.)
  if (args.size() == 1 && (is_numpy_array(args[0]) || !PyIndex_Check(args[0].ptr())))
    return tensor_from_data(args[0], dtype, std::nullopt, false);
  return zeros(sizes_from_args(args, "Tensor"), {.dtype = dtype});
}

}  // namespace

Tensor from_dlpack(nb::handle obj) {
  if (nb::isinstance<Tensor>(obj)) return tensor_of(obj);
  return tensor_from_ndarray(nb::cast<nb::ndarray<>>(obj), "from_dlpack");
}

void bind_tensor(nb::module_& m, nb::class_<Tensor>& cls) {
  // ---- construction
  m.def("tensor", &tensor_from_data, nb::arg("data"), nb::kw_only(), nb::arg("dtype") = nb::none(),
        nb::arg("device") = nb::none(), nb::arg("requires_grad") = false);
  m.def("as_tensor", [](nb::handle data, std::optional<DType> dtype, std::optional<Device> device) {
    // Shares memory when no conversion is needed, as torch.as_tensor does.
    Tensor t;
    if (nb::isinstance<Tensor>(data)) t = tensor_of(data);
    else if (is_numpy_array(data)) t = from_numpy(data);
    else return tensor_from_data(data, dtype, device, false);
    if (dtype && *dtype != t.dtype()) t = t.to(*dtype);
    if (device && *device != t.device()) t = t.to(*device);
    return t;
  }, nb::arg("data"), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none());
  m.def("from_numpy", &from_numpy, nb::arg("ndarray"));
  m.def("from_dlpack", &from_dlpack, nb::arg("ext_tensor"));
  m.def("to_dlpack", [](const Tensor& t) { return nb::cast(as_ndarray<>(t, "to_dlpack")); },
        nb::arg("tensor"));
  m.def("_legacy_new", [](nb::tuple args, DType dtype) { return legacy_construct(nb::borrow<nb::args>(args), dtype); },
        nb::arg("args"), nb::arg("dtype"));
  // torch.Tensor(x) aliases a tensor, torch.Tensor(2, 3) makes a float tensor of that size,
  // torch.Tensor([1, 2]) copies data as float. nn.Parameter calls Tensor.__init__(self, data).
  cls.def("__init__", [](Tensor* self, const nb::args& args) {
    new (self) Tensor(legacy_construct(args, default_dtype()));
  });

  // ---- metadata
  cls.def_prop_ro("shape", [](const Tensor& t) { return size_object(t.sizes()); });
  cls.def("size", [](const Tensor& t, std::optional<int64_t> dim) -> nb::object {
    if (dim) return nb::int_(t.size(*dim));
    return size_object(t.sizes());
  }, nb::arg("dim") = nb::none());
  cls.def("stride", [](const Tensor& t, std::optional<int64_t> dim) -> nb::object {
    if (dim) return nb::int_(t.stride(*dim));
    return nb::cast(IntArrayRef(t.strides()));
  }, nb::arg("dim") = nb::none());
  cls.def_prop_ro("dtype", [](const Tensor& t) { return t.dtype(); });
  cls.def_prop_ro("device", [](const Tensor& t) { return t.device(); });
  cls.def_prop_ro("ndim", &Tensor::dim);
  cls.def("dim", &Tensor::dim);
  cls.def("ndimension", &Tensor::dim);
  cls.def("numel", &Tensor::numel);
  cls.def("nelement", &Tensor::numel);
  cls.def("storage_offset", &Tensor::storage_offset);
  cls.def("is_contiguous", [](const Tensor& t, nb::handle) { return t.is_contiguous(); },
          nb::arg("memory_format") = nb::none());
  cls.def("is_floating_point", &Tensor::is_floating_point);
  cls.def_prop_ro("is_signed", [](const Tensor& t) { return t.dtype() != kBool && t.dtype() != kUInt8; });
  cls.def("element_size", &Tensor::element_size);
  cls.def_prop_ro("itemsize", &Tensor::element_size);
  cls.def_prop_ro("nbytes", &Tensor::nbytes);
  cls.def("data_ptr", [](const Tensor& t) {  // 0 for a meta tensor (no memory), as torch's
    return t.is_meta() ? uintptr_t(0) : reinterpret_cast<uintptr_t>(t.data_ptr());
  });
  cls.def_prop_ro("is_cuda", &Tensor::is_cuda);
  cls.def_prop_ro("is_meta", &Tensor::is_meta);
  cls.def_prop_ro("is_cpu", &Tensor::is_cpu);
  cls.def_prop_ro("is_sparse", [](const Tensor&) { return false; });
  cls.def_prop_ro("is_quantized", [](const Tensor&) { return false; });
  cls.def_prop_ro("T", &Tensor::T);
  cls.def_prop_ro("mT", &Tensor::mT);

  // ---- conversion
  cls.def("to", &tensor_to);
  cls.def("cpu", [](const Tensor& t) { return t.cpu(); });
  cls.def("cuda", [](const Tensor& t, nb::handle device, bool non_blocking) {
    Device d = device.is_none() ? Device(DeviceType::CUDA)
               : PyLong_Check(device.ptr()) ? Device(DeviceType::CUDA, int16_t(nb::cast<int>(device)))
                                            : nb::cast<Device>(device);
    return t.to(d, false, non_blocking);
  }, nb::arg("device") = nb::none(), nb::arg("non_blocking") = false);
  const std::pair<const char*, DType> casts[] = {
      {"float", kFloat32}, {"double", kFloat64}, {"half", kFloat16}, {"bfloat16", kBFloat16},
      {"long", kInt64},    {"int", kInt32},      {"short", kInt16},  {"char", kInt8},
      {"byte", kUInt8},    {"bool", kBool}};
  for (auto [name, dt] : casts) {
    cls.def(name, [dt](const Tensor& t, nb::handle) { return t.to(dt); }, nb::arg("memory_format") = nb::none());
  }
  cls.def("type", [](const Tensor& t, nb::handle dtype) -> nb::object {
    if (dtype.is_none()) {
      // In DType's order (core/dtype.h); CUDA tensors are ember.cuda.<name>, as torch's.
      static const char* names[] = {"BoolTensor",   "ByteTensor",     "CharTensor",  "ShortTensor",
                                    "IntTensor",    "LongTensor",     "HalfTensor",  "BFloat16Tensor",
                                    "FloatTensor",  "DoubleTensor",   "ComplexFloatTensor",
                                    "ComplexDoubleTensor"};
      static_assert(std::size(names) == size_t(DType::Complex128) + 1, "a name per DType");
      std::string prefix = t.device().is_cuda() ? "ember.cuda." : "ember.";
      return nb::str((prefix + names[int(t.dtype())]).c_str());
    }
    return nb::cast(t.to(nb::cast<DType>(dtype)));
  }, nb::arg("dtype") = nb::none());
  cls.def("type_as", [](const Tensor& t, const Tensor& o) { return t.to(o.dtype()); });
  cls.def("share_memory_", [](nb::handle self) { return self; });
  cls.def("is_shared", [](const Tensor&) { return false; });
  cls.def("item", [](const Tensor& t) { return t.item(); });
  cls.def("tolist", &tensor_tolist);
  cls.def("numpy", [](const Tensor& t, bool force) {
    compiler::detail::note_break("Tensor.numpy() reads values into Python");
    if (force) return as_ndarray<nb::numpy>(t.detach(), "numpy");
    return as_ndarray<nb::numpy>(t, "numpy");
  }, nb::arg("force") = false);
  cls.def("__array__", [](const Tensor& t, nb::handle dtype) {
    nb::object arr = nb::cast(as_ndarray<nb::numpy>(t, "__array__"));
    if (!dtype.is_none()) return arr.attr("astype")(dtype);
    return arr;
  }, nb::arg("dtype") = nb::none());
  cls.attr("__array_priority__") = 1000;  // NumPy defers `ndarray + tensor` to our __radd__
  cls.def("__dlpack__", [](const Tensor& t, nb::handle) {
    // A framework-less nanobind ndarray converts to a DLPack capsule.
    return nb::cast(as_ndarray<>(t, "__dlpack__"));
  }, nb::arg("stream") = nb::none());
  cls.def("__dlpack_device__", [](const Tensor& t) {
    return nb::make_tuple(t.device().is_cpu() ? 1 : 2, t.device().has_index() ? t.device().index : 0);
  });

  // ---- Python protocols
  cls.def("__repr__", &Tensor::str);
  cls.def("__str__", &Tensor::str);
  cls.def("__format__", [](nb::handle self, nb::handle spec) -> nb::object {
    const Tensor& t = tensor_of(self);
    if (t.dim() == 0) return nb::steal(PyObject_Format(nb::cast(t.item()).ptr(), spec.ptr()));
    return nb::steal(PyObject_Format(nb::str(t.str().c_str()).ptr(), spec.ptr()));
  });
  cls.def("__hash__", [](nb::handle self) { return reinterpret_cast<intptr_t>(self.ptr()) >> 4; });
  cls.def("__len__", [](const Tensor& t) {
    EMBER_CHECK_TYPE(t.dim() > 0, "len() of a 0-d tensor");
    return t.size(0);
  });
  cls.def("__iter__", [](const Tensor& t) {
    EMBER_CHECK_TYPE(t.dim() > 0, "iteration over a 0-d tensor");
    return nb::iter(nb::cast(t.unbind(0)));
  });
  cls.def("__bool__", [](const Tensor& t) {
    EMBER_CHECK(t.numel() != 0, "Boolean value of Tensor with no values is ambiguous");
    EMBER_CHECK(t.numel() == 1, "Boolean value of Tensor with more than one value is ambiguous");
    return t.item().to_bool();
  });
  cls.def("__float__", [](const Tensor& t) { check_one_element(t); return t.item().to_double(); });
  cls.def("__int__", [](const Tensor& t) { check_one_element(t); return t.item().to_int(); });
  cls.def("__index__", [](const Tensor& t) {
    EMBER_CHECK_TYPE(t.numel() == 1 && !is_floating(t.dtype()) && t.dtype() != kBool,
                     "only integer tensors of a single element can be converted to an index");
    return t.item().to_int();
  });
  cls.def("__contains__", [](const Tensor& t, nb::handle element) {
    if (nb::isinstance<Tensor>(element)) return eq(t, tensor_of(element)).any().item().to_bool();
    Scalar s;
    EMBER_CHECK_TYPE(scalar_from_python(element.ptr(), true, s),
                     "Tensor.__contains__ only supports Tensor or scalar, but you passed in a ",
                     Py_TYPE(element.ptr())->tp_name);
    return eq(t, s).any().item().to_bool();
  });
}

}  // namespace ember::python

namespace ember::python {

// `ndarray <op> tensor`: NumPy defers to the tensor (__array_priority__), whose reflected
// operator sees the array; it is wrapped without a copy and the result is a tensor, as in torch.
// Bound after the ops' own overloads, so numbers never reach these.
void bind_numpy_operators(nb::class_<Tensor>& cls) {
  using Fn = Tensor (*)(const Tensor&, const Tensor&);
  const std::pair<const char*, Fn> reflected[] = {
      {"__radd__", [](const Tensor& l, const Tensor& r) { return add(l, r); }},
      {"__rsub__", [](const Tensor& l, const Tensor& r) { return sub(l, r); }},
      {"__rmul__", [](const Tensor& l, const Tensor& r) { return mul(l, r); }},
      {"__rtruediv__", [](const Tensor& l, const Tensor& r) { return div(l, r); }},
      {"__rfloordiv__", [](const Tensor& l, const Tensor& r) { return floor_divide(l, r); }},
      {"__rmod__", [](const Tensor& l, const Tensor& r) { return remainder(l, r); }},
      {"__rpow__", [](const Tensor& l, const Tensor& r) { return pow(l, r); }},
      {"__rmatmul__", [](const Tensor& l, const Tensor& r) { return matmul(l, r); }},
  };
  for (auto [name, fn] : reflected) {
    cls.def(name, [fn](const Tensor& self, nb::handle other) -> nb::object {
      if (!is_numpy_array(other)) return nb::borrow(Py_NotImplemented);
      return nb::cast(fn(from_numpy(other), self));
    }, nb::is_operator());
  }
}

}  // namespace ember::python
