#include "ember/core/dtype.h"

#include <atomic>

#include "ember/core/errors.h"

namespace ember {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
  }
  return "unknown";
}

const char* scalar_type_name(DType t) {
  switch (t) {
    case DType::Bool: return "Bool";
    case DType::UInt8: return "Byte";
    case DType::Int8: return "Char";
    case DType::Int16: return "Short";
    case DType::Int32: return "Int";
    case DType::Int64: return "Long";
    case DType::Float16: return "Half";
    case DType::BFloat16: return "BFloat16";
    case DType::Float32: return "Float";
    case DType::Float64: return "Double";
    case DType::Complex64: return "ComplexFloat";
    case DType::Complex128: return "ComplexDouble";
  }
  return "Unknown";
}

const char* torch_cpp_type_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "unsigned char";
    case DType::Int8: return "signed char";
    case DType::Int16: return "short int";
    case DType::Int32: return "int";
    case DType::Int64: return "long int";
    case DType::Float16: return "c10::Half";
    case DType::BFloat16: return "c10::BFloat16";
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Complex64: return "c10::complex<float>";
    case DType::Complex128: return "c10::complex<double>";
  }
  return "?";
}

std::string to_string(DType t) { return std::string("ember.") + dtype_name(t); }

namespace {
int int_rank(DType t) {  // width order among the signed integers
  switch (t) {
    case DType::Int8: return 1; case DType::Int16: return 2;
    case DType::Int32: return 3; case DType::Int64: return 4;
    default: return 0;
  }
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_complex(a) || is_complex(b)) {
    // Complex wins; its parts are the wider of the two floating parts (complex64 with float64
    // is complex128, complex64 with float16 or an integer stays complex64).
    DType pa = is_complex(a) ? complex_to_real(a) : a, pb = is_complex(b) ? complex_to_real(b) : b;
    DType parts = is_floating(pa) && is_floating(pb) ? promote_types(pa, pb) : is_floating(pa) ? pa : pb;
    return real_to_complex(parts);
  }
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa && fb) {
    if (is_reduced_float(a) && is_reduced_float(b)) return DType::Float32;  // f16 with bf16
    return element_size(a) >= element_size(b) ? a : b;
  }
  // Both integers. uint8 with a signed type needs a signed type that holds 0..255.
  if (a == DType::UInt8) return int_rank(b) >= 2 ? b : DType::Int16;
  if (b == DType::UInt8) return int_rank(a) >= 2 ? a : DType::Int16;
  return int_rank(a) >= int_rank(b) ? a : b;
}

namespace {
std::atomic<DType> g_default_dtype{DType::Float32};
}
DType default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }
void set_default_dtype(DType t) {
  EMBER_CHECK_TYPE(t == DType::Float32 || t == DType::Float64 || t == DType::Float16 ||
                       t == DType::BFloat16,
                   "set_default_dtype: only floating-point types are supported as the default type, got ",
                   dtype_name(t));
  g_default_dtype.store(t);
}

}  // namespace ember

namespace ember {

// visit_dtype's error for a dtype outside the op's set (core/dtype_dispatch.h).
void throw_dtype_not_implemented(const char* op, DType t) {
  throw Error(detail::cat('"', op, "\" not implemented for '", scalar_type_name(t), "'"));
}

}  // namespace ember
