// ember.save / ember.load: Python objects become ember::Value and go through the C++ .pt writer
// and reader (PyTorch's zip + pickle format, so files interoperate with torch.save/torch.load).
#include <nanobind/stl/string.h>

#include <string>

#include "ember/serialize/serialize.h"
#include "value_convert.h"

namespace ember::python {
namespace {

// A list that contains itself would recurse forever; real checkpoints are a few levels deep.
constexpr int kMaxDepth = 512;

std::string py_type_name(nb::handle obj) {
  nb::handle tp = (PyObject*)Py_TYPE(obj.ptr());
  std::string mod = nb::cast<std::string>(nb::getattr(tp, "__module__", nb::str("")));
  std::string name = nb::cast<std::string>(nb::getattr(tp, "__qualname__", nb::str("?")));
  return mod.empty() || mod == "builtins" ? name : mod + "." + name;
}

// Converts obj; on an unsupported object stores its type name in `bad` and returns false.
bool convert(nb::handle obj, Value& out, std::string& bad, int depth) {
  PyObject* o = obj.ptr();
  if (depth > kMaxDepth) {
    bad = "a container nested more than 512 levels deep (a recursive list or dict?)";
    return false;
  }
  if (o == Py_None) { out = Value(); return true; }
  if (PyBool_Check(o)) { out = Value(o == Py_True); return true; }
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) { bad = "int (too large for 64 bits)"; return false; }
    out = Value(int64_t(v));
    return true;
  }
  if (PyFloat_Check(o)) { out = Value(PyFloat_AS_DOUBLE(o)); return true; }
  if (PyUnicode_Check(o)) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(o, &n);
    if (!s) { PyErr_Clear(); bad = "str (not encodable as UTF-8)"; return false; }
    out = Value(std::string(s, size_t(n)));
    return true;
  }
  if (nb::isinstance<Tensor>(obj)) { out = Value(tensor_of(obj)); return true; }
  if (PyDict_Check(o)) {
    ValueItems items;
    items.reserve(size_t(PyDict_Size(o)));
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    // OrderedDict keeps its order in the underlying dict too, so PyDict_Next sees it.
    while (PyDict_Next(o, &pos, &k, &v)) {
      Value kv, vv;
      if (!convert(k, kv, bad, depth + 1) || !convert(v, vv, bad, depth + 1)) return false;
      items.emplace_back(std::move(kv), std::move(vv));
    }
    out = Value::dict(std::move(items));
    return true;
  }
  if (PyList_Check(o) || PyTuple_Check(o)) {
    // ember.Size and namedtuples are tuples: they are saved as plain tuples (torch.Size is too).
    Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
    ValueList items;
    items.reserve(size_t(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      Value x;
      if (!convert(PySequence_Fast_GET_ITEM(o, i), x, bad, depth + 1)) return false;
      items.push_back(std::move(x));
    }
    out = PyList_Check(o) ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    return true;
  }
  bad = py_type_name(obj);
  return false;
}

using LocationMap = std::vector<std::pair<std::string, Device>>;
LoadOptions load_options(std::optional<Device> map_location, LocationMap map_locations, bool restore_locations,
                         bool mmap) {
  LoadOptions opts;
  opts.map_location = map_location;
  opts.map_locations = std::move(map_locations);
  opts.restore_locations = restore_locations;
  opts.mmap = mmap;
  return opts;
}

}  // namespace

Value value_from_python(nb::handle obj, const char* what) {
  Value out;
  std::string bad;
  if (!convert(obj, out, bad, 0))
    throw nb::type_error((std::string(what) + ": cannot save an object of type " + bad +
                          "; ember checkpoints hold None, bool, int, float, str, Tensor, and lists, "
                          "tuples and dicts of them")
                             .c_str());
  return out;
}

bool try_value_from_python(nb::handle obj, Value& out) {
  std::string bad;
  return convert(obj, out, bad, 0);
}

nb::object value_to_python(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None: return nb::none();
    case Value::Kind::Bool: return nb::bool_(v.to_bool());
    case Value::Kind::Int: return nb::int_(v.to_int());
    case Value::Kind::Double: return nb::float_(v.to_double());
    case Value::Kind::String: return nb::str(v.to_string().data(), v.to_string().size());
    case Value::Kind::Tensor: return nb::cast(v.to_tensor());
    case Value::Kind::List: {
      nb::list out;
      for (const auto& x : v.items_list()) out.append(value_to_python(x));
      return std::move(out);
    }
    case Value::Kind::Tuple: {
      const ValueList& items = v.items_list();
      PyObject* t = PyTuple_New(Py_ssize_t(items.size()));
      for (size_t i = 0; i < items.size(); ++i)
        PyTuple_SET_ITEM(t, Py_ssize_t(i), value_to_python(items[i]).release().ptr());
      return nb::steal(t);
    }
    case Value::Kind::Dict: {
      nb::dict out;
      for (const auto& [k, x] : v.items()) out[value_to_python(k)] = value_to_python(x);
      return std::move(out);
    }
  }
  return nb::none();
}

void bind_serialize(nb::module_& m) {
  // safetensors (ember.safetensors: the safetensors.torch API)
  m.def("_safetensors_save", [](std::vector<std::pair<std::string, Tensor>> tensors, const std::string& path,
                                std::vector<std::pair<std::string, std::string>> metadata) {
    nb::gil_scoped_release release;
    safetensors::save(tensors, path, metadata);
  }, nb::arg("tensors"), nb::arg("path"), nb::arg("metadata") = std::vector<std::pair<std::string, std::string>>{});
  m.def("_safetensors_load", [](const std::string& path, std::optional<Device> device) {
    nb::gil_scoped_release release;
    LoadOptions o;
    if (device) o.map_location = *device;
    return safetensors::load(path, o);
  }, nb::arg("path"), nb::arg("device").none() = nb::none());
  m.def("_safetensors_metadata", [](const std::string& path) { return safetensors::load_metadata(path); },
        nb::arg("path"));
  // The conversion needs the GIL (it reads Python objects); writing and reading the file do not.
  m.def("_save_to_path", [](nb::handle obj, const std::string& path) {
    Value v = value_from_python(obj, "ember.save");
    nb::gil_scoped_release release;
    save(v, path);
  }, nb::arg("obj"), nb::arg("path"));
  m.def("_save_to_bytes", [](nb::handle obj) {
    Value v = value_from_python(obj, "ember.save");
    std::string bytes;
    {
      nb::gil_scoped_release release;
      bytes = save_to_bytes(v);
    }
    return nb::bytes(bytes.data(), bytes.size());
  }, nb::arg("obj"));
  // map_location: one device for every storage; map_locations: torch's dict form as (saved
  // location, device) pairs; restore_locations=False keeps storages on the CPU (the caller maps them).
  m.def("_load_from_path", [](const std::string& path, std::optional<Device> map_location, LocationMap map_locations,
                              bool restore_locations, bool mmap) {
    Value v;
    {
      nb::gil_scoped_release release;
      v = load(path, load_options(map_location, std::move(map_locations), restore_locations, mmap));
    }
    return value_to_python(v);
  }, nb::arg("path"), nb::arg("map_location").none() = nb::none(), nb::arg("map_locations") = LocationMap{},
     nb::arg("restore_locations") = true, nb::arg("mmap") = false);
  m.def("_load_from_bytes", [](nb::bytes data, std::optional<Device> map_location, LocationMap map_locations,
                               bool restore_locations) {
    std::string bytes(data.c_str(), data.size());
    Value v;
    {
      nb::gil_scoped_release release;
      v = load_from_bytes(bytes, load_options(map_location, std::move(map_locations), restore_locations, false));
    }
    return value_to_python(v);
  }, nb::arg("data"), nb::arg("map_location").none() = nb::none(), nb::arg("map_locations") = LocationMap{},
     nb::arg("restore_locations") = true);
}

}  // namespace ember::python
