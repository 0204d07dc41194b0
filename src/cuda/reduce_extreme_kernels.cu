// CUDA launchers of the selecting reductions: amax/amin (NaN propagates) and the (value,
// index) ones behind max_dim/min_dim/argmax/argmin. The index is the first position of the
// extreme; a NaN beats every number and the first NaN the later ones, as the CPU kernel.
// float16/bfloat16 compare in float (exact) and store their own type. Engine: reduce_engine.cuh.
#include "cuda/reduce_engine.cuh"

namespace ember::cuda {
namespace {

template <class T, bool kMax> struct ExtremeOp {
  using In = T;
  using Acc = compute_t<T>;
  T* out;
  __device__ Acc init() const { return pick_identity<kMax, Acc>(); }
  __device__ Acc reduce(Acc a, In v, int64_t) const { return pick<kMax>(a, convert<Acc>(v)); }
  __device__ Acc combine(Acc a, Acc b) const { return pick<kMax>(a, b); }
  __device__ void store(int64_t o, Acc a) const { out[o] = convert<T>(a); }
};

template <class C> struct ValueIndex {
  C v;
  int64_t i;  // -1: nothing seen yet
};

// x beats y: larger (smaller), or NaN over a number.
template <bool kMax, class C> __device__ __forceinline__ bool better(C x, C y) {
  if (is_nan(x)) return !is_nan(y);
  return kMax ? x > y : x < y;
}

template <class T, bool kMax> struct ArgOp {
  using In = T;
  using C = compute_t<T>;
  using Acc = ValueIndex<C>;
  T* values;  // null for argmax/argmin
  int64_t* indices;
  __device__ Acc init() const { return {pick_identity<kMax, C>(), -1}; }
  __device__ Acc reduce(Acc a, In v, int64_t r) const {
    const C x = convert<C>(v);
    return (a.i < 0 || better<kMax>(x, a.v)) ? Acc{x, r} : a;
  }
  __device__ Acc combine(Acc a, Acc b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    if (better<kMax>(b.v, a.v)) return b;
    if (better<kMax>(a.v, b.v)) return a;
    return b.i < a.i ? b : a;
  }
  __device__ void store(int64_t o, Acc a) const {
    if (values) values[o] = convert<T>(a.v);
    indices[o] = a.i;
  }
};

}  // namespace

void launch_amax(const ReduceLaunch& L) {
  visit_storage<kStoreAll>(L.in_code, "max_cuda", [&]<class T>() {
    reduce_engine::run(L, ExtremeOp<T, true>{static_cast<T*>(L.out)});
  });
}
void launch_amin(const ReduceLaunch& L) {
  visit_storage<kStoreAll>(L.in_code, "min_cuda", [&]<class T>() {
    reduce_engine::run(L, ExtremeOp<T, false>{static_cast<T*>(L.out)});
  });
}
void launch_max_arg(const ReduceLaunch& L) {
  visit_storage<kStoreAll>(L.in_code, L.out ? "max_cuda" : "argmax_cuda", [&]<class T>() {
    reduce_engine::run(L, ArgOp<T, true>{static_cast<T*>(L.out), L.indices});
  });
}
void launch_min_arg(const ReduceLaunch& L) {
  visit_storage<kStoreAll>(L.in_code, L.out ? "min_cuda" : "argmin_cuda", [&]<class T>() {
    reduce_engine::run(L, ArgOp<T, false>{static_cast<T*>(L.out), L.indices});
  });
}

}  // namespace ember::cuda
