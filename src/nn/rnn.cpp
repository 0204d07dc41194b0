#include "ember/nn/rnn.h"

#include <cmath>
#include <sstream>

#include "ember/nn/functional.h"
#include "ember/ops.h"

namespace ember::nn {

namespace {
std::string shape_str(const Shape& s, char open, char close) {
  std::ostringstream os;
  os << open;
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << close;
  return os.str();
}
const char* mode_name(RNNBase::Mode m) {
  switch (m) {
    case RNNBase::Mode::LSTM: return "LSTM";
    case RNNBase::Mode::GRU: return "GRU";
    default: return "RNN";
  }
}
}  // namespace

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

LSTMOutput RNNBase::run(const Tensor& input_in, const Tensor& hx_in, const Tensor& cx_in) {
  const auto& o = options;
  const bool is_lstm = mode == Mode::LSTM;
  EMBER_CHECK_VALUE(input_in.dim() == 2 || input_in.dim() == 3, mode_name(mode),
                    ": Expected input to be 2-D or 3-D but received ", input_in.dim(), "-D tensor");
  const bool batched = input_in.dim() == 3;
  Tensor input = input_in, hx = hx_in, cx = cx_in;
  const int64_t want_state_dim = batched ? 3 : 2;
  if (is_lstm && (hx.defined() || cx.defined())) {
    EMBER_CHECK(hx.defined() && cx.defined(), "LSTM: h0 and c0 must be given together");
    EMBER_CHECK(hx.dim() == want_state_dim && cx.dim() == want_state_dim,
                batched ? "For batched 3-D input, hx and cx should also be 3-D but got ("
                        : "For unbatched 2-D input, hx and cx should also be 2-D but got (",
                hx.dim(), "-D, ", cx.dim(), "-D) tensors");
  } else if (hx.defined()) {
    EMBER_CHECK(hx.dim() == want_state_dim,
                batched ? "For batched 3-D input, hx should also be 3-D but got "
                        : "For unbatched 2-D input, hx should also be 2-D but got ",
                hx.dim(), "-D tensor");
  }
  if (!batched) {
    input = unsqueeze(input, o.batch_first ? 0 : 1);
    if (hx.defined()) hx = unsqueeze(hx, 1);
    if (cx.defined()) cx = unsqueeze(cx, 1);
  }
  if (o.batch_first) input = transpose(input, 0, 1);  // now (L, N, H_in)
  EMBER_CHECK(input.size(-1) == o.input_size, "input.size(-1) must be equal to input_size. Expected ", o.input_size,
              ", got ", input.size(-1));
  const int64_t L = input.size(0), N = input.size(1), H = o.hidden_size, D = num_directions();
  const Shape expected{D * o.num_layers, N, H};
  auto check_hidden = [&](const Tensor& t, const char* what) {
    EMBER_CHECK(t.sizes() == expected, "Expected ", what, " size ", shape_str(expected, '(', ')'), ", got ",
                shape_str(t.sizes(), '[', ']'));
  };
  if (is_lstm && hx.defined()) {
    check_hidden(hx, "hidden[0]");
    check_hidden(cx, "hidden[1]");
  } else if (hx.defined()) {
    check_hidden(hx, "hidden");
  }
  EMBER_CHECK(L > 0, "Expected sequence length to be larger than 0 in RNN");

  const TensorOptions state_opts{.dtype = input.dtype(), .device = input.device()};
  if (!hx.defined()) hx = zeros(expected, state_opts);
  if (is_lstm && !cx.defined()) cx = zeros(expected, state_opts);

  std::vector<Tensor> h_n, c_n;
  Tensor layer_input = input;
  for (int64_t layer = 0; layer < o.num_layers; ++layer) {
    std::vector<Tensor> dir_outputs;
    for (int64_t dir = 0; dir < D; ++dir) {
      const bool reverse = dir == 1;
      const Tensor& w_ih = weight_ih(layer, reverse);
      const Tensor& w_hh = weight_hh(layer, reverse);
      const Tensor b_ih = bias_ih(layer, reverse);
      const Tensor b_hh = bias_hh(layer, reverse);
      // Input projection for every step at once: (L*N, in) x (in, G) -> (L, N, G).
      Tensor x2 = reshape(layer_input, {L * N, layer_input.size(2)});
      Tensor xw = b_ih.defined() ? addmm(b_ih, x2, t(w_ih)) : mm(x2, t(w_ih));
      std::vector<Tensor> xs = unbind(reshape(xw, {L, N, gate_size()}), 0);
      const Tensor w_hh_t = t(w_hh);
      const int64_t idx = layer * D + dir;
      Tensor h = select(hx, 0, idx);
      Tensor c = is_lstm ? select(cx, 0, idx) : Tensor();
      std::vector<Tensor> outs(static_cast<size_t>(L));
      for (int64_t s = 0; s < L; ++s) {
        const int64_t step = reverse ? L - 1 - s : s;
        Tensor hw = b_hh.defined() ? addmm(b_hh, h, w_hh_t) : mm(h, w_hh_t);
        const Tensor& xt = xs[size_t(step)];
        switch (mode) {
          case Mode::RNN_TANH: h = ember::tanh(add(xt, hw)); break;
          case Mode::RNN_RELU: h = ember::relu(add(xt, hw)); break;
          case Mode::LSTM: {
            auto g = chunk(add(xt, hw), 4, 1);
            Tensor i = ember::sigmoid(g[0]), f = ember::sigmoid(g[1]);
            Tensor gg = ember::tanh(g[2]), og = ember::sigmoid(g[3]);
            c = add(mul(f, c), mul(i, gg));
            h = mul(og, ember::tanh(c));
            break;
          }
          case Mode::GRU: {
            auto xg = chunk(xt, 3, 1);
            auto hg = chunk(hw, 3, 1);
            Tensor r = ember::sigmoid(add(xg[0], hg[0]));
            Tensor z = ember::sigmoid(add(xg[1], hg[1]));
            Tensor n = ember::tanh(add(xg[2], mul(r, hg[2])));
            h = add(n, mul(z, sub(h, n)));  // (1 - z) * n + z * h
            break;
          }
        }
        outs[size_t(step)] = h;
      }
      h_n.push_back(h);
      if (is_lstm) c_n.push_back(c);
      dir_outputs.push_back(stack(outs, 0));
    }
    layer_input = D == 1 ? dir_outputs[0] : cat(dir_outputs, 2);
    if (o.dropout > 0 && is_training() && layer + 1 < o.num_layers)
      layer_input = functional::dropout(layer_input, o.dropout, true);
  }

  LSTMOutput r;
  r.output = layer_input;
  r.h_n = stack(h_n, 0);
  if (is_lstm) r.c_n = stack(c_n, 0);
  if (o.batch_first) r.output = transpose(r.output, 0, 1);
  if (!batched) {
    r.output = squeeze(r.output, o.batch_first ? 0 : 1);
    r.h_n = squeeze(r.h_n, 1);
    if (is_lstm) r.c_n = squeeze(r.c_n, 1);
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
