#pragma once
// A Python-style number: bool, integer or floating. Used for scalar operands, which take
// part in type promotion as "wrapped numbers" (they never widen a tensor's dtype within its
// category).
#include <cstdint>
#include <string>
#include <type_traits>

#include "ember/core/dtype.h"

namespace ember {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };

  Scalar() : kind_(Kind::Int), i_(0) {}
  Scalar(bool v) : kind_(Kind::Bool), i_(v) {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int), i_(int64_t(v)) {}
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Float), d_(double(v)) {}
  Scalar(Half v) : kind_(Kind::Float), d_(float(v)) {}
  Scalar(BFloat16 v) : kind_(Kind::Float), d_(float(v)) {}

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating() const { return kind_ == Kind::Float; }

  double to_double() const { return kind_ == Kind::Float ? d_ : double(i_); }
  int64_t to_int() const { return kind_ == Kind::Float ? int64_t(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Float ? d_ != 0.0 : i_ != 0; }
  template <class T> T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return kind_ == Kind::Float ? T(int64_t(d_)) : T(i_);
    else return T(to_double());
  }
  // The dtype a 0-dim tensor made from this scalar gets: bool, int64 or the default float.
  DType dtype() const;
  std::string str() const;
  Scalar operator-() const;
  // Writes the value, converted to dtype, at dst (host memory).
  void store(void* dst, DType dtype) const;

 private:
  Kind kind_;
  union { int64_t i_; double d_; };
};

}  // namespace ember
