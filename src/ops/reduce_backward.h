#pragma once
// Gradient formulas shared by the reductions of reduce.cpp and order_stats.cpp (defined in
// reduce.cpp). Written with ember ops, so they are differentiable again.
#include "autograd/record.h"

namespace ember {

// Backward of a reduction that picks one element per slice along `dim` (max/min/median/
// kthvalue with a dim; the node's saved slot 0 holds the indices): the gradient goes to the
// picked positions, zero elsewhere (PyTorch's value_selecting_reduction_backward).
autograd::LambdaNode::Backward value_selecting_backward(Shape in_sizes, int64_t dim, bool keepdim);

// Backward of a full reduction whose result is one of the inputs (max(), min(), median()):
// the gradient is shared evenly among the inputs equal to the result, NaN inputs counting as
// equal to a NaN result (PyTorch's evenly_distribute_backward).
Tensor evenly_distribute_backward(const Tensor& grad, const Tensor& input, const Tensor& value);

}  // namespace ember
