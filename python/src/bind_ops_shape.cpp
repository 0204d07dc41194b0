// Shape and view ops with torch's Python forms: x.view(2, 3) and x.view((2, 3)), x.permute(1, 0),
// torch.split(x, 2) / torch.split(x, [1, 3]), movedim with tuples, cat/stack over sequences, ...
#include "bind_ops.h"

namespace ember::python {
namespace {

using Self = nb::handle_t<Tensor>;

Tensor squeeze_dims(const Tensor& self, nb::handle dim) {
  auto dims = dims_arg(dim, "squeeze");
  if (!dims) return squeeze(self);
  if (dims->size() == 1) return squeeze(self, (*dims)[0]);
  return squeeze(self, IntArrayRef(*dims));
}

// movedim(source, destination) with ints or matching tuples.
Tensor movedim_any(const Tensor& self, nb::handle source, nb::handle destination) {
  return movedim(self, *dims_arg(source, "movedim", "source"), *dims_arg(destination, "movedim", "destination"));
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
    return view(self, nb::inst_ptr<PyDType>(args[0])->value);
  }
  return view(self, sizes_from_args(args, "view"));
}

// atleast_Nd(t) gives a tensor, atleast_Nd(t1, t2, ...) and atleast_Nd([t1, t2]) a tuple.
template <Tensor (*One)(const Tensor&), std::vector<Tensor> (*Many)(TensorList)>
nb::object atleast_result(const nb::args& args) {
  if (args.size() == 1 && nb::isinstance<Tensor>(args[0])) return nb::cast(One(tensor_of(args[0])));
  std::vector<Tensor> in;
  if (args.size() == 1) in = nb::cast<std::vector<Tensor>>(args[0]);
  else in = nb::cast<std::vector<Tensor>>(args);
  return tensor_tuple(Many(in));
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
  cls.def("tile", [](const Tensor& self, nb::args r) { return tile(self, sizes_from_args(r, "tile")); },
          nb::arg("dims"));
  m.def("tile", [](const Tensor& self, IntArrayRef r) { return tile(self, r); }, nb::arg("input"), nb::arg("dims"));
  cls.def("flip", [](const Tensor& self, nb::args dims) { return flip(self, sizes_from_args(dims, "flip")); },
          nb::arg("dims"));
  m.def("flip", [](const Tensor& self, IntArrayRef dims) { return flip(self, dims); }, nb::arg("input"),
        nb::arg("dims"));
  def_both(m, cls, "fliplr", [](const Tensor& self) { return fliplr(self); });
  def_both(m, cls, "flipud", [](const Tensor& self) { return flipud(self); });
  def_both(m, cls, "rot90", [](const Tensor& self, int64_t k, IntArrayRef dims) { return rot90(self, k, dims); },
           nb::arg("k") = 1, nb::arg("dims") = std::vector<int64_t>{0, 1});

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
  def_both(m, cls, "ravel", [](const Tensor& self) { return ravel(self); });
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
  cls.def("unfold", [](const Tensor& self, int64_t dim, int64_t size, int64_t step) {
    return unfold(self, dim, size, step);
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
    tensor_of(self).tril_(d);
    return nb::borrow(self);
  }, nb::arg("diagonal") = 0);
  cls.def("triu_", [](Self self, int64_t d) {
    tensor_of(self).triu_(d);
    return nb::borrow(self);
  }, nb::arg("diagonal") = 0);
  def_both(m, cls, "diag", [](const Tensor& self, int64_t d) { return diag(self, d); }, nb::arg("diagonal") = 0);
  def_both(m, cls, "diagonal", [](const Tensor& self, int64_t off, int64_t d1, int64_t d2) {
    return diagonal(self, off, d1, d2);
  }, nb::arg("offset") = 0, nb::arg("dim1") = 0, nb::arg("dim2") = 1);
  def_both(m, cls, "trace", [](const Tensor& self) { return trace(self); });
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
  m.def("hstack", [](nb::handle tensors) { return hstack(tensor_list(tensors, "hstack")); }, nb::arg("tensors"));
  m.def("vstack", [](nb::handle tensors) { return vstack(tensor_list(tensors, "vstack")); }, nb::arg("tensors"));
  m.def("row_stack", [](nb::handle tensors) { return vstack(tensor_list(tensors, "row_stack")); }, nb::arg("tensors"));
  m.def("dstack", [](nb::handle tensors) { return dstack(tensor_list(tensors, "dstack")); }, nb::arg("tensors"));
  m.def("column_stack", [](nb::handle tensors) { return column_stack(tensor_list(tensors, "column_stack")); },
        nb::arg("tensors"));
  m.def("atleast_1d", &atleast_result<atleast_1d, atleast_1d>, nb::arg("tensors"));
  m.def("atleast_2d", &atleast_result<atleast_2d, atleast_2d>, nb::arg("tensors"));
  m.def("atleast_3d", &atleast_result<atleast_3d, atleast_3d>, nb::arg("tensors"));

  // ---- broadcasting
  m.def("broadcast_tensors", [](nb::args tensors) {
    std::vector<Tensor> v = tensor_list(tensors, "broadcast_tensors");
    return tensor_tuple(broadcast_tensors(v));
  }, nb::arg("tensors"));
  m.def("broadcast_shapes", [](nb::args shapes) {
    std::vector<Shape> v;
    for (nb::handle s : shapes) v.push_back(*dims_arg(s, "broadcast_shapes", "shape"));
    return size_object(broadcast_shapes(v));
  }, nb::arg("shapes"));
  m.def("meshgrid", [](nb::args args, const std::string& indexing) {
    std::vector<Tensor> v;
    if (args.size() == 1 && !nb::isinstance<Tensor>(args[0])) v = tensor_list(args[0], "meshgrid");
    else v = tensor_list(args, "meshgrid");
    return tensor_tuple(meshgrid(v, indexing));
  }, nb::arg("tensors"), nb::arg("indexing") = "ij");
}

}  // namespace ember::python
