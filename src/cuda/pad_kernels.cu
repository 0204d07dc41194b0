// CUDA launchers of F.pad's reflect, replicate and circular modes and their backward, on
// `planes` contiguous volumes whose last three dims are padded (unit dims where fewer are).
// Each padded dim maps an output index to one input index by the CPU's pad_index_map
// (src/cpu/pad_kernels.cpp: PyTorch's rules, negative pads included); the map is a few integer
// operations, so it is evaluated per element here rather than tabulated.
// The forward is a gather: one thread per output element, moved by element size (every real
// storage type, as the CPU). The backward is the scatter-add along the same maps (an input
// element has up to three sources per dim under reflect, a whole border run under replicate),
// done with atomicAdd into a float32 / float64 buffer the host converts.
#include <algorithm>
#include <cstdint>

#include "cuda/reduce_device.cuh"
#include "cuda/spatial_launchers.h"

namespace ember::cuda {
namespace {

inline constexpr int kThreads = 256;
unsigned blocks_for(int64_t n) { return unsigned(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, int64_t(1) << 16)); }

// One padded dim in the kernel's index type, with circular's crop precomputed.
template <class I> struct PadDim {
  I n, lo, out;
  I start, left, core;  // circular: first surviving input, left pad, surviving length
};
template <class I> struct PadGeo {
  PadDim<I> d[3];
  int mode;
};

template <class I> PadGeo<I> pad_geo(const PadLaunch& L) {
  PadGeo<I> g;
  g.mode = int(L.mode);
  for (int i = 0; i < 3; ++i) {
    const int64_t n = L.n[i], lo = L.lo[i], hi = L.hi[i];
    const int64_t start = std::max<int64_t>(-lo, 0);
    g.d[i] = {I(n), I(lo), I(std::max<int64_t>(n + lo + hi, 0)), I(start), I(std::max<int64_t>(lo, 0)),
              I(n - start - std::max<int64_t>(-hi, 0))};
  }
  return g;
}

// The CPU's pad_index_map for one output index.
template <class I> __device__ __forceinline__ I pad_map(I o, const PadDim<I>& d, int mode) {
  I j = o - d.lo;
  if (mode == 0) {  // reflect about 0 and n - 1
    if (j < 0) j = -j;
    else if (j >= d.n) j = 2 * (d.n - 1) - j;
  } else if (mode == 1) {  // replicate
    j = j < 0 ? I(0) : (j > d.n - 1 ? d.n - 1 : j);
  } else {  // circular: crop, then wrap around what is left
    const I c = o - d.left;
    j = d.start + ((c % d.core) + d.core) % d.core;
  }
  return j;
}

// Output element i -> (plane, input offset within the plane).
template <class I> __device__ __forceinline__ void pad_source(I i, const PadGeo<I>& g, I& plane, I& src) {
  const I ow = i % g.d[2].out;
  i /= g.d[2].out;
  const I oh = i % g.d[1].out;
  i /= g.d[1].out;
  const I od = i % g.d[0].out;
  plane = i / g.d[0].out;
  src = (pad_map(od, g.d[0], g.mode) * g.d[1].n + pad_map(oh, g.d[1], g.mode)) * g.d[2].n + pad_map(ow, g.d[2], g.mode);
}

template <class E, class I>
__global__ void pad_kernel(const E* __restrict__ x, E* __restrict__ y, PadGeo<I> g, int64_t n) {
  const I in_plane = g.d[0].n * g.d[1].n * g.d[2].n;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    I plane, src;
    pad_source(I(i), g, plane, src);
    y[i] = x[plane * in_plane + src];
  }
}

template <class T, class A, class I>
__global__ void pad_backward_kernel(const T* __restrict__ gy, A* __restrict__ dx, PadGeo<I> g, int64_t n) {
  const I in_plane = g.d[0].n * g.d[1].n * g.d[2].n;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(blockDim.x) * gridDim.x) {
    I plane, src;
    pad_source(I(i), g, plane, src);
    atomicAdd(dx + plane * in_plane + src, convert<A>(gy[i]));
  }
}

bool fits_int32(const PadLaunch& L, int64_t n_out) {
  constexpr int64_t kLimit = int64_t(INT32_MAX) / 2;
  int64_t in = L.planes;
  for (int i = 0; i < 3; ++i) {
    in *= L.n[i];
    // |lo| and |hi| enter o - lo and 2 * (n - 1) - j
    if (L.lo[i] > kLimit / 4 || L.lo[i] < -kLimit / 4 || L.hi[i] > kLimit / 4 || L.hi[i] < -kLimit / 4) return false;
  }
  return in <= kLimit && n_out <= kLimit;
}

int64_t out_numel(const PadLaunch& L) {
  int64_t n = L.planes;
  for (int i = 0; i < 3; ++i) n *= std::max<int64_t>(L.n[i] + L.lo[i] + L.hi[i], 0);
  return n;
}

template <class E> void run_pad(const PadLaunch& L, int64_t n) {
  const E* x = static_cast<const E*>(L.in);
  E* y = static_cast<E*>(L.out);
  if (fits_int32(L, n)) pad_kernel<E, int32_t><<<blocks_for(n), kThreads, 0, L.stream>>>(x, y, pad_geo<int32_t>(L), n);
  else pad_kernel<E, int64_t><<<blocks_for(n), kThreads, 0, L.stream>>>(x, y, pad_geo<int64_t>(L), n);
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_pad(const PadLaunch& L) {
  const int64_t n = out_numel(L);
  if (n == 0) return;
  // A pure move: one kernel per element size, for every real storage type.
  visit_storage<kStoreAll>(L.code, L.op, [&]<class T>() {
    if constexpr (sizeof(T) == 1) run_pad<uint8_t>(L, n);
    else if constexpr (sizeof(T) == 2) run_pad<uint16_t>(L, n);
    else if constexpr (sizeof(T) == 4) run_pad<uint32_t>(L, n);
    else run_pad<uint64_t>(L, n);
  });
}

void launch_pad_backward(const PadLaunch& L) {
  const int64_t n = out_numel(L);
  if (n == 0) return;
  visit_storage<kStoreFloat>(L.code, L.op, [&]<class T>() {
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* gy = static_cast<const T*>(L.in);
    A* dx = static_cast<A*>(L.out);
    if (fits_int32(L, n))
      pad_backward_kernel<T, A, int32_t><<<blocks_for(n), kThreads, 0, L.stream>>>(gy, dx, pad_geo<int32_t>(L), n);
    else
      pad_backward_kernel<T, A, int64_t><<<blocks_for(n), kThreads, 0, L.stream>>>(gy, dx, pad_geo<int64_t>(L), n);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace ember::cuda
