#pragma once
// visit_dtype<Set>(dtype, "op", []<class T>() {...}) calls the lambda with the C++ type of
// dtype, instantiating it only for the dtypes in Set: the one dtype switch of the code base.
#include <cstdint>

#include "ember/core/device.h"
#include "ember/core/dtype.h"
#include "ember/core/errors.h"

namespace ember {

constexpr uint32_t bit(DType t) { return 1u << int(t); }
inline constexpr uint32_t kFloatTypes = bit(DType::Float32) | bit(DType::Float64);
inline constexpr uint32_t kReducedFloatTypes = bit(DType::Float16) | bit(DType::BFloat16);
inline constexpr uint32_t kIntTypes = bit(DType::UInt8) | bit(DType::Int8) | bit(DType::Int16) |
                                      bit(DType::Int32) | bit(DType::Int64);
inline constexpr uint32_t kNumericTypes = kFloatTypes | kIntTypes;       // compute types
inline constexpr uint32_t kNumericAndBool = kNumericTypes | bit(DType::Bool);
inline constexpr uint32_t kIntAndBool = kIntTypes | bit(DType::Bool);
inline constexpr uint32_t kAllTypes = kNumericAndBool | kReducedFloatTypes;  // real storage types
inline constexpr uint32_t kComplexTypes = bit(DType::Complex64) | bit(DType::Complex128);
inline constexpr uint32_t kFloatAndComplex = kFloatTypes | kComplexTypes;
inline constexpr uint32_t kAllAndComplex = kAllTypes | kComplexTypes;  // every storage type

[[noreturn]] void throw_dtype_not_implemented(const char* op, DType t);

// torch names a kernel after its backend in these errors ("hypot_cpu", "hypot_cuda"): the suffix
// for a composite that checks dtypes before any backend kernel runs.
inline const char* backend_kernel_suffix(Device d) { return d.is_cuda() ? "_cuda" : "_cpu"; }

template <uint32_t Set, class F> decltype(auto) visit_dtype(DType t, const char* op, F&& f) {
#define EMBER_VISIT_CASE(DT, CT) \
  case DType::DT: if constexpr ((Set & bit(DType::DT)) != 0) return f.template operator()<CT>(); break;
  switch (t) {
    EMBER_VISIT_CASE(Bool, bool)
    EMBER_VISIT_CASE(UInt8, uint8_t)
    EMBER_VISIT_CASE(Int8, int8_t)
    EMBER_VISIT_CASE(Int16, int16_t)
    EMBER_VISIT_CASE(Int32, int32_t)
    EMBER_VISIT_CASE(Int64, int64_t)
    EMBER_VISIT_CASE(Float16, Half)
    EMBER_VISIT_CASE(BFloat16, BFloat16)
    EMBER_VISIT_CASE(Float32, float)
    EMBER_VISIT_CASE(Float64, double)
    EMBER_VISIT_CASE(Complex64, complex64)
    EMBER_VISIT_CASE(Complex128, complex128)
  }
#undef EMBER_VISIT_CASE
  throw_dtype_not_implemented(op, t);
}

}  // namespace ember
