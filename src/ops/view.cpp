// View ops: new windows onto the same storage (no copy). They only touch metadata, so one
// device-agnostic kernel (CompositeBackend) serves every backend.
#include <algorithm>
#include <numeric>

#include "ember/compile/capture.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/shape_utils.h"

namespace ember {

Shape infer_size(IntArrayRef shape, int64_t numel) {
  Shape out = shape.vec();
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      EMBER_CHECK(!infer, "only one dimension can be inferred");
      infer = i;
    } else {
      EMBER_CHECK(out[i] >= 0, "invalid shape dimension ", out[i]);
      known *= out[i];
    }
  }
  if (infer) {
    EMBER_CHECK(known != 0 && numel % known == 0, "shape '", shape.vec(), "' is invalid for input of size ", numel);
    out[*infer] = numel / known;
  } else {
    EMBER_CHECK(known == numel, "shape '", shape.vec(), "' is invalid for input of size ", numel);
  }
  return out;
}

std::optional<Shape> compute_view_strides(IntArrayRef oldshape, IntArrayRef oldstride, IntArrayRef newshape) {
  Shape newstride(newshape.size());
  if (oldshape.empty()) {  // 0-dim: every new dim is 1
    std::fill(newstride.begin(), newstride.end(), 1);
    return newstride;
  }
  if (shape_numel(oldshape) == 0) {
    if (oldshape == newshape) return oldstride.vec();
    return contiguous_strides(newshape);
  }
  int64_t view_d = int64_t(newshape.size()) - 1;
  int64_t chunk_base_stride = oldstride.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = int64_t(oldshape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= oldshape[tensor_d];
    // A chunk of memory ends where the next outer dim is not laid out right after this one.
    if (tensor_d == 0 || (oldshape[tensor_d - 1] != 1 && oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[view_d] == 1)) {
        newstride[view_d] = view_numel * chunk_base_stride;
        view_numel *= newshape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

Tensor make_view(const Tensor& self, Shape sizes, Shape strides, int64_t offset) {
  return make_view(self, self.dtype(), std::move(sizes), std::move(strides), offset);
}

Tensor make_view(const Tensor& self, DType dtype, Shape sizes, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>(self.impl()->storage(), dtype, std::move(sizes), std::move(strides), offset);
  impl->share_version_counter(self.impl()->version_counter());
  impl->set_view_base(self.impl()->is_view() ? self.impl()->view_base() : self.impl_ptr());
  return Tensor(std::move(impl));
}

namespace {

Tensor as_strided_impl(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, OptInt offset) {
  EMBER_CHECK(sizes.size() == strides.size(), "mismatch in length of strides and shape");
  int64_t off = offset.value_or(self.storage_offset());
  EMBER_CHECK(off >= 0, "as_strided: Negative storage offset ", off);
  int64_t max_index = off;
  bool empty_view = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(sizes[i] >= 0, "as_strided: Trying to create tensor with negative dimension ", sizes[i]);
    EMBER_CHECK(strides[i] >= 0, "as_strided: Negative strides are not supported, got ", strides.vec());
    if (sizes[i] == 0) empty_view = true;
    max_index += (sizes[i] - 1) * strides[i];
  }
  int64_t storage_elems = int64_t(self.impl()->storage()->nbytes()) / self.element_size();
  EMBER_CHECK(empty_view || max_index < storage_elems, "setStorage: sizes ", sizes.vec(), ", strides ",
              strides.vec(), ", storage offset ", off, " requiring a storage of ", max_index + 1,
              " elements are out of bounds for storage of ", storage_elems, " elements");
  return make_view(self, sizes.vec(), strides.vec(), off);
}

Tensor view_impl(const Tensor& self, IntArrayRef shape) {
  Shape sizes = infer_size(shape, self.numel());
  auto strides = compute_view_strides(self.sizes(), self.strides(), sizes);
  EMBER_CHECK(strides.has_value(),
              "view size is not compatible with input tensor's size and stride (at least one dimension spans "
              "across two contiguous subspaces). Use .reshape(...) instead.");
  return make_view(self, std::move(sizes), std::move(*strides), self.storage_offset());
}

Tensor permute_impl(const Tensor& self, IntArrayRef dims) {
  int64_t n = self.dim();
  EMBER_CHECK(int64_t(dims.size()) == n, "permute(sparse_coo): number of dimensions in the tensor input does not "
              "match the length of the desired ordering of dimensions i.e. input.dim() = ", n,
              " is not equal to len(dims) = ", dims.size());
  Shape sizes(n), strides(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = wrap_dim(dims[i], n);
    EMBER_CHECK(!seen[d], "permute(): duplicate dims are not allowed.");
    seen[d] = true;
    sizes[i] = self.sizes()[d];
    strides[i] = self.strides()[d];
  }
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor transpose_impl(const Tensor& self, int64_t d0, int64_t d1) {
  int64_t n = self.dim();
  d0 = wrap_dim(d0, n);
  d1 = wrap_dim(d1, n);
  if (n == 0) return make_view(self, {}, {}, self.storage_offset());
  Shape sizes = self.sizes(), strides = self.strides();
  std::swap(sizes[d0], sizes[d1]);
  std::swap(strides[d0], strides[d1]);
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor expand_impl(const Tensor& self, IntArrayRef target) {
  int64_t n = int64_t(target.size()), nd = self.dim();
  EMBER_CHECK(n >= nd, "expand(", dtype_name(self.dtype()), "{", self.sizes(), "}, size=", target.vec(),
              "): the number of sizes provided (", n, ") must be greater or equal to the number of dimensions in the tensor (", nd, ")");
  Shape sizes(n), strides(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    int64_t od = i - (n - nd);
    int64_t want = target[i];
    if (od >= 0) {
      int64_t have = self.sizes()[od];
      if (want == -1) want = have;
      EMBER_CHECK(have == want || have == 1, "The expanded size of the tensor (", want,
                  ") must match the existing size (", have, ") at non-singleton dimension ", i,
                  ".  Target sizes: ", target.vec(), ".  Tensor sizes: ", self.sizes());
      sizes[i] = want;
      strides[i] = have == want ? self.strides()[od] : 0;
    } else {
      EMBER_CHECK(want >= 0, "The expanded size of the tensor (", want,
                  ") isn't allowed in a leading, non-existing dimension ", i);
      sizes[i] = want;
      strides[i] = 0;
    }
  }
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor squeeze_impl(const Tensor& self) {
  Shape sizes, strides;
  for (int64_t i = 0; i < self.dim(); ++i)
    if (self.sizes()[i] != 1) { sizes.push_back(self.sizes()[i]); strides.push_back(self.strides()[i]); }
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor squeeze_dim_impl(const Tensor& self, int64_t dim) {
  int64_t d = wrap_dim(dim, self.dim());
  if (self.dim() == 0 || self.sizes()[d] != 1) return make_view(self, self.sizes(), self.strides(), self.storage_offset());
  Shape sizes = self.sizes(), strides = self.strides();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor unsqueeze_impl(const Tensor& self, int64_t dim) {
  int64_t d = wrap_dim(dim, self.dim() + 1);
  Shape sizes = self.sizes(), strides = self.strides();
  int64_t st = d < self.dim() ? sizes[d] * strides[d] : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, st);
  return make_view(self, std::move(sizes), std::move(strides), self.storage_offset());
}

Tensor select_impl(const Tensor& self, int64_t dim, int64_t index) {
  EMBER_CHECK_INDEX(self.dim() > 0, "select() cannot be applied to a 0-dim tensor.");
  int64_t d = wrap_dim(dim, self.dim());
  int64_t size = self.sizes()[d];
  EMBER_CHECK_INDEX(index >= -size && index < size, "select(): index ", index, " out of range for tensor of size ",
                    self.sizes(), " at dimension ", d);
  if (index < 0) index += size;
  Shape sizes = self.sizes(), strides = self.strides();
  int64_t off = self.storage_offset() + index * strides[d];
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return make_view(self, std::move(sizes), std::move(strides), off);
}

Tensor slice_impl(const Tensor& self, int64_t dim, OptInt start, OptInt end, int64_t step) {
  EMBER_CHECK_INDEX(self.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  EMBER_CHECK_VALUE(step > 0, "slice step must be positive");
  int64_t d = wrap_dim(dim, self.dim());
  int64_t size = self.sizes()[d];
  int64_t s = start.value_or(0), e = end.value_or(size);
  if (s < 0) s += size;
  if (e < 0) e += size;
  const int64_t written_start = s, written_end = e;
  s = std::clamp<int64_t>(s, 0, size);
  e = std::clamp<int64_t>(e, s, size);
  // a bound cut back to the size (x[:, :512] of a shorter x) makes the result's size piecewise in
  // it: a capture notes that size, so ember.compile's dynamic shapes keep it fixed
  if ((start && s != written_start) || (end && e != written_end)) compiler::detail::note_size_shaped_structure(size);
  Shape sizes = self.sizes(), strides = self.strides();
  int64_t off = self.storage_offset() + s * strides[d];
  sizes[d] = (e - s + step - 1) / step;
  strides[d] *= step;
  return make_view(self, std::move(sizes), std::move(strides), off);
}

Tensor diagonal_impl(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  int64_t n = self.dim();
  EMBER_CHECK(n >= 2, "diagonal dimensions requires at least 2 dimensions, got ", n);
  int64_t d1 = wrap_dim(dim1, n), d2 = wrap_dim(dim2, n);
  EMBER_CHECK(d1 != d2, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  int64_t off = self.storage_offset(), len;
  if (self.sizes()[d1] != self.sizes()[d2] - offset) {  // the shorter side decides the length
    compiler::detail::note_size_shaped_structure(self.sizes()[d1]);
    compiler::detail::note_size_shaped_structure(self.sizes()[d2]);
  }
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(self.sizes()[d1], self.sizes()[d2] - offset), 0);
    if (len > 0) off += offset * self.strides()[d2];
  } else {
    len = std::max<int64_t>(std::min(self.sizes()[d1] + offset, self.sizes()[d2]), 0);
    if (len > 0) off -= offset * self.strides()[d1];
  }
  Shape sizes, strides;
  for (int64_t i = 0; i < n; ++i)
    if (i != d1 && i != d2) { sizes.push_back(self.sizes()[i]); strides.push_back(self.strides()[i]); }
  sizes.push_back(len);
  strides.push_back(self.strides()[d1] + self.strides()[d2]);
  return make_view(self, std::move(sizes), std::move(strides), off);
}

// self's bytes as dtype. Equal element sizes keep the window; otherwise the last dim (stride 1)
// is cut into (or merged from) elements of the new size, and the other strides and the offset
// scale by the ratio, with torch's checks and messages.
Tensor view_dtype_impl(const Tensor& self, DType dtype) {
  const int64_t from = element_size(self.dtype()), to = element_size(dtype);
  Shape sizes = self.sizes(), strides = self.strides();
  int64_t offset = self.storage_offset();
  if (from == to) return make_view(self, dtype, std::move(sizes), std::move(strides), offset);
  const std::string what = std::string(" to view ") + scalar_type_name(self.dtype()) + " as " + scalar_type_name(dtype) +
                           " (different element sizes)";
  EMBER_CHECK(self.dim() > 0, "self.dim() cannot be 0", what);
  const int64_t last = self.dim() - 1;
  EMBER_CHECK(strides[size_t(last)] == 1, "self.stride(-1) must be 1", what, ", but got ", strides[size_t(last)]);
  if (from > to) {  // each element becomes `ratio` smaller ones
    const int64_t ratio = from / to;
    sizes[size_t(last)] *= ratio;
    for (int64_t d = 0; d < last; ++d) strides[size_t(d)] *= ratio;
    return make_view(self, dtype, std::move(sizes), std::move(strides), offset * ratio);
  }
  const int64_t ratio = to / from;  // `ratio` elements make one larger one
  EMBER_CHECK(sizes[size_t(last)] % ratio == 0, "self.size(-1) must be divisible by ", ratio, what, ", but got ",
              sizes[size_t(last)]);
  EMBER_CHECK(offset % ratio == 0, "self.storage_offset() must be divisible by ", ratio, what, ", but got ", offset);
  for (int64_t d = 0; d < last; ++d)
    EMBER_CHECK(strides[size_t(d)] % ratio == 0, "self.stride(", d, ") must be divisible by ", ratio, what,
                ", but got ", strides[size_t(d)]);
  sizes[size_t(last)] /= ratio;
  for (int64_t d = 0; d < last; ++d) strides[size_t(d)] /= ratio;
  return make_view(self, dtype, std::move(sizes), std::move(strides), offset / ratio);
}

EMBER_REGISTER_KERNEL(as_strided, CompositeBackend, as_strided_impl);
EMBER_REGISTER_KERNEL(view_dtype, CompositeBackend, view_dtype_impl);
EMBER_REGISTER_KERNEL(view, CompositeBackend, view_impl);
EMBER_REGISTER_KERNEL(permute, CompositeBackend, permute_impl);
EMBER_REGISTER_KERNEL(transpose, CompositeBackend, transpose_impl);
EMBER_REGISTER_KERNEL(expand, CompositeBackend, expand_impl);
EMBER_REGISTER_KERNEL(squeeze, CompositeBackend, squeeze_impl);
EMBER_REGISTER_KERNEL(squeeze_dim, CompositeBackend, squeeze_dim_impl);
EMBER_REGISTER_KERNEL(unsqueeze, CompositeBackend, unsqueeze_impl);
EMBER_REGISTER_KERNEL(select, CompositeBackend, select_impl);
EMBER_REGISTER_KERNEL(slice, CompositeBackend, slice_impl);
EMBER_REGISTER_KERNEL(diagonal, CompositeBackend, diagonal_impl);

}  // namespace

Tensor as_strided(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, OptInt offset) {
  return ops::as_strided()(self, sizes, strides, offset);
}
Tensor view(const Tensor& self, IntArrayRef shape) { return ops::view()(self, shape); }
Tensor view(const Tensor& self, DType dtype) { return ops::view_dtype()(self, dtype); }
Tensor permute(const Tensor& self, IntArrayRef dims) { return ops::permute()(self, dims); }
Tensor transpose(const Tensor& self, int64_t d0, int64_t d1) { return ops::transpose()(self, d0, d1); }
Tensor t(const Tensor& self) {
  EMBER_CHECK(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  return self.dim() < 2 ? transpose(self, 0, 0) : transpose(self, 0, 1);
}
Tensor expand(const Tensor& self, IntArrayRef sizes) { return ops::expand()(self, sizes); }
Tensor squeeze(const Tensor& self) { return ops::squeeze()(self); }
Tensor squeeze(const Tensor& self, int64_t dim) { return ops::squeeze_dim()(self, dim); }
Tensor unsqueeze(const Tensor& self, int64_t dim) { return ops::unsqueeze()(self, dim); }
// The size-1 dims among dims (torch 2.0's squeeze.dims), squeezed last first so the remaining
// indices stay valid.
Tensor squeeze(const Tensor& self, IntArrayRef dims) {
  std::vector<int64_t> wrapped;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, self.dim());
    EMBER_CHECK(std::find(wrapped.begin(), wrapped.end(), w) == wrapped.end(), "dim ", w,
                " appears multiple times in the list of dims");
    wrapped.push_back(w);
  }
  std::sort(wrapped.rbegin(), wrapped.rend());
  Tensor out = self;
  for (int64_t d : wrapped) out = squeeze(out, d);
  return out;
}
// Windows of `size` every `step` along dim as a new last dim: an as_strided view.
Tensor unfold(const Tensor& self, int64_t dim, int64_t size, int64_t step) {
  int64_t d = wrap_dim(dim, self.dim());
  int64_t max_size = self.dim() == 0 ? 1 : self.size(d);
  EMBER_CHECK(size <= max_size, "maximum size for tensor at dimension ", d, " is ", max_size, " but size is ", size);
  EMBER_CHECK(size >= 0, "size is ", size, " but must be >= 0");
  EMBER_CHECK(step > 0, "step is ", step, " but must be > 0");
  Shape sizes = self.sizes(), strides = self.strides();
  sizes.push_back(size);
  strides.push_back(self.dim() == 0 ? 1 : strides[size_t(d)]);
  if (d < self.dim()) {
    sizes[size_t(d)] = (sizes[size_t(d)] - size) / step + 1;
    strides[size_t(d)] *= step;
  }
  return as_strided(self, sizes, strides, self.storage_offset());
}
Tensor select(const Tensor& self, int64_t dim, int64_t index) { return ops::select()(self, dim, index); }
Tensor slice(const Tensor& self, int64_t dim, OptInt start, OptInt end, int64_t step) {
  return ops::slice()(self, dim, start, end, step);
}
Tensor diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  return ops::diagonal()(self, offset, dim1, dim2);
}
Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  EMBER_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  int64_t d = wrap_dim(dim, self.dim());
  int64_t size = self.sizes()[d];
  EMBER_CHECK_INDEX(start >= -size && start <= size, "start out of range (expected to be in range of [", -size,
                    ", ", size, "], but got ", start, ")");
  if (start < 0) start += size;
  EMBER_CHECK(length >= 0 && start <= size - length, "start (", start, ") + length (", length,
              ") exceeds dimension size (", size, ").");
  return slice(self, d, start, start + length, 1);
}

}  // namespace ember

// ---------------------------------------------------------------- gradients
#include "autograd/record.h"

namespace ember {
namespace {
using namespace autograd;  // record, below_autograd, saved_input, grad_for, ...

// The gradient of a view: zeros shaped like the input with the view's window set to g. Written
// with a view and an in-place copy, so it is differentiable again (the copy records CopySlices).
Tensor scatter_into_zeros(const Shape& sizes, const Tensor& g, const std::function<Tensor(Tensor&)>& window) {
  Tensor r = zeros(sizes, {.dtype = g.dtype(), .device = g.device()});
  Tensor w = window(r);
  w.copy_(g);
  return r;
}

template <class F> Tensor view_autograd(const char* name, const Tensor& self, F&& forward,
                                        LambdaNode::Backward backward) {
  Tensor out = below_autograd(forward);
  record(name, {self}, {out}, {}, std::move(backward));
  return out;
}

Tensor view_ag(const Tensor& self, IntArrayRef shape) {
  return view_autograd("ViewBackward0", self, [&] { return ops::view()(self, shape); },
                       [s = self.sizes()](const variable_list& g, LambdaNode&) -> variable_list { return {g[0].reshape(s)}; });
}
Tensor permute_ag(const Tensor& self, IntArrayRef dims) {
  Shape inv(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inv[wrap_dim(dims[i], self.dim())] = int64_t(i);
  return view_autograd("PermuteBackward0", self, [&] { return ops::permute()(self, dims); },
                       [inv](const variable_list& g, LambdaNode&) -> variable_list { return {g[0].permute(inv)}; });
}
Tensor transpose_ag(const Tensor& self, int64_t d0, int64_t d1) {
  return view_autograd("TransposeBackward0", self, [&] { return ops::transpose()(self, d0, d1); },
                       [d0, d1](const variable_list& g, LambdaNode&) -> variable_list { return {g[0].transpose(d0, d1)}; });
}
Tensor expand_ag(const Tensor& self, IntArrayRef sizes) {
  return view_autograd("ExpandBackward0", self, [&] { return ops::expand()(self, sizes); },
                       [s = self.sizes()](const variable_list& g, LambdaNode&) -> variable_list {
                         return {autograd::sum_to(g[0], s)};
                       });
}
Tensor squeeze_ag(const Tensor& self) {
  return view_autograd("SqueezeBackward0", self, [&] { return ops::squeeze()(self); },
                       [s = self.sizes()](const variable_list& g, LambdaNode&) -> variable_list { return {g[0].reshape(s)}; });
}
Tensor squeeze_dim_ag(const Tensor& self, int64_t dim) {
  return view_autograd("SqueezeBackward1", self, [&] { return ops::squeeze_dim()(self, dim); },
                       [s = self.sizes()](const variable_list& g, LambdaNode&) -> variable_list { return {g[0].reshape(s)}; });
}
Tensor unsqueeze_ag(const Tensor& self, int64_t dim) {
  int64_t d = wrap_dim(dim, self.dim() + 1);
  return view_autograd("UnsqueezeBackward0", self, [&] { return ops::unsqueeze()(self, dim); },
                       [d](const variable_list& g, LambdaNode&) -> variable_list { return {g[0].squeeze(d)}; });
}
Tensor select_ag(const Tensor& self, int64_t dim, int64_t index) {
  return view_autograd("SelectBackward0", self, [&] { return ops::select()(self, dim, index); },
                       [s = self.sizes(), dim, index](const variable_list& g, LambdaNode&) -> variable_list {
                         return {scatter_into_zeros(s, g[0], [&](Tensor& r) { return r.select(dim, index); })};
                       });
}
Tensor slice_ag(const Tensor& self, int64_t dim, OptInt start, OptInt end, int64_t step) {
  return view_autograd("SliceBackward0", self, [&] { return ops::slice()(self, dim, start, end, step); },
                       [s = self.sizes(), dim, start, end, step](const variable_list& g, LambdaNode&) -> variable_list {
                         return {scatter_into_zeros(s, g[0], [&](Tensor& r) { return r.slice(dim, start, end, step); })};
                       });
}
Tensor diagonal_ag(const Tensor& self, int64_t offset, int64_t d1, int64_t d2) {
  return view_autograd("DiagonalBackward0", self, [&] { return ops::diagonal()(self, offset, d1, d2); },
                       [s = self.sizes(), offset, d1, d2](const variable_list& g, LambdaNode&) -> variable_list {
                         return {scatter_into_zeros(s, g[0], [&](Tensor& r) { return diagonal(r, offset, d1, d2); })};
                       });
}
// as_strided may overlap itself (e.g. stride 0): accumulate into a flat buffer over the storage
// window the input covers, through index_add.
Tensor as_strided_ag(const Tensor& self, IntArrayRef sizes, IntArrayRef strides, OptInt offset) {
  return view_autograd(
      "AsStridedBackward0", self, [&] { return ops::as_strided()(self, sizes, strides, offset); },
      [in_sizes = self.sizes(), in_strides = self.strides(), in_off = self.storage_offset(), sz = sizes.vec(),
       st = strides.vec(), off = offset.value_or(self.storage_offset())](const variable_list& g,
                                                                         LambdaNode&) -> variable_list {
        // The storage window both geometries touch: [lo, hi].
        int64_t out_hi = off, in_hi = in_off;
        for (size_t i = 0; i < sz.size(); ++i) out_hi += std::max<int64_t>(sz[i] - 1, 0) * st[i];
        for (size_t i = 0; i < in_sizes.size(); ++i) in_hi += std::max<int64_t>(in_sizes[i] - 1, 0) * in_strides[i];
        int64_t lo = std::min(in_off, off), hi = std::max(out_hi, in_hi);
        int64_t extent = hi - lo + 1;
        Tensor positions = arange(extent, {.device = g[0].device()});
        Tensor out_idx = positions.as_strided(sz, st, off - lo).reshape({-1});
        Tensor flat = zeros({extent}, {.dtype = g[0].dtype(), .device = g[0].device()});
        flat = flat.index_add(0, out_idx, g[0].reshape({-1}));
        return {flat.as_strided(in_sizes, in_strides, in_off - lo)};
      });
}

EMBER_REGISTER_KERNEL(view, Autograd, view_ag);
EMBER_REGISTER_KERNEL(permute, Autograd, permute_ag);
EMBER_REGISTER_KERNEL(transpose, Autograd, transpose_ag);
EMBER_REGISTER_KERNEL(expand, Autograd, expand_ag);
EMBER_REGISTER_KERNEL(squeeze, Autograd, squeeze_ag);
EMBER_REGISTER_KERNEL(squeeze_dim, Autograd, squeeze_dim_ag);
EMBER_REGISTER_KERNEL(unsqueeze, Autograd, unsqueeze_ag);
EMBER_REGISTER_KERNEL(select, Autograd, select_ag);
EMBER_REGISTER_KERNEL(slice, Autograd, slice_ag);
EMBER_REGISTER_KERNEL(diagonal, Autograd, diagonal_ag);
EMBER_REGISTER_KERNEL(as_strided, Autograd, as_strided_ag);

}  // namespace
}  // namespace ember
