#pragma once
// Element types and PyTorch's type-promotion lattice.
#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ember/core/half.h"

namespace ember {

enum class DType : int8_t {
  Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64,
  Complex64, Complex128,  // std::complex<float>/<double>: (real, imag) pairs, as torch stores them
};
inline constexpr int kNumDTypes = 12;

using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

inline constexpr DType kBool = DType::Bool, kUInt8 = DType::UInt8, kByte = DType::UInt8,
                       kInt8 = DType::Int8, kChar = DType::Int8, kInt16 = DType::Int16,
                       kShort = DType::Int16, kInt32 = DType::Int32, kInt = DType::Int32,
                       kInt64 = DType::Int64, kLong = DType::Int64, kFloat16 = DType::Float16,
                       kHalf = DType::Float16, kBFloat16 = DType::BFloat16,
                       kFloat32 = DType::Float32, kFloat = DType::Float32,
                       kFloat64 = DType::Float64, kDouble = DType::Float64,
                       kComplex64 = DType::Complex64, kComplexFloat = DType::Complex64,
                       kComplex128 = DType::Complex128, kComplexDouble = DType::Complex128;

constexpr int64_t element_size(DType t) {
  switch (t) {
    case DType::Bool: case DType::UInt8: case DType::Int8: return 1;
    case DType::Int16: case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int32: case DType::Float32: return 4;
    case DType::Int64: case DType::Float64: case DType::Complex64: return 8;
    case DType::Complex128: return 16;
  }
  return 0;
}
constexpr bool is_floating(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
constexpr bool is_complex(DType t) { return t == DType::Complex64 || t == DType::Complex128; }
// Floating or complex: the dtypes autograd differentiates (torch's is_differentiable_type).
constexpr bool is_floating_or_complex(DType t) { return is_floating(t) || is_complex(t); }
constexpr bool is_integral(DType t, bool include_bool) {
  return include_bool ? !is_floating_or_complex(t) : (!is_floating_or_complex(t) && t != DType::Bool);
}
// complex64 <-> float32, complex128 <-> float64 (the dtype of .real/.imag and of abs()).
constexpr DType complex_to_real(DType t) {
  return t == DType::Complex64 ? DType::Float32 : t == DType::Complex128 ? DType::Float64 : t;
}
// The complex dtype whose parts are t (float16/bfloat16/float32 -> complex64).
constexpr DType real_to_complex(DType t) {
  return t == DType::Float64 || t == DType::Complex128 ? DType::Complex128 : DType::Complex64;
}
constexpr bool is_reduced_float(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// "float32" as PyTorch names it after "torch.".
const char* dtype_name(DType t);
// The C++ type names PyTorch prints in some messages and in profiler traces ("float",
// "c10::Half", "long int"; caffe2's TypeMeta names).
const char* torch_cpp_type_name(DType t);
// The name PyTorch's C++ side uses in messages ("Float", "Long", "Bool"): '"op" not implemented
// for 'Long''.
const char* scalar_type_name(DType t);
std::string to_string(DType t);

// PyTorch's promote_types table (torch.promote_types).
DType promote_types(DType a, DType b);

// The dtype new floating tensors get (torch.get_default_dtype()).
DType default_dtype();
void set_default_dtype(DType t);

// C++ type <-> DType.
template <class T> struct CppTypeToDType;
template <> struct CppTypeToDType<bool> { static constexpr DType value = DType::Bool; };
template <> struct CppTypeToDType<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct CppTypeToDType<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct CppTypeToDType<int16_t> { static constexpr DType value = DType::Int16; };
template <> struct CppTypeToDType<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct CppTypeToDType<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct CppTypeToDType<Half> { static constexpr DType value = DType::Float16; };
template <> struct CppTypeToDType<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct CppTypeToDType<float> { static constexpr DType value = DType::Float32; };
template <> struct CppTypeToDType<double> { static constexpr DType value = DType::Float64; };
template <> struct CppTypeToDType<complex64> { static constexpr DType value = DType::Complex64; };
template <> struct CppTypeToDType<complex128> { static constexpr DType value = DType::Complex128; };
template <class T> inline constexpr DType dtype_of = CppTypeToDType<std::remove_cv_t<T>>::value;

}  // namespace ember
