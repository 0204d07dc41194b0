#pragma once
// The LSTM cell's pointwise step (src/ops/rnn_cell.cpp): (gates, c) -> (h', c'), one fused op
// with its gradient where the dtypes allow, the composition otherwise.
#include <tuple>

#include "ember/tensor.h"

namespace ember {

std::tuple<Tensor, Tensor> lstm_cell_pointwise(const Tensor& gates, const Tensor& c);

}  // namespace ember
