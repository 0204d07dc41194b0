// The CUDA kernels of the reductions (sum, mean, prod, amax/amin, max/min over a dim,
// argmax/argmin, var, norm, any/all) and scans (cumsum, cumprod, cummax/cummin,
// logcumsumexp), registered with the dispatcher. Output dtypes, checks and messages are the
// CPU kernels' (src/cpu/reduce_kernels.cpp, special_kernels.cpp); this side lays out the
// geometry and the launch shape (reduce_launchers.h) and the .cu launchers run the kernels.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <mutex>

#include "core/dtype_dispatch.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_state.h"
#include "cuda/reduce_launchers.h"
#include "ember/ops.h"
#include "ops/op_handles.h"
#include "ops/reduce_utils.h"

namespace ember::cuda {

GpuShape gpu_shape(int device) {
  static std::mutex mu;
  static std::array<GpuShape, kMaxGpus> shapes;
  static std::array<bool, kMaxGpus> known{};
  EMBER_CHECK(device >= 0 && device < kMaxGpus, "gpu_shape: bad device index ", device);
  std::lock_guard<std::mutex> lock(mu);
  if (!known[device]) {
    GpuShape s;
    EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&s.sms, cudaDevAttrMultiProcessorCount, device));
    EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&s.threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
    shapes[device] = s;
    known[device] = true;
  }
  return shapes[device];
}

namespace {

using reduce::convert;
using reduce::dim_mask;
using reduce::reduced_shape;
using ReduceFn = void (*)(const ReduceLaunch&);
using ScanFn = void (*)(const ScanLaunch&);

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int8_t code(DType t) { return int8_t(t); }
Tensor scratch(int64_t bytes, Device device) { return empty({bytes}, {.dtype = kUInt8, .device = device}); }

// ---------------------------------------------------------------- reduction geometry
struct Dim {
  int64_t size, stride;
};

// Appends d to dims, merged into the last one when the two walk memory as one run.
void push_merged(std::vector<Dim>& dims, Dim d) {
  if (!dims.empty() && dims.back().stride == d.stride * d.size) {
    dims.back() = {dims.back().size * d.size, d.stride};
  } else {
    dims.push_back(d);
  }
}

// x's reduction over mask as kept dims + one reduced dim, or two levels (reduce_launchers.h);
// false when the kept dims do not fit in kReduceMaxKept or more than two reduced dims remain.
bool layout(const Tensor& x, uint64_t mask, ReduceLaunch& L) {
  std::vector<Dim> kept, red;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const Dim dim{x.sizes()[d], x.strides()[d]};
    if (dim.size == 1) continue;
    if ((mask >> d) & 1) red.push_back(dim);
    else push_merged(kept, dim);
  }
  L.num_out = 1;
  for (const Dim& k : kept) L.num_out *= k.size;
  L.R = 1;
  for (const Dim& r : red) L.R *= r.size;
  // The order of a reduction does not matter (the index-carrying ones have one reduced dim, or
  // a contiguous input): walk the reduced dims from the largest stride down.
  std::stable_sort(red.begin(), red.end(), [](const Dim& a, const Dim& b) { return a.stride > b.stride; });
  std::vector<Dim> merged;
  for (const Dim& r : red) push_merged(merged, r);
  if (L.R == 0) merged.clear();  // nothing is read
  L.outer_red = 1;
  if (merged.size() == 2 && kept.size() < size_t(kReduceMaxKept)) {
    // Two levels: the outer reduced dim becomes the outermost kept dim of the main pass.
    L.outer_red = merged[0].size;
    L.num_out *= L.outer_red;
    L.R /= L.outer_red;
    kept.insert(kept.begin(), merged[0]);
    merged.erase(merged.begin());
  }
  if (kept.size() > size_t(kReduceMaxKept) || merged.size() > 1) return false;
  L.nkept = int(kept.size());
  for (int d = 0; d < kReduceMaxKept; ++d) {
    L.ksize[d] = d < L.nkept ? kept[d].size : 1;
    L.kstride[d] = d < L.nkept ? kept[d].stride : 0;
  }
  L.rstride = merged.empty() ? 0 : merged[0].stride;
  return true;
}

// The launch shape (see ReduceLaunch): enough threads to fill the GPU, the reduced dim split
// into chunks only when the outputs alone cannot.
void shape_launch(ReduceLaunch& L, GpuShape gs) {
  const int64_t target = int64_t(gs.sms) * gs.threads_per_sm;
  const int64_t R = std::max<int64_t>(L.R, 1);
  const int64_t inner_kept = L.nkept > 0 ? L.kstride[L.nkept - 1] : 0;
  const bool strided_rows = L.R > 1 && L.rstride != 1;
  L.columns = L.nkept > 0 && (L.R <= 1 || (strided_rows && inner_kept < L.rstride));
  L.nchunks = 1;
  L.chunk = R;
  const bool may_split = L.outer_red == 1;  // two levels already split the reduction
  if (!L.columns) L.col_vec = 1;
  if (L.columns) {
    // Vector columns: one contiguous kept dim, its size and the row stride multiples of the
    // vector, an aligned start. The threads then walk num_out / col_vec vectors of outputs.
    const int64_t v = L.col_vec;
    if (v > 1 && !(L.nkept == 1 && L.kstride[0] == 1 && L.num_out % v == 0 && L.rstride % v == 0 &&
                   reinterpret_cast<uintptr_t>(L.in) % 16 == 0 && L.R > 1))
      L.col_vec = 1;
    const int64_t outs = L.num_out / L.col_vec;
    int tx = pow2_ceil(std::min<int64_t>(outs, 32));
    const int ty = std::min(256 / tx, pow2_floor(std::max<int64_t>(R / 4, 1)));
    if (tx * ty < 256) tx = std::min(pow2_ceil(outs), 256 / ty);
    L.tx = tx;
    L.ty = ty;
    const int64_t groups = ceil_div(outs, tx);
    const int64_t active = groups * tx * ty;
    if (may_split && active * 2 <= target && R >= int64_t(ty) * 64) {
      const int64_t n = std::min({ceil_div(target, active), R / (int64_t(ty) * 16), int64_t(65535)});
      if (n > 1) {
        L.chunk = ceil_div(R, n);
        L.nchunks = ceil_div(R, L.chunk);
      }
    }
    L.grid_x = std::min<int64_t>(groups, int64_t(1) << 30);
    return;
  }
  int tx = pow2_ceil(std::min<int64_t>(R, 32));
  while (tx < 512 && R >= int64_t(tx) * 32 && L.num_out * tx * 2 <= target) tx *= 2;
  const int ty = tx >= 256 ? 1 : 256 / tx;
  L.tx = tx;
  L.ty = ty;
  const int64_t groups = ceil_div(L.num_out, ty);
  const int64_t active = groups * tx * ty;
  if (may_split && active * 2 <= target && R >= int64_t(tx) * 64) {
    const int64_t n = std::min({ceil_div(target, active), R / (int64_t(tx) * 32), int64_t(65535)});
    if (n > 1) {
      L.chunk = ceil_div(ceil_div(R, n), 16) * 16;  // keeps the chunks' vector boundaries in step
      L.nchunks = ceil_div(R, L.chunk);
    }
  }
  L.grid_x = std::min<int64_t>(groups, int64_t(1) << 30);
}

// Runs `launch` reducing x over mask into out (contiguous, the reduced shape; may be undefined
// for argmax/argmin) and indices. `param`/`kind`: the op's parameters.
void run_reduce(const Tensor& input, uint64_t mask, ReduceFn launch, const Tensor& out, const Tensor& indices,
                double param = 0, int kind = 0, bool vector_columns = false) {
  const int device = input.device().index;
  GpuGuard guard(device);
  Tensor x = input;
  ReduceLaunch L;
  if (!layout(x, mask, L)) {
    // More kept dims or reduced dims than the kernels take in place: a copy with the kept dims
    // first (in order) and the reduced ones last is one row per output.
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (!((mask >> d) & 1)) perm.push_back(d);
    const int64_t nkept = int64_t(perm.size());
    for (int64_t d = 0; d < x.dim(); ++d)
      if ((mask >> d) & 1) perm.push_back(d);
    x = x.permute(perm).contiguous();
    uint64_t tail = 0;
    for (int64_t d = nkept; d < x.dim(); ++d) tail |= uint64_t(1) << d;
    const bool ok = layout(x, tail, L);
    EMBER_CHECK(ok, "reduction: internal error laying out a contiguous input");
  }
  if (L.num_out == 0) return;
  L.in = x.data_ptr();
  L.in_code = code(x.dtype());
  L.out = out.defined() ? out.data_ptr() : nullptr;
  L.indices = indices.defined() ? static_cast<int64_t*>(indices.data_ptr()) : nullptr;
  L.param = param;
  L.kind = kind;
  if (vector_columns && is_floating(x.dtype())) L.col_vec = int(16 / element_size(x.dtype()));
  L.stream = current_cuda_stream(device);
  shape_launch(L, gpu_shape(device));
  Tensor partial;
  if (L.nchunks > 1 || L.outer_red > 1) {
    partial = scratch(L.nchunks * L.num_out * kReduceMaxAccBytes, x.device());
    L.partial = partial.data_ptr();
  }
  launch(L);
}

Shape out_shape(const Tensor& a, uint64_t mask, bool keepdim) { return reduced_shape(a.sizes(), mask, keepdim); }

// ---------------------------------------------------------------- reductions
// sum and prod: integral and bool inputs accumulate in int64; `dtype` casts the input first.
Tensor sum_like(ReduceFn launch, const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  const uint64_t mask = dim_mask(dims, a.dim());
  const DType out_dt = dtype ? *dtype : (is_integral(a.dtype(), true) ? kInt64 : a.dtype());
  Tensor x = dtype ? convert(a, *dtype) : a;
  const DType kernel_dt = is_integral(x.dtype(), true) ? kInt64 : x.dtype();
  Tensor out = empty(out_shape(a, mask, keepdim), {.dtype = kernel_dt, .device = a.device()});
  run_reduce(x, mask, launch, out, Tensor(), 0, 0, /*vector_columns=*/launch == launch_sum);
  return convert(out, out_dt);
}
Tensor sum_cuda(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  return sum_like(launch_sum, a, dims, keepdim, dtype);
}
Tensor prod_cuda(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  return sum_like(launch_prod, a, dims, keepdim, dtype);
}

Tensor mean_cuda(const Tensor& a, IntArrayRef dims, bool keepdim, std::optional<DType> dtype) {
  const uint64_t mask = dim_mask(dims, a.dim());
  const DType out_dt = dtype ? *dtype : a.dtype();
  Tensor x = convert(a, out_dt);
  Tensor out = empty(out_shape(a, mask, keepdim), {.dtype = out_dt, .device = a.device()});
  const int64_t n = reduce::reduced_numel(a.sizes(), mask);
  run_reduce(x, mask, launch_mean, out, Tensor(), n == 0 ? std::numeric_limits<double>::quiet_NaN() : 1.0 / double(n),
             0, /*vector_columns=*/true);
  return out;
}

template <bool kMax> Tensor extreme_cuda(const Tensor& a, IntArrayRef dims, bool keepdim) {
  reduce::zero_numel_check_dims(a, dims, kMax ? "amax()" : "amin()");
  const uint64_t mask = dim_mask(dims, a.dim());
  Tensor out = empty(out_shape(a, mask, keepdim), {.dtype = a.dtype(), .device = a.device()});
  run_reduce(a, mask, kMax ? launch_amax : launch_amin, out, Tensor());
  return out;
}
Tensor amax_cuda(const Tensor& a, IntArrayRef dims, bool keepdim) { return extreme_cuda<true>(a, dims, keepdim); }
Tensor amin_cuda(const Tensor& a, IntArrayRef dims, bool keepdim) { return extreme_cuda<false>(a, dims, keepdim); }

// Values (when want_values) and indices along one dim, or over the flattened input.
template <bool kMax>
std::pair<Tensor, Tensor> arg_reduce(const Tensor& a, std::optional<int64_t> dim, bool keepdim, bool want_values) {
  Tensor x = a;
  uint64_t mask;
  if (dim) {
    const int64_t d = reduce::wrap_dim(*dim, a.dim());
    mask = a.dim() == 0 ? 0 : uint64_t(1) << d;
  } else {
    x = a.contiguous();  // one flat reduced dim: indices in row-major order
    mask = dim_mask({}, a.dim());
  }
  const Shape shape = out_shape(a, mask, keepdim);
  Tensor values = want_values ? empty(shape, {.dtype = a.dtype(), .device = a.device()}) : Tensor();
  Tensor indices = empty(shape, {.dtype = kInt64, .device = a.device()});
  run_reduce(x, mask, kMax ? launch_max_arg : launch_min_arg, values, indices);
  return {values, indices};
}
std::tuple<Tensor, Tensor> max_dim_cuda(const Tensor& a, int64_t dim, bool keepdim) {
  reduce::zero_numel_check_dims(a, {dim}, "max()");
  auto [v, i] = arg_reduce<true>(a, dim, keepdim, true);
  return {v, i};
}
std::tuple<Tensor, Tensor> min_dim_cuda(const Tensor& a, int64_t dim, bool keepdim) {
  reduce::zero_numel_check_dims(a, {dim}, "min()");
  auto [v, i] = arg_reduce<false>(a, dim, keepdim, true);
  return {v, i};
}
template <bool kMax> Tensor argextreme_cuda(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  const char* name = kMax ? "argmax" : "argmin";
  EMBER_CHECK(a.dtype() != kBool, '"', name, "_cuda\" not implemented for 'Bool'");
  const std::string fn = std::string(name) + "()";
  if (dim) reduce::zero_numel_check_dims(a, {*dim}, fn.c_str());
  else reduce::zero_numel_check_dims(a, {}, fn.c_str());
  return arg_reduce<kMax>(a, dim, keepdim, false).second;
}
Tensor argmax_cuda(const Tensor& a, std::optional<int64_t> dim, bool keepdim) { return argextreme_cuda<true>(a, dim, keepdim); }
Tensor argmin_cuda(const Tensor& a, std::optional<int64_t> dim, bool keepdim) { return argextreme_cuda<false>(a, dim, keepdim); }

// bool output (uint8 for uint8 input, as the CPU and torch).
template <bool kAny> Tensor any_all_cuda(const Tensor& a, IntArrayRef dims, bool keepdim) {
  const uint64_t mask = dim_mask(dims, a.dim());
  const DType out_dt = a.dtype() == kUInt8 ? kUInt8 : kBool;
  Tensor out = empty(out_shape(a, mask, keepdim), {.dtype = out_dt, .device = a.device()});
  run_reduce(a, mask, kAny ? launch_any : launch_all, out, Tensor());
  return out;
}
Tensor any_cuda(const Tensor& a, IntArrayRef dims, bool keepdim) { return any_all_cuda<true>(a, dims, keepdim); }
Tensor all_cuda(const Tensor& a, IntArrayRef dims, bool keepdim) { return any_all_cuda<false>(a, dims, keepdim); }

Tensor norm_cuda(const Tensor& a, const Scalar& p, IntArrayRef dims, bool keepdim) {
  EMBER_CHECK(is_floating(a.dtype()), "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
              reduce::torch_type_name(a.dtype()));
  const uint64_t mask = dim_mask(dims, a.dim());
  const double pv = p.to_double();
  const bool inf = std::isinf(pv);
  if (inf && a.numel() == 0) {
    EMBER_CHECK(reduce::reduced_numel(a.sizes(), mask) != 0 || a.dim() == 0,
                "linalg.vector_norm cannot compute the ", p.str(), " norm on an empty tensor because the "
                "operation does not have an identity");
  }
  const int kind = pv == 2.0 ? kNormL2 : pv == 1.0 ? kNormL1 : pv == 0.0 ? kNormL0 : inf ? (pv > 0 ? kNormInf : kNormNegInf) : kNormP;
  Tensor out = empty(out_shape(a, mask, keepdim), {.dtype = a.dtype(), .device = a.device()});
  run_reduce(a, mask, launch_norm, out, Tensor(), pv, kind);
  return out;
}

// One pass (Welford); sum((x - mean)^2) / max(0, n - correction), as the CPU's two-pass formula.
Tensor var_cuda(const Tensor& a, IntArrayRef dims, int64_t correction, bool keepdim) {
  const uint64_t mask = dim_mask(dims, a.dim());
  Tensor out = empty(out_shape(a, mask, keepdim), {.dtype = a.dtype(), .device = a.device()});
  run_reduce(a, mask, launch_var, out, Tensor(), double(correction));
  return out;
}

// ---------------------------------------------------------------- scans
// x (contiguous) viewed as [outer, n, inner] and scanned along n into out (and indices).
void run_scan(const Tensor& x, int64_t d, ScanFn launch, const Tensor& out, const Tensor& indices) {
  if (x.numel() == 0) return;
  const int device = x.device().index;
  GpuGuard guard(device);
  ScanLaunch L;
  L.in = x.data_ptr();
  L.code = code(x.dtype());
  L.out = out.data_ptr();
  L.indices = indices.defined() ? static_cast<int64_t*>(indices.data_ptr()) : nullptr;
  if (x.dim() > 0) {
    L.n = x.sizes()[d];
    for (int64_t i = 0; i < d; ++i) L.outer *= x.sizes()[i];
    for (int64_t i = d + 1; i < x.dim(); ++i) L.inner *= x.sizes()[i];
  }
  L.stream = current_cuda_stream(device);
  const GpuShape gs = gpu_shape(device);
  L.nchunks = 1;
  L.chunk = L.n;
  const int64_t lines = L.outer * L.inner;
  if (scan_uses_rows(L)) {
    // A block per row; a few long rows are cut into chunks of whole tiles.
    const int64_t tile = int64_t(kScanBlock) * kScanItems;
    const int64_t target_blocks = int64_t(gs.sms) * std::max(1, gs.threads_per_sm / kScanBlock);
    if (L.outer * 2 <= target_blocks && L.n >= 4 * tile) {
      const int64_t n = std::min({ceil_div(target_blocks, L.outer), ceil_div(L.n, 2 * tile), int64_t(65535)});
      if (n > 1) {
        L.chunk = ceil_div(ceil_div(L.n, n), tile) * tile;
        L.nchunks = ceil_div(L.n, L.chunk);
      }
    }
  } else {
    // A thread per line; few lines over a long n are cut into chunks.
    const int64_t target = int64_t(gs.sms) * gs.threads_per_sm;
    if (lines * 2 <= target && L.n >= 128) {
      const int64_t n = std::min({ceil_div(target, lines), L.n / 32, int64_t(65535)});
      if (n > 1) {
        L.chunk = ceil_div(L.n, n);
        L.nchunks = ceil_div(L.n, L.chunk);
      }
    }
  }
  Tensor agg;
  if (L.nchunks > 1) {
    agg = scratch(lines * L.nchunks * kReduceMaxAccBytes, x.device());
    L.agg = agg.data_ptr();
  }
  launch(L);
}

int64_t scan_dim(const Tensor& a, int64_t dim) { return reduce::wrap_dim(dim, a.dim()); }

// cumsum/cumprod: integral and bool results are computed in int64 (as the CPU), floating ones
// in their own dtype (float16/bfloat16 accumulate in float).
Tensor sum_scan(ScanFn launch, const char* name, const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  const int64_t d = scan_dim(a, dim);
  const DType out_dt = dtype ? *dtype : (is_integral(a.dtype(), true) ? kInt64 : a.dtype());
  if (is_complex(out_dt)) throw_dtype_not_implemented(name, out_dt);
  const DType kernel_dt = is_floating(out_dt) ? out_dt : kInt64;
  Tensor x = convert(a, kernel_dt, /*contig=*/true);
  Tensor out = empty(a.sizes(), {.dtype = kernel_dt, .device = a.device()});
  run_scan(x, d, launch, out, Tensor());
  return convert(out, out_dt);
}
Tensor cumsum_cuda(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  return sum_scan(launch_cumsum, "cumsum_cuda", a, dim, dtype);
}
Tensor cumprod_cuda(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  return sum_scan(launch_cumprod, "cumprod_cuda", a, dim, dtype);
}

// Running max/min with the index of the last extreme so far (NaN sticks). bool and the small
// integers run as int64 (exact both ways).
template <bool kMax> std::tuple<Tensor, Tensor> cum_extreme_cuda(const Tensor& a, int64_t dim) {
  const int64_t d = scan_dim(a, dim);
  const DType dt = a.dtype();
  if (is_complex(dt)) throw_dtype_not_implemented(kMax ? "cummax_cuda" : "cummin_cuda", dt);
  const DType kernel_dt = (is_floating(dt) || dt == kInt32) ? dt : kInt64;
  Tensor x = convert(a, kernel_dt, /*contig=*/true);
  Tensor values = empty(a.sizes(), {.dtype = kernel_dt, .device = a.device()});
  Tensor indices = empty(a.sizes(), {.dtype = kInt64, .device = a.device()});
  run_scan(x, d, kMax ? launch_cummax : launch_cummin, values, indices);
  return {convert(values, dt), indices};
}
std::tuple<Tensor, Tensor> cummax_cuda(const Tensor& a, int64_t dim) { return cum_extreme_cuda<true>(a, dim); }
std::tuple<Tensor, Tensor> cummin_cuda(const Tensor& a, int64_t dim) { return cum_extreme_cuda<false>(a, dim); }

Tensor logcumsumexp_cuda(const Tensor& a, int64_t dim) {
  const int64_t d = scan_dim(a, dim);
  EMBER_CHECK(is_floating(a.dtype()) || !is_integral(a.dtype(), true),
              "logcumsumexp(): expected input to have floating point dtype but got ", scalar_type_name(a.dtype()));
  const DType out_dt = is_floating(a.dtype()) ? a.dtype() : default_dtype();
  Tensor x = convert(a, out_dt, /*contig=*/true);
  Tensor out = empty(a.sizes(), {.dtype = out_dt, .device = a.device()});
  run_scan(x, d, launch_logcumsumexp, out, Tensor());
  return out;
}

EMBER_REGISTER_KERNEL(sum, CUDA, sum_cuda);
EMBER_REGISTER_KERNEL(mean, CUDA, mean_cuda);
EMBER_REGISTER_KERNEL(prod, CUDA, prod_cuda);
EMBER_REGISTER_KERNEL(amax, CUDA, amax_cuda);
EMBER_REGISTER_KERNEL(amin, CUDA, amin_cuda);
EMBER_REGISTER_KERNEL(max_dim, CUDA, max_dim_cuda);
EMBER_REGISTER_KERNEL(min_dim, CUDA, min_dim_cuda);
EMBER_REGISTER_KERNEL(argmax, CUDA, argmax_cuda);
EMBER_REGISTER_KERNEL(argmin, CUDA, argmin_cuda);
EMBER_REGISTER_KERNEL(var, CUDA, var_cuda);
EMBER_REGISTER_KERNEL(norm, CUDA, norm_cuda);
EMBER_REGISTER_KERNEL(any, CUDA, any_cuda);
EMBER_REGISTER_KERNEL(all, CUDA, all_cuda);
EMBER_REGISTER_KERNEL(cumsum, CUDA, cumsum_cuda);
EMBER_REGISTER_KERNEL(cumprod, CUDA, cumprod_cuda);
EMBER_REGISTER_KERNEL(cummax, CUDA, cummax_cuda);
EMBER_REGISTER_KERNEL(cummin, CUDA, cummin_cuda);
EMBER_REGISTER_KERNEL(logcumsumexp, CUDA, logcumsumexp_cuda);

}  // namespace
}  // namespace ember::cuda
