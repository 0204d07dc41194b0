#pragma once
// The recurrent cells' pointwise steps (src/ops/rnn_cell.cpp): LSTM (gates, c) -> (h', c'), one fused op
// with its gradient where the dtypes allow, the composition otherwise.
#include <tuple>

#include "ember/tensor.h"

namespace ember {

std::tuple<Tensor, Tensor> lstm_cell_pointwise(const Tensor& gates, const Tensor& c);
// The GRU's step: (x W_ih^T + b_ih, h W_hh^T + b_hh, h) -> h'.
Tensor gru_cell_pointwise(const Tensor& xg, const Tensor& hg, const Tensor& h);
// The shape and device checks every backend's kernels share (op: the name in the message).
void check_lstm_cell(const char* op, const Tensor& gates, const Tensor& c);
void check_gru_cell(const char* op, const Tensor& xg, const Tensor& hg, const Tensor& h);

}  // namespace ember
