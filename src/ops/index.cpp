// Indexing ops: the public functions. Dispatched ops (index_select, gather, scatter_, ...) go
// through ops::NAME(); out-of-place forms are clone + the in-place op; masked_select, one_hot,
// embedding and index_fill are composites. In-place forms bump the version counter once.
//
// The kernels check every index value against the size it indexes before writing anything;
// dtype and shape rules are checked here when a composite needs them before dispatching.
#include "amp/autocast.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/shape_utils.h"

namespace ember {

namespace {
Tensor& bumped(Tensor& t) { t.impl()->bump_version(); return t; }
// Autograd paths of composites whose forward takes a shortcut (see "gradients" below).
Tensor masked_fill_tensor_ag(const Tensor& a, const Tensor& mask, const Tensor& value);
Tensor embedding_ag(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx);
}  // namespace

Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index) { return ops::index_select()(a, dim, index); }

Tensor gather(const Tensor& a, int64_t dim, const Tensor& index) { return ops::gather()(a, dim, index); }

Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = a.clone();
  ops::scatter_()(out, dim, index, src);
  return out;
}
Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Scalar& value) {
  Tensor out = a.clone();
  ops::scatter_value_()(out, dim, index, value);
  return out;
}
Tensor scatter_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
  EMBER_AUTOCAST(scatter_add, a, dim, index, src);
  Tensor out = a.clone();
  ops::scatter_add_()(out, dim, index, src);
  return out;
}
Tensor index_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  Tensor out = a.clone();
  ops::index_add_()(out, dim, index, source, alpha);
  return out;
}

Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) {
  return bumped(ops::scatter_()(*this, dim, index, src));
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value) {
  return bumped(ops::scatter_value_()(*this, dim, index, value));
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) {
  return bumped(ops::scatter_add_()(*this, dim, index, src));
}
Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  return bumped(ops::index_add_()(*this, dim, index, source, alpha));
}

// x.index_fill(dim, index, v) is x[:, ..., index] = v: an index_put_ with dim leading Nones.
Tensor index_fill(const Tensor& a, int64_t dim, const Tensor& index, const Scalar& value) {
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, "index_fill_(): Expected dtype int64 for index.");
  EMBER_CHECK(index.dim() <= 1, "index_fill_(): Index has to be a vector/scalar");
  dim = wrap_dim(dim, a.dim());
  if (a.dim() == 0) return index_fill(a.reshape({1}), 0, index, value).reshape({});
  Tensor out = a.clone();
  std::vector<std::optional<Tensor>> idx(size_t(dim), std::nullopt);
  idx.push_back(index.dim() == 0 ? index.reshape({1}) : index);
  Tensor v = full({}, value, {.dtype = a.dtype(), .device = a.device()});
  ops::index_put_()(out, idx, v, false);
  return out;
}

Tensor index(const Tensor& a, ArrayRef<std::optional<Tensor>> indices) { return ops::index()(a, indices); }
// A tensor value must be 0-dim: it fills as a number (its gradient is not tracked).
Tensor index_fill(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& value) {
  EMBER_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  return index_fill(a, dim, index, value.item());
}

Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce) {
  EMBER_CHECK(reduce == "add" || reduce == "multiply", "reduce argument must be either add or multiply.");
  EMBER_CHECK(reduce == "add", "scatter(): reduce='multiply' is not supported by ember");
  return scatter_add(a, dim, index, src);
}
Tensor scatter(const Tensor& a, int64_t dim, const Tensor& index, const Scalar& value, const std::string& reduce) {
  EMBER_CHECK(reduce == "add" || reduce == "multiply", "reduce argument must be either add or multiply.");
  EMBER_CHECK(false, "scatter(): reduce='", reduce, "' with a scalar value is not supported by ember");
  return a;
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce) {
  EMBER_CHECK(reduce == "add" || reduce == "multiply", "reduce argument must be either add or multiply.");
  EMBER_CHECK(reduce == "add", "scatter_(): reduce='multiply' is not supported by ember");
  return scatter_add_(dim, index, src);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value, const std::string& reduce) {
  EMBER_CHECK(reduce == "add" || reduce == "multiply", "reduce argument must be either add or multiply.");
  EMBER_CHECK(false, "scatter_(): reduce='", reduce, "' with a scalar value is not supported by ember");
  return *this;
}

Tensor take(const Tensor& a, const Tensor& index) {
  EMBER_CHECK(index.dtype() == kInt64, "take(): Expected a long tensor for index, but got ",
              scalar_type_name(index.dtype()));
  return index_select(a.reshape({-1}), 0, index.reshape({-1})).reshape(index.sizes());
}

Tensor take_along_dim(const Tensor& a, const Tensor& index, std::optional<int64_t> dim) {
  if (!dim) return gather(a.reshape({-1}), 0, index.reshape({-1}));
  EMBER_CHECK(a.dim() == index.dim(), "torch.take_along_dim(): input and indices should have the same number of "
              "dimensions, but got ", a.dim(), " dimensions for input, and ", index.dim(), " dimensions for indices");
  EMBER_CHECK(index.dtype() == kInt64, "torch.take_along_dim(): dtype of indices should be Long but got ",
              scalar_type_name(index.dtype()));
  int64_t d = wrap_dim(*dim, a.dim());
  // Broadcast in every dim but d, where each keeps its own length.
  Shape a_sizes = a.sizes(), i_sizes = index.sizes();
  if (a.dim() > 0) a_sizes[size_t(d)] = index.size(d), i_sizes[size_t(d)] = a.size(d);
  Tensor ib = index.expand(broadcast_shapes(a_sizes, index.sizes()));
  Tensor ab = a.expand(broadcast_shapes(i_sizes, a.sizes()));
  return gather(ab, d, ib);
}

Tensor index_put(const Tensor& a, ArrayRef<std::optional<Tensor>> indices, const Tensor& values, bool accumulate) {
  EMBER_AUTOCAST(index_put, a, indices, values, accumulate);
  Tensor out = a.clone();
  ops::index_put_()(out, indices, values, accumulate);
  return out;
}
Tensor& Tensor::index_put_(ArrayRef<std::optional<Tensor>> indices, const Tensor& values, bool accumulate) {
  return bumped(ops::index_put_()(*this, indices, values, accumulate));
}

Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Scalar& value) {
  EMBER_CHECK(mask.dtype() == kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              dtype_name(mask.dtype()));
  return bumped(ops::masked_fill_()(self, mask, value));
}
// Out of place, self and mask broadcast against each other (the result may be larger than a).
Tensor masked_fill(const Tensor& a, const Tensor& mask, const Scalar& value) {
  EMBER_CHECK(mask.dtype() == kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              dtype_name(mask.dtype()));
  Shape shape = broadcast_shapes(a.sizes(), mask.sizes());
  Tensor out = empty(shape, {.dtype = a.dtype(), .device = a.device()});
  ops::copy_()(out, a, false);
  ops::masked_fill_()(out, mask, value);
  return out;
}
Tensor masked_fill(const Tensor& a, const Tensor& mask, const Tensor& value) {
  EMBER_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  if (a.requires_grad() || value.requires_grad()) return masked_fill_tensor_ag(a, mask, value);
  return masked_fill(a, mask, value.item());
}

Tensor masked_select(const Tensor& a, const Tensor& mask) {
  EMBER_CHECK(mask.dtype() == kBool, "masked_select: expected BoolTensor for mask");
  if (IntArrayRef(a.sizes()) == IntArrayRef(mask.sizes())) return ops::index()(a, {std::optional<Tensor>(mask)});
  Shape shape = broadcast_shapes(a.sizes(), mask.sizes());
  Tensor ab = empty(shape, {.dtype = a.dtype(), .device = a.device()});
  Tensor mb = empty(shape, {.dtype = kBool, .device = a.device()});
  ops::copy_()(ab, a, false);
  ops::copy_()(mb, mask, false);
  return ops::index()(ab, {std::optional<Tensor>(mb)});
}

Tensor nonzero(const Tensor& a) { return ops::nonzero()(a); }
std::vector<Tensor> nonzero_numpy(const Tensor& a) {
  return nonzero(a.dim() == 0 ? a.unsqueeze(0) : a).unbind(1);
}
Tensor argwhere(const Tensor& a) { return nonzero(a); }

Tensor bincount(const Tensor& a, const std::optional<Tensor>& weights, int64_t minlength) {
  return ops::bincount()(a, weights, minlength);
}

Tensor one_hot(const Tensor& a, int64_t num_classes) {
  EMBER_CHECK(a.dtype() == kInt64, "one_hot is only applicable to index tensor of type LongTensor.");
  EMBER_CHECK(num_classes >= -1, "num_classes should be -1 (inferred) or non-negative, got ", num_classes);
  Shape shape = a.sizes();
  if (a.numel() == 0) {
    EMBER_CHECK(num_classes > 0, "Can not infer total number of classes from empty tensor.");
    shape.push_back(num_classes);
    return zeros(shape, {.dtype = kInt64, .device = a.device()});
  }
  auto vals = a.tolist<int64_t>();
  int64_t lo = *std::min_element(vals.begin(), vals.end()), hi = *std::max_element(vals.begin(), vals.end());
  EMBER_CHECK(lo >= 0, "Class values must be non-negative.");
  if (num_classes == -1) num_classes = hi + 1;
  else EMBER_CHECK(num_classes > hi, "Class values must be smaller than num_classes.");
  shape.push_back(num_classes);
  Tensor out = zeros(shape, {.dtype = kInt64, .device = a.device()});
  ops::scatter_value_()(out, -1, a.unsqueeze(-1), 1);
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  EMBER_CHECK(weight.dim() == 2, "'weight' must be 2-D");
  EMBER_CHECK(indices.dtype() == kInt64 || indices.dtype() == kInt32,
              "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
              "but got ", dtype_name(indices.dtype()), " instead (while checking arguments for embedding)");
  if (padding_idx) {
    int64_t n = weight.size(0), p = *padding_idx;
    EMBER_CHECK(p >= -n && p < n, "Padding_idx must be within num_embeddings");
  }
  if (weight.requires_grad()) return embedding_ag(weight, indices, padding_idx);
  if (indices.dim() == 1) return index_select(weight, 0, indices);
  Shape shape = indices.sizes();
  shape.push_back(weight.size(1));
  return index_select(weight, 0, indices.reshape({-1})).view(shape);
}

}  // namespace ember

// ---------------------------------------------------------------- gradients
// Formulas are written with ember ops, so they are themselves differentiable (double backward).
// Every op here is linear in its differentiable inputs; index tensors never get a gradient.
// The index ops are closed under differentiation: index_select <-> index_add, gather <->
// scatter_add, index <-> index_put(accumulate).
#include "autograd/record.h"

namespace ember {
namespace {
using namespace autograd;  // record, below_autograd, saved_input, grad_for, ...

TensorOptions like(const Tensor& t) { return {.dtype = t.dtype(), .device = t.device()}; }

// `t` (shaped like an index, which may be smaller than src in every dim) placed at the origin
// of zeros shaped like src, so gather(g)'s result fits scatter's src.
Tensor pad_to(const Tensor& t, const Shape& shape) {
  if (IntArrayRef(t.sizes()) == IntArrayRef(shape)) return t;
  if (t.numel() == 0 || shape.empty()) return t.numel() == 0 ? zeros(shape, like(t)) : t.reshape(shape);
  Tensor src = t.dim() == int64_t(shape.size()) ? t : t.reshape({-1});  // 0-dim index vs 1-dim src
  Tensor r = zeros(shape, like(t));
  Tensor w = r;
  for (int64_t d = 0; d < w.dim(); ++d) w = w.narrow(d, 0, src.size(d));
  w.copy_(src);
  return r;
}

// Indices lists: each present entry saved (version-checked) in order, absent ones remembered.
std::vector<bool> save_indices(ArrayRef<std::optional<Tensor>> indices, std::vector<Save>& saves) {
  std::vector<bool> present;
  for (const auto& i : indices) {
    present.push_back(i.has_value());
    if (i) saves.push_back(saved_input(*i));
  }
  return present;
}
std::vector<std::optional<Tensor>> unpack_indices(LambdaNode& n, size_t first, const std::vector<bool>& present) {
  std::vector<std::optional<Tensor>> r;
  for (bool p : present) r.push_back(p ? std::optional<Tensor>(n.unpack(first++)) : std::nullopt);
  return r;
}

Tensor index_select_ag(const Tensor& self, int64_t dim, const Tensor& index) {
  Tensor out = below_autograd([&] { return ops::index_select()(self, dim, index); });
  record("IndexSelectBackward0", {self}, {out}, {saved_input(index)},
         [s = self.sizes(), dim](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor gi = s.empty() ? g[0].reshape({}) : g[0];
           Tensor r = zeros(s, like(g[0]));  // (in place: index_add would copy the zeros first)
           r.index_add_(dim, n.unpack(0), gi);
           return {r};
         });
  return out;
}

Tensor gather_ag(const Tensor& self, int64_t dim, const Tensor& index) {
  Tensor out = below_autograd([&] { return ops::gather()(self, dim, index); });
  record("GatherBackward0", {self}, {out}, {saved_input(index)},
         [s = self.sizes(), dim](const variable_list& g, LambdaNode& n) -> variable_list {
           return {zeros(s, like(g[0])).scatter_add(dim, n.unpack(0), g[0])};
         });
  return out;
}

// The in-place index ops: compute() is the out-of-place form (a clone with the op applied
// below autograd) recorded with the op's node; record_inplace moves self's history onto it.
// None of the formulas needs self's old value, so self is never cloned for them.
template <class Apply> Tensor applied_to_clone(const Tensor& s, Apply&& apply) {
  return below_autograd([&] {
    Tensor r = s.clone();
    apply(r);
    return r;
  });
}

Tensor& scatter_ag(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return record_inplace(self, false, [&](const Tensor& s) {
    Tensor out = applied_to_clone(s, [&](Tensor& r) { ops::scatter_()(r, dim, index, src); });
    record("ScatterBackward0", {s, src}, {out}, {saved_input(index)},
           [dim, ss = src.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
             Tensor idx = n.unpack(0);
             return {grad_for(n, 0, [&] { return g[0].scatter(dim, idx, 0); }),
                     grad_for(n, 1, [&] { return pad_to(g[0].gather(dim, idx), ss); })};
           });
    return out;
  });
}

Tensor& scatter_value_ag(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return record_inplace(self, false, [&](const Tensor& s) {
    Tensor out = applied_to_clone(s, [&](Tensor& r) { ops::scatter_value_()(r, dim, index, value); });
    record("ScatterBackward1", {s}, {out}, {saved_input(index)}, [dim](const variable_list& g, LambdaNode& n) -> variable_list {
      return {g[0].scatter(dim, n.unpack(0), 0)};
    });
    return out;
  });
}

Tensor& scatter_add_ag(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return record_inplace(self, false, [&](const Tensor& s) {
    Tensor out = applied_to_clone(s, [&](Tensor& r) { ops::scatter_add_()(r, dim, index, src); });
    record("ScatterAddBackward0", {s, src}, {out}, {saved_input(index)},
           [dim, ss = src.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
             return {grad_for(n, 0, [&] { return g[0]; }),
                     grad_for(n, 1, [&] { return pad_to(g[0].gather(dim, n.unpack(0)), ss); })};
           });
    return out;
  });
}

Tensor& index_add_ag(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  return record_inplace(self, false, [&](const Tensor& s) {
    Tensor out = applied_to_clone(s, [&](Tensor& r) { ops::index_add_()(r, dim, index, source, alpha); });
    record("IndexAddBackward0", {s, source}, {out}, {saved_input(index)},
           [dim, alpha, ss = source.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
             return {grad_for(n, 0, [&] { return g[0]; }), grad_for(n, 1, [&] {
                       Tensor r = (g[0].dim() == 0 ? g[0].reshape({1}) : g[0]).index_select(dim, n.unpack(0));
                       if (alpha.to_double() != 1.0) r = r * alpha;
                       return r.reshape(ss);
                     })};
           });
    return out;
  });
}

Tensor index_ag(const Tensor& self, ArrayRef<std::optional<Tensor>> indices) {
  Tensor out = below_autograd([&] { return ops::index()(self, indices); });
  std::vector<Save> saves;
  std::vector<bool> present = save_indices(indices, saves);
  record("IndexBackward0", {self}, {out}, std::move(saves),
         [s = self.sizes(), present](const variable_list& g, LambdaNode& n) -> variable_list {
           return {index_put(zeros(s, like(g[0])), unpack_indices(n, 0, present), g[0], /*accumulate=*/true)};
         });
  return out;
}

// values' gradient is g at the indexed positions, summed back to values' broadcast shape; with
// accumulate=false the overwritten positions of self get no gradient.
Tensor& index_put_ag(Tensor& self, ArrayRef<std::optional<Tensor>> indices, const Tensor& values, bool accumulate) {
  return record_inplace(self, false, [&](const Tensor& s) {
    Tensor out = applied_to_clone(s, [&](Tensor& r) { ops::index_put_()(r, indices, values, accumulate); });
    std::vector<Save> saves;
    std::vector<bool> present = save_indices(indices, saves);
    record("IndexPutBackward0", {s, values}, {out}, std::move(saves),
           [present, accumulate, vs = values.sizes()](const variable_list& g, LambdaNode& n) -> variable_list {
             auto idx = unpack_indices(n, 0, present);
             return {grad_for(n, 0, [&] { return accumulate ? g[0] : index_put(g[0], idx, zeros({}, like(g[0])), false); }),
                     grad_for(n, 1, [&] {
                       // values may carry extra leading 1s beyond the result's dims.
                       Tensor r = index(g[0], idx);
                       size_t extra = vs.size() > size_t(r.dim()) ? vs.size() - size_t(r.dim()) : 0;
                       r = sum_to(r, IntArrayRef(vs.data() + extra, vs.size() - extra));
                       return extra ? r.reshape(vs) : r;
                     })};
           });
    return out;
  });
}

Tensor& masked_fill_ag(Tensor& self, const Tensor& mask, const Scalar& value) {
  return record_inplace(self, false, [&](const Tensor& s) {
    Tensor out = applied_to_clone(s, [&](Tensor& r) { ops::masked_fill_()(r, mask, value); });
    record("MaskedFillBackward0", {s}, {out}, {saved_input(mask)}, [](const variable_list& g, LambdaNode& n) -> variable_list {
      return {g[0].masked_fill(n.unpack(0), 0)};
    });
    return out;
  });
}

EMBER_REGISTER_KERNEL(index_select, Autograd, index_select_ag);
EMBER_REGISTER_KERNEL(gather, Autograd, gather_ag);
EMBER_REGISTER_KERNEL(scatter_, Autograd, scatter_ag);
EMBER_REGISTER_KERNEL(scatter_value_, Autograd, scatter_value_ag);
EMBER_REGISTER_KERNEL(scatter_add_, Autograd, scatter_add_ag);
EMBER_REGISTER_KERNEL(index_add_, Autograd, index_add_ag);
EMBER_REGISTER_KERNEL(index, Autograd, index_ag);
EMBER_REGISTER_KERNEL(index_put_, Autograd, index_put_ag);
EMBER_REGISTER_KERNEL(masked_fill_, Autograd, masked_fill_ag);

// masked_fill with a 0-dim tensor value: differentiable in the value too (it receives the sum
// of g over the filled positions).
Tensor masked_fill_tensor_ag(const Tensor& a, const Tensor& mask, const Tensor& value) {
  Tensor out = below_autograd([&] { return masked_fill(a, mask, value.item()); });
  record("MaskedFillBackward1", {a, value}, {out}, {saved_input(mask)},
         [sa = a.sizes(), vdt = value.dtype()](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor m = n.unpack(0);
           return {grad_for(n, 0, [&] { return sum_to(g[0].masked_fill(m, 0), sa); }), grad_for(n, 1, [&] {
                     Tensor r = g[0].masked_fill(logical_not(m), 0).sum();
                     return r.dtype() == vdt ? r : r.to(vdt);
                   })};
         });
  return out;
}

// embedding: rows of weight picked by indices; the gradient adds g's rows back into the picked
// rows (repeated indices accumulate), except the padding row, which never gets a gradient.
Tensor embedding_ag(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  Tensor out = below_autograd([&] {
    if (indices.dim() == 1) return index_select(weight, 0, indices);
    Shape shape = indices.sizes();
    shape.push_back(weight.size(1));
    return index_select(weight, 0, indices.reshape({-1})).view(shape);
  });
  std::optional<int64_t> pad;
  if (padding_idx) pad = *padding_idx < 0 ? *padding_idx + weight.size(0) : *padding_idx;
  record("EmbeddingBackward0", {weight}, {out}, {saved_input(indices)},
         [ws = weight.sizes(), pad](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor idx = n.unpack(0).reshape({-1});
           Tensor rows = g[0].reshape({-1, ws[1]});
           if (pad) rows = rows.masked_fill((idx == *pad).unsqueeze(1), 0);
           Tensor r = zeros(ws, like(g[0]));  // (in place: index_add would copy the zeros first)
           r.index_add_(0, idx, rows);
           return {r};
         });
  return out;
}

}  // namespace
}  // namespace ember
