#include "ember/core/scalar.h"

#include <cmath>
#include <sstream>

namespace ember {

DType Scalar::dtype() const {
  switch (kind_) {
    case Kind::Bool: return DType::Bool;
    case Kind::Int: return DType::Int64;
    case Kind::Float: return default_dtype();
    case Kind::Complex: return real_to_complex(default_dtype());
  }
  return DType::Int64;
}

std::string Scalar::str() const {
  switch (kind_) {
    case Kind::Bool: return i_ ? "True" : "False";
    case Kind::Int: return std::to_string(i_);
    case Kind::Float: {
      std::ostringstream os;
      os << d_;
      return os.str();
    }
    case Kind::Complex: {
      std::ostringstream os;  // Python's repr of a complex: (1+2j)
      os << '(' << d_ << (im_ < 0 || std::signbit(im_) ? "" : "+") << im_ << "j)";
      return os.str();
    }
  }
  return "";
}

void Scalar::store(void* dst, DType dtype) const {
  switch (dtype) {
    case DType::Bool: *static_cast<bool*>(dst) = to_bool(); break;
    case DType::UInt8: *static_cast<uint8_t*>(dst) = to<uint8_t>(); break;
    case DType::Int8: *static_cast<int8_t*>(dst) = to<int8_t>(); break;
    case DType::Int16: *static_cast<int16_t*>(dst) = to<int16_t>(); break;
    case DType::Int32: *static_cast<int32_t*>(dst) = to<int32_t>(); break;
    case DType::Int64: *static_cast<int64_t*>(dst) = to<int64_t>(); break;
    case DType::Float16: *static_cast<Half*>(dst) = Half(float(to_double())); break;
    case DType::BFloat16: *static_cast<BFloat16*>(dst) = BFloat16(float(to_double())); break;
    case DType::Float32: *static_cast<float*>(dst) = float(to_double()); break;
    case DType::Float64: *static_cast<double*>(dst) = to_double(); break;
    case DType::Complex64: *static_cast<complex64*>(dst) = to<complex64>(); break;
    case DType::Complex128: *static_cast<complex128*>(dst) = to<complex128>(); break;
  }
}

Scalar Scalar::operator-() const {
  if (kind_ == Kind::Complex) return Scalar(std::complex<double>(-d_, -im_));
  if (kind_ == Kind::Float) return Scalar(-d_);
  return Scalar(int64_t(-i_));
}

}  // namespace ember
