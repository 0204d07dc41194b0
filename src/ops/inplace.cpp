// In-place forms of ops that have no in-place kernel: the op runs out of place and its result
// is written into self. Self keeps its dtype and shape, so the result must cast to self's dtype
// (can_cast) and have self's shape, as PyTorch's in-place ops require; autograd follows the
// copy_ (the history of the out-of-place op, then CopyBackwards). Ops with an in-place kernel
// (add_, remainder_, bitwise_and_, ...) are in their family's file.
#include "ember/ops.h"

namespace ember {

namespace {
Tensor& write_inplace(Tensor& self, const Tensor& result) {
  EMBER_CHECK(can_cast(result.dtype(), self.dtype()), "result type ", scalar_type_name(result.dtype()),
              " can't be cast to the desired output type ", scalar_type_name(self.dtype()));
  EMBER_CHECK(IntArrayRef(result.sizes()) == IntArrayRef(self.sizes()), "output with shape ", self.sizes(),
              " doesn't match the broadcast shape ", result.sizes());
  return self.copy_(result);
}
}  // namespace

Tensor& hypot_(Tensor& self, const Tensor& other) { return write_inplace(self, hypot(self, other)); }
Tensor& logical_and_(Tensor& self, const Tensor& other) { return write_inplace(self, logical_and(self, other)); }
Tensor& logical_or_(Tensor& self, const Tensor& other) { return write_inplace(self, logical_or(self, other)); }
Tensor& logical_xor_(Tensor& self, const Tensor& other) { return write_inplace(self, logical_xor(self, other)); }
Tensor& logical_not_(Tensor& self) { return write_inplace(self, logical_not(self)); }
Tensor& bitwise_not_(Tensor& self) { return write_inplace(self, bitwise_not(self)); }
Tensor& clamp_(Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return write_inplace(self, clamp(self, min, max));
}
Tensor& lerp_(Tensor& self, const Tensor& end, const Scalar& weight) { return write_inplace(self, lerp(self, end, weight)); }
Tensor& lerp_(Tensor& self, const Tensor& end, const Tensor& weight) { return write_inplace(self, lerp(self, end, weight)); }
Tensor& nan_to_num_(Tensor& self, std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) {
  return write_inplace(self, nan_to_num(self, nan, posinf, neginf));
}
Tensor& addcmul_(Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return write_inplace(self, addcmul(self, t1, t2, value));
}
Tensor& addcdiv_(Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return write_inplace(self, addcdiv(self, t1, t2, value));
}
Tensor& tril_(Tensor& self, int64_t diagonal) { return write_inplace(self, tril(self, diagonal)); }
Tensor& triu_(Tensor& self, int64_t diagonal) { return write_inplace(self, triu(self, diagonal)); }
Tensor& addmm_(Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) {
  return write_inplace(self, addmm(self, m1, m2, beta, alpha));
}
Tensor& index_fill_(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return write_inplace(self, index_fill(self, dim, index, value));
}
Tensor& index_fill_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  return write_inplace(self, index_fill(self, dim, index, value));
}
Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Tensor& value) {
  return write_inplace(self, masked_fill(self, mask, value));
}

}  // namespace ember
