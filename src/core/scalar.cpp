#include "ember/core/scalar.h"

#include <cmath>
#include <sstream>

namespace ember {

DType Scalar::dtype() const {
  switch (kind_) {
    case Kind::Bool: return DType::Bool;
    case Kind::Int: return DType::Int64;
    case Kind::Float: return default_dtype();
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
  }
  return "";
}

Scalar Scalar::operator-() const {
  if (kind_ == Kind::Float) return Scalar(-d_);
  return Scalar(int64_t(-i_));
}

}  // namespace ember
