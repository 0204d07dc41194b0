#pragma once
// A Python-style number: bool, integer, floating or complex. Used for scalar operands, which take
// part in type promotion as "wrapped numbers" (they never widen a tensor's dtype within its
// category).
#include <cstdint>
#include <string>
#include <type_traits>

#include "ember/core/dtype.h"

namespace ember {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float, Complex };

  Scalar() : kind_(Kind::Int), i_(0) {}
  Scalar(bool v) : kind_(Kind::Bool), i_(v) {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int), i_(int64_t(v)) {}
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Float), d_(double(v)) {}
  Scalar(Half v) : kind_(Kind::Float), d_(float(v)) {}
  Scalar(BFloat16 v) : kind_(Kind::Float), d_(float(v)) {}
  template <class T>
  Scalar(std::complex<T> v) : kind_(Kind::Complex), d_(double(v.real())), im_(double(v.imag())) {}

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating() const { return kind_ == Kind::Float; }
  bool is_complex() const { return kind_ == Kind::Complex; }

  // A complex scalar converts to a real type by its real part (torch's cast).
  double to_double() const { return has_double() ? d_ : double(i_); }
  int64_t to_int() const { return has_double() ? int64_t(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Complex ? (d_ != 0.0 || im_ != 0.0) : has_double() ? d_ != 0.0 : i_ != 0; }
  double imag() const { return kind_ == Kind::Complex ? im_ : 0.0; }
  std::complex<double> to_complex() const { return {to_double(), imag()}; }
  template <class T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return has_double() ? T(int64_t(d_)) : T(i_);
    else if constexpr (std::is_same_v<T, complex64> || std::is_same_v<T, complex128>)
      return T(typename T::value_type(to_double()), typename T::value_type(imag()));
    else return T(to_double());
  }
  // The dtype a 0-dim tensor made from this scalar gets: bool, int64, the default float or its
  // complex counterpart.
  DType dtype() const;
  std::string str() const;
  Scalar operator-() const;
  // Writes the value, converted to dtype, at dst (host memory).
  void store(void* dst, DType dtype) const;

 private:
  bool has_double() const { return kind_ == Kind::Float || kind_ == Kind::Complex; }
  Kind kind_;
  union { int64_t i_; double d_; };
  double im_ = 0.0;
};

}  // namespace ember
