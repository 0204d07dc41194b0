#pragma once
// A tensor as one dense run for a kernel that walks flat memory (the optimizers' updates on
// every backend): the tensor itself when contiguous, else a contiguous copy that write_back()
// copies into it (a transposed parameter, a state loaded with other strides). It points at the
// caller's handle rather than copying it: a step touches hundreds of tensors, and each handle
// copy is an atomic increment and decrement. An undefined tensor (an option that is off) gives
// a null pointer.
#include "ember/tensor.h"

namespace ember {

class DenseRun {
 public:
  explicit DenseRun(const Tensor& t, bool upcast_reduced = false) : t_(&t) {
    if (!t.defined()) return;
    if (upcast_reduced && is_reduced_float(t.dtype())) copy_ = t.detach().to(DType::Float32).contiguous();
    else if (!t.is_contiguous()) copy_ = t.detach().contiguous();
  }
  void* data() const {
    if (!t_->defined()) return nullptr;
    return (copy_.defined() ? copy_ : *t_).data_ptr();
  }
  template <class T> T* data() const { return static_cast<T*>(data()); }
  void write_back() {
    if (!copy_.defined()) return;
    Tensor dst = t_->detach();
    dst.copy_(copy_);
  }

 private:
  const Tensor* t_;
  Tensor copy_;
};

}  // namespace ember
