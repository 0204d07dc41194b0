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
// float16/bfloat16 compute in float32 (inputs cast up, the result cast back on finish), so a
// kernel is instantiated only for the compute types.
#include <optional>
#include <vector>

#include "core/dtype_dispatch.h"
#include "ops/elementwise_plan.h"
#include "ops/promotion.h"
#include "core/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu {

class TensorIter : public ElementwisePlan {
 public:
  TensorIter(std::vector<Tensor> outputs, std::vector<Tensor> inputs, const IterConfig& cfg)
      : ElementwisePlan(std::move(outputs), std::move(inputs), cfg) {}

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
    std::tuple<const typename T::template arg<I>* __restrict...> in{
        reinterpret_cast<const typename T::template arg<I>*>(data[I + 1])...};
    for (int64_t k = 0; k < n; ++k) out[k] = f(std::get<I>(in)[k]...);
    return;
  }
  // One input broadcast (stride 0) against a dense other: common for tensor-op-scalar.
  if constexpr (N == 2) {
    using A0 = typename T::template arg<0>;
    using A1 = typename T::template arg<1>;
    if (strides[0] == int64_t(sizeof(R)) && strides[1] == int64_t(sizeof(A0)) && strides[2] == 0) {
      R* __restrict out = reinterpret_cast<R*>(data[0]);
      const A0* __restrict a = reinterpret_cast<const A0*>(data[1]);
      const A1 b = *reinterpret_cast<const A1*>(data[2]);
      for (int64_t k = 0; k < n; ++k) out[k] = f(a[k], b);
      return;
    }
    if (strides[0] == int64_t(sizeof(R)) && strides[1] == 0 && strides[2] == int64_t(sizeof(A1))) {
      R* __restrict out = reinterpret_cast<R*>(data[0]);
      const A0 a = *reinterpret_cast<const A0*>(data[1]);
      const A1* __restrict b = reinterpret_cast<const A1*>(data[2]);
      for (int64_t k = 0; k < n; ++k) out[k] = f(a, b[k]);
      return;
    }
  }
  for (int64_t k = 0; k < n; ++k) {
    *reinterpret_cast<R*>(data[0] + k * strides[0]) =
        f(*reinterpret_cast<const typename T::template arg<I>*>(data[I + 1] + k * strides[I + 1])...);
  }
}
}  // namespace detail

template <class F> void cpu_kernel(TensorIter& it, const F& f, int64_t grain = kGrainSize) {
  constexpr int N = lambda_traits<F>::arity;
  it.for_each([&](char** data, const int64_t* strides, int64_t n) {
    detail::kernel_loop(data, strides, n, f, std::make_index_sequence<N>{});
  }, grain);
}

}  // namespace ember::cpu
