// Shape and view ops with torch's Python forms: x.view(2, 3) and x.view((2, 3)), x.permute(1, 0),
// torch.split(x, 2) / torch.split(x, [1, 3]), movedim with tuples, cat/stack over sequences, ...
#include <algorithm>
#include <numeric>

#include "bind_ops.h"

namespace ember::python {
namespace {

using Self = nb::handle_t<Tensor>;

int64_t norm_dim(int64_t d, int64_t n, const char* op) {
  int64_t lo = std::min<int64_t>(-n, -1), hi = std::max<int64_t>(n - 1, 0);
  EMBER_CHECK_INDEX(d >= lo && d <= hi, op, ": Dimension out of range (expected to be in range of [", lo, ", ", hi,
                    "], but got ", d, ")");
  return d < 0 ? d + std::max<int64_t>(n, 1) : d;
}

Tensor squeeze_dims(const Tensor& self, nb::handle dim) {
  auto dims = dims_arg(dim, "squeeze");
  if (!dims) return squeeze(self);
  if (dims->size() == 1) return squeeze(self, (*dims)[0]);
  // Several dims (torch 2.0's form): squeeze the size-1 ones, last first so indices stay valid.
  std::vector<int64_t> d;
  for (int64_t x : *dims) d.push_back(norm_dim(x, self.dim(), "squeeze"));
  std::sort(d.rbegin(), d.rend());
  Tensor out = self;
  for (int64_t x : d) out = squeeze(out, x);
  return out;
}

// movedim(source, destination) with ints or matching tuples: the moved dims go to their
// destinations, the others keep their relative order in the remaining slots.
Tensor movedim_any(const Tensor& self, nb::handle source, nb::handle destination) {
  std::vector<int64_t> src = *dims_arg(source, "movedim", "source");
  std::vector<int64_t> dst = *dims_arg(destination, "movedim", "destination");
  EMBER_CHECK(src.size() == dst.size(), "movedim: Invalid source or destination dims: source (", IntArrayRef(src),
              " dims) should contain the same number of dims as destination (", IntArrayRef(dst), " dims)");
  int64_t n = self.dim();
  std::vector<int64_t> order(size_t(n), -1);
  std::vector<bool> used(size_t(n), false);
  for (size_t i = 0; i < src.size(); ++i) {
    int64_t s = norm_dim(src[i], n, "movedim"), d = norm_dim(dst[i], n, "movedim");
    EMBER_CHECK(!used[size_t(s)], "movedim: repeated dim in `source` (", IntArrayRef(src), ")");
    EMBER_CHECK(order[size_t(d)] == -1, "movedim: repeated dim in `destination` (", IntArrayRef(dst), ")");
    order[size_t(d)] = s;
    used[size_t(s)] = true;
  }
  int64_t next = 0;
  for (auto& o : order) {
    if (o != -1) continue;
    while (used[size_t(next)]) ++next;
    o = next++;
  }
  return permute(self, order);
}

nb::tuple split_any(const Tensor& self, nb::handle sizes, int64_t dim) {
  if (PyTuple_Check(sizes.ptr()) || PyList_Check(sizes.ptr())) {
    return tensor_tuple(split(self, IntArrayRef(*dims_arg(sizes, "split", "split_size_or_sections")), dim));
  }
  EMBER_CHECK_TYPE(PyIndex_Check(sizes.ptr()), "split(): argument 'split_size' must be an int or a list of ints, got ",
                   Py_TYPE(sizes.ptr())->tp_name);
  return tensor_tuple(split(self, nb::cast<int64_t>(sizes), dim));
}

Tensor view_any(const Tensor& self, const nb::args& args) {
  if (args.size() == 1 && nb::isinstance<PyDType>(args[0])) {
    DType t = nb::inst_ptr<PyDType>(args[0])->value;
    EMBER_CHECK(t == self.dtype(), "view(dtype): reinterpreting a ", scalar_type_name(self.dtype()),
                " tensor as ", scalar_type_name(t), " is not supported by ember; use .to(dtype) to convert values");
    return view(self, self.sizes());
  }
  return view(self, sizes_from_args(args, "view"));
}

std::vector<Tensor> atleast(const nb::args& args, int64_t nd) {
  std::vector<Tensor> in;
  if (args.size() == 1 && !nb::isinstance<Tensor>(args[0])) in = nb::cast<std::vector<Tensor>>(args[0]);
  else in = nb::cast<std::vector<Tensor>>(args);
  for (Tensor& t : in) {
    if (t.dim() >= nd) continue;
    if (t.dim() == 0) t = t.reshape({1});
    if (nd >= 2 && t.dim() == 1) t = t.unsqueeze(0);              // (n) -> (1, n)
    if (nd >= 3 && t.dim() == 2) t = t.unsqueeze(-1);             // (a, b) -> (a, b, 1)
  }
  return in;
}

nb::object atleast_result(const nb::args& args, int64_t nd) {
  std::vector<Tensor> out = atleast(args, nd);
  if (args.size() == 1 && nb::isinstance<Tensor>(args[0])) return nb::cast(out[0]);
  return tensor_tuple(out);
}

std::vector<Tensor> tensor_list(nb::handle seq, const char* op) {
  EMBER_CHECK_TYPE(PyTuple_Check(seq.ptr()) || PyList_Check(seq.ptr()), op,
                   "(): argument 'tensors' must be a tuple or list of Tensors, not ", Py_TYPE(seq.ptr())->tp_name);
  std::vector<Tensor> v;
  for (nb::handle h : seq) {
    EMBER_CHECK_TYPE(nb::isinstance<Tensor>(h), op, "(): expected Tensor as element ", v.size(),
                     " in argument 0, but got ", Py_TYPE(h.ptr())->tp_name);
    v.push_back(tensor_of(h));
  }
  return v;
}

}  // namespace

void bind_ops_shape(nb::module_& m, TensorClass& cls) {
  // ---- varargs views: x.view(2, 3), x.view((2, 3)); the functions take one sequence
  cls.def("view", &view_any, nb::arg("shape"));
  cls.def("reshape", [](const Tensor& self, nb::args shape) { return reshape(self, sizes_from_args(shape, "reshape")); },
          nb::arg("shape"));
  m.def("reshape", [](const Tensor& self, IntArrayRef shape) { return reshape(self, shape); }, nb::arg("input"),
        nb::arg("shape"));
  cls.def("permute", [](const Tensor& self, nb::args dims) { return permute(self, sizes_from_args(dims, "permute")); },
          nb::arg("dims"));
  m.def("permute", [](const Tensor& self, IntArrayRef dims) { return permute(self, dims); }, nb::arg("input"),
        nb::arg("dims"));
  cls.def("expand", [](const Tensor& self, nb::args size) { return expand(self, sizes_from_args(size, "expand")); },
          nb::arg("size"));
  def_both(m, cls, "broadcast_to", [](const Tensor& self, IntArrayRef size) { return expand(self, size); },
           nb::arg("size"));
  cls.def("repeat", [](const Tensor& self, nb::args r) { return repeat(self, sizes_from_args(r, "repeat")); },
          nb::arg("repeats"));
  // tile: repeat with missing leading repeats taken as 1 (and extra leading dims on the input).
  auto tile = [](const Tensor& self, std::vector<int64_t> reps) {
    while (int64_t(reps.size()) < self.dim()) reps.insert(reps.begin(), 1);
    return repeat(self, reps);
  };
  cls.def("tile", [tile](const Tensor& self, nb::args r) { return tile(self, sizes_from_args(r, "tile")); },
          nb::arg("dims"));
  m.def("tile", [tile](const Tensor& self, IntArrayRef r) { return tile(self, std::vector<int64_t>(r.begin(), r.end())); },
        nb::arg("input"), nb::arg("dims"));
  cls.def("flip", [](const Tensor& self, nb::args dims) { return flip(self, sizes_from_args(dims, "flip")); },
          nb::arg("dims"));
  m.def("flip", [](const Tensor& self, IntArrayRef dims) { return flip(self, dims); }, nb::arg("input"),
        nb::arg("dims"));
  def_both(m, cls, "fliplr", [](const Tensor& self) {
    EMBER_CHECK(self.dim() >= 2, "Input must be >= 2-d.");
    return flip(self, {1});
  });
  def_both(m, cls, "flipud", [](const Tensor& self) {
    EMBER_CHECK(self.dim() >= 1, "Input must be >= 1-d.");
    return flip(self, {0});
  });
  def_both(m, cls, "rot90", [](const Tensor& self, int64_t k, IntArrayRef dims) {
    EMBER_CHECK(dims.size() == 2, "expected total rotation dims == 2, but got dims = ", dims.size());
    int64_t a = dims[0], b = dims[1];
    k = ((k % 4) + 4) % 4;
    if (k == 1) return transpose(flip(self, {b}), a, b);
    if (k == 2) return flip(self, {a, b});
    if (k == 3) return flip(transpose(self, a, b), {b});
    return clone(self);
  }, nb::arg("k") = 1, nb::arg("dims") = std::vector<int64_t>{0, 1});

  // ---- transposes
  auto transpose_f = [](const Tensor& self, int64_t a, int64_t b) { return transpose(self, a, b); };
  def_both(m, cls, "transpose", transpose_f, nb::arg("dim0"), nb::arg("dim1"));
  def_both(m, cls, "swapdims", transpose_f, nb::arg("dim0"), nb::arg("dim1"));
  def_both(m, cls, "swapaxes", transpose_f, nb::arg("axis0"), nb::arg("axis1"));
  def_both(m, cls, "t", [](const Tensor& self) { return t(self); });
  def_both(m, cls, "adjoint", [](const Tensor& self) { return self.mT(); });
  def_both(m, cls, "movedim", &movedim_any, nb::arg("source"), nb::arg("destination"));
  def_both(m, cls, "moveaxis", &movedim_any, nb::arg("source"), nb::arg("destination"));

  // ---- squeeze / unsqueeze / flatten
  def_both(m, cls, "squeeze", &squeeze_dims, nb::arg("dim") = nb::none());
  def_both(m, cls, "unsqueeze", [](const Tensor& self, int64_t d) { return unsqueeze(self, d); }, nb::arg("dim"));
  def_both(m, cls, "flatten", [](const Tensor& self, int64_t s, int64_t e) { return flatten(self, s, e); },
           nb::arg("start_dim") = 0, nb::arg("end_dim") = -1);
  def_both(m, cls, "ravel", [](const Tensor& self) { return reshape(self, {-1}); });
  def_both(m, cls, "unflatten", [](const Tensor& self, int64_t d, IntArrayRef sizes) {
    return unflatten(self, d, sizes);
  }, nb::arg("dim"), nb::arg("sizes"));

  // ---- slicing views
  def_both(m, cls, "narrow", [](const Tensor& self, int64_t d, int64_t start, int64_t len) {
    return narrow(self, d, start, len);
  }, nb::arg("dim"), nb::arg("start"), nb::arg("length"));
  def_both(m, cls, "select", [](const Tensor& self, int64_t d, int64_t i) { return select(self, d, i); },
           nb::arg("dim"), nb::arg("index"));
  def_both(m, cls, "as_strided", [](const Tensor& self, IntArrayRef size, IntArrayRef stride, OptInt offset) {
    return as_strided(self, size, stride, offset);
  }, nb::arg("size"), nb::arg("stride"), nb::arg("storage_offset") = nb::none());
  // unfold(dimension, size, step): windows of `size` every `step` along one dim, as a new last dim.
  cls.def("unfold", [](const Tensor& self, int64_t dim, int64_t size, int64_t step) {
    int64_t d = norm_dim(dim, self.dim(), "unfold");
    int64_t n = self.dim() == 0 ? 1 : self.size(d);
    EMBER_CHECK(size <= n, "maximum size for tensor at dimension ", d, " is ", n, " but size is ", size);
    EMBER_CHECK(step > 0, "step is ", step, " but must be > 0");
    Shape sizes(self.sizes()), strides(self.strides());
    if (self.dim() == 0) { sizes = {1}; strides = {1}; }
    int64_t st = strides[size_t(d)];
    sizes[size_t(d)] = (n - size) / step + 1;
    strides[size_t(d)] = st * step;
    sizes.push_back(size);
    strides.push_back(st);
    return as_strided(self, sizes, strides, self.storage_offset());
  }, nb::arg("dimension"), nb::arg("size"), nb::arg("step"));

  // ---- split family (tuples, as torch)
  m.def("split", &split_any, nb::arg("tensor"), nb::arg("split_size_or_sections"), nb::arg("dim") = 0);
  cls.def("split", &split_any, nb::arg("split_size"), nb::arg("dim") = 0);
  def_both(m, cls, "chunk", [](const Tensor& self, int64_t c, int64_t d) { return tensor_tuple(chunk(self, c, d)); },
           nb::arg("chunks"), nb::arg("dim") = 0);
  def_both(m, cls, "unbind", [](const Tensor& self, int64_t d) { return tensor_tuple(unbind(self, d)); },
           nb::arg("dim") = 0);

  // ---- copies and rearrangements
  def_both(m, cls, "contiguous", [](nb::handle_t<Tensor> self, nb::handle) -> nb::object {
    const Tensor& t = tensor_of(self);
    if (t.is_contiguous()) return nb::borrow(self);  // torch returns self itself
    return nb::cast(contiguous(t));
  }, nb::arg("memory_format") = nb::none());
  def_both(m, cls, "clone", [](const Tensor& self, nb::handle) { return clone(self); }, nb::kw_only(),
           nb::arg("memory_format") = nb::none());
  def_both(m, cls, "tril", [](const Tensor& self, int64_t d) { return tril(self, d); }, nb::arg("diagonal") = 0);
  def_both(m, cls, "triu", [](const Tensor& self, int64_t d) { return triu(self, d); }, nb::arg("diagonal") = 0);
  cls.def("tril_", [](Self self, int64_t d) {
    assign_inplace(tensor_of(self), tril(tensor_of(self), d), "tril_");
    return nb::borrow(self);
  }, nb::arg("diagonal") = 0);
  cls.def("triu_", [](Self self, int64_t d) {
    assign_inplace(tensor_of(self), triu(tensor_of(self), d), "triu_");
    return nb::borrow(self);
  }, nb::arg("diagonal") = 0);
  def_both(m, cls, "diag", [](const Tensor& self, int64_t d) { return diag(self, d); }, nb::arg("diagonal") = 0);
  def_both(m, cls, "diagonal", [](const Tensor& self, int64_t off, int64_t d1, int64_t d2) {
    return diagonal(self, off, d1, d2);
  }, nb::arg("offset") = 0, nb::arg("dim1") = 0, nb::arg("dim2") = 1);
  def_both(m, cls, "trace", [](const Tensor& self) {
    EMBER_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
    return sum(diagonal(self, 0, 0, 1));
  });
  def_both(m, cls, "roll", [](const Tensor& self, nb::handle shifts, nb::handle dims) {
    std::vector<int64_t> s = *dims_arg(shifts, "roll", "shifts");
    auto d = dims_arg(dims, "roll", "dims");
    return roll(self, s, d ? IntArrayRef(*d) : IntArrayRef());
  }, nb::arg("shifts"), nb::arg("dims") = nb::none());
  def_both(m, cls, "repeat_interleave", [](const Tensor& self, int64_t r, std::optional<int64_t> d, nb::handle) {
    return repeat_interleave(self, r, d);
  }, nb::arg("repeats"), nb::arg("dim") = nb::none(), nb::kw_only(), nb::arg("output_size") = nb::none());
  def_both(m, cls, "repeat_interleave", [](const Tensor& self, const Tensor& r, std::optional<int64_t> d, nb::handle) {
    return repeat_interleave(self, r, d);
  }, nb::arg("repeats"), nb::arg("dim") = nb::none(), nb::kw_only(), nb::arg("output_size") = nb::none());
  def_both(m, cls, "view_as", [](const Tensor& self, const Tensor& o) { return view(self, o.sizes()); },
           nb::arg("other"));
  def_both(m, cls, "reshape_as", [](const Tensor& self, const Tensor& o) { return reshape(self, o.sizes()); },
           nb::arg("other"));
  def_both(m, cls, "expand_as", [](const Tensor& self, const Tensor& o) { return expand(self, o.sizes()); },
           nb::arg("other"));

  // ---- joining
  auto cat_f = [](nb::handle tensors, int64_t dim, nb::handle) { return cat(tensor_list(tensors, "cat"), dim); };
  for (const char* name : {"cat", "concat", "concatenate"}) {
    m.def(name, cat_f, nb::arg("tensors"), nb::arg("dim") = 0, nb::kw_only(), nb::arg("out") = nb::none());
  }
  m.def("stack", [](nb::handle tensors, int64_t dim, nb::handle) { return stack(tensor_list(tensors, "stack"), dim); },
        nb::arg("tensors"), nb::arg("dim") = 0, nb::kw_only(), nb::arg("out") = nb::none());
  m.def("hstack", [](nb::handle tensors) {
    std::vector<Tensor> v = tensor_list(tensors, "hstack");
    for (Tensor& t : v) if (t.dim() == 0) t = t.reshape({1});
    return cat(v, !v.empty() && v[0].dim() == 1 ? 0 : 1);
  }, nb::arg("tensors"));
  auto vstack = [](nb::handle tensors) {
    std::vector<Tensor> v = tensor_list(tensors, "vstack");
    for (Tensor& t : v) {
      if (t.dim() == 0) t = t.reshape({1, 1});
      else if (t.dim() == 1) t = t.unsqueeze(0);
    }
    return cat(v, 0);
  };
  m.def("vstack", vstack, nb::arg("tensors"));
  m.def("row_stack", vstack, nb::arg("tensors"));
  m.def("dstack", [](nb::handle tensors) {
    return cat(atleast(nb::borrow<nb::args>(nb::make_tuple(tensors)), 3), 2);
  }, nb::arg("tensors"));
  m.def("column_stack", [](nb::handle tensors) {
    std::vector<Tensor> v = tensor_list(tensors, "column_stack");
    for (Tensor& t : v) {
      if (t.dim() == 0) t = t.reshape({1, 1});
      else if (t.dim() == 1) t = t.unsqueeze(1);
    }
    return cat(v, 1);
  }, nb::arg("tensors"));
  m.def("atleast_1d", [](nb::args a) { return atleast_result(a, 1); }, nb::arg("tensors"));
  m.def("atleast_2d", [](nb::args a) { return atleast_result(a, 2); }, nb::arg("tensors"));
  m.def("atleast_3d", [](nb::args a) { return atleast_result(a, 3); }, nb::arg("tensors"));

  // ---- broadcasting
  m.def("broadcast_tensors", [](nb::args tensors) {
    std::vector<Tensor> v = tensor_list(tensors, "broadcast_tensors");
    return tensor_tuple(broadcast_tensors(v));
  }, nb::arg("tensors"));
  m.def("broadcast_shapes", [](nb::args shapes) {
    Shape out;
    for (nb::handle s : shapes) {
      std::vector<int64_t> sh = *dims_arg(s, "broadcast_shapes", "shape");
      out = broadcast_shapes(out, sh);
    }
    return size_object(out);
  }, nb::arg("shapes"));
  // meshgrid(*tensors, indexing="ij"): 1-D inputs spread over one output dim each.
  m.def("meshgrid", [](nb::args args, const std::string& indexing) {
    std::vector<Tensor> v;
    if (args.size() == 1 && !nb::isinstance<Tensor>(args[0])) v = tensor_list(args[0], "meshgrid");
    else v = tensor_list(args, "meshgrid");
    EMBER_CHECK(indexing == "ij" || indexing == "xy",
                "meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ", indexing);
    bool swap = indexing == "xy" && v.size() >= 2;
    if (swap) std::swap(v[0], v[1]);
    Shape shape;
    for (const Tensor& t : v) {
      EMBER_CHECK(t.dim() <= 1, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: ", t.sizes());
      shape.push_back(t.numel());
    }
    std::vector<Tensor> out;
    for (size_t i = 0; i < v.size(); ++i) {
      Shape view_shape(v.size(), 1);
      view_shape[i] = -1;
      out.push_back(v[i].reshape(view_shape).expand(shape));
    }
    if (swap) std::swap(out[0], out[1]);  // x's grid first again, shaped (len(y), len(x), ...)
    return tensor_tuple(out);
  }, nb::arg("tensors"), nb::arg("indexing") = "ij");
}

}  // namespace ember::python
