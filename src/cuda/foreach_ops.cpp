// The multi-tensor ops on CUDA (op_list.h, "multi-tensor ops"; checked in src/ops/foreach.cpp):
// tensors of one floating dtype go through foreach_kernels.cu a batch at a time; a norm order
// the kernels do not fuse (0, -inf, other p) and other dtypes run the single-tensor loop.
// Non-contiguous tensors are read (norm) or updated (mul) through contiguous copies.
#include <cmath>
#include <vector>

#include "cuda/cuda_state.h"
#include "cuda/foreach_launchers.h"
#include "ember/ops.h"
#include "ops/dense_run.h"
#include "ops/foreach_loops.h"
#include "ops/op_handles.h"

namespace ember::cuda {
namespace {

DType compute_dtype(DType t) { return t == DType::Float64 ? DType::Float64 : DType::Float32; }

// Runs the tensors a batch at a time: `launch(batch, first)` launches one batch
// whose first tensor is tensors[first].
template <class Launch> void for_each_batch(TensorList tensors, std::vector<DenseRun>& runs, const Launch& launch) {
  const int device = tensors[0].device().index;
  ForeachBatch b;
  b.dtype = int8_t(tensors[0].dtype());
  b.stream = current_cuda_stream(device);
  size_t first = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (b.count == kForeachBatch) {
      launch(b, first);
      b.count = 0;
      first = i;
    }
    b.data[b.count] = runs[i].data();
    b.numel[b.count] = tensors[i].numel();
    b.first_block[b.count + 1] = b.first_block[b.count] + foreach_blocks(tensors[i].numel());
    ++b.count;
  }
  if (b.count > 0) launch(b, first);
}

Tensor norm_stacked_cuda(TensorList tensors, double ord) {
  int kind;
  if (ord == 1) kind = kForeachNormL1;
  else if (ord == 2) kind = kForeachNormL2;
  else if (std::isinf(ord) && ord > 0) kind = kForeachNormInf;
  else return foreach_norm_stacked_loop(tensors, ord);
  if (kind == kForeachNormInf)
    for (const Tensor& t : tensors)
      if (t.numel() == 0) return foreach_norm_stacked_loop(tensors, ord);  // the loop's error for an empty max
  const int device = tensors[0].device().index;
  GpuGuard guard(device);
  const DType dt = tensors[0].dtype(), cdt = compute_dtype(dt);
  std::vector<DenseRun> runs;
  runs.reserve(tensors.size());
  for (const Tensor& t : tensors) runs.emplace_back(t);
  Tensor out = empty({int64_t(tensors.size())}, {.dtype = cdt, .device = tensors[0].device()});
  const int64_t elem = cdt == DType::Float64 ? 8 : 4;
  for_each_batch(tensors, runs, [&](const ForeachBatch& b, size_t first) {
    Tensor partial = empty({b.first_block[b.count] * elem}, {.dtype = DType::UInt8, .device = out.device()});
    launch_foreach_norm(b, kind, partial.data_ptr(), static_cast<char*>(out.data_ptr()) + int64_t(first) * elem);
  });
  return dt == cdt ? out : out.to(dt);
}

void mul_cuda(TensorList tensors, const Tensor& scale) {
  const DType dt = tensors[0].dtype();
  bool fused = is_floating(dt) && !scale.is_complex();
  for (const Tensor& t : tensors) fused = fused && t.dtype() == dt;
  if (!fused) return foreach_mul_loop(tensors, scale);
  const int device = tensors[0].device().index;
  GpuGuard guard(device);
  // The scale in the compute type, on the device (a conversion there, not a read back).
  Tensor s = scale.to(compute_dtype(dt)).contiguous();
  std::vector<DenseRun> runs;
  runs.reserve(tensors.size());
  for (const Tensor& t : tensors) runs.emplace_back(t);
  for_each_batch(tensors, runs, [&](const ForeachBatch& b, size_t) { launch_foreach_mul(b, s.data_ptr()); });
  for (DenseRun& r : runs) r.write_back();
}

}  // namespace

EMBER_REGISTER_KERNEL(_foreach_norm_stacked, CUDA, norm_stacked_cuda);
EMBER_REGISTER_KERNEL(_foreach_mul_, CUDA, mul_cuda);

}  // namespace ember::cuda
