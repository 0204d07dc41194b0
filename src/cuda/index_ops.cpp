// CUDA kernels of the indexing ops, registered with the dispatcher: index_select, gather,
// scatter_, scatter_value_, scatter_add_, index_add_, index (advanced indexing, boolean masks
// included), index_put_, nonzero and bincount. The CPU twins are in src/cpu/index_kernels.cpp; the shape
// and dtype rules and their messages are the same (ops/index_checks.h holds the shared ones).
//
// Index values are never read on the host: each kernel checks the values it uses and stops
// with a device-side assert naming the op, the value and the size (index_common.cuh), as
// PyTorch does on CUDA. Only nonzero (and boolean-mask indexing, which is built on it) waits
// for the GPU: its result's shape depends on the data.
#include <cuda_runtime_api.h>

#include "core/dtype_dispatch.h"
#include "cuda/cuda_check.h"
#include "cuda/index_host.h"
#include "ops/advanced_index.h"
#include "ops/index_checks.h"
#include "ops/op_handles.h"
#include "ops/shape_utils.h"

namespace ember::cuda {
namespace {
using index_checks::broadcast_index_shapes;
using index_checks::broadcast_strides;
using index_checks::check_gather_shapes;

Walk walk(const Tensor& t, Shape strides) {
  return {static_cast<char*>(t.data_ptr()), std::move(strides), t.element_size()};
}
Walk nothing(size_t ndim) { return {nullptr, Shape(ndim, 0), 1}; }

// The launch data shared by every index op: who is indexed along which dim, and how.
IndexArgs index_args(IndexOp op, const Tensor& self, int64_t dim, int64_t size, int64_t elem_stride, const Tensor& index) {
  IndexArgs a;
  a.op = op;
  a.dim = int(dim);
  a.index_size = size;
  a.index_stride = elem_stride * self.element_size();
  a.element_size = int(self.element_size());
  a.dtype = int8_t(self.dtype());
  a.index_int64 = index.dtype() == kInt64;
  a.stream = current_cuda_stream(self.device().index);
  return a;
}

void set_alpha(IndexArgs& a, DType dt, const Scalar& alpha) {
  a.alpha_f = alpha.to_double();
  if (dt == kBool) a.alpha_i = alpha.to_bool();
  else a.alpha_i = alpha.to<int64_t>();
}

// ------------------------------------------------------------------ index_select / gather

Tensor index_select_cuda(const Tensor& self, int64_t dim, const Tensor& index) {
  dim = wrap_dim(dim, self.dim());
  EMBER_CHECK(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32,
              "index_select(): Expected dtype int32 or int64 for index");
  check_device("index_select", self.device(), {&self, &index});
  const int64_t K = index.numel();
  Shape out_shape = self.sizes();
  if (self.dim() > 0) out_shape[dim] = K;
  else EMBER_CHECK(K == 1, "index_select(): Index to scalar can have only 1 value, got ", K, " value(s)");
  Tensor out = empty(out_shape, {.dtype = self.dtype(), .device = self.device()});
  if (out.numel() == 0) return out;
  GpuGuard guard(self.device().index);
  const Shape osz = sizes1(out);
  Shape sst = strides1(self), kst(osz.size(), 0);
  const int64_t sd = sst[dim];
  sst[dim] = 0;
  if (index.dim() == 1) kst[dim] = index.stride(0);
  const Walk o = walk(out, contiguous_strides(osz)), s = walk(self, sst), k = walk(index, kst);
  IndexArgs a = index_args(IndexOp::kIndexSelect, self, dim, sizes1(self)[dim], sd, index);
  a.g = make_geometry("index_select", osz, {&o, &s, &k});
  a.data[0] = o.data, a.data[1] = s.data, a.data[2] = k.data;
  a.numel = out.numel();
  launch_index_gather(a);
  return out;
}

Tensor gather_cuda(const Tensor& self, int64_t dim, const Tensor& index) {
  dim = wrap_dim(dim, self.dim());
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, "gather(): Expected dtype int64 for index");
  check_gather_shapes(self, dim, index, nullptr);
  check_device("gather", self.device(), {&self, &index});
  Tensor out = empty(index.sizes(), {.dtype = self.dtype(), .device = self.device()});
  if (out.numel() == 0) return out;
  GpuGuard guard(self.device().index);
  const Shape isz = sizes1(index);
  Shape sst = strides1(self);
  const int64_t sd = sst[dim];
  sst[dim] = 0;
  const Walk o = walk(out, contiguous_strides(isz)), s = walk(self, sst), k = walk(index, strides1(index));
  IndexArgs a = index_args(IndexOp::kGather, self, dim, sizes1(self)[dim], sd, index);
  a.g = make_geometry("gather", isz, {&o, &s, &k});
  a.data[0] = o.data, a.data[1] = s.data, a.data[2] = k.data;
  a.numel = out.numel();
  launch_index_gather(a);
  return out;
}

// ------------------------------------------------------------------ scatter family

// Writes (or adds) src into self at the indexed positions. value_only: src is a 0-dim tensor
// on self's device, broadcast to every position.
Tensor& scatter_impl(const char* op, IndexOp code, Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                     bool value_only, bool accumulate) {
  dim = wrap_dim(dim, self.dim());
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op, "(): Expected dtype int64 for index");
  if (!value_only)
    EMBER_CHECK(self.dtype() == src.dtype(), op, "(): Expected self.dtype to be equal to src.dtype");
  check_gather_shapes(self, dim, index, value_only ? nullptr : &src);
  check_device(op, self.device(), {&self, &index, &src});
  if (accumulate && (is_complex(self.dtype()))) throw_dtype_not_implemented(op, self.dtype());
  if (index.numel() == 0) return self;
  GpuGuard guard(self.device().index);
  const Tensor source = (!value_only && src.is_alias_of(self)) ? src.clone() : src;
  const Shape isz = sizes1(index);
  Shape sst = strides1(self);
  const int64_t sd = sst[dim];
  sst[dim] = 0;
  const Walk d = walk(self, sst), k = walk(index, strides1(index));
  const Walk v = value_only ? Walk{static_cast<char*>(source.data_ptr()), Shape(isz.size(), 0), source.element_size()}
                            : walk(source, strides1(source));
  IndexArgs a = index_args(code, self, dim, sizes1(self)[dim], sd, index);
  a.g = make_geometry(op, isz, {&d, &v, &k});
  a.data[0] = d.data, a.data[1] = v.data, a.data[2] = k.data;
  a.numel = index.numel();
  if (accumulate) launch_index_scatter_add(a);
  else launch_index_scatter(a);
  return self;
}

Tensor& scatter_cuda(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter", IndexOp::kScatter, self, dim, index, src, false, false);
}
Tensor& scatter_value_cuda(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  Tensor v = empty({}, {.dtype = self.dtype(), .device = self.device()});
  ops::fill_()(v, value);
  return scatter_impl("scatter", IndexOp::kScatter, self, dim, index, v, true, false);
}
Tensor& scatter_add_cuda(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter_add", IndexOp::kScatterAdd, self, dim, index, src, false, true);
}

Tensor& index_add_cuda(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  dim = wrap_dim(dim, self.dim());
  EMBER_CHECK(index.dim() <= 1, "index_add_(): Index is supposed to be a vector");
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32,
              "index_add_(): Expected dtype int32/int64 for index");
  EMBER_CHECK(self.dtype() == source.dtype(), "index_add_(): self (", dtype_name(self.dtype()), ") and source (",
              dtype_name(source.dtype()), ") must have the same scalar type");
  const int64_t K = index.numel();
  const Shape ssz = sizes1(self);
  Shape want = ssz;
  want[dim] = K;
  EMBER_CHECK(std::max<int64_t>(source.dim(), 1) == int64_t(ssz.size()) && IntArrayRef(sizes1(source)) == IntArrayRef(want),
              "index_add_(): source ", source.sizes(), " must have the shape of self ", self.sizes(),
              " with dimension ", dim, " of size ", K, " (the number of indices)");
  check_device("index_add_", self.device(), {&self, &index, &source});
  if (is_complex(self.dtype())) throw_dtype_not_implemented("index_add_", self.dtype());
  if (self.numel() == 0 || K == 0) return self;
  GpuGuard guard(self.device().index);
  const Tensor src = source.is_alias_of(self) ? source.clone() : source;
  Shape sst = strides1(self), kst(want.size(), 0);
  const int64_t sd = sst[dim];
  sst[dim] = 0;
  if (index.dim() == 1) kst[dim] = index.stride(0);
  const Walk d = walk(self, sst), v = walk(src, strides1(src)), k = walk(index, kst);
  IndexArgs a = index_args(IndexOp::kIndexAdd, self, dim, ssz[dim], sd, index);
  a.g = make_geometry("index_add_", want, {&d, &v, &k});
  a.data[0] = d.data, a.data[1] = v.data, a.data[2] = k.data;
  a.numel = shape_numel(want);
  set_alpha(a, self.dtype(), alpha);
  launch_index_scatter_add(a);
  return self;
}

// ------------------------------------------------------------------ nonzero

Tensor nonzero_cuda(const Tensor& self) {
  if (is_complex(self.dtype())) throw_dtype_not_implemented("nonzero", self.dtype());
  const int64_t nd = self.dim(), n = self.numel();
  const Device device = self.device();
  if (n == 0) return empty({0, nd}, {.dtype = kInt64, .device = device});
  EMBER_CHECK(nd <= kMaxDims, "nonzero: the CUDA kernel supports at most ", kMaxDims, " dims, got ", nd);
  GpuGuard guard(device.index);
  cudaStream_t stream = current_cuda_stream(device.index);
  const Tensor x = self.contiguous();
  Tensor flags = empty({n}, {.dtype = kUInt8, .device = device});
  launch_nonzero_flags(x.data_ptr(), n, int(x.element_size()), is_floating(x.dtype()), flags.data_ptr<uint8_t>(), stream);
  TensorScratch scratch(device);
  Tensor count_d = empty({2}, {.dtype = kInt64, .device = device});  // [0]: count, [1]: cub's selected count
  launch_count_flags(flags.data_ptr<uint8_t>(), n, count_d.data_ptr<int64_t>(), scratch, stream);
  // The one wait: the result's shape is the count.
  int64_t count = 0;
  EMBER_CUDA_CHECK(cudaMemcpyAsync(&count, count_d.data_ptr<int64_t>(), sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  Tensor out = empty({count, nd}, {.dtype = kInt64, .device = device});
  if (count == 0 || nd == 0) return out;
  Tensor lin = nd == 1 ? out : empty({count}, {.dtype = kInt64, .device = device});
  launch_select_flagged(flags.data_ptr<uint8_t>(), n, lin.data_ptr<int64_t>(), count_d.data_ptr<int64_t>() + 1, scratch,
                        stream);
  if (nd > 1) launch_unravel(lin.data_ptr<int64_t>(), count, self.sizes().data(), int(nd), out.data_ptr<int64_t>(), stream);
  return out;
}

// ------------------------------------------------------------------ advanced indexing

// The plan of one advanced-indexing expression over self: the shared geometry
// (ops/advanced_index.h) with the index tensors (int32 / int64) on self's device; the kernels
// check and wrap the values.
using AdvPlan = AdvancedIndexGeometry;

// Index tensors may be on the host (they are copied over) or on self's device, as in PyTorch.
[[noreturn]] void throw_index_device(Device device) {
  throw Error(detail::cat("indices should be either on cpu or on the same device as the indexed tensor (", device.str(),
                          ")"));
}
Tensor on_device(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  if (!t.is_cpu()) throw_index_device(device);
  return t.to(device);
}

AdvPlan make_adv_plan(const Tensor& self, ArrayRef<std::optional<Tensor>> indices) {
  const Device device = self.device();
  return advanced_index_geometry(self, indices, [&](const Tensor& t) { return on_device(t, device); });
}

// Self's strides over the result shape: its own along pre and post dims, 0 along the index dims.
Shape self_strides_over_result(const AdvPlan& p) {
  Shape s = p.pre_strides;
  s.insert(s.end(), p.bshape.size(), 0);
  s.insert(s.end(), p.post_strides.begin(), p.post_strides.end());
  return s;
}
// Strides over the result shape of a tensor laid over the index dims only.
Shape over_index_dims(const AdvPlan& p, const Shape& b_strides) {
  Shape s(p.pre_sizes.size(), 0);
  s.insert(s.end(), b_strides.begin(), b_strides.end());
  s.insert(s.end(), p.post_sizes.size(), 0);
  return s;
}

// The index operand of an advanced-indexing move over the result shape: the one index tensor
// itself (checked and wrapped in the move), or the int64 element offsets of several, summed
// by launch_index_offsets (each checked there). Fills a's index fields; returns the operand and
// keeps the offsets tensor alive in `keep`.
Walk index_operand(const char* op, IndexOp code, const Tensor& self, const AdvPlan& p, IndexArgs& a, Tensor& keep) {
  if (p.idx.size() == 1) {
    const Tensor& ix = p.idx[0];
    const int64_t dim = p.idims[0];
    a.index_size = p.sz[dim];
    a.index_stride = p.st[dim] * self.element_size();
    a.index_int64 = ix.dtype() == kInt64;
    a.check = true;
    a.wrap_negative = true;
    a.dim = int(dim);
    return walk(ix, over_index_dims(p, *broadcast_strides(ix, p.bshape)));
  }
  // No index tensor at all (x[:, ...]): one offset, 0.
  keep = p.idx.empty() ? zeros(p.bshape, {.dtype = kInt64, .device = self.device()})
                       : empty(p.bshape, {.dtype = kInt64, .device = self.device()});
  const Shape kst = contiguous_strides(p.bshape);
  const Walk o = walk(keep, kst), none = nothing(p.bshape.size());
  for (size_t i = 0; i < p.idx.size(); ++i) {
    const Tensor& ix = p.idx[i];
    const int64_t dim = p.idims[i];
    const Walk k = walk(ix, *broadcast_strides(ix, p.bshape));
    IndexArgs b = index_args(code, self, dim, p.sz[dim], 1, ix);
    b.g = make_geometry(op, p.bshape, {&o, &none, &k});
    b.data[0] = o.data, b.data[2] = k.data;
    b.numel = keep.numel();
    b.wrap_negative = true;
    launch_index_offsets(b, p.st[dim], i == 0);
  }
  a.index_size = 0;
  a.index_stride = self.element_size();
  a.index_int64 = true;
  a.check = false;
  return walk(keep, over_index_dims(p, kst));
}

Tensor index_cuda(const Tensor& self, ArrayRef<std::optional<Tensor>> indices) {
  if (!self.is_cuda()) throw_index_device(self.device());
  GpuGuard guard(self.device().index);
  const AdvPlan p = make_adv_plan(self, indices);
  Tensor out = empty(p.result_shape, {.dtype = self.dtype(), .device = self.device()});
  if (out.numel() == 0) return out;
  IndexArgs a = index_args(IndexOp::kIndex, self, 0, 0, 0, out);
  Tensor offsets;
  const Walk k = index_operand("index", IndexOp::kIndex, self, p, a, offsets);
  const Walk o = walk(out, contiguous_strides(p.result_shape)), s = walk(self, self_strides_over_result(p));
  a.g = make_geometry("index", p.result_shape, {&o, &s, &k});
  a.data[0] = o.data, a.data[1] = s.data, a.data[2] = k.data;
  a.numel = out.numel();
  launch_index_gather(a);
  return out;
}

Tensor& index_put_cuda(Tensor& self, ArrayRef<std::optional<Tensor>> indices, const Tensor& values, bool accumulate) {
  EMBER_CHECK(values.dtype() == self.dtype(), "Index put requires the source and destination dtypes match, got ",
              dtype_name(self.dtype()), " for the destination and ", dtype_name(values.dtype()), " for the source.");
  if (!self.is_cuda()) throw_index_device(self.device());
  GpuGuard guard(self.device().index);
  // A 0-dim host value is moved to the GPU, as PyTorch does; any other must already be there.
  Tensor v = values;
  if (v.device() != self.device() && v.is_cpu() && v.dim() == 0) v = v.to(self.device());
  check_device("index_put_", self.device(), {&self, &v});
  const AdvPlan p = make_adv_plan(self, indices);
  auto vst = broadcast_strides(v, p.result_shape);
  EMBER_CHECK(vst.has_value(), "shape mismatch: value tensor of shape ", values.sizes(),
              " cannot be broadcast to indexing result of shape ", p.result_shape);
  if (accumulate && is_complex(self.dtype())) throw_dtype_not_implemented("index_put_", self.dtype());
  if (shape_numel(p.result_shape) == 0) return self;
  if (v.is_alias_of(self)) {
    v = v.clone();
    vst = broadcast_strides(v, p.result_shape);
  }
  IndexArgs a = index_args(IndexOp::kIndexPut, self, 0, 0, 0, v);
  Tensor offsets;
  const Walk k = index_operand("index_put_", IndexOp::kIndexPut, self, p, a, offsets);
  const Walk d = walk(self, self_strides_over_result(p)), s = walk(v, *vst);
  a.g = make_geometry("index_put_", p.result_shape, {&d, &s, &k});
  a.data[0] = d.data, a.data[1] = s.data, a.data[2] = k.data;
  a.numel = shape_numel(p.result_shape);
  if (accumulate) launch_index_scatter_add(a);
  else launch_index_scatter(a);
  return self;
}

// ------------------------------------------------------------------ bincount

// The length needs the largest value, so this waits for the GPU once (as PyTorch's does).
Tensor bincount_cuda(const Tensor& self, const std::optional<Tensor>& weights, int64_t minlength) {
  const bool has_w = index_checks::check_bincount_args(self, weights, minlength);
  const Device device = self.device();
  if (has_w) check_device("bincount", device, {&self, &*weights});
  GpuGuard guard(device.index);
  cudaStream_t stream = current_cuda_stream(device.index);
  const Tensor x = self.to(kInt64).contiguous();
  const int64_t n = x.numel();
  int64_t range[2] = {0, -1};  // min, max
  if (n > 0) {
    TensorScratch scratch(device);
    Tensor range_d = empty({2}, {.dtype = kInt64, .device = device});
    launch_min_max(x.data_ptr<int64_t>(), n, range_d.data_ptr<int64_t>(), scratch, stream);
    EMBER_CUDA_CHECK(cudaMemcpyAsync(range, range_d.data_ptr<int64_t>(), sizeof(range), cudaMemcpyDeviceToHost, stream));
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
    EMBER_CHECK(range[0] >= 0, "bincount only supports 1-d non-negative integral inputs.");
  }
  const int64_t len = std::max(minlength, range[1] + 1);
  if (!has_w) {
    Tensor out = zeros({len}, {.dtype = kInt64, .device = device});
    launch_bincount(x.data_ptr<int64_t>(), n, nullptr, 0, out.data_ptr(), stream);
    return out;
  }
  const DType odt = weights->dtype() == kFloat32 ? kFloat32 : kFloat64;
  const Tensor w = weights->to(odt).contiguous();
  Tensor out = zeros({len}, {.dtype = odt, .device = device});
  launch_bincount(x.data_ptr<int64_t>(), n, w.data_ptr(), int8_t(odt), out.data_ptr(), stream);
  return out;
}

EMBER_REGISTER_KERNEL(index_select, CUDA, index_select_cuda);
EMBER_REGISTER_KERNEL(gather, CUDA, gather_cuda);
EMBER_REGISTER_KERNEL(scatter_, CUDA, scatter_cuda);
EMBER_REGISTER_KERNEL(scatter_value_, CUDA, scatter_value_cuda);
EMBER_REGISTER_KERNEL(scatter_add_, CUDA, scatter_add_cuda);
EMBER_REGISTER_KERNEL(index_add_, CUDA, index_add_cuda);
EMBER_REGISTER_KERNEL(index, CUDA, index_cuda);
EMBER_REGISTER_KERNEL(index_put_, CUDA, index_put_cuda);
EMBER_REGISTER_KERNEL(nonzero, CUDA, nonzero_cuda);
EMBER_REGISTER_KERNEL(bincount, CUDA, bincount_cuda);

}  // namespace
}  // namespace ember::cuda
