#include "distributed/reduce_functions.h"

#include <algorithm>
#include <complex>
#include <cstdint>

#include "ember/core/errors.h"
#include "ember/core/half.h"

namespace ember::distributed {
namespace {

template <class T, class Acc, class F> ReduceFunction make(F f) {
  return [f](void* out, const void* a, const void* b, size_t n) {
    T* o = static_cast<T*>(out);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    for (size_t i = 0; i < n; ++i) o[i] = T(f(Acc(x[i]), Acc(y[i])));
  };
}

template <class T, class Acc> ReduceFunction for_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:  // summed here, divided by the group's size afterwards
      return make<T, Acc>([](Acc a, Acc b) { return a + b; });
    case ReduceOp::PRODUCT:
      return make<T, Acc>([](Acc a, Acc b) { return a * b; });
    case ReduceOp::MIN:
      if constexpr (requires(Acc a) { a < a; })
        return make<T, Acc>([](Acc a, Acc b) { return b < a ? b : a; });
      break;
    case ReduceOp::MAX:
      if constexpr (requires(Acc a) { a < a; })
        return make<T, Acc>([](Acc a, Acc b) { return a < b ? b : a; });
      break;
  }
  throw TypeError("reduce: this ReduceOp has no meaning for the dtype");
}

}  // namespace

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return "SUM";
    case ReduceOp::AVG: return "AVG";
    case ReduceOp::PRODUCT: return "PRODUCT";
    case ReduceOp::MIN: return "MIN";
    case ReduceOp::MAX: return "MAX";
  }
  return "?";
}

bool reduce_supported(DType dtype, ReduceOp op) {
  if (op == ReduceOp::AVG) return is_floating_or_complex(dtype);
  if (is_complex(dtype)) return op == ReduceOp::SUM || op == ReduceOp::PRODUCT;
  return true;
}

ReduceFunction reduce_function(DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::Bool:  // SUM/MAX: or; PRODUCT/MIN: and (as torch's Gloo backend)
      if (op == ReduceOp::PRODUCT || op == ReduceOp::MIN) return make<bool, bool>([](bool a, bool b) { return a && b; });
      return make<bool, bool>([](bool a, bool b) { return a || b; });
    case DType::UInt8: return for_op<uint8_t, uint8_t>(op);
    case DType::Int8: return for_op<int8_t, int8_t>(op);
    case DType::Int16: return for_op<int16_t, int16_t>(op);
    case DType::Int32: return for_op<int32_t, int32_t>(op);
    case DType::Int64: return for_op<int64_t, int64_t>(op);
    case DType::Float16: return for_op<Half, float>(op);
    case DType::BFloat16: return for_op<BFloat16, float>(op);
    case DType::Float32: return for_op<float, float>(op);
    case DType::Float64: return for_op<double, double>(op);
    case DType::Complex64: return for_op<std::complex<float>, std::complex<float>>(op);
    case DType::Complex128: return for_op<std::complex<double>, std::complex<double>>(op);
  }
  throw TypeError("reduce: unknown dtype");
}

}  // namespace ember::distributed
