// dtype objects, ember.device, ember.Size, Generator, seeding, threads, and the mapping of
// ember's C++ exceptions onto Python's (RuntimeError, IndexError, ValueError, TypeError).
#include <array>
#include <string>

#include "bind.h"
#include "ember/core/backend.h"
#include "ember/flush_denormal.h"
#include "ember/print_options.h"

namespace ember::python {
namespace {

// Owned references that are never released: a global nb::object would be decref'd by a C++
// exit handler after the interpreter has finalized (a segfault at exit on Python 3.12).
std::array<nb::handle, kNumDTypes> g_dtype_objects;
nb::handle g_size_type;  // ember.Size, handed over by ember/_size.py

bool is_tensor_object(PyObject* o) { return nb::isinstance<Tensor>(nb::handle(o)); }

// The default devices that `with device(...)` blocks replaced, innermost last (per thread, as
// the default device is).
std::vector<Device>& device_context_stack() {
  thread_local std::vector<Device> stack;
  return stack;
}

}  // namespace

nb::handle dtype_object(DType t) { return g_dtype_objects[int(t)]; }

nb::object size_object(IntArrayRef sizes) {
  if (!g_size_type.is_valid()) throw std::runtime_error("ember.Size is not registered (import ember first)");
  auto* type = reinterpret_cast<PyTypeObject*>(g_size_type.ptr());
  // A tuple subclass with no extra state: allocate and fill it like a tuple (as torch.Size).
  PyObject* t = type->tp_alloc(type, Py_ssize_t(sizes.size()));
  if (!t) throw nb::python_error();
  for (size_t i = 0; i < sizes.size(); ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(sizes[i]));
  return nb::steal(t);
}

bool scalar_from_python(PyObject* o, bool convert, Scalar& out) {
  if (PyBool_Check(o)) { out = Scalar(o == Py_True); return true; }
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {  // beyond int64: torch keeps it as a float only when it must; we refuse
      return false;
    }
    out = Scalar(int64_t(v));
    return true;
  }
  if (PyFloat_Check(o)) { out = Scalar(PyFloat_AS_DOUBLE(o)); return true; }
  if (PyComplex_Check(o)) {
    out = Scalar(std::complex<double>(PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o)));
    return true;
  }
  if (!convert) return false;
  if (is_tensor_object(o)) {
    // A 0-dim tensor stands for a number where one is expected (torch.full((2,), t), arange(t)),
    // as in torch; only reached after every Tensor overload was tried.
    const Tensor& t = tensor_of(o);
    if (t.dim() != 0) return false;
    out = t.item();
    return true;
  }
  // NumPy scalars: integers have __index__, floats __float__.
  if (PyIndex_Check(o)) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); return false; }
    out = Scalar(int64_t(v));
    return true;
  }
  if (PyNumber_Check(o) && Py_TYPE(o)->tp_as_number && Py_TYPE(o)->tp_as_number->nb_float) {
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return false; }
    out = Scalar(d);
    return true;
  }
  return false;
}

PyObject* scalar_to_python(const Scalar& s) {
  if (s.is_bool()) return PyBool_FromLong(s.to_bool());
  if (s.is_integral()) return PyLong_FromLongLong(s.to_int());
  if (s.is_complex()) return PyComplex_FromDoubles(s.to_double(), s.imag());
  return PyFloat_FromDouble(s.to_double());
}

void bind_core(nb::module_& m) {
  // torch.set_printoptions (the Python wrapper in _tensor_py.py turns inf thresholds into ints)
  m.def(
      "_set_printoptions",
      [](std::optional<int> precision, std::optional<int64_t> threshold, std::optional<int64_t> edgeitems,
         std::optional<int64_t> linewidth, std::optional<std::string> profile, std::optional<bool> sci_mode) {
        set_printoptions(precision, threshold, edgeitems, linewidth, profile, std::optional<std::optional<bool>>(sci_mode));
      },
      nb::arg("precision").none(), nb::arg("threshold").none(), nb::arg("edgeitems").none(),
      nb::arg("linewidth").none(), nb::arg("profile").none(), nb::arg("sci_mode").none());
  m.def("_get_printoptions", [] {
    PrintOptions o = get_printoptions();
    nb::dict d;
    d["precision"] = o.precision;
    d["threshold"] = o.threshold;
    d["edgeitems"] = o.edgeitems;
    d["linewidth"] = o.linewidth;
    d["sci_mode"] = o.sci_mode ? nb::object(nb::bool_(*o.sci_mode)) : nb::none();
    return d;
  });
  // ---- exceptions: ember's classes -> Python's, most derived first
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ember::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const ember::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const ember::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const ember::NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const ember::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  // ---- dtypes
  nb::class_<PyDType>(m, "dtype")
      .def_prop_ro("is_floating_point", [](const PyDType& d) { return is_floating(d.value); })
      .def_prop_ro("is_signed", [](const PyDType& d) {
        return d.value != kBool && d.value != kUInt8;
      })
      .def_prop_ro("is_complex", [](const PyDType& d) { return is_complex(d.value); })
      .def_prop_ro("itemsize", [](const PyDType& d) { return element_size(d.value); })
      // torch's names in messages ("Float", "Long": ember/core/dtype.h's scalar_type_name)
      .def_prop_ro("_scalar_type_name", [](const PyDType& d) { return scalar_type_name(d.value); })
      .def("__repr__", [](const PyDType& d) { return std::string("ember.") + dtype_name(d.value); })
      // Pickles by name, so a pickled dtype comes back as the same singleton.
      .def("__reduce__", [](const PyDType& d) { return std::string(dtype_name(d.value)); })
      .def("__hash__", [](const PyDType& d) { return int(d.value); })
      .def("__eq__", [](const PyDType& a, nb::handle b) {
        return nb::isinstance<PyDType>(b) && nb::inst_ptr<PyDType>(b)->value == a.value;
      }, nb::arg("other").none())
      .def("__ne__", [](const PyDType& a, nb::handle b) {
        return !(nb::isinstance<PyDType>(b) && nb::inst_ptr<PyDType>(b)->value == a.value);
      }, nb::arg("other").none());
  const std::pair<DType, std::vector<const char*>> dtype_names[] = {
      {kBool, {"bool"}},
      {kUInt8, {"uint8"}},
      {kInt8, {"int8"}},
      {kInt16, {"int16", "short"}},
      {kInt32, {"int32", "int"}},
      {kInt64, {"int64", "long"}},
      {kFloat16, {"float16", "half"}},
      {kBFloat16, {"bfloat16"}},
      {kFloat32, {"float32", "float"}},
      {kFloat64, {"float64", "double"}},
      {kComplex64, {"complex64", "cfloat"}},
      {kComplex128, {"complex128", "cdouble"}},
  };
  for (const auto& [t, names] : dtype_names) {
    g_dtype_objects[int(t)] = nb::cast(PyDType{t}).release();
    for (const char* name : names) m.attr(name) = g_dtype_objects[int(t)];
  }
  m.def("promote_types", [](DType a, DType b) { return promote_types(a, b); });
  m.def("get_default_dtype", [] { return default_dtype(); });
  m.def("set_default_dtype", [](DType t) {
    EMBER_CHECK_TYPE(t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kBFloat16,
                     "only floating-point types are supported as the default type");
    set_default_dtype(t);
  });
  m.def("_set_size_type", [](nb::object type) { g_size_type = type.release(); });

  // ---- devices
  nb::class_<Device>(m, "device")
      .def(nb::init_implicit<const std::string&>(), nb::arg("type"))
      .def("__init__", [](Device* self, const std::string& type, int index) {
        Device d(type);
        EMBER_CHECK(!d.has_index(), "type (string) must not include an index because index was passed "
                                    "explicitly: ", type);
        new (self) Device(d.type, int16_t(index));
      }, nb::arg("type"), nb::arg("index"))
      .def_prop_ro("type", [](const Device& d) { return std::string(device_type_name(d.type)); })
      .def_prop_ro("index", [](const Device& d) -> std::optional<int> {
        if (!d.has_index()) return std::nullopt;
        return d.index;
      })
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) {
        std::string s = std::string("device(type='") + device_type_name(d.type) + "'";
        if (d.has_index()) s += ", index=" + std::to_string(d.index);
        return s + ")";
      })
      .def("__eq__", [](const Device& a, nb::handle b) {
        Device* d = nullptr;
        return nb::try_cast<Device*>(b, d, false) && d && *d == a;
      }, nb::arg("other").none())
      .def("__hash__", [](const Device& d) { return int(d.type) * 65536 + d.index; })
      .def("__reduce__", [](const Device& d) {
        return nb::make_tuple(nb::type<Device>(), nb::make_tuple(d.str()));
      })
      // `with torch.device("meta"):` makes it the default device of factories inside the block
      // (a module built there has meta parameters); nested blocks restore in order.
      .def("__enter__", [](const Device& d) {
        device_context_stack().push_back(default_device());
        set_default_device(d);
        return d;
      })
      .def("__exit__", [](const Device&, nb::args) {
        auto& stack = device_context_stack();
        EMBER_CHECK(!stack.empty(), "device.__exit__ without a matching __enter__");
        set_default_device(stack.back());
        stack.pop_back();
        return false;
      });

  // ---- random numbers
  nb::class_<Generator>(m, "Generator")
      .def("__init__", [](Generator* self, Device device) {
        EMBER_CHECK(device.is_cpu() || device.type == DeviceType::CUDA,
                    "Device type ", device.str(), " is not supported for torch.Generator() api.");
        // A GPU generator belongs to one device: "cuda" means the current one (and needs a GPU).
        new (self) Generator(device.is_cpu() ? Device(DeviceType::CPU) : resolve_device(device));
      }, nb::arg("device") = Device(DeviceType::CPU))
      .def("manual_seed", [](Generator& g, nb::int_ seed) -> Generator& {
        // Negative seeds wrap to uint64 as torch's do.
        g.manual_seed(uint64_t(PyLong_AsUnsignedLongLongMask(seed.ptr())));
        return g;
      }, nb::arg("seed"), nb::rv_policy::reference)
      .def("initial_seed", &Generator::initial_seed)
      .def("seed", [](Generator& g) { return g.seed(); })
      .def("get_state", [](const Generator& g) {
        std::string s = g.get_state();
        Tensor t = empty({int64_t(s.size())}, {.dtype = kUInt8, .device = Device(DeviceType::CPU)});  // a state is host bytes
        std::memcpy(t.data_ptr(), s.data(), s.size());
        return t;
      })
      .def("set_state", [](Generator& g, const Tensor& state) {
        EMBER_CHECK_TYPE(state.dtype() == kUInt8 && state.dim() == 1,
                         "RNG state must be a torch.ByteTensor (1-D uint8), got ", dtype_name(state.dtype()), " of ",
                         state.dim(), " dims");
        Tensor c = state.contiguous();
        g.set_state(std::string(static_cast<const char*>(c.data_ptr()), size_t(c.numel())));
      }, nb::arg("new_state"))
      .def_prop_ro("device", [](const Generator& g) { return g.device(); });
  m.attr("default_generator") = nb::cast(&default_generator(), nb::rv_policy::reference);
  // torch.set_default_device / get_default_device (per thread, as torch's); None means the CPU.
  m.def("set_default_device", [](std::optional<Device> d) { set_default_device(d.value_or(Device(kCPU))); },
        nb::arg("device").none());
  m.def("get_default_device", [] { return default_device(); });
  m.def("set_flush_denormal", &set_flush_denormal, nb::arg("mode"));
  m.def("manual_seed", [](nb::int_ seed) -> Generator& {
    manual_seed(uint64_t(PyLong_AsUnsignedLongLongMask(seed.ptr())));
    return default_generator();
  }, nb::arg("seed"), nb::rv_policy::reference);

  // ---- threads
  m.def("set_num_threads", [](int n) {
    EMBER_CHECK_VALUE(n > 0, "set_num_threads expects a positive integer, got ", n);
    set_num_threads(n);
  }, nb::arg("n"));
  m.def("get_num_threads", &get_num_threads);
}

}  // namespace ember::python
