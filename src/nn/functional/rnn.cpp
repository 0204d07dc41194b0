// The recurrent layers' computation (torch's _VF.rnn_tanh / rnn_relu / lstm / gru), shared by
// nn::RNN / LSTM / GRU and by ember.nn's Python modules, which call it with their own
// parameters. Besides what torch's _VF functions do, these take what torch's Python modules
// check and prepare before calling them: unbatched (2-D) input, absent initial state (zeros)
// and the shape checks with torch's messages, so that rule has one home.
//
// The whole sequence goes through differentiable ops: the input projection of every step is one
// matmul per layer and direction, then a loop over time does the hidden projection and the gate
// math (LSTM gates i, f, g, o; GRU gates r, z, n, as PyTorch orders the weight rows).
#include <sstream>

#include "ember/nn/functional.h"
#include "ops/rnn_cell.h"

namespace ember::nn::functional {

namespace {

enum class Cell { Tanh, Relu, Lstm, Gru };

const char* module_name(Cell c) {
  switch (c) {
    case Cell::Lstm: return "LSTM";
    case Cell::Gru: return "GRU";
    default: return "RNN";
  }
}

int64_t gate_count(Cell c) { return c == Cell::Lstm ? 4 : c == Cell::Gru ? 3 : 1; }

// "(1, 2, 5)": the tuple form torch's Python check_hidden_size prints for the expected size.
std::string tuple_str(const Shape& s) {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ')';
  return os.str();
}

struct Result {
  Tensor output, h_n, c_n;  // c_n: LSTM only
};

// The flat weights hold, per layer and direction, w_ih (G*H, in), w_hh (G*H, H) and, with
// biases, b_ih and b_hh (G*H): the order of RNNBase._flat_weights.
void check_weights(Cell cell, TensorList params, bool has_biases, int64_t num_layers, bool bidirectional) {
  const int64_t D = bidirectional ? 2 : 1, stride = has_biases ? 4 : 2;
  EMBER_CHECK(num_layers > 0, module_name(cell), ": num_layers must be greater than zero, got ", num_layers);
  EMBER_CHECK(int64_t(params.size()) == num_layers * D * stride, module_name(cell),
              ": got an incorrect number of RNN parameters: expected ", num_layers * D * stride, " for num_layers=",
              num_layers, ", bidirectional=", bidirectional ? "True" : "False",
              ", has_biases=", has_biases ? "True" : "False", ", got ", params.size());
  // The sizes follow from weight_hh_l0 (G*H, H) and weight_ih_l0 (G*H, input_size).
  const int64_t H = params[1].dim() == 2 ? params[1].size(1) : -1, G = gate_count(cell) * H;
  const int64_t input_size = params[0].dim() == 2 ? params[0].size(1) : -1;
  EMBER_CHECK(H >= 0 && input_size >= 0, module_name(cell), ": expected 2-D weight_ih_l0 and weight_hh_l0, got ",
              params[0].dim(), "-D and ", params[1].dim(), "-D tensors");
  for (int64_t layer = 0; layer < num_layers; ++layer)
    for (int64_t dir = 0; dir < D; ++dir) {
      const int64_t base = (layer * D + dir) * stride;
      const int64_t in = layer == 0 ? input_size : D * H;
      const std::string sfx = std::to_string(layer) + (dir ? "_reverse" : "");
      auto expect = [&](int64_t i, const char* name, const Shape& shape) {
        EMBER_CHECK(params[size_t(base + i)].sizes() == shape, module_name(cell), ": expected ", name, sfx,
                    " of size ", shape, ", got ", params[size_t(base + i)].sizes());
      };
      expect(0, "weight_ih_l", {G, in});
      expect(1, "weight_hh_l", {G, H});
      if (has_biases) {
        expect(2, "bias_ih_l", {G});
        expect(3, "bias_hh_l", {G});
      }
    }
}

Result run(Cell cell, const Tensor& input_in, const Tensor& hx_in, const Tensor& cx_in, TensorList params,
           bool has_biases, int64_t num_layers, double dropout_p, bool train, bool bidirectional, bool batch_first) {
  const bool is_lstm = cell == Cell::Lstm;
  EMBER_CHECK_VALUE(input_in.dim() == 2 || input_in.dim() == 3, module_name(cell),
                    ": Expected input to be 2-D or 3-D but received ", input_in.dim(), "-D tensor");
  check_weights(cell, params, has_biases, num_layers, bidirectional);
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
    input = unsqueeze(input, batch_first ? 0 : 1);
    if (hx.defined()) hx = unsqueeze(hx, 1);
    if (cx.defined()) cx = unsqueeze(cx, 1);
  }
  if (batch_first) input = transpose(input, 0, 1);  // now (L, N, H_in)
  const int64_t input_size = params[0].size(1), H = params[1].size(1), G = gate_count(cell) * H;
  EMBER_CHECK(input.size(-1) == input_size, "input.size(-1) must be equal to input_size. Expected ", input_size,
              ", got ", input.size(-1));
  const int64_t L = input.size(0), N = input.size(1), D = bidirectional ? 2 : 1, stride = has_biases ? 4 : 2;
  const Shape expected{D * num_layers, N, H};
  auto check_hidden = [&](const Tensor& t, const char* what) {
    EMBER_CHECK(t.sizes() == expected, "Expected ", what, " size ", tuple_str(expected), ", got ", t.sizes());
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
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    std::vector<Tensor> dir_outputs;
    for (int64_t dir = 0; dir < D; ++dir) {
      const bool reverse = dir == 1;
      const int64_t idx = layer * D + dir;
      const Tensor& w_ih = params[size_t(idx * stride)];
      const Tensor& w_hh = params[size_t(idx * stride + 1)];
      const Tensor b_ih = has_biases ? params[size_t(idx * stride + 2)] : Tensor();
      const Tensor b_hh = has_biases ? params[size_t(idx * stride + 3)] : Tensor();
      // Input projection for every step at once: (L*N, in) x (in, G) -> (L, N, G). Outside the
      // GRU (whose reset gate multiplies the hidden projection with its bias), the hidden bias
      // joins it here, and each step's gates are one addmm onto the step's projection: an add
      // and a bias copy fewer per step.
      const bool fold_bias = cell != Cell::Gru && b_hh.defined();
      Tensor x2 = reshape(layer_input, {L * N, layer_input.size(2)});
      Tensor in_bias = fold_bias ? add(b_ih, b_hh) : b_ih;
      Tensor xw = in_bias.defined() ? addmm(in_bias, x2, t(w_ih)) : mm(x2, t(w_ih));
      std::vector<Tensor> xs = unbind(reshape(xw, {L, N, G}), 0);
      const Tensor w_hh_t = t(w_hh);
      Tensor h = select(hx, 0, idx);
      Tensor c = is_lstm ? select(cx, 0, idx) : Tensor();
      std::vector<Tensor> outs(static_cast<size_t>(L));
      for (int64_t s = 0; s < L; ++s) {
        const int64_t step = reverse ? L - 1 - s : s;
        const Tensor& xt = xs[size_t(step)];
        if (cell != Cell::Gru) {
          const Tensor pre = addmm(xt, h, w_hh_t);  // x_t W_ih^T + b_ih + b_hh + h W_hh^T
          if (cell == Cell::Tanh) {
            h = ember::tanh(pre);
          } else if (cell == Cell::Relu) {
            h = ember::relu(pre);
          } else {
            std::tie(h, c) = lstm_cell_pointwise(pre, c);  // one fused op (ops/rnn_cell.cpp)
          }
          outs[size_t(step)] = h;
          continue;
        }
        // GRU: n = tanh(x_n + r * (h W_hn^T + b_hn)) keeps the hidden projection apart
        Tensor hw = b_hh.defined() ? addmm(b_hh, h, w_hh_t) : mm(h, w_hh_t);
        h = gru_cell_pointwise(xt, hw, h);  // (1 - z) n + z h, one fused op (ops/rnn_cell.cpp)
        outs[size_t(step)] = h;
      }
      h_n.push_back(h);
      if (is_lstm) c_n.push_back(c);
      dir_outputs.push_back(stack(outs, 0));
    }
    layer_input = D == 1 ? dir_outputs[0] : cat(dir_outputs, 2);
    if (dropout_p > 0 && train && layer + 1 < num_layers) layer_input = dropout(layer_input, dropout_p, true);
  }

  Result r;
  r.output = layer_input;
  r.h_n = stack(h_n, 0);
  if (is_lstm) r.c_n = stack(c_n, 0);
  if (batch_first) r.output = transpose(r.output, 0, 1);
  if (!batched) {
    r.output = squeeze(r.output, batch_first ? 0 : 1);
    r.h_n = squeeze(r.h_n, 1);
    if (is_lstm) r.c_n = squeeze(r.c_n, 1);
  }
  return r;
}

// The one-state recurrences (tanh, relu, GRU): (output, h_n).
std::tuple<Tensor, Tensor> run_one_state(Cell cell, const Tensor& input, const std::optional<Tensor>& hx,
                                         TensorList params, bool has_biases, int64_t num_layers, double dropout,
                                         bool train, bool bidirectional, bool batch_first) {
  Result r = run(cell, input, hx ? *hx : Tensor(), Tensor(), params, has_biases, num_layers, dropout, train,
                 bidirectional, batch_first);
  return {r.output, r.h_n};
}

}  // namespace

std::tuple<Tensor, Tensor> rnn_tanh(const Tensor& input, const std::optional<Tensor>& hx, TensorList params,
                                    bool has_biases, int64_t num_layers, double dropout, bool train,
                                    bool bidirectional, bool batch_first) {
  return run_one_state(Cell::Tanh, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                       batch_first);
}

std::tuple<Tensor, Tensor> rnn_relu(const Tensor& input, const std::optional<Tensor>& hx, TensorList params,
                                    bool has_biases, int64_t num_layers, double dropout, bool train,
                                    bool bidirectional, bool batch_first) {
  return run_one_state(Cell::Relu, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                       batch_first);
}

std::tuple<Tensor, Tensor> gru(const Tensor& input, const std::optional<Tensor>& hx, TensorList params,
                               bool has_biases, int64_t num_layers, double dropout, bool train, bool bidirectional,
                               bool batch_first) {
  return run_one_state(Cell::Gru, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                       batch_first);
}

std::tuple<Tensor, Tensor, Tensor> lstm(const Tensor& input, TensorList hx, TensorList params, bool has_biases,
                                        int64_t num_layers, double dropout, bool train, bool bidirectional,
                                        bool batch_first) {
  EMBER_CHECK(hx.empty() || hx.size() == 2, "LSTM: hx must hold (h_0, c_0), got ", hx.size(), " tensors");
  Result r = run(Cell::Lstm, input, hx.empty() ? Tensor() : hx[0], hx.empty() ? Tensor() : hx[1], params, has_biases,
                 num_layers, dropout, train, bidirectional, batch_first);
  return {r.output, r.h_n, r.c_n};
}

}  // namespace ember::nn::functional
