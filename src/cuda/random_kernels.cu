// CUDA launchers of the random fills, randperm and multinomial (random_launchers.h), on
// Philox4x32-10 (philox.cuh).
//
// One kernel shape serves every fill: thread c (grid-stride, 64-bit) computes the Philox output
// of counter offset + c and writes the kPer elements that counter feeds (4 for one word per
// element, 2 for two), so which numbers an element gets depends only on (seed, offset, element
// index) and never on the grid. Output dtypes are a runtime switch inside the kernel (a uniform
// branch), so each transform is instantiated once per compute type, not once per dtype:
//   uniform_      float: from + u24 * (to - from) (fma, float), rounded to the dtype, `to` -> from;
//                 double: from + u53 * (to - from), `to` -> from
//   normal_       Box-Muller on a pair of uniforms: u1 = 1 - u (in (0, 1]), r = sqrt(-2 log u1),
//                 z = (r cos 2 pi u2, r sin 2 pi u2); float: elements 4c..4c+3 from the two pairs
//                 (w0, w1), (w2, w3); double: elements 2c, 2c+1 from (w0w1, w2w3) as 53-bit
//                 uniforms; then mean + std * z (and exp for log_normal_)
//   exponential_  -log(u) / lambd with u in (0, 1], and log(u) replaced by -eps/2 of the dtype
//                 when u >= 1 - eps/2, so the result is never 0 (torch's CUDA transform)
//   bernoulli_    a 53-bit uniform < p, stored as 0 / 1 bits of the dtype (by element size)
//   random_       from + draw % range (32-bit draws below a range of 2^28, 64-bit from it on, as
//                 the CPU), cast from int64 to the dtype as the CPU's cast_from_int
// randperm: one 64-bit key per index, then cub::DeviceRadixSort::SortPairs(key, index); the
// sort is stable, so even equal keys (probability about n^2 / 2^65) leave a permutation.
// multinomial: a block per row validates and (with replacement) builds the normalised CDF
// (cub::BlockScan), then one binary search per sample; the exponential race takes a block
// argmax per row for one sample, or two stable SortPairs passes (by ratio, then by row) for more:
// the same SortPairs<uint64, int64> instantiation as randperm's, so CUB is compiled once.
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/cuda_check.h"
#include "cuda/elementwise_args.h"
#include "cuda/philox.cuh"
#include "cuda/random_launchers.h"

namespace ember::cuda {
namespace {

namespace px = philox;

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;  // grid-stride beyond: 16M threads are plenty

// ---------------------------------------------------------------- stores
// A float result in a float16 / bfloat16 / float32 element.
__device__ __forceinline__ void store_float(char* base, int64_t i, int8_t code, float v) {
  switch (code) {
    case kCodeFloat16: reinterpret_cast<__half*>(base)[i] = __float2half_rn(v); break;
    case kCodeBFloat16: reinterpret_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(v); break;
    default: reinterpret_cast<float*>(base)[i] = v; break;
  }
}
// v rounded to the dtype (float16 / bfloat16 / float32), as a float.
__device__ __forceinline__ float rounded(int8_t code, float v) {
  switch (code) {
    case kCodeFloat16: return __half2float(__float2half_rn(v));
    case kCodeBFloat16: return __bfloat162float(__float2bfloat16_rn(v));
    default: return v;
  }
}
// An int64 value in any real dtype, as the CPU's cast_from_int (16-bit floats through float).
__device__ __forceinline__ void store_int(char* base, int64_t i, int8_t code, int64_t v) {
  switch (code) {
    case kCodeBool: reinterpret_cast<bool*>(base)[i] = v != 0; break;
    case kCodeUInt8: reinterpret_cast<uint8_t*>(base)[i] = uint8_t(v); break;
    case kCodeInt8: reinterpret_cast<int8_t*>(base)[i] = int8_t(v); break;
    case kCodeInt16: reinterpret_cast<int16_t*>(base)[i] = int16_t(v); break;
    case kCodeInt32: reinterpret_cast<int32_t*>(base)[i] = int32_t(v); break;
    case kCodeInt64: reinterpret_cast<int64_t*>(base)[i] = v; break;
    case kCodeFloat16: reinterpret_cast<__half*>(base)[i] = __float2half_rn(float(v)); break;
    case kCodeBFloat16: reinterpret_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(float(v)); break;
    case kCodeFloat32: reinterpret_cast<float*>(base)[i] = float(v); break;
    default: reinterpret_cast<double*>(base)[i] = double(v); break;
  }
}

// ---------------------------------------------------------------- the fill kernel
// F::kPer elements per counter; f(words, first element, count) writes elements first ..
// first + count - 1 (count < kPer only for the last counter).
template <class F>
__global__ void __launch_bounds__(kThreads) philox_fill_kernel(F f, int64_t n, uint64_t seed, uint64_t offset, int64_t counters) {
  const int64_t stride = int64_t(gridDim.x) * kThreads;
  for (int64_t c = int64_t(blockIdx.x) * kThreads + threadIdx.x; c < counters; c += stride) {
    const px::Words r = px::draw(seed, offset + uint64_t(c));
    const int64_t first = c * F::kPer;
    const int64_t left = n - first;
    f(r, first, left < F::kPer ? int(left) : F::kPer);
  }
}

template <class F> void fill(const RandomArgs& a, const F& f) {
  if (a.n <= 0) return;
  const int64_t counters = (a.n + F::kPer - 1) / F::kPer;  // == philox_counters(n, 4 / kPer)
  int64_t blocks = (counters + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  philox_fill_kernel<F><<<unsigned(blocks), kThreads, 0, a.stream>>>(f, a.n, a.seed, a.offset, counters);
  EMBER_CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------- transforms
struct UniformFloat {
  static constexpr int kPer = 4;
  char* out;
  int8_t code;
  float lo, hi, range;
  __device__ void operator()(const px::Words& r, int64_t first, int count) const {
    const float hi_t = rounded(code, hi), lo_t = rounded(code, lo);
    for (int k = 0; k < count; ++k) {
      const float v = rounded(code, fmaf(px::uniform24(r.w[k]), range, lo));
      store_float(out, first + k, code, v >= hi_t ? lo_t : v);
    }
  }
};

struct UniformDouble {
  static constexpr int kPer = 2;
  double* out;
  double from, to, range;
  __device__ void operator()(const px::Words& r, int64_t first, int count) const {
    for (int k = 0; k < count; ++k) {
      const double v = fma(px::uniform53(px::bits64(r.w[2 * k], r.w[2 * k + 1])), range, from);
      out[first + k] = v >= to ? from : v;
    }
  }
};

struct NormalFloat {
  static constexpr int kPer = 4;
  char* out;
  int8_t code;
  float mean, std;
  bool log;
  __device__ void operator()(const px::Words& r, int64_t first, int count) const {
    float z[4];
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      const float u1 = 1.0f - px::uniform24(r.w[2 * p]);  // (0, 1]: log is finite
      const float radius = sqrtf(-2.0f * logf(u1));
      float s, c;
      sincospif(2.0f * px::uniform24(r.w[2 * p + 1]), &s, &c);
      z[2 * p] = radius * c;
      z[2 * p + 1] = radius * s;
    }
    for (int k = 0; k < count; ++k) {
      const float v = fmaf(z[k], std, mean);
      store_float(out, first + k, code, log ? expf(v) : v);
    }
  }
};

struct NormalDouble {
  static constexpr int kPer = 2;
  double* out;
  double mean, std;
  bool log;
  __device__ void operator()(const px::Words& r, int64_t first, int count) const {
    const double u1 = 1.0 - px::uniform53(px::bits64(r.w[0], r.w[1]));
    const double u2 = px::uniform53(px::bits64(r.w[2], r.w[3]));
    const double radius = sqrt(-2.0 * ::log(u1));
    double s, c;
    sincospi(2.0 * u2, &s, &c);
    const double z[2] = {radius * c, radius * s};
    for (int k = 0; k < count; ++k) {
      const double v = fma(z[k], std, mean);
      out[first + k] = log ? exp(v) : v;
    }
  }
};

struct ExponentialFloat {
  static constexpr int kPer = 4;
  char* out;
  int8_t code;
  float scale;     // -1 / lambd
  float half_eps;  // the dtype's epsilon / 2
  __device__ void operator()(const px::Words& r, int64_t first, int count) const {
    for (int k = 0; k < count; ++k) {
      const float u = px::uniform24_open0(r.w[k]);
      const float lg = u >= 1.0f - half_eps ? -half_eps : logf(u);
      store_float(out, first + k, code, scale * lg);
    }
  }
};

struct ExponentialDouble {
  static constexpr int kPer = 2;
  double* out;
  double scale;
  __device__ void operator()(const px::Words& r, int64_t first, int count) const {
    constexpr double kHalfEps = 0x1.0p-53;
    for (int k = 0; k < count; ++k) {
      const double u = px::uniform53_open0(px::bits64(r.w[2 * k], r.w[2 * k + 1]));
      const double lg = u >= 1.0 - kHalfEps ? -kHalfEps : ::log(u);
      out[first + k] = scale * lg;
    }
  }
};

// 0 / 1 as raw bits of an element of `bytes` bytes (one_bits: the dtype's 1).
template <class U> __device__ __forceinline__ void store_bits(char* base, int64_t i, bool hit, uint64_t one) {
  reinterpret_cast<U*>(base)[i] = hit ? U(one) : U(0);
}
struct Bernoulli {
  static constexpr int kPer = 2;
  char* out;
  int bytes;
  uint64_t one_bits;
  double p;
  __device__ void operator()(const px::Words& r, int64_t first, int count) const {
    for (int k = 0; k < count; ++k) {
      const bool hit = px::uniform53(px::bits64(r.w[2 * k], r.w[2 * k + 1])) < p;
      switch (bytes) {
        case 1: store_bits<uint8_t>(out, first + k, hit, one_bits); break;
        case 2: store_bits<uint16_t>(out, first + k, hit, one_bits); break;
        case 4: store_bits<uint32_t>(out, first + k, hit, one_bits); break;
        default: store_bits<uint64_t>(out, first + k, hit, one_bits); break;
      }
    }
  }
};

__device__ __forceinline__ int64_t in_range(uint64_t draw, int64_t from, uint64_t range) {
  return range == 0 ? int64_t(draw) : int64_t(draw % range + uint64_t(from));
}
struct RandomNarrow {  // 32-bit draws
  static constexpr int kPer = 4;
  char* out;
  int8_t code;
  int64_t from;
  uint64_t range;
  __device__ void operator()(const px::Words& r, int64_t first, int count) const {
    for (int k = 0; k < count; ++k) store_int(out, first + k, code, in_range(r.w[k], from, range));
  }
};
struct RandomWide {  // 64-bit draws
  static constexpr int kPer = 2;
  char* out;
  int8_t code;
  int64_t from;
  uint64_t range;
  __device__ void operator()(const px::Words& r, int64_t first, int count) const {
    for (int k = 0; k < count; ++k)
      store_int(out, first + k, code, in_range(px::bits64(r.w[2 * k], r.w[2 * k + 1]), from, range));
  }
};

struct PermKeys {
  static constexpr int kPer = 2;
  uint64_t* keys;
  int64_t* values;
  __device__ void operator()(const px::Words& r, int64_t first, int count) const {
    for (int k = 0; k < count; ++k) {
      keys[first + k] = px::bits64(r.w[2 * k], r.w[2 * k + 1]);
      values[first + k] = first + k;
    }
  }
};

// ---------------------------------------------------------------- multinomial
template <class Acc> __device__ __forceinline__ Acc load_prob(const void* p, int64_t i, int8_t code) {
  switch (code) {
    case kCodeFloat16: return Acc(__half2float(static_cast<const __half*>(p)[i]));
    case kCodeBFloat16: return Acc(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
    case kCodeFloat32: return Acc(static_cast<const float*>(p)[i]);
    default: return Acc(static_cast<const double*>(p)[i]);
  }
}

// One block per row (grid-stride over rows): flags invalid values and non-positive totals and,
// with kCum, writes the row's cumulative sums divided by the total, the last set to 1.
template <class Acc, bool kCum>
__global__ void __launch_bounds__(kThreads) multinomial_rows_kernel(const void* probs, int8_t code, int64_t rows, int64_t cats,
                                                                   Acc* cum, int* flag) {
  using Scan = cub::BlockScan<Acc, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    Acc running = Acc(0);
    bool bad = false;
    for (int64_t base = 0; base < cats; base += kThreads) {  // block-uniform trip count
      const int64_t k = base + threadIdx.x;
      const Acc x = k < cats ? load_prob<Acc>(probs, r * cats + k, code) : Acc(0);
      if (!(x >= Acc(0) && x < Acc(INFINITY))) bad = true;  // NaN fails both
      Acc inclusive, total;
      Scan(scan_storage).InclusiveSum(x, inclusive, total);
      __syncthreads();  // scan_storage is reused by the next chunk
      if (kCum && k < cats) cum[r * cats + k] = running + inclusive;
      running += total;
    }
    if (bad) atomicOr(flag, 1);
    if (threadIdx.x == 0 && !(running > Acc(0))) atomicOr(flag, 2);
    if constexpr (kCum) {
      // The same thread wrote entry k above (k = base + threadIdx.x): no barrier needed.
      for (int64_t k = threadIdx.x; k < cats; k += kThreads)
        cum[r * cats + k] = k == cats - 1 ? Acc(1) : cum[r * cats + k] / running;
    }
  }
}

// Sample e = r * samples + j: the first bucket of row r whose cumulative value is not below a
// 53-bit uniform (cum's last is 1 > u, so one always is).
template <class Acc> struct MultinomialSample {
  static constexpr int kPer = 2;
  const Acc* cum;
  int64_t cats, samples;
  int64_t* out;
  __device__ void operator()(const px::Words& r, int64_t first, int count) const {
    for (int k = 0; k < count; ++k) {
      const int64_t e = first + k;
      const double u = px::uniform53(px::bits64(r.w[2 * k], r.w[2 * k + 1]));
      const Acc* row = cum + (e / samples) * cats;
      int64_t lo = 0, hi = cats;
      while (hi - lo > 0) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (double(row[mid]) < u) lo = mid + 1;
        else hi = mid;
      }
      out[e] = lo;
    }
  }
};

// The race's ratio p / q of flat entry e as an order-preserving key (larger ratio, larger key;
// NaN largest, as torch's topk). q ~ Exp(1) as exponential_ draws element e of a fill in the
// input's dtype; the ratio rounds to that dtype, as the CPU's.
__device__ __forceinline__ uint64_t ratio_key(const void* probs, int8_t code, int64_t e, uint64_t seed, uint64_t offset) {
  double ratio;
  if (code == kCodeFloat64) {
    const uint64_t word = uint64_t(e) * 2;  // two words per entry
    const px::Words r = px::draw(seed, offset + word / 4);
    const int w = int(word % 4);
    const double u = px::uniform53_open0(px::bits64(r.w[w], r.w[w + 1]));
    constexpr double kHalfEps = 0x1.0p-53;
    const double q = -(u >= 1.0 - kHalfEps ? -kHalfEps : ::log(u));
    ratio = static_cast<const double*>(probs)[e] / q;
  } else {
    const px::Words r = px::draw(seed, offset + uint64_t(e) / 4);
    const float u = px::uniform24_open0(r.w[e % 4]);
    const float half_eps = code == kCodeFloat16 ? 0x1.0p-11f : code == kCodeBFloat16 ? 0x1.0p-8f : 0x1.0p-24f;
    const float q = rounded(code, -(u >= 1.0f - half_eps ? -half_eps : logf(u)));
    ratio = double(rounded(code, load_prob<float>(probs, e, code) / q));
  }
  if (ratio != ratio) return ~uint64_t(0);
  if (ratio == 0) return 0;  // +0 and -0 alike
  return uint64_t(__double_as_longlong(ratio));  // ratio > 0: the bits grow with the value
}

// One sample per row: the first largest ratio (block reduction; one block per row).
__global__ void __launch_bounds__(kThreads) multinomial_argmax_kernel(const void* probs, int8_t code, int64_t rows, int64_t cats,
                                                                     int64_t* out, uint64_t seed, uint64_t offset) {
  __shared__ uint64_t keys[kThreads];
  __shared__ int64_t index[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    uint64_t best = 0;
    int64_t at = INT64_MAX;  // no entry yet: loses to every entry
    for (int64_t k = threadIdx.x; k < cats; k += kThreads) {
      const uint64_t key = ratio_key(probs, code, r * cats + k, seed, offset);
      if (at == INT64_MAX || key > best) {  // k grows: ties keep the first
        best = key;
        at = k;
      }
    }
    keys[threadIdx.x] = best;
    index[threadIdx.x] = at;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (int(threadIdx.x) < half) {
        const uint64_t ok = keys[threadIdx.x + half];
        const int64_t oi = index[threadIdx.x + half];
        if (ok > keys[threadIdx.x] || (ok == keys[threadIdx.x] && oi < index[threadIdx.x])) {
          keys[threadIdx.x] = ok;
          index[threadIdx.x] = oi;
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) out[r] = index[0];
    __syncthreads();  // keys/index are rewritten for the next row
  }
}

// Sort keys: the complement of ratio_key, so an ascending sort puts the largest ratio first.
__global__ void __launch_bounds__(kThreads) race_keys_kernel(const void* probs, int8_t code, int64_t n, uint64_t* keys,
                                                            int64_t* values, uint64_t seed, uint64_t offset) {
  const int64_t stride = int64_t(gridDim.x) * kThreads;
  for (int64_t e = int64_t(blockIdx.x) * kThreads + threadIdx.x; e < n; e += stride) {
    keys[e] = ~ratio_key(probs, code, e, seed, offset);
    values[e] = e;
  }
}
// After the sort by ratio: the row of each entry as the key of the second (stable) sort.
__global__ void __launch_bounds__(kThreads) race_rows_kernel(const int64_t* sorted, int64_t n, int64_t cats, uint64_t* keys,
                                                            int64_t* values) {
  const int64_t stride = int64_t(gridDim.x) * kThreads;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const int64_t e = sorted[i];
    keys[i] = uint64_t(e / cats);
    values[i] = e;
  }
}
// Row r's entries now fill [r * cats, (r + 1) * cats), largest ratio first: the first `samples`.
__global__ void __launch_bounds__(kThreads) race_take_kernel(const int64_t* sorted, int64_t rows, int64_t cats, int64_t samples,
                                                            int64_t* out) {
  const int64_t n = rows * samples, stride = int64_t(gridDim.x) * kThreads;
  for (int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const int64_t r = i / samples, j = i - r * samples;
    out[i] = sorted[r * cats + j] - r * cats;
  }
}

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : b > kMaxBlocks ? kMaxBlocks : b);
}
unsigned row_blocks(int64_t rows) { return unsigned(rows > kMaxBlocks ? kMaxBlocks : rows); }

void sort_pairs(const uint64_t* keys_in, uint64_t* keys_out, const int64_t* values_in, int64_t* values_out, int64_t n,
                int end_bit, void* temp, size_t temp_bytes, cudaStream_t stream) {
  EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, n, 0, end_bit, stream));
}

float half_epsilon(int8_t code) {
  switch (code) {
    case kCodeFloat16: return 0x1.0p-11f;  // 2^-10 / 2
    case kCodeBFloat16: return 0x1.0p-8f;  // 2^-7 / 2
    default: return 0x1.0p-24f;            // 2^-23 / 2
  }
}

int element_bytes(int8_t code) {
  switch (code) {
    case kCodeBool: case kCodeUInt8: case kCodeInt8: return 1;
    case kCodeInt16: case kCodeFloat16: case kCodeBFloat16: return 2;
    case kCodeInt32: case kCodeFloat32: return 4;
    default: return 8;
  }
}

// The bits of 1 in a real dtype.
uint64_t one_bits(int8_t code) {
  switch (code) {
    case kCodeFloat16: return 0x3C00u;
    case kCodeBFloat16: return 0x3F80u;
    case kCodeFloat32: return 0x3F800000u;
    case kCodeFloat64: return 0x3FF0000000000000ull;
    default: return 1u;  // bool and the integers
  }
}

}  // namespace

void launch_uniform(const RandomArgs& a, double from, double to) {
  if (a.dtype == kCodeFloat64) {
    fill(a, UniformDouble{reinterpret_cast<double*>(a.data), from, to, to - from});
  } else {
    const float lo = float(from), hi = float(to);
    fill(a, UniformFloat{a.data, a.dtype, lo, hi, hi - lo});
  }
}

void launch_normal(const RandomArgs& a, double mean, double std, bool log) {
  if (a.dtype == kCodeFloat64) fill(a, NormalDouble{reinterpret_cast<double*>(a.data), mean, std, log});
  else fill(a, NormalFloat{a.data, a.dtype, float(mean), float(std), log});
}

void launch_exponential(const RandomArgs& a, double lambd) {
  const double scale = -1.0 / lambd;
  if (a.dtype == kCodeFloat64) fill(a, ExponentialDouble{reinterpret_cast<double*>(a.data), scale});
  else fill(a, ExponentialFloat{a.data, a.dtype, float(scale), half_epsilon(a.dtype)});
}

void launch_bernoulli(const RandomArgs& a, double p) {
  fill(a, Bernoulli{a.data, element_bytes(a.dtype), one_bits(a.dtype), p});
}

void launch_random(const RandomArgs& a, int64_t from, uint64_t range, bool wide) {
  if (wide) fill(a, RandomWide{a.data, a.dtype, from, range});
  else fill(a, RandomNarrow{a.data, a.dtype, from, range});
}

size_t sort_pairs_temp_bytes(int64_t n, int end_bit) {
  size_t bytes = 0;
  EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const uint64_t*>(nullptr),
                                                   static_cast<uint64_t*>(nullptr), static_cast<const int64_t*>(nullptr),
                                                   static_cast<int64_t*>(nullptr), n, 0, end_bit));
  return bytes;
}

void launch_randperm(int64_t n, void* keys_in, void* keys_out, int64_t* values_in, int64_t* values_out, void* temp,
                     size_t temp_bytes, uint64_t seed, uint64_t offset, cudaStream_t stream) {
  if (n <= 0) return;
  RandomArgs a;
  a.n = n;
  a.seed = seed;
  a.offset = offset;
  a.stream = stream;
  fill(a, PermKeys{static_cast<uint64_t*>(keys_in), values_in});
  sort_pairs(static_cast<const uint64_t*>(keys_in), static_cast<uint64_t*>(keys_out), values_in, values_out, n, 64, temp,
             temp_bytes, stream);
}

void launch_multinomial_with_replacement(const MultinomialArgs& a, void* cum) {
  if (a.rows <= 0) return;
  RandomArgs r;
  r.n = a.rows * a.samples;
  r.seed = a.seed;
  r.offset = a.offset;
  r.stream = a.stream;
  if (a.dtype == kCodeFloat64) {
    multinomial_rows_kernel<double, true><<<row_blocks(a.rows), kThreads, 0, a.stream>>>(a.probs, a.dtype, a.rows, a.cats,
                                                                                          static_cast<double*>(cum), a.flag);
    EMBER_CUDA_CHECK_LAUNCH();
    fill(r, MultinomialSample<double>{static_cast<const double*>(cum), a.cats, a.samples, a.out});
  } else {
    multinomial_rows_kernel<float, true><<<row_blocks(a.rows), kThreads, 0, a.stream>>>(a.probs, a.dtype, a.rows, a.cats,
                                                                                        static_cast<float*>(cum), a.flag);
    EMBER_CUDA_CHECK_LAUNCH();
    fill(r, MultinomialSample<float>{static_cast<const float*>(cum), a.cats, a.samples, a.out});
  }
}

// The validation pass alone (no cumulative sums).
static void check_rows(const MultinomialArgs& a) {
  if (a.dtype == kCodeFloat64)
    multinomial_rows_kernel<double, false><<<row_blocks(a.rows), kThreads, 0, a.stream>>>(a.probs, a.dtype, a.rows, a.cats,
                                                                                           nullptr, a.flag);
  else
    multinomial_rows_kernel<float, false><<<row_blocks(a.rows), kThreads, 0, a.stream>>>(a.probs, a.dtype, a.rows, a.cats,
                                                                                         nullptr, a.flag);
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_multinomial_argmax(const MultinomialArgs& a) {
  if (a.rows <= 0) return;
  check_rows(a);
  multinomial_argmax_kernel<<<row_blocks(a.rows), kThreads, 0, a.stream>>>(a.probs, a.dtype, a.rows, a.cats, a.out, a.seed,
                                                                           a.offset);
  EMBER_CUDA_CHECK_LAUNCH();
}

void launch_multinomial_topk(const MultinomialArgs& a, void* keys_in, void* keys_out, int64_t* values_in,
                             int64_t* values_out, void* temp, size_t temp_bytes) {
  if (a.rows <= 0) return;
  check_rows(a);
  const int64_t n = a.rows * a.cats;
  auto* kin = static_cast<uint64_t*>(keys_in);
  auto* kout = static_cast<uint64_t*>(keys_out);
  race_keys_kernel<<<blocks_for(n), kThreads, 0, a.stream>>>(a.probs, a.dtype, n, kin, values_in, a.seed, a.offset);
  EMBER_CUDA_CHECK_LAUNCH();
  sort_pairs(kin, kout, values_in, values_out, n, 64, temp, temp_bytes, a.stream);
  if (a.rows > 1) {  // group by row, keeping the ratio order within each (the sort is stable)
    race_rows_kernel<<<blocks_for(n), kThreads, 0, a.stream>>>(values_out, n, a.cats, kin, values_in);
    EMBER_CUDA_CHECK_LAUNCH();
    sort_pairs(kin, kout, values_in, values_out, n, row_bits(a.rows), temp, temp_bytes, a.stream);
  }
  race_take_kernel<<<blocks_for(a.rows * a.samples), kThreads, 0, a.stream>>>(values_out, a.rows, a.cats, a.samples, a.out);
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace ember::cuda
