#include "ember/nn/rnn.h"

#include <cmath>
#include <sstream>
#include <tuple>

#include "ember/nn/functional.h"
#include "ember/ops.h"

namespace ember::nn {

RNNBase::RNNBase(Mode m, RNNOptions opts) : mode(m), options(std::move(opts)) {
  const auto& o = options;
  EMBER_CHECK_VALUE(o.dropout >= 0.0 && o.dropout <= 1.0,
                    "dropout should be a number in range [0, 1] representing the probability of an element being "
                    "zeroed");
  EMBER_CHECK_VALUE(o.input_size >= 0, "input_size must be non-negative, got ", o.input_size);
  EMBER_CHECK_VALUE(o.hidden_size > 0, "hidden_size must be greater than zero");
  EMBER_CHECK_VALUE(o.num_layers > 0, "num_layers must be greater than zero");
  const int64_t G = gate_size(), H = o.hidden_size, D = num_directions();
  for (int64_t layer = 0; layer < o.num_layers; ++layer) {
    for (int64_t dir = 0; dir < D; ++dir) {
      const int64_t in = layer == 0 ? o.input_size : H * D;
      const std::string suffix = "_l" + std::to_string(layer) + (dir == 1 ? "_reverse" : "");
      params_by_index_.push_back(&register_parameter("weight_ih" + suffix, empty({G, in})));
      params_by_index_.push_back(&register_parameter("weight_hh" + suffix, empty({G, H})));
      if (o.bias) {
        params_by_index_.push_back(&register_parameter("bias_ih" + suffix, empty({G})));
        params_by_index_.push_back(&register_parameter("bias_hh" + suffix, empty({G})));
      } else {
        params_by_index_.push_back(nullptr);
        params_by_index_.push_back(nullptr);
      }
    }
  }
  reset_parameters();
}

int64_t RNNBase::gate_size() const {
  const int64_t H = options.hidden_size;
  switch (mode) {
    case Mode::LSTM: return 4 * H;
    case Mode::GRU: return 3 * H;
    default: return H;
  }
}

Tensor* RNNBase::param(int64_t layer, bool reverse, int which) {
  EMBER_CHECK_INDEX(layer >= 0 && layer < options.num_layers, "layer ", layer, " out of range for ",
                    options.num_layers, " layers");
  EMBER_CHECK_INDEX(!reverse || options.bidirectional, "no reverse direction: the module is not bidirectional");
  Tensor* p = params_by_index_[size_t(((layer * num_directions()) + (reverse ? 1 : 0)) * 4 + which)];
  if (!p) {
    empty_ = Tensor();
    return &empty_;
  }
  return p;
}

void RNNBase::reset_parameters() {
  const double stdv = 1.0 / std::sqrt(double(options.hidden_size));
  for (auto& p : parameters()) init::uniform_(p, -stdv, stdv);
}

std::string RNNBase::extra_repr() const {
  const auto& o = options;
  std::string s = std::to_string(o.input_size) + ", " + std::to_string(o.hidden_size);
  if (o.num_layers != 1) s += ", num_layers=" + std::to_string(o.num_layers);
  if (!o.bias) s += ", bias=False";
  if (o.batch_first) s += ", batch_first=True";
  if (o.dropout != 0.0) {
    std::ostringstream os;
    os << o.dropout;
    s += ", dropout=" + os.str();
  }
  if (o.bidirectional) s += ", bidirectional=True";
  return s;
}

Tensor RNNBase::forward(const Tensor& input) { return run(input, Tensor(), Tensor()).output; }

std::vector<Tensor> RNNBase::flat_weights() const {
  std::vector<Tensor> w;
  w.reserve(params_by_index_.size());
  for (const Tensor* p : params_by_index_)
    if (p) w.push_back(*p);
  return w;
}

LSTMOutput RNNBase::run(const Tensor& input, const Tensor& hx, const Tensor& cx) {
  const auto& o = options;
  const std::vector<Tensor> w = flat_weights();
  const bool train = is_training();
  auto h0 = hx.defined() ? std::optional<Tensor>(hx) : std::nullopt;
  LSTMOutput r;
  switch (mode) {
    case Mode::RNN_TANH:
      std::tie(r.output, r.h_n) =
          functional::rnn_tanh(input, h0, w, o.bias, o.num_layers, o.dropout, train, o.bidirectional, o.batch_first);
      break;
    case Mode::RNN_RELU:
      std::tie(r.output, r.h_n) =
          functional::rnn_relu(input, h0, w, o.bias, o.num_layers, o.dropout, train, o.bidirectional, o.batch_first);
      break;
    case Mode::GRU:
      std::tie(r.output, r.h_n) =
          functional::gru(input, h0, w, o.bias, o.num_layers, o.dropout, train, o.bidirectional, o.batch_first);
      break;
    case Mode::LSTM:
      std::tie(r.output, r.h_n, r.c_n) = functional::lstm(input, {hx, cx}, w, o.bias, o.num_layers, o.dropout, train,
                                                          o.bidirectional, o.batch_first);
      break;
  }
  return r;
}

namespace {
RNNBase::Mode rnn_mode(const std::string& nonlinearity) {
  if (nonlinearity == "tanh") return RNNBase::Mode::RNN_TANH;
  if (nonlinearity == "relu") return RNNBase::Mode::RNN_RELU;
  throw ValueError("Unknown nonlinearity '" + nonlinearity + "'");
}
}  // namespace

RNN::RNN(RNNOptions opts) : RNNBase(rnn_mode(opts.nonlinearity), opts) {}
RNNOutput RNN::forward(const Tensor& input, const std::optional<Tensor>& h0) {
  auto r = run(input, h0.value_or(Tensor()), Tensor());
  return {r.output, r.h_n};
}

GRU::GRU(RNNOptions opts) : RNNBase(Mode::GRU, std::move(opts)) {}
RNNOutput GRU::forward(const Tensor& input, const std::optional<Tensor>& h0) {
  auto r = run(input, h0.value_or(Tensor()), Tensor());
  return {r.output, r.h_n};
}

LSTM::LSTM(RNNOptions opts) : RNNBase(Mode::LSTM, std::move(opts)) {}
LSTMOutput LSTM::forward(const Tensor& input, const Tensor& h0, const Tensor& c0) { return run(input, h0, c0); }

}  // namespace ember::nn
