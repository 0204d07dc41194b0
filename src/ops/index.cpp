// Indexing ops: the public functions. Dispatched ops (index_select, gather, scatter_, ...) go
// through ops::NAME(); out-of-place forms are clone + the in-place op; masked_select, one_hot,
// embedding and index_fill are composites. In-place forms bump the version counter once.
//
// The kernels check every index value against the size it indexes before writing anything;
// dtype and shape rules are checked here when a composite needs them before dispatching.
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/shape_utils.h"

namespace ember {

namespace {
Tensor& bumped(Tensor& t) { t.impl()->bump_version(); return t; }
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

Tensor index_put(const Tensor& a, ArrayRef<std::optional<Tensor>> indices, const Tensor& values, bool accumulate) {
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
  ops::copy_()(out, a);
  ops::masked_fill_()(out, mask, value);
  return out;
}
Tensor masked_fill(const Tensor& a, const Tensor& mask, const Tensor& value) {
  EMBER_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  return masked_fill(a, mask, value.item());
}

Tensor masked_select(const Tensor& a, const Tensor& mask) {
  EMBER_CHECK(mask.dtype() == kBool, "masked_select: expected BoolTensor for mask");
  if (IntArrayRef(a.sizes()) == IntArrayRef(mask.sizes())) return ops::index()(a, {std::optional<Tensor>(mask)});
  Shape shape = broadcast_shapes(a.sizes(), mask.sizes());
  Tensor ab = empty(shape, {.dtype = a.dtype(), .device = a.device()});
  Tensor mb = empty(shape, {.dtype = kBool, .device = a.device()});
  ops::copy_()(ab, a);
  ops::copy_()(mb, mask);
  return ops::index()(ab, {std::optional<Tensor>(mb)});
}

Tensor nonzero(const Tensor& a) { return ops::nonzero()(a); }

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
  if (indices.dim() == 1) return index_select(weight, 0, indices);
  Shape shape = indices.sizes();
  shape.push_back(weight.size(1));
  return index_select(weight, 0, indices.reshape({-1})).view(shape);
}

}  // namespace ember
