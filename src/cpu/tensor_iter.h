#pragma once
// TensorIter: the CPU elementwise engine. Its plan (ops/elementwise_plan.h, shared with other
// backends) broadcasts operands to one shape, picks the dtype the op computes in (PyTorch's
// promotion, wrapped numbers included), casts inputs to it, allocates or checks the output and
// merges dimensions that can be walked as one; TensorIter runs a loop over inner runs, split
// across threads:
//
//   auto it = TensorIter::binary_op(out, a, b, {.op_name = "add"});
//   visit_dtype<kNumericTypes>(it.compute_dtype(), "add", [&]<class T>() {
//     cpu_kernel(it, [](T x, T y) { return x + y; });
//   });
//   return it.output();
//
// float16/bfloat16 compute in float32, so a kernel is instantiated only for the compute types:
// cpu_kernel reads such operands in blocks converted to float32 and converts each block of
// results back (no whole-tensor cast passes or staged outputs; other dtype changes, e.g. an
// integer input of a float op, are still cast beforehand).
#include <array>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/dtype_dispatch.h"
#include "ops/elementwise_plan.h"
#include "ops/promotion.h"
#include "core/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {

class TensorIter : public ElementwisePlan {
 public:
  TensorIter(std::vector<Tensor> outputs, std::vector<Tensor> inputs, IterConfig cfg)
      : ElementwisePlan(std::move(outputs), std::move(inputs), with_reduced_in_loop(cfg)) {}

  static TensorIter unary_op(const Tensor& out, const Tensor& a, IterConfig cfg) {
    return TensorIter({out}, {a}, cfg);
  }
  static TensorIter binary_op(const Tensor& out, const Tensor& a, const Tensor& b, IterConfig cfg) {
    return TensorIter({out}, {a, b}, cfg);
  }

  // Runs loop(char** data, const int64_t* strides, int64_t n) over every inner run, then
  // writes results computed in a temporary dtype back into the real outputs.
  template <class Loop> void for_each(const Loop& loop, int64_t grain = kGrainSize);
  // Like for_each, single-threaded (for kernels with sequential state, e.g. RNG).
  template <class Loop> void serial_for_each(const Loop& loop) { run_range(loop, 0, numel_); finish(); }

 private:
  template <class Loop> void run_range(const Loop& loop, int64_t begin, int64_t end) const;
  static IterConfig with_reduced_in_loop(IterConfig cfg) {
    cfg.reduced_in_loop = true;
    return cfg;
  }
};

template <class Loop>
void TensorIter::run_range(const Loop& loop, int64_t begin, int64_t end) const {
  char* data[kMaxIterOperands];
  int64_t inner_strides[kMaxIterOperands];
  if (contiguous_) {
    for (int i = 0; i < ntensors_; ++i) {
      inner_strides[i] = element_size(ops_[i].dtype);
      data[i] = ops_[i].data + begin * inner_strides[i];
    }
    loop(data, inner_strides, end - begin);
    return;
  }
  if (ndim_ == 0) {  // a single element
    for (int i = 0; i < ntensors_; ++i) { data[i] = ops_[i].data; inner_strides[i] = 0; }
    loop(data, inner_strides, 1);
    return;
  }
  for (int i = 0; i < ntensors_; ++i) inner_strides[i] = ops_[i].strides[0];
  const int64_t inner = iter_shape_[0];
  int64_t counter[16];
  // Decompose begin into a multi-index and the matching pointers; then walk run by run,
  // updating pointers incrementally (O(1) per run, not O(ndim)).
  int64_t linear = begin;
  for (int d = 0; d < ndim_; ++d) { counter[d] = linear % iter_shape_[d]; linear /= iter_shape_[d]; }
  for (int i = 0; i < ntensors_; ++i) {
    int64_t off = 0;
    for (int d = 0; d < ndim_; ++d) off += counter[d] * ops_[i].strides[d];
    data[i] = ops_[i].data + off;
  }
  int64_t pos = begin;
  while (pos < end) {
    int64_t n = std::min(inner - counter[0], end - pos);
    loop(data, inner_strides, n);
    pos += n;
    counter[0] += n;
    for (int i = 0; i < ntensors_; ++i) data[i] += n * ops_[i].strides[0];
    for (int d = 0; d < ndim_ - 1 && counter[d] >= iter_shape_[d]; ++d) {
      for (int i = 0; i < ntensors_; ++i)
        data[i] += ops_[i].strides[d + 1] - counter[d] * ops_[i].strides[d];
      counter[d] = 0;
      ++counter[d + 1];
    }
  }
}

template <class Loop> void TensorIter::for_each(const Loop& loop, int64_t grain) {
  if (numel_ > 0) parallel_for(0, numel_, grain, [&](int64_t b, int64_t e) { run_range(loop, b, e); });
  finish();
}

// Applies op elementwise: out = op(in0, in1, ...). Types come from the lambda's signature and
// must match the iterator's operand dtypes. Dense runs take a loop the compiler vectorises.
template <class F> struct lambda_traits : lambda_traits<decltype(&F::operator())> {};
template <class C, class R, class... A> struct lambda_traits<R (C::*)(A...) const> {
  using result = R;
  static constexpr int arity = sizeof...(A);
  template <int I> using arg = std::tuple_element_t<I, std::tuple<A...>>;
};

namespace detail {
// bool operands are read through their bytes: GCC (12-14) vectorises no loop that loads a bool
// (a bool -> float32 cast of 800K elements took 437 us, the same from uint8_t with != 0 about
// 40), so a kernel's bool argument is loaded as uint8_t and handed over as `byte != 0`.
template <class A> using stored_t = std::conditional_t<std::is_same_v<A, bool>, uint8_t, A>;
template <class A> inline A as_arg(stored_t<A> v) {
  if constexpr (std::is_same_v<A, bool>) return v != 0;
  else return v;
}

template <class F, size_t... I>
inline void kernel_loop(char** data, const int64_t* strides, int64_t n, const F& f,
                        std::index_sequence<I...>) {
  using T = lambda_traits<F>;
  using R = typename T::result;
  constexpr int N = T::arity;
  bool dense = strides[0] == int64_t(sizeof(R)) &&
               ((strides[I + 1] == int64_t(sizeof(typename T::template arg<I>))) && ...);
  if (dense) {
    R* __restrict out = reinterpret_cast<R*>(data[0]);
    std::tuple<const stored_t<typename T::template arg<I>>* __restrict...> in{
        reinterpret_cast<const stored_t<typename T::template arg<I>>*>(data[I + 1])...};
    for (int64_t k = 0; k < n; ++k) out[k] = f(as_arg<typename T::template arg<I>>(std::get<I>(in)[k])...);
    return;
  }
  // One input broadcast (stride 0) against a dense other: common for tensor-op-scalar.
  if constexpr (N == 2) {
    using A0 = typename T::template arg<0>;
    using A1 = typename T::template arg<1>;
    if (strides[0] == int64_t(sizeof(R)) && strides[1] == int64_t(sizeof(A0)) && strides[2] == 0) {
      R* __restrict out = reinterpret_cast<R*>(data[0]);
      const stored_t<A0>* __restrict a = reinterpret_cast<const stored_t<A0>*>(data[1]);
      const A1 b = as_arg<A1>(*reinterpret_cast<const stored_t<A1>*>(data[2]));
      for (int64_t k = 0; k < n; ++k) out[k] = f(as_arg<A0>(a[k]), b);
      return;
    }
    if (strides[0] == int64_t(sizeof(R)) && strides[1] == 0 && strides[2] == int64_t(sizeof(A1))) {
      R* __restrict out = reinterpret_cast<R*>(data[0]);
      const A0 a = as_arg<A0>(*reinterpret_cast<const stored_t<A0>*>(data[1]));
      const stored_t<A1>* __restrict b = reinterpret_cast<const stored_t<A1>*>(data[2]);
      for (int64_t k = 0; k < n; ++k) out[k] = f(a, as_arg<A1>(b[k]));
      return;
    }
  }
  for (int64_t k = 0; k < n; ++k) {
    *reinterpret_cast<R*>(data[0] + k * strides[0]) = f(as_arg<typename T::template arg<I>>(
        *reinterpret_cast<const stored_t<typename T::template arg<I>>*>(data[I + 1] + k * strides[I + 1]))...);
  }
}
}  // namespace detail

namespace detail {
// Blocks for operands stored as float16/bfloat16 while the kernel computes in float32.
inline constexpr int64_t kConvertBlock = 256;

// Whether an operand stored as dt reaches a kernel argument of type T through a conversion: a
// float16/bfloat16 operand of a float32 kernel. Every other operand is read as T as it is (some
// kernels read by element size on purpose, e.g. where's uint16_t/uint32_t/uint64_t moves).
template <class T> bool converts(DType dt) { return std::is_same_v<T, float> && is_reduced_float(dt); }

// n values of operand storage type `dt` as T: the operand itself when it is dense T, else a
// converted (or gathered) copy in buf.
template <class T>
const T* load_block(DType dt, const char* src, int64_t stride, int64_t n, T* buf) {
  if (!converts<T>(dt)) {
    if (stride == int64_t(sizeof(T))) return reinterpret_cast<const T*>(src);
    for (int64_t k = 0; k < n; ++k) buf[k] = *reinterpret_cast<const T*>(src + k * stride);
    return buf;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (dt == DType::BFloat16) {
      if (stride == 2) {
        const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
        for (int64_t k = 0; k < n; ++k) buf[k] = ember::detail::bits_f32(uint32_t(s[k]) << 16);
      } else {
        for (int64_t k = 0; k < n; ++k) buf[k] = float(*reinterpret_cast<const BFloat16*>(src + k * stride));
      }
      return buf;
    }
    for (int64_t k = 0; k < n; ++k) buf[k] = float(*reinterpret_cast<const Half*>(src + k * stride));
  }
  return buf;
}

// Writes n results to an operand of storage type `dt` (float32 results into float16/bfloat16).
template <class T> void store_block(DType dt, char* dst, int64_t stride, int64_t n, const T* vals) {
  if (!converts<T>(dt)) {
    for (int64_t k = 0; k < n; ++k) *reinterpret_cast<T*>(dst + k * stride) = vals[k];
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (dt == DType::BFloat16) {
      if (stride == 2) {
        // BFloat16(float)'s rounding, branch-free so the loop vectorises: nearest even, NaN -> 0x7fc0.
        uint16_t* d = reinterpret_cast<uint16_t*>(dst);
        for (int64_t k = 0; k < n; ++k) {
          uint32_t u = ember::detail::f32_bits(vals[k]);
          uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
          d[k] = uint16_t((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : rounded);
        }
      } else {
        for (int64_t k = 0; k < n; ++k) *reinterpret_cast<BFloat16*>(dst + k * stride) = BFloat16(vals[k]);
      }
      return;
    }
    for (int64_t k = 0; k < n; ++k) *reinterpret_cast<Half*>(dst + k * stride) = Half(vals[k]);
  }
}

template <class F, size_t... I>
void kernel_loop_converting(char** data, const int64_t* strides, int64_t n, const F& f, const DType* dtypes,
                            std::index_sequence<I...>) {
  using Tr = lambda_traits<F>;
  using R = typename Tr::result;
  std::tuple<std::array<typename Tr::template arg<I>, kConvertBlock>...> bufs;
  std::array<R, kConvertBlock> results;
  const bool direct_out = !converts<R>(dtypes[0]) && strides[0] == int64_t(sizeof(R));
  for (int64_t k0 = 0; k0 < n; k0 += kConvertBlock) {
    const int64_t nb = std::min(kConvertBlock, n - k0);
    std::tuple<const typename Tr::template arg<I>*...> in{load_block<typename Tr::template arg<I>>(
        dtypes[I + 1], data[I + 1] + k0 * strides[I + 1], strides[I + 1], nb, std::get<I>(bufs).data())...};
    R* out = direct_out ? reinterpret_cast<R*>(data[0] + k0 * strides[0]) : results.data();
    for (int64_t k = 0; k < nb; ++k) out[k] = f(std::get<I>(in)[k]...);
    if (!direct_out) store_block<R>(dtypes[0], data[0] + k0 * strides[0], strides[0], nb, results.data());
  }
}

template <class F, size_t... I>
bool any_converts(const TensorIter& it, std::index_sequence<I...>) {
  using Tr = lambda_traits<F>;
  return converts<typename Tr::result>(it.dtype(0)) || (converts<typename Tr::template arg<I>>(it.dtype(I + 1)) || ...);
}
}  // namespace detail

template <class F> void cpu_kernel(TensorIter& it, const F& f, int64_t grain = kGrainSize) {
  constexpr int N = lambda_traits<F>::arity;
  if (!detail::any_converts<F>(it, std::make_index_sequence<N>{})) {
    it.for_each([&](char** data, const int64_t* strides, int64_t n) {
      detail::kernel_loop(data, strides, n, f, std::make_index_sequence<N>{});
    }, grain);
    return;
  }
  DType dtypes[N + 1];
  for (int i = 0; i <= N; ++i) dtypes[i] = it.dtype(i);
  it.for_each([&](char** data, const int64_t* strides, int64_t n) {
    detail::kernel_loop_converting(data, strides, n, f, dtypes, std::make_index_sequence<N>{});
  }, grain);
}

}  // namespace ember::cpu
