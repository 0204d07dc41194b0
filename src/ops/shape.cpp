// Shape ops that are not pure views: reshape (a view when the strides allow, else a copy),
// flatten/unflatten, movedim, split/chunk/unbind, cat/stack, repeat, repeat_interleave, flip,
// roll, tril/triu, diag. Argument checks live here (device-agnostic, PyTorch's messages); the
// copying ops dispatch to kernels in cpu/shape_kernels.cpp. The pure views (view, permute,
// narrow, select, ...) are in view.cpp.
#include <algorithm>
#include <functional>
#include <numeric>

#include "amp/autocast.h"
#include "ember/compile/capture.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/shape_utils.h"

namespace ember {

namespace {

// Resolves one -1 in `shape` against numel, with reshape's messages (PyTorch's infer_size).
Shape infer_reshape_size(IntArrayRef shape, int64_t numel) {
  Shape res = shape.vec();
  int64_t newsize = 1;
  std::optional<size_t> infer;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      EMBER_CHECK(!infer, "only one dimension can be inferred");
      infer = d;
    } else if (shape[d] >= 0) {
      newsize *= shape[d];
    } else {
      EMBER_CHECK(false, "invalid shape dimension ", shape[d]);
    }
  }
  if (numel == newsize || (infer && newsize > 0 && numel % newsize == 0)) {
    if (infer) {
      EMBER_CHECK(newsize != 0, "cannot reshape tensor of 0 elements into shape ", shape,
                  " because the unspecified dimension size -1 can be any value and is ambiguous");
      res[*infer] = numel / newsize;
    }
    return res;
  }
  EMBER_CHECK(false, "shape '", shape, "' is invalid for input of size ", numel);
  return res;
}


}  // namespace

// ---------------------------------------------------------------- reshape family

Tensor reshape(const Tensor& self, IntArrayRef shape) {
  Shape size = infer_reshape_size(shape, self.numel());
  if (compute_view_strides(self.sizes(), self.strides(), size)) return view(self, size);
  return view(clone(self), size);  // clone is contiguous, so the view always succeeds
}

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  int64_t s = wrap_dim(start_dim, self.dim()), e = wrap_dim(end_dim, self.dim());
  EMBER_CHECK(s <= e, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (self.dim() == 0) return reshape(self, {1});
  if (s == e) return self;
  Shape shape;
  for (int64_t d = 0; d < s; ++d) shape.push_back(self.size(d));
  int64_t m = 1;
  for (int64_t d = s; d <= e; ++d) m *= self.size(d);
  shape.push_back(m);
  for (int64_t d = e + 1; d < self.dim(); ++d) shape.push_back(self.size(d));
  return reshape(self, shape);
}

Tensor unflatten(const Tensor& self, int64_t dim, IntArrayRef sizes) {
  int64_t d = wrap_dim(dim, self.dim());
  EMBER_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  int64_t dim_size = self.dim() == 0 ? 1 : self.size(d);
  Shape inferred;
  {
    int64_t known = 1, ninfer = 0;
    for (auto s : sizes) {
      if (s == -1) ++ninfer;
      else known *= s;
    }
    EMBER_CHECK(ninfer <= 1, "only one dimension can be inferred");
    EMBER_CHECK(ninfer == 1 ? (known > 0 && dim_size % known == 0) || (known == 0 && dim_size == 0)
                            : known == dim_size,
                "unflatten: Provided sizes ", sizes, " don't multiply up to the size of dim ", dim, " (",
                dim_size, ") in the input tensor");
    inferred = ninfer && known == 0 ? sizes.vec() : infer_reshape_size(sizes, dim_size);
  }
  Shape shape;
  for (int64_t i = 0; i < d; ++i) shape.push_back(self.size(i));
  shape.insert(shape.end(), inferred.begin(), inferred.end());
  for (int64_t i = d + 1; i < self.dim(); ++i) shape.push_back(self.size(i));
  return reshape(self, shape);
}

Tensor movedim(const Tensor& self, int64_t src, int64_t dst) {
  int64_t n = self.dim();
  int64_t s = wrap_dim(src, n), t = wrap_dim(dst, n);
  if (n == 0 || s == t) return self;
  Shape order;
  for (int64_t d = 0; d < n; ++d)
    if (d != s) order.push_back(d);
  order.insert(order.begin() + t, s);
  return permute(self, order);
}

// ---------------------------------------------------------------- splitting
namespace detail {
// The pieces make() cuts from self along dim d (views), under one autograd node for all of them
// (torch's SplitBackward0 / UnbindBackward0, defined with the gradients below).
std::vector<Tensor> pieces_under_one_node(const char* name, const Tensor& self, int64_t d, bool stacked,
                                          const std::function<std::vector<Tensor>()>& make);
}  // namespace detail


std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim) {
  EMBER_CHECK(self.dim() != 0, "split expects at least a 1-dimensional tensor");
  EMBER_CHECK(split_size >= 0, "split expects split_size be non-negative, but got split_size=", split_size);
  int64_t d = wrap_dim(dim, self.dim());
  int64_t dim_size = self.size(d);
  EMBER_CHECK(split_size > 0 || dim_size == 0, "split_size can only be 0 if dimension size is 0, but got dimension size of ",
              dim_size);
  compiler::detail::note_size_shaped_structure(dim_size);  // one piece per split_size
  int64_t num_splits = 1;
  if (split_size != 0) num_splits = std::max<int64_t>((dim_size + split_size - 1) / split_size, 1);
  const int64_t last = split_size * num_splits - dim_size;
  return detail::pieces_under_one_node("SplitBackward0", self, d, false, [&] {
    std::vector<Tensor> out;
    out.reserve(num_splits);
    for (int64_t i = 0; i < num_splits; ++i) {
      int64_t len = i < num_splits - 1 ? split_size : split_size - last;
      out.push_back(narrow(self, d, i * split_size, len));
    }
    return out;
  });
}

std::vector<Tensor> split(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  EMBER_CHECK(self.dim() != 0, "split expects at least a 1-dimensional tensor");
  int64_t d = wrap_dim(dim, self.dim());
  int64_t dim_size = self.size(d);
  int64_t sum = 0;
  for (auto s : split_sizes) {
    EMBER_CHECK(s >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=",
                split_sizes);
    sum += s;
  }
  EMBER_CHECK(sum == dim_size, "split_with_sizes expects split_sizes to sum exactly to ", dim_size,
              " (input tensor's size at dimension ", d, "), but got split_sizes=", split_sizes);
  return detail::pieces_under_one_node("SplitWithSizesBackward0", self, d, false, [&] {
    std::vector<Tensor> out;
    out.reserve(split_sizes.size());
    int64_t start = 0;
    for (auto s : split_sizes) {
      out.push_back(narrow(self, d, start, s));
      start += s;
    }
    return out;
  });
}

std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  EMBER_CHECK(self.dim() > 0, "chunk expects at least a 1-dimensional tensor");
  EMBER_CHECK(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  int64_t d = wrap_dim(dim, self.dim());
  int64_t dim_size = self.size(d);
  int64_t split_size = (dim_size + chunks - 1) / chunks;
  if (split_size == 0 && dim_size == 0) {
    Shape sizes(chunks, 0);
    return split(self, IntArrayRef(sizes), d);
  }
  return split(self, split_size, d);
}

std::vector<Tensor> unbind(const Tensor& self, int64_t dim) {
  EMBER_CHECK_INDEX(self.dim() > 0, "Dimension specified as ", dim, " but tensor has no dimensions");
  int64_t d = wrap_dim(dim, self.dim());
  compiler::detail::note_size_shaped_structure(self.size(d));  // one select per index
  return detail::pieces_under_one_node("UnbindBackward0", self, d, true, [&] {
    std::vector<Tensor> out;
    out.reserve(self.size(d));
    for (int64_t i = 0; i < self.size(d); ++i) out.push_back(select(self, d, i));
    return out;
  });
}

// ---------------------------------------------------------------- joining

Tensor cat(TensorList tensors, int64_t dim) {
  EMBER_AUTOCAST(cat, tensors, dim);
  EMBER_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  // Legacy behaviour kept by PyTorch: 1-D tensors with zero elements are skipped.
  auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.numel() == 0; };
  const Tensor* ref = nullptr;
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].dim() > 0, "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
    if (!ref && !skipped(tensors[i])) ref = &tensors[i];
  }
  for (size_t i = 1; i < tensors.size(); ++i)
    EMBER_CHECK(tensors[i].device() == tensors[0].device(),
                "Expected all tensors to be on the same device, but found at least two devices, ",
                tensors[0].device().str(), " and ", tensors[i].device().str(), "!");
  if (!ref) return ops::cat()(tensors, wrap_dim(dim, tensors[0].dim()));
  int64_t d = wrap_dim(dim, ref->dim());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (skipped(t)) continue;
    EMBER_CHECK(t.dim() == ref->dim(), "Tensors must have same number of dimensions: got ", ref->dim(), " and ",
                t.dim());
    for (int64_t k = 0; k < t.dim(); ++k) {
      if (k == d) continue;
      EMBER_CHECK(t.size(k) == ref->size(k), "Sizes of tensors must match except in dimension ", d,
                  ". Expected size ", ref->size(k), " but got size ", t.size(k), " for tensor number ", i,
                  " in the list.");
    }
  }
  return ops::cat()(tensors, d);
}

Tensor stack(TensorList tensors, int64_t dim) {
  EMBER_AUTOCAST(stack, tensors, dim);
  EMBER_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  for (size_t i = 1; i < tensors.size(); ++i)
    EMBER_CHECK(IntArrayRef(tensors[i].sizes()) == IntArrayRef(tensors[0].sizes()),
                "stack expects each tensor to be equal size, but got ", tensors[0].sizes(), " at entry 0 and ",
                tensors[i].sizes(), " at entry ", i);
  // As cat's: the device-generic cat kernel would otherwise copy across devices silently.
  for (size_t i = 1; i < tensors.size(); ++i)
    EMBER_CHECK(tensors[i].device() == tensors[0].device(),
                "Expected all tensors to be on the same device, but found at least two devices, ",
                tensors[0].device().str(), " and ", tensors[i].device().str(), "!");
  int64_t d = wrap_dim(dim, tensors[0].dim() + 1);
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const auto& t : tensors) parts.push_back(unsqueeze(t, d));
  return ops::cat()(parts, d);
}

// ---------------------------------------------------------------- repeating

Tensor repeat(const Tensor& self, IntArrayRef repeats) {
  EMBER_CHECK(int64_t(repeats.size()) >= self.dim(),
              "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  int64_t pad = int64_t(repeats.size()) - self.dim();
  Shape out(repeats.size());
  for (size_t i = 0; i < repeats.size(); ++i)
    out[i] = repeats[i] * (int64_t(i) < pad ? 1 : self.size(int64_t(i) - pad));
  for (auto s : out) EMBER_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", out);
  return ops::repeat()(self, repeats);
}

Tensor repeat_interleave(const Tensor& self, int64_t repeats, std::optional<int64_t> dim) {
  EMBER_CHECK(repeats >= 0, "repeats can not be negative");
  Tensor input = self;
  int64_t d = 0;
  if (!dim) input = flatten(self);
  else d = wrap_dim(*dim, self.dim());
  if (input.dim() == 0) input = reshape(input, {1});
  // [.., n, ..] -> [.., n, r, ..] (a broadcast view) -> [.., n * r, ..] (one copy).
  Shape exp = input.sizes();
  exp.insert(exp.begin() + d + 1, repeats);
  Tensor e = expand(unsqueeze(input, d + 1), exp);
  return flatten(e, d, d + 1);
}

Tensor repeat_interleave(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim) {
  EMBER_CHECK(repeats.dim() <= 1, "repeats must be 0-dim or 1-dim tensor");
  EMBER_CHECK(is_integral(repeats.dtype(), false), "repeats has to be Long tensor");
  Tensor input = dim ? self : flatten(self);
  int64_t d = dim ? wrap_dim(*dim, self.dim()) : 0;
  if (input.dim() == 0) input = reshape(input, {1});
  std::vector<int64_t> reps = repeats.tolist<int64_t>();
  int64_t n = input.size(d);
  EMBER_CHECK(reps.size() == 1 || int64_t(reps.size()) == n, "repeats must have the same size as input along dim, but got repeats.size(0) = ",
              reps.size(), " and input.size(", d, ") = ", n);
  for (auto r : reps) EMBER_CHECK(r >= 0, "repeats can not be negative");
  if (reps.size() == 1) return repeat_interleave(input, reps[0], d);
  int64_t total = std::accumulate(reps.begin(), reps.end(), int64_t(0));
  Shape shape = input.sizes();
  shape[d] = total;
  Tensor out = empty(shape, {.dtype = input.dtype(), .device = input.device()});
  // Runs of equal source rows become one broadcast copy each.
  int64_t pos = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (reps[i] == 0) continue;
    Tensor dst = narrow(out, d, pos, reps[i]);
    Tensor src = narrow(input, d, i, 1);
    copy_(dst, src);
    pos += reps[i];
  }
  return out;
}

// ---------------------------------------------------------------- reordering

Tensor flip(const Tensor& self, IntArrayRef dims) {
  std::vector<bool> seen(std::max<int64_t>(self.dim(), 1), false);
  Shape wrapped;
  for (auto d : dims) {
    int64_t w = wrap_dim(d, self.dim());
    EMBER_CHECK(!seen[w], "dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
    wrapped.push_back(w);
  }
  if (self.dim() == 0) return clone(self);
  return ops::flip()(self, wrapped);
}

Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  EMBER_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty() && shifts.size() == 1) {
    // No dims: roll the flattened tensor, then restore the shape.
    return view(roll(flatten(self), shifts, {0}), self.sizes());
  }
  EMBER_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(),
              ", dims:", dims.size());
  Shape wrapped;
  for (auto d : dims) wrapped.push_back(wrap_dim(d, self.dim()));
  if (self.dim() == 0) return clone(self);
  return ops::roll()(self, shifts, wrapped);
}

Tensor tril(const Tensor& self, int64_t diagonal) {
  EMBER_CHECK(self.dim() >= 2, "tril: input tensor must have at least 2 dimensions");
  return ops::tril()(self, diagonal);
}

Tensor triu(const Tensor& self, int64_t diagonal) {
  EMBER_CHECK(self.dim() >= 2, "triu: input tensor must have at least 2 dimensions");
  return ops::triu()(self, diagonal);
}

// ---------------------------------------------------------------- rearrangements composed of the above

Tensor movedim(const Tensor& self, IntArrayRef source, IntArrayRef destination) {
  EMBER_CHECK(source.size() == destination.size(), "movedim: Invalid source or destination dims: source (", source,
              " dims) should contain the same number of dims as destination (", destination, " dims)");
  int64_t n = self.dim();
  std::vector<int64_t> order(size_t(std::max<int64_t>(n, 1)), -1);
  std::vector<bool> used(order.size(), false);
  for (size_t i = 0; i < source.size(); ++i) {
    int64_t s = wrap_dim(source[i], n), d = wrap_dim(destination[i], n);
    EMBER_CHECK(!used[size_t(s)], "movedim: repeated dim in `source` (", source, ")");
    EMBER_CHECK(order[size_t(d)] == -1, "movedim: repeated dim in `destination` (", destination, ")");
    order[size_t(d)] = s;
    used[size_t(s)] = true;
  }
  if (n == 0) return self;
  // The dims not moved fill the free destinations in their original order.
  int64_t next = 0;
  for (auto& o : order) {
    if (o != -1) continue;
    while (used[size_t(next)]) ++next;
    o = next++;
  }
  return permute(self, order);
}

Tensor ravel(const Tensor& self) { return reshape(self, {-1}); }

Tensor tile(const Tensor& self, IntArrayRef dims) {
  std::vector<int64_t> reps(dims.begin(), dims.end());
  if (int64_t(reps.size()) < self.dim()) reps.insert(reps.begin(), size_t(self.dim()) - reps.size(), 1);
  return repeat(self, reps);
}

Tensor fliplr(const Tensor& self) {
  EMBER_CHECK(self.dim() >= 2, "Input must be >= 2-d.");
  return flip(self, {1});
}
Tensor flipud(const Tensor& self) {
  EMBER_CHECK(self.dim() >= 1, "Input must be >= 1-d.");
  return flip(self, {0});
}

Tensor rot90(const Tensor& self, int64_t k, IntArrayRef dims) {
  const int64_t total_dims = self.dim(), total_rot_dims = int64_t(dims.size());
  EMBER_CHECK(total_rot_dims == 2, "expected total rotation dims == 2, but got dims = ", total_rot_dims);
  EMBER_CHECK(total_dims >= 2, "expected total dims >= 2, but got total dims = ", total_dims);
  EMBER_CHECK(dims[0] != dims[1] && std::abs(dims[0] - dims[1]) != total_dims,
              "expected rotation dims to be different, but got dim0 = ", dims[0], " and dim1 = ", dims[1]);
  EMBER_CHECK(dims[0] < total_dims && dims[0] >= -total_dims, "Rotation dim0 out of range, dim0 = ", dims[0]);
  EMBER_CHECK(dims[1] < total_dims && dims[1] >= -total_dims, "Rotation dim1 out of range, dim1 = ", dims[1]);
  switch ((4 + (k % 4)) % 4) {
    case 1: return flip(self, {dims[1]}).transpose(dims[0], dims[1]);
    case 2: return flip(self, dims);
    case 3: return flip(self, {dims[0]}).transpose(dims[0], dims[1]);
    default: return clone(self);
  }
}

Tensor atleast_1d(const Tensor& self) { return self.dim() == 0 ? self.reshape({1}) : self; }
Tensor atleast_2d(const Tensor& self) {
  if (self.dim() == 0) return self.reshape({1, 1});
  return self.dim() == 1 ? self.unsqueeze(0) : self;
}
Tensor atleast_3d(const Tensor& self) {
  if (self.dim() == 0) return self.reshape({1, 1, 1});
  if (self.dim() == 1) return self.unsqueeze(0).unsqueeze(-1);
  return self.dim() == 2 ? self.unsqueeze(-1) : self;
}
namespace {
template <Tensor (*F)(const Tensor&)> std::vector<Tensor> each(TensorList tensors) {
  std::vector<Tensor> out;
  out.reserve(tensors.size());
  for (const Tensor& t : tensors) out.push_back(F(t));
  return out;
}
}  // namespace
std::vector<Tensor> atleast_1d(TensorList tensors) { return each<atleast_1d>(tensors); }
std::vector<Tensor> atleast_2d(TensorList tensors) { return each<atleast_2d>(tensors); }
std::vector<Tensor> atleast_3d(TensorList tensors) { return each<atleast_3d>(tensors); }

Tensor hstack(TensorList tensors) {
  EMBER_CHECK(!tensors.empty(), "hstack expects a non-empty TensorList");
  std::vector<Tensor> rep = atleast_1d(tensors);
  return cat(rep, rep[0].dim() == 1 ? 0 : 1);
}
Tensor vstack(TensorList tensors) {
  EMBER_CHECK(!tensors.empty(), "vstack expects a non-empty TensorList");
  return cat(atleast_2d(tensors), 0);
}
Tensor dstack(TensorList tensors) {
  EMBER_CHECK(!tensors.empty(), "dstack expects a non-empty TensorList");
  return cat(atleast_3d(tensors), 2);
}
Tensor column_stack(TensorList tensors) {
  EMBER_CHECK(!tensors.empty(), "column_stack expects a non-empty TensorList");
  std::vector<Tensor> cols;
  for (const Tensor& t : tensors) cols.push_back(t.dim() <= 1 ? t.reshape({t.numel(), 1}) : t);
  return hstack(cols);
}

std::vector<Tensor> meshgrid(TensorList tensors, const std::string& indexing) {
  EMBER_CHECK(!tensors.empty(), "meshgrid expects a non-empty TensorList");
  for (size_t i = 0; i + 1 < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].dtype() == tensors[i + 1].dtype(), "meshgrid expects all tensors to have the same dtype");
    EMBER_CHECK(tensors[i].device() == tensors[i + 1].device(), "meshgrid expects all tensors to have the same device");
  }
  EMBER_CHECK(indexing == "ij" || indexing == "xy",
              "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: ", indexing);
  std::vector<Tensor> in(tensors.begin(), tensors.end());
  // "xy" is "ij" with the first two inputs (and outputs) swapped.
  bool swap = indexing == "xy" && in.size() >= 2;
  if (swap) std::swap(in[0], in[1]);
  Shape shape;
  for (const Tensor& t : in) {
    EMBER_CHECK(t.dim() <= 1, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: ", t.sizes());
    shape.push_back(t.numel());
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < in.size(); ++i) {
    Shape view_shape(in.size(), 1);
    view_shape[i] = -1;
    out.push_back(in[i].reshape(view_shape).expand(shape));
  }
  if (swap) std::swap(out[0], out[1]);
  return out;
}

Tensor diag(const Tensor& self, int64_t diagonal) {
  EMBER_CHECK(self.dim() == 1 || self.dim() == 2, "diag(): Supports 1D or 2D tensors. Got ", self.dim(), "D");
  if (self.dim() == 2) return clone(ember::diagonal(self, diagonal));
  int64_t n = self.size(0) + (diagonal < 0 ? -diagonal : diagonal);
  Tensor out = zeros({n, n}, {.dtype = self.dtype(), .device = self.device()});
  Tensor dv = ember::diagonal(out, diagonal);
  copy_(dv, self);
  return out;
}

}  // namespace ember

// ---------------------------------------------------------------- gradients
// Formulas are written with ember ops, so they are themselves differentiable (double backward).
// Every op here is linear in its input: the gradient moves g back to where each element came from.
#include "autograd/record.h"

namespace ember {

// One node for every piece: its backward joins the pieces' gradients with one cat (or stack),
// zeros standing in for pieces that got none. A node per piece (narrow's, select's) would each
// scatter its gradient into zeros of self's whole size and the engine would add those up: for
// an LSTM's unbound input projection, L full-size zero fills and adds per backward.
std::vector<Tensor> detail::pieces_under_one_node(const char* name, const Tensor& self, int64_t d, bool stacked,
                                                  const std::function<std::vector<Tensor>()>& make) {
  if (!autograd::GradMode::is_enabled() || !self.requires_grad()) return make();
  std::vector<Tensor> out = autograd::below_autograd(make);
  std::vector<Shape> sizes;
  for (const auto& t : out) sizes.push_back(t.sizes());
  autograd::record(name, {self}, out, {},
                   [sizes = std::move(sizes), d, stacked](const autograd::variable_list& g,
                                                          autograd::LambdaNode&) -> autograd::variable_list {
                     const Tensor* any = nullptr;
                     for (const auto& t : g)
                       if (t.defined()) any = &t;
                     if (!any) return {Tensor()};  // no piece got a gradient
                     std::vector<Tensor> parts;
                     for (size_t i = 0; i < g.size(); ++i)
                       parts.push_back(g[i].defined() ? g[i] : zeros(sizes[i], {.dtype = any->dtype(), .device = any->device()}));
                     return {stacked ? ember::stack(parts, d) : ember::cat(parts, d)};
                   });
  return out;
}
namespace {
using namespace autograd;  // record, below_autograd, saved_input, grad_for, ...

// Each input gets its slice of g along dim, cast back to its dtype (cat promotes mixed inputs).
// 1-D empty inputs, which cat skips, get zeros of their own shape.
Tensor cat_ag(TensorList tensors, int64_t dim) {
  Tensor out = below_autograd([&] { return ops::cat()(tensors, dim); });
  variable_list inputs(tensors.begin(), tensors.end());
  std::vector<Shape> sizes;
  std::vector<DType> dtypes;
  for (const auto& t : tensors) {
    sizes.push_back(t.sizes());
    dtypes.push_back(t.dtype());
  }
  int64_t d = out.dim() > 0 ? wrap_dim(dim, out.dim()) : 0;
  record("CatBackward0", inputs, {out}, {},
         [sizes = std::move(sizes), dtypes = std::move(dtypes), d](const variable_list& g, LambdaNode& n) -> variable_list {
           variable_list r(sizes.size());
           int64_t offset = 0;
           for (size_t i = 0; i < sizes.size(); ++i) {
             bool skipped = sizes[i].size() == 1 && sizes[i][0] == 0;
             int64_t len = skipped ? 0 : sizes[i][d];
             r[i] = grad_for(n, i, [&] {
               Tensor gi = skipped ? zeros(sizes[i], {.dtype = g[0].dtype(), .device = g[0].device()})
                                   : g[0].narrow(d, offset, len);
               return gi.dtype() == dtypes[i] ? gi : gi.to(dtypes[i]);
             });
             offset += len;
           }
           return r;
         });
  return out;
}

// out viewed as [r0, (r1, s1), (r2, s2), ...]: the gradient sums over the tile dimensions.
Tensor repeat_ag(const Tensor& self, IntArrayRef repeats) {
  Tensor out = below_autograd([&] { return ops::repeat()(self, repeats); });
  record("RepeatBackward0", {self}, {out}, {},
         [s = self.sizes(), reps = repeats.vec()](const variable_list& g, LambdaNode&) -> variable_list {
           int64_t pad = int64_t(reps.size()) - int64_t(s.size());
           Shape shape;
           std::vector<int64_t> dims;
           for (int64_t i = 0; i < int64_t(reps.size()); ++i) {
             if (reps[i] != 1) {
               dims.push_back(int64_t(shape.size()));
               shape.push_back(reps[i]);
             }
             if (i >= pad) shape.push_back(s[i - pad]);
           }
           Tensor r = g[0].reshape(shape);
           if (!dims.empty()) r = r.sum(dims, /*keepdim=*/false);
           return {r.reshape(s)};
         });
  return out;
}

Tensor flip_ag(const Tensor& self, IntArrayRef dims) {
  Tensor out = below_autograd([&] { return ops::flip()(self, dims); });
  record("FlipBackward0", {self}, {out}, {}, [dims = dims.vec()](const variable_list& g, LambdaNode&) -> variable_list {
    return {flip(g[0], dims)};
  });
  return out;
}

Tensor roll_ag(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  Tensor out = below_autograd([&] { return ops::roll()(self, shifts, dims); });
  Shape back;
  for (auto s : shifts) back.push_back(-s);
  record("RollBackward0", {self}, {out}, {},
         [back = std::move(back), dims = dims.vec()](const variable_list& g, LambdaNode&) -> variable_list {
           return {roll(g[0], back, dims)};
         });
  return out;
}

Tensor tril_ag(const Tensor& self, int64_t diagonal) {
  Tensor out = below_autograd([&] { return ops::tril()(self, diagonal); });
  record("TrilBackward0", {self}, {out}, {}, [diagonal](const variable_list& g, LambdaNode&) -> variable_list {
    return {tril(g[0], diagonal)};
  });
  return out;
}

Tensor triu_ag(const Tensor& self, int64_t diagonal) {
  Tensor out = below_autograd([&] { return ops::triu()(self, diagonal); });
  record("TriuBackward0", {self}, {out}, {}, [diagonal](const variable_list& g, LambdaNode&) -> variable_list {
    return {triu(g[0], diagonal)};
  });
  return out;
}

EMBER_REGISTER_KERNEL(cat, Autograd, cat_ag);
EMBER_REGISTER_KERNEL(repeat, Autograd, repeat_ag);
EMBER_REGISTER_KERNEL(flip, Autograd, flip_ag);
EMBER_REGISTER_KERNEL(roll, Autograd, roll_ag);
EMBER_REGISTER_KERNEL(tril, Autograd, tril_ag);
EMBER_REGISTER_KERNEL(triu, Autograd, triu_ag);

}  // namespace
}  // namespace ember
