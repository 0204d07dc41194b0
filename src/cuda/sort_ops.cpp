// CUDA kernels of sort, topk, unique and searchsorted, registered with the dispatcher (CPU
// twins: src/cpu/sort_kernels.cpp, src/cpu/search_kernels.cpp).
//
// sort moves the sorted dim last into a dense copy, sorts each row's (key, position) pairs with
// cub's stable sorts (sort_kernels.cu: NaN the largest, ties by position, so the result is the
// CPU's whether or not `stable` was asked for), then gathers the values by the sorted
// positions straight into the result's own layout. topk is that sort followed by taking
// the first k of each row (so it is always sorted, which `sorted=False` allows); unique sorts
// the flattened tensor and groups equal neighbours.
#include <cuda_runtime_api.h>

#include "core/dtype_dispatch.h"
#include "cuda/cuda_check.h"
#include "cuda/index_host.h"
#include "ops/op_handles.h"
#include "ops/reduce_utils.h"
#include "ops/shape_utils.h"

namespace ember::cuda {
namespace {

// The positions that sort each row of x (dense, rows of n elements along its last dim): an
// int64 tensor of x's shape, written into `into` when given (dense, x's shape).
Tensor sorted_positions(const Tensor& x, int64_t n, bool descending, const Tensor* into = nullptr) {
  const Device device = x.device();
  cudaStream_t stream = current_cuda_stream(device.index);
  const int64_t numel = x.numel();
  const TensorOptions key_opts{.dtype = kInt64, .device = device};  // raw uint64 keys
  Tensor keys_in = empty({numel}, key_opts), keys_out = empty({numel}, key_opts);
  auto* kin = reinterpret_cast<uint64_t*>(keys_in.data_ptr<int64_t>());
  auto* kout = reinterpret_cast<uint64_t*>(keys_out.data_ptr<int64_t>());
  // Up to 4-byte elements: 64-bit keys that carry their row, sorted all at once (rows fit 32 bits).
  const bool row_keys = x.element_size() <= 4 && numel / n <= (int64_t(1) << 32);
  launch_sort_keys(x.data_ptr(), int8_t(x.dtype()), numel, row_keys ? n : 0, descending, kin, stream);
  Tensor pos = empty({numel}, {.dtype = kInt64, .device = device});
  launch_row_positions(pos.data_ptr<int64_t>(), numel, n, stream);
  Tensor out = into ? *into : empty(x.sizes(), {.dtype = kInt64, .device = device});
  TensorScratch scratch(device);
  launch_sort_pairs(row_keys, kin, kout, pos.data_ptr<int64_t>(), out.data_ptr<int64_t>(), numel / n, n,
                    scratch, stream);
  return out;
}

// out (any strides, its last dim of size k) = x's rows (dense, n elements each) picked by the
// first k positions of each row of pos (dense, rows of n).
void gather_rows(Tensor& out, const Tensor& x, const Tensor& pos, int64_t n) {
  const Shape osz = out.sizes();
  const size_t last = osz.size() - 1;
  Shape xst = contiguous_strides(x.sizes()), pst = contiguous_strides(pos.sizes());
  xst[last] = 0;
  const Walk o{static_cast<char*>(out.data_ptr()), out.strides(), out.element_size()};
  const Walk s{static_cast<char*>(x.data_ptr()), xst, x.element_size()};
  const Walk k{static_cast<char*>(pos.data_ptr()), pst, 8};
  IndexArgs a;
  a.g = make_geometry("sort", osz, {&o, &s, &k});
  a.data[0] = o.data, a.data[1] = s.data, a.data[2] = k.data;
  a.numel = out.numel();
  a.index_size = n;
  a.index_stride = x.element_size();
  a.element_size = int(x.element_size());
  a.check = false;  // positions produced by the sort
  a.stream = current_cuda_stream(out.device().index);
  launch_index_gather(a);
}

// t with `dim` moved last; a 0-dim tensor as one element of one dim.
Tensor dim_last(const Tensor& t, int64_t dim) {
  if (t.dim() == 0) return t.reshape({1});
  return t.movedim(dim, t.dim() - 1);
}

std::tuple<Tensor, Tensor> sort_cuda(const Tensor& self, int64_t dim, bool descending, bool stable) {
  (void)stable;  // the sort is always stable
  dim = wrap_dim(dim, self.dim());
  Tensor values = empty(self.sizes(), {.dtype = self.dtype(), .device = self.device()});
  Tensor indices = empty(self.sizes(), {.dtype = kInt64, .device = self.device()});
  if (self.numel() == 0) return {values, indices};
  if (is_complex(self.dtype())) throw_dtype_not_implemented("sort", self.dtype());
  GpuGuard guard(self.device().index);
  const Tensor x = dim_last(self, dim).contiguous();
  const int64_t n = x.sizes().back();
  Tensor vm = dim_last(values, dim), im = dim_last(indices, dim);
  const Tensor pos = sorted_positions(x, n, descending, im.is_contiguous() ? &im : nullptr);
  if (!pos.is_alias_of(im)) im.copy_(pos);
  gather_rows(vm, x, pos, n);
  return {values, indices};
}

std::tuple<Tensor, Tensor> topk_cuda(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  (void)sorted;  // always sorted: a sort then the first k of each row
  dim = wrap_dim(dim, self.dim());
  const int64_t n = sizes1(self)[dim];
  EMBER_CHECK(k >= 0 && k <= n, "selected index k out of range");
  Shape osz = self.sizes();
  if (self.dim() > 0) osz[dim] = k;
  Tensor values = empty(osz, {.dtype = self.dtype(), .device = self.device()});
  Tensor indices = empty(osz, {.dtype = kInt64, .device = self.device()});
  // (A 0-dim self keeps its shape whatever k is; with k = 0 nothing is selected, as on the CPU.)
  if (values.numel() == 0 || k == 0) return {values, indices};
  if (is_complex(self.dtype())) throw_dtype_not_implemented("topk", self.dtype());
  GpuGuard guard(self.device().index);
  const Tensor x = dim_last(self, dim).contiguous();
  const Tensor pos = sorted_positions(x, n, largest);
  Tensor vm = dim_last(values, dim), im = dim_last(indices, dim);
  gather_rows(vm, x, pos, n);
  im.copy_(pos.narrow(pos.dim() - 1, 0, k));
  return {values, indices};
}

// unique over all elements: sorted values, inverse (self's shape), counts.
std::tuple<Tensor, Tensor, Tensor> unique_flat(const Tensor& self, bool return_inverse, bool return_counts) {
  const Device device = self.device();
  const TensorOptions long_opts{.dtype = kInt64, .device = device};
  const int64_t n = self.numel();
  if (n == 0)
    return {empty({0}, {.dtype = self.dtype(), .device = device}), return_inverse ? empty(self.sizes(), long_opts) : Tensor(),
            return_counts ? empty({0}, long_opts) : Tensor()};
  cudaStream_t stream = current_cuda_stream(device.index);
  const Tensor x = self.contiguous().view({n});
  const Tensor pos = sorted_positions(x, n, false);
  Tensor sorted_values = empty({n}, {.dtype = self.dtype(), .device = device});
  gather_rows(sorted_values, x, pos, n);
  // A group starts wherever a value differs from the one before it (each NaN is its own).
  Tensor flags = empty({n}, {.dtype = kUInt8, .device = device});
  launch_unique_flags(sorted_values.data_ptr(), int8_t(self.dtype()), n, flags.data_ptr<uint8_t>(), stream);
  Tensor group = empty({n}, long_opts);
  TensorScratch scratch(device);
  launch_group_ids(flags.data_ptr<uint8_t>(), n, group.data_ptr<int64_t>(), scratch, stream);
  // The one wait: the number of groups is the result's size.
  int64_t last = 0;
  EMBER_CUDA_CHECK(cudaMemcpyAsync(&last, group.data_ptr<int64_t>() + (n - 1), sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  const int64_t u = last + 1;
  Tensor starts = empty({u}, long_opts), selected = empty({1}, long_opts);
  launch_select_flagged(flags.data_ptr<uint8_t>(), n, starts.data_ptr<int64_t>(), selected.data_ptr<int64_t>(), scratch, stream);
  Tensor values = ops::index_select()(sorted_values, 0, starts);
  Tensor inverse, counts;
  if (return_inverse) {
    inverse = empty({n}, long_opts);
    launch_scatter_positions(group.data_ptr<int64_t>(), pos.data_ptr<int64_t>(), n, inverse.data_ptr<int64_t>(), stream);
    inverse = inverse.view(self.sizes());
  }
  if (return_counts) {
    counts = empty({u}, long_opts);
    launch_run_lengths(starts.data_ptr<int64_t>(), u, n, counts.data_ptr<int64_t>(), stream);
  }
  return {values, inverse, counts};
}

std::tuple<Tensor, Tensor, Tensor> unique_cuda(const Tensor& self, bool sorted, bool return_inverse, bool return_counts,
                                               std::optional<int64_t> dim) {
  (void)sorted;  // results are always sorted (sorted=False leaves the order unspecified)
  if (dim) {
    // Unique slices compare whole slices lexicographically: not written for the GPU yet. The
    // CPU kernel computes it on a host copy (a synchronising round trip); results come back
    // to self's device.
    auto [v, i, c] = ops::unique()(self.cpu(), sorted, return_inverse, return_counts, dim);
    auto back = [&](const Tensor& t) { return t.defined() ? t.to(self.device()) : t; };
    return {back(v), back(i), back(c)};
  }
  if (is_complex(self.dtype())) throw_dtype_not_implemented("unique", self.dtype());
  GpuGuard guard(self.device().index);
  return unique_flat(self, return_inverse, return_counts);
}

Tensor searchsorted_cuda(const Tensor& sorted_sequence, const Tensor& values, bool out_int32, bool right) {
  check_device("searchsorted", values.device(), {&sorted_sequence, &values});
  GpuGuard guard(values.device().index);
  const DType common = reduce::compute_dtype(result_type(sorted_sequence, values));
  const Tensor seq = reduce::convert(sorted_sequence, common, /*contig=*/true);
  const Tensor vals = reduce::convert(values, common, /*contig=*/true);
  Tensor out = empty(values.sizes(), {.dtype = out_int32 ? kInt32 : kInt64, .device = values.device()});
  const int64_t m = seq.sizes().back();
  const int64_t n = values.dim() == 0 ? 1 : values.sizes().back();
  launch_searchsorted(seq.data_ptr(), vals.data_ptr(), int8_t(common), values.numel(), seq.dim() == 1 ? 0 : n, m, right,
                      out.data_ptr(), out_int32, current_cuda_stream(values.device().index));
  return out;
}

EMBER_REGISTER_KERNEL(sort, CUDA, sort_cuda);
EMBER_REGISTER_KERNEL(topk, CUDA, topk_cuda);
EMBER_REGISTER_KERNEL(unique, CUDA, unique_cuda);
EMBER_REGISTER_KERNEL(searchsorted, CUDA, searchsorted_cuda);

}  // namespace
}  // namespace ember::cuda
