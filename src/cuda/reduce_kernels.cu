// CUDA launchers of the arithmetic reductions: sum, prod, mean, var (Welford), norm, any, all.
// Accumulators: float for float32/float16/bfloat16 input, double for float64, int64 for
// integers and bool (sum and prod of those give int64, as the CPU). The engine is
// reduce_engine.cuh; max/min/arg reductions are in reduce_extreme_kernels.cu.
#include <cuda/std/cmath>

#include "cuda/reduce_engine.cuh"

namespace ember::cuda {
namespace {

template <class T> using sum_acc_t = std::conditional_t<is_float_v<T>, compute_t<T>, int64_t>;
template <class T> using sum_out_t = std::conditional_t<is_float_v<T>, T, int64_t>;

template <class T> struct SumOp {
  using In = T;
  using Acc = sum_acc_t<T>;
  static constexpr bool kVectorColumns = is_float_v<T>;  // reduce_cols_vec_kernel (bias gradients)
  sum_out_t<T>* out;
  __device__ Acc init() const { return Acc(0); }
  __device__ Acc reduce(Acc a, In v, int64_t) const { return a + convert<Acc>(v); }
  __device__ Acc combine(Acc a, Acc b) const { return a + b; }
  __device__ void store(int64_t o, Acc a) const { out[o] = convert<sum_out_t<T>>(a); }
};

template <class T> struct ProdOp {
  using In = T;
  using Acc = sum_acc_t<T>;
  sum_out_t<T>* out;
  __device__ Acc init() const { return Acc(1); }
  __device__ Acc reduce(Acc a, In v, int64_t) const { return a * convert<Acc>(v); }
  __device__ Acc combine(Acc a, Acc b) const { return a * b; }
  __device__ void store(int64_t o, Acc a) const { out[o] = convert<sum_out_t<T>>(a); }
};

// The sum times 1/n (NaN for an empty reduction, as the CPU).
template <class T> struct MeanOp {
  using In = T;
  using Acc = compute_t<T>;
  static constexpr bool kVectorColumns = true;
  T* out;
  Acc scale;
  __device__ Acc init() const { return Acc(0); }
  __device__ Acc reduce(Acc a, In v, int64_t) const { return a + convert<Acc>(v); }
  __device__ Acc combine(Acc a, Acc b) const { return a + b; }
  __device__ void store(int64_t o, Acc a) const { out[o] = convert<T>(a * scale); }
};

// Welford's running (count, mean, sum of squared deviations), merged by Chan's formula; the
// variance divides by max(0, n - correction) (0 / 0 gives NaN, as the CPU's two-pass formula).
template <class C> struct WelfordState {
  C mean, m2;
  int64_t n;
};
template <class T> struct VarOp {
  using In = T;
  using C = compute_t<T>;
  using Acc = WelfordState<C>;
  T* out;
  int64_t correction;
  __device__ Acc init() const { return {C(0), C(0), 0}; }
  __device__ Acc reduce(Acc a, In v, int64_t) const {
    const C x = convert<C>(v);
    a.n += 1;
    const C d = x - a.mean;
    a.mean += d / C(a.n);
    a.m2 += d * (x - a.mean);
    return a;
  }
  __device__ Acc combine(Acc a, Acc b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const int64_t n = a.n + b.n;
    const C d = b.mean - a.mean;
    const C wb = C(b.n) / C(n);
    return {a.mean + d * wb, a.m2 + b.m2 + d * d * C(a.n) * wb, n};
  }
  __device__ void store(int64_t o, Acc a) const {
    const int64_t denom = a.n - correction > 0 ? a.n - correction : 0;
    out[o] = convert<T>(a.m2 / C(denom));
  }
};

// Vector norms, computed as the CPU's (p = 0 counts nonzeros, NaN counted; +-inf take the
// NaN-propagating max / min of |x|); the kind is uniform across the launch.
template <class T> struct NormOp {
  using In = T;
  using Acc = compute_t<T>;
  T* out;
  int kind;
  Acc p;
  __device__ Acc init() const { return kind == kNormNegInf ? ::cuda::std::numeric_limits<Acc>::infinity() : Acc(0); }
  __device__ Acc reduce(Acc a, In v, int64_t) const {
    const Acc x = convert<Acc>(v);
    const Acc ax = ::cuda::std::fabs(x);
    switch (kind) {
      case kNormL0: return a + (x != Acc(0) ? Acc(1) : Acc(0));
      case kNormL1: return a + ax;
      case kNormL2: return a + ax * ax;
      case kNormInf: return pick<true>(a, ax);
      case kNormNegInf: return pick<false>(a, ax);
      default: return a + ::cuda::std::pow(ax, p);
    }
  }
  __device__ Acc combine(Acc a, Acc b) const {
    if (kind == kNormInf) return pick<true>(a, b);
    if (kind == kNormNegInf) return pick<false>(a, b);
    return a + b;
  }
  __device__ void store(int64_t o, Acc a) const {
    if (kind == kNormL2) a = ::cuda::std::sqrt(a);
    else if (kind == kNormP) a = ::cuda::std::pow(a, Acc(1) / p);
    out[o] = convert<T>(a);
  }
};

// any / all read an element as unsigned bits of its size: nonzero when a bit under `mask` is
// set (floats mask off the sign bit, so -0.0 is zero and NaN nonzero). Output bytes are 0 or 1,
// valid both as bool and as uint8.
template <class U, bool kAny> struct AnyAllOp {
  using In = U;
  using Acc = int;
  uint8_t* out;
  U mask;
  __device__ Acc init() const { return kAny ? 0 : 1; }
  __device__ Acc reduce(Acc a, In v, int64_t) const {
    const int nz = (v & mask) != 0;
    return kAny ? (a | nz) : (a & nz);
  }
  __device__ Acc combine(Acc a, Acc b) const { return kAny ? (a | b) : (a & b); }
  __device__ void store(int64_t o, Acc a) const { out[o] = uint8_t(a); }
};

template <bool kAny> void any_all(const ReduceLaunch& L) {
  const char* name = kAny ? "any_cuda" : "all_cuda";
  switch (L.in_code) {
    case kCodeBool:
    case kCodeUInt8:
    case kCodeInt8: return reduce_engine::run(L, AnyAllOp<uint8_t, kAny>{static_cast<uint8_t*>(L.out), 0xffu});
    case kCodeInt16: return reduce_engine::run(L, AnyAllOp<uint16_t, kAny>{static_cast<uint8_t*>(L.out), 0xffffu});
    case kCodeFloat16:
    case kCodeBFloat16: return reduce_engine::run(L, AnyAllOp<uint16_t, kAny>{static_cast<uint8_t*>(L.out), 0x7fffu});
    case kCodeInt32: return reduce_engine::run(L, AnyAllOp<uint32_t, kAny>{static_cast<uint8_t*>(L.out), 0xffffffffu});
    case kCodeFloat32: return reduce_engine::run(L, AnyAllOp<uint32_t, kAny>{static_cast<uint8_t*>(L.out), 0x7fffffffu});
    case kCodeInt64:
      return reduce_engine::run(L, AnyAllOp<uint64_t, kAny>{static_cast<uint8_t*>(L.out), ~uint64_t(0)});
    case kCodeFloat64:
      return reduce_engine::run(L, AnyAllOp<uint64_t, kAny>{static_cast<uint8_t*>(L.out), ~uint64_t(0) >> 1});
    default: throw_dtype_not_implemented(name, L.in_code);
  }
}

}  // namespace

void launch_sum(const ReduceLaunch& L) {
  visit_storage<kStoreAll>(L.in_code, "sum_cuda", [&]<class T>() {
    reduce_engine::run(L, SumOp<T>{static_cast<sum_out_t<T>*>(L.out)});
  });
}
void launch_prod(const ReduceLaunch& L) {
  visit_storage<kStoreAll>(L.in_code, "prod_cuda", [&]<class T>() {
    reduce_engine::run(L, ProdOp<T>{static_cast<sum_out_t<T>*>(L.out)});
  });
}
void launch_mean(const ReduceLaunch& L) {
  visit_storage<kStoreFloat>(L.in_code, "mean_cuda", [&]<class T>() {
    reduce_engine::run(L, MeanOp<T>{static_cast<T*>(L.out), compute_t<T>(L.param)});
  });
}
void launch_var(const ReduceLaunch& L) {
  visit_storage<kStoreFloat>(L.in_code, "var_cuda", [&]<class T>() {
    reduce_engine::run(L, VarOp<T>{static_cast<T*>(L.out), int64_t(L.param)});
  });
}
void launch_norm(const ReduceLaunch& L) {
  visit_storage<kStoreFloat>(L.in_code, "norm_cuda", [&]<class T>() {
    reduce_engine::run(L, NormOp<T>{static_cast<T*>(L.out), L.kind, compute_t<T>(L.param)});
  });
}
void launch_any(const ReduceLaunch& L) { any_all<true>(L); }
void launch_all(const ReduceLaunch& L) { any_all<false>(L); }

}  // namespace ember::cuda
