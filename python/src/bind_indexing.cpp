// x[...] and x[...] = v with torch's rules: ints, slices (with steps), None, Ellipsis and bools
// give views (basic indexing); integer tensors, lists and boolean masks give copies (advanced
// indexing, ember::index / index_put_). Basic parts are applied first, left to right, and the
// advanced indices are then applied to the dims they landed on, as torch's applySlicing does.
#include "bind.h"

namespace ember::python {
namespace {

bool is_advanced(nb::handle h) {
  PyObject* o = h.ptr();
  return nb::isinstance<Tensor>(h) || PyList_Check(o) ||
         std::string_view(Py_TYPE(o)->tp_name) == "numpy.ndarray";
}

// How many of the tensor's dims an index element consumes (Ellipsis and None: 0).
int64_t dims_consumed(nb::handle h) {
  PyObject* o = h.ptr();
  if (o == Py_None || o == Py_Ellipsis || PyBool_Check(o)) return 0;
  if (nb::isinstance<Tensor>(h)) {
    const Tensor& t = tensor_of(h);
    return (t.dtype() == kBool || t.dtype() == kUInt8) ? std::max<int64_t>(t.dim(), 1) : 1;
  }
  return 1;
}

Tensor index_tensor(nb::handle h) {
  if (nb::isinstance<Tensor>(h)) return tensor_of(h);
  Tensor t = tensor_from_data(h, std::nullopt, std::nullopt, false);
  // An empty list indexes nothing: it must still be an integer index.
  if (t.numel() == 0 && t.dtype() != kBool) t = t.to(kInt64);
  return t;
}

struct Indexed {
  Tensor view;                              // after the basic (view) part
  std::vector<std::optional<Tensor>> adv;   // per dim of view; empty when none
};

Indexed apply_index(const Tensor& self, nb::handle index) {
  // Normalise to a sequence of index elements (a tuple indexes several dims; anything else,
  // including a list, is one element).
  nb::tuple items = PyTuple_Check(index.ptr()) ? nb::borrow<nb::tuple>(index) : nb::make_tuple(index);
  int64_t consumed = 0;
  bool seen_ellipsis = false;
  for (nb::handle h : items) {
    if (h.ptr() == Py_Ellipsis) {
      EMBER_CHECK_INDEX(!seen_ellipsis, "an index can only have a single ellipsis ('...')");
      seen_ellipsis = true;
    }
    consumed += dims_consumed(h);
  }
  EMBER_CHECK_INDEX(consumed <= self.dim(), "too many indices for tensor of dimension ", self.dim());

  Indexed out{self, {}};
  Tensor& r = out.view;
  int64_t dim = 0;  // the dim of r the next element applies to
  auto set_adv = [&](int64_t d, Tensor t) {
    if (int64_t(out.adv.size()) <= d) out.adv.resize(d + 1);
    out.adv[d] = std::move(t);
  };
  for (nb::handle h : items) {
    PyObject* o = h.ptr();
    if (PyLong_Check(o) && !PyBool_Check(o)) {
      r = r.select(dim, PyLong_AsLongLong(o));
    } else if (PySlice_Check(o)) {
      Py_ssize_t start, stop, step;
      PySliceObject* sl = reinterpret_cast<PySliceObject*>(o);
      if (PySlice_Unpack(o, &start, &stop, &step) < 0) throw nb::python_error();
      EMBER_CHECK_VALUE(step > 0, "step must be greater than zero");
      OptInt s = sl->start == Py_None ? OptInt() : OptInt(start);
      OptInt e = sl->stop == Py_None ? OptInt() : OptInt(stop);
      if (!(s == std::nullopt && e == std::nullopt && step == 1)) r = r.slice(dim, s, e, step);
      ++dim;
    } else if (o == Py_None) {
      r = r.unsqueeze(dim);
      ++dim;
    } else if (o == Py_Ellipsis) {
      dim += self.dim() - consumed;
    } else if (PyBool_Check(o)) {
      // x[True] adds a dim of size 1, x[False] one of size 0 (a mask over a new dim).
      r = r.unsqueeze(dim);
      set_adv(dim, o == Py_True ? zeros({1}, {.dtype = kInt64, .device = Device(DeviceType::CPU)})
                                 : empty({0}, {.dtype = kInt64, .device = Device(DeviceType::CPU)}));
      ++dim;
    } else if (is_advanced(h)) {
      Tensor t = index_tensor(h);
      if (t.dtype() == kBool || t.dtype() == kUInt8) {
        // A mask over k dims is k integer index tensors (its nonzero coordinates).
        Tensor mask = t.dtype() == kUInt8 ? t.to(kBool) : t;
        if (mask.dim() == 0) {
          r = r.unsqueeze(dim);
          set_adv(dim, mask.item().to_bool() ? zeros({1}, {.dtype = kInt64, .device = Device(DeviceType::CPU)})
                                              : empty({0}, {.dtype = kInt64, .device = Device(DeviceType::CPU)}));
          ++dim;
          continue;
        }
        for (int64_t k = 0; k < mask.dim(); ++k) {
          EMBER_CHECK_INDEX(dim + k < r.dim() && mask.size(k) == r.size(dim + k), "The shape of the mask ",
                            mask.sizes(), " at index ", k, " does not match the shape of the indexed tensor ",
                            r.sizes(), " at index ", dim + k);
        }
        std::vector<Tensor> coords = mask.nonzero().unbind(1);
        for (int64_t k = 0; k < mask.dim(); ++k) set_adv(dim + k, coords[k]);
        dim += mask.dim();
      } else {
        EMBER_CHECK_INDEX(!is_floating(t.dtype()), "tensors used as indices must be long, int, byte or bool tensors");
        set_adv(dim, t.to(kInt64));
        ++dim;
      }
    } else if (PyIndex_Check(o)) {  // NumPy integers
      r = r.select(dim, PyNumber_AsSsize_t(o, PyExc_IndexError));
    } else {
      throw ember::IndexError(detail::cat(
          "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got ",
          Py_TYPE(o)->tp_name, ")"));
    }
  }
  return out;
}

// x[mask] with one bool mask tensor over x's leading dims, both on the CPU: the mask goes to
// ember::index as it is, whose kernel compacts in one pass (turning it into nonzero coordinates
// first cost 7.1 ms for 800K floats, the compaction 0.27). Other devices keep the coordinates.
const Tensor* cpu_leading_mask(const Tensor& self, nb::handle index) {
  if (!nb::isinstance<Tensor>(index)) return nullptr;
  const Tensor& mask = tensor_of(index);
  if (mask.dtype() != kBool || mask.dim() == 0 || mask.dim() > self.dim() || !mask.is_cpu() || !self.is_cpu())
    return nullptr;
  for (int64_t k = 0; k < mask.dim(); ++k)
    if (mask.size(k) != self.size(k)) return nullptr;  // the general path reports the mismatch
  return &mask;
}

Tensor getitem(const Tensor& self, nb::handle index) {
  PyObject* o = index.ptr();
  if (const Tensor* mask = cpu_leading_mask(self, index)) return self.index({std::optional<Tensor>(*mask)});
  // Fast paths for the common x[i] and x[a:b].
  if (PyLong_Check(o) && !PyBool_Check(o)) {
    EMBER_CHECK_INDEX(self.dim() > 0, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                                      "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
    return self.select(0, PyLong_AsLongLong(o));
  }
  Indexed ix = apply_index(self, index);
  if (ix.adv.empty()) {
    // Pure basic indexing is a view; x[...] / x[:] must still be a new tensor object.
    return ix.view.is_same(self) ? self.view(self.sizes()) : ix.view;
  }
  return ix.view.index(ix.adv);
}

void setitem(Tensor& self, nb::handle index, nb::handle value) {
  // x[mask] = number, mask the shape of x: masked_fill_ (autograd keeps index_put_'s node).
  if (const Tensor* mask = cpu_leading_mask(self, index);
      mask && mask->dim() == self.dim() && !self.requires_grad() && !nb::isinstance<Tensor>(value)) {
    Scalar s;
    if (scalar_from_python(value.ptr(), true, s)) {
      self.masked_fill_(*mask, s);
      return;
    }
  }
  Indexed ix = apply_index(self, index);
  Tensor v;
  if (nb::isinstance<Tensor>(value)) {
    v = tensor_of(value);
  } else {
    Scalar s;
    if (scalar_from_python(value.ptr(), true, s)) {
      if (ix.adv.empty()) {
        ix.view.fill_(s);
        return;
      }
      v = scalar_tensor(s, {.dtype = self.dtype()});
    } else {
      v = tensor_from_data(value, self.dtype(), self.device(), false);
    }
  }
  if (ix.adv.empty()) {
    ix.view.copy_(v);
    return;
  }
  ix.view.index_put_(ix.adv, v.to(self.dtype()));
}

}  // namespace

void bind_indexing(nb::class_<Tensor>& cls) {
  // .none(): nanobind rejects None for an object parameter unless told, and x[None] is valid.
  cls.def("__getitem__", &getitem, nb::arg("index").none());
  cls.def("__setitem__", &setitem, nb::arg("index").none(), nb::arg("value"));
}

}  // namespace ember::python
