#pragma once
// Recurrent layers: RNN (tanh / relu), LSTM and GRU, with PyTorch's parameters, init and semantics.
//
//   nn::LSTM lstm({.input_size = 10, .hidden_size = 20, .num_layers = 2});
//   auto [out, h_n, c_n] = lstm(x);            // x: (L, N, 10); out: (L, N, 20)
//   auto [out2, h2] = gru(x, h0);              // h0: (D * num_layers, N, hidden)
//
// Parameters per layer k and direction (suffix "_reverse"): weight_ih_l{k} (G*H, in),
// weight_hh_l{k} (G*H, H), bias_ih_l{k}, bias_hh_l{k} (G*H); G = 1 (RNN), 4 (LSTM: i, f, g, o),
// 3 (GRU: r, z, n). All initialised U(-1/sqrt(H), 1/sqrt(H)). The computation is
// nn::functional::rnn_tanh / rnn_relu / lstm / gru (functional.h), which ember.nn's Python
// modules call too. forward(x) (the one-tensor Module override, used by containers) returns the
// output only.
#include <optional>
#include <string>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

struct RNNOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 1;
  std::string nonlinearity = "tanh";  // RNN only: "tanh" or "relu"
  bool bias = true;
  bool batch_first = false;
  double dropout = 0.0;  // on the outputs of every layer but the last, in training only
  bool bidirectional = false;
};

struct RNNOutput {
  Tensor output;  // (L, N, D*H), (N, L, D*H) with batch_first, (L, D*H) unbatched
  Tensor h_n;     // (D*num_layers, N, H), (D*num_layers, H) unbatched
};

struct LSTMOutput {
  Tensor output;
  Tensor h_n;
  Tensor c_n;
};

// Shared machinery: options checks, parameters, the call of the functional that fits the mode.
class RNNBase : public Module {
 public:
  enum class Mode { RNN_TANH, RNN_RELU, LSTM, GRU };
  RNNBase(Mode mode, RNNOptions options);

  Tensor forward(const Tensor& input) override;  // output only
  std::string extra_repr() const override;
  void reset_parameters();

  Tensor& weight_ih(int64_t layer, bool reverse = false) { return *param(layer, reverse, 0); }
  Tensor& weight_hh(int64_t layer, bool reverse = false) { return *param(layer, reverse, 1); }
  Tensor& bias_ih(int64_t layer, bool reverse = false) { return *param(layer, reverse, 2); }  // undefined: bias=false
  Tensor& bias_hh(int64_t layer, bool reverse = false) { return *param(layer, reverse, 3); }

  Mode mode;
  RNNOptions options;
  int64_t num_directions() const { return options.bidirectional ? 2 : 1; }
  int64_t gate_size() const;
  // The parameters in the order the functionals take them (torch's RNNBase._flat_weights).
  std::vector<Tensor> flat_weights() const;

 protected:
  // hx/cx: undefined = zeros. Returns output, h_n, c_n (c_n undefined unless LSTM).
  LSTMOutput run(const Tensor& input, const Tensor& hx, const Tensor& cx);

 private:
  Tensor* param(int64_t layer, bool reverse, int which);
  std::vector<Tensor*> params_by_index_;  // [layer][dir][w_ih, w_hh, b_ih, b_hh], owned by Module
  Tensor empty_;
};

class RNN : public RNNBase {
 public:
  explicit RNN(RNNOptions options);
  RNN(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1)
      : RNN(RNNOptions{.input_size = input_size, .hidden_size = hidden_size, .num_layers = num_layers}) {}
  using RNNBase::forward;
  RNNOutput forward(const Tensor& input, const std::optional<Tensor>& h0);
  RNNOutput operator()(const Tensor& input, const std::optional<Tensor>& h0 = std::nullopt) {
    return forward(input, h0);
  }
  std::string name() const override { return "RNN"; }
};

class GRU : public RNNBase {
 public:
  explicit GRU(RNNOptions options);
  GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1)
      : GRU(RNNOptions{.input_size = input_size, .hidden_size = hidden_size, .num_layers = num_layers}) {}
  using RNNBase::forward;
  RNNOutput forward(const Tensor& input, const std::optional<Tensor>& h0);
  RNNOutput operator()(const Tensor& input, const std::optional<Tensor>& h0 = std::nullopt) {
    return forward(input, h0);
  }
  std::string name() const override { return "GRU"; }
};

class LSTM : public RNNBase {
 public:
  explicit LSTM(RNNOptions options);
  LSTM(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1)
      : LSTM(RNNOptions{.input_size = input_size, .hidden_size = hidden_size, .num_layers = num_layers}) {}
  using RNNBase::forward;
  LSTMOutput forward(const Tensor& input, const Tensor& h0, const Tensor& c0);
  LSTMOutput operator()(const Tensor& input) { return run(input, Tensor(), Tensor()); }
  LSTMOutput operator()(const Tensor& input, const Tensor& h0, const Tensor& c0) { return forward(input, h0, c0); }
  std::string name() const override { return "LSTM"; }
};

}  // namespace ember::nn
