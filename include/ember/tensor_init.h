#pragma once
// Nested braces of numbers for ember::tensor({{1, 2}, {3, 4}}): either one value or a list of
// TensorInit, so any depth works. Shape and dtype are inferred when the tensor is made.
#include <initializer_list>
#include <vector>

#include "ember/core/scalar.h"

namespace ember {

class TensorInit {
 public:
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  TensorInit(T v) : scalar_(v), is_scalar_(true) {}
  TensorInit(Half v) : scalar_(v), is_scalar_(true) {}
  TensorInit(BFloat16 v) : scalar_(v), is_scalar_(true) {}
  TensorInit(std::initializer_list<TensorInit> l) : children_(l) {}

  bool is_scalar() const { return is_scalar_; }
  const Scalar& scalar() const { return scalar_; }
  const std::vector<TensorInit>& children() const { return children_; }

 private:
  Scalar scalar_;
  std::vector<TensorInit> children_;
  bool is_scalar_ = false;
};

}  // namespace ember
