// The LSTM and GRU cells' pointwise steps as one op each (_lstm_cell, _gru_cell: op_list.h), their
// gradients beside them, and the compositions backends without a fused kernel run. Per step the
// composition is nine ops
// (four activations on column blocks, three products, a sum, a tanh), each with its own pass,
// allocation and autograd node; the seeds' LSTM spent most of its time there.
//   forward:  i, f, g, o = sigmoid(a_i), sigmoid(a_f), tanh(a_g), sigmoid(a_o)
//             c' = f c + i g,  h' = o tanh(c')
//   backward: t = tanh(c'), dc = gc' + gh' o (1 - t^2)
//             da_o = gh' t o (1 - o), da_i = dc g i (1 - i), da_f = dc c f (1 - f),
//             da_g = dc i (1 - g^2), gc = dc f
#include "ops/rnn_cell.h"

#include "autograd/record.h"
#include "ember/ops.h"
#include "ops/op_handles.h"

namespace ember {

void check_lstm_cell(const char* op, const Tensor& gates, const Tensor& c) {
  EMBER_CHECK(gates.dim() == 2 && c.dim() == 2 && gates.size(0) == c.size(0) && gates.size(1) == 4 * c.size(1), op,
              ": expected gates of shape (N, 4H) and c of shape (N, H), got ", gates.sizes(), " and ", c.sizes());
  EMBER_CHECK(gates.device() == c.device(), op, ": expected gates and c on one device, got ", gates.device().str(),
              " and ", c.device().str());
}

void check_gru_cell(const char* op, const Tensor& xg, const Tensor& hg, const Tensor& h) {
  EMBER_CHECK(xg.dim() == 2 && hg.dim() == 2 && h.dim() == 2 && IntArrayRef(xg.sizes()) == IntArrayRef(hg.sizes()) &&
                  xg.size(0) == h.size(0) && xg.size(1) == 3 * h.size(1),
              op, ": expected input and hidden gates of shape (N, 3H) and h of shape (N, H), got ", xg.sizes(), ", ",
              hg.sizes(), " and ", h.sizes());
  EMBER_CHECK(xg.device() == h.device() && hg.device() == h.device(), op, ": expected tensors on one device, got ",
              xg.device().str(), ", ", hg.device().str(), " and ", h.device().str());
}

namespace {
using namespace autograd;

std::tuple<Tensor, Tensor> lstm_cell_composite(const Tensor& gates, const Tensor& c) {
  check_lstm_cell("_lstm_cell", gates, c);
  auto a = chunk(gates, 4, 1);
  Tensor i = sigmoid(a[0]), f = sigmoid(a[1]), g = tanh(a[2]), o = sigmoid(a[3]);
  Tensor c_new = add(mul(f, c), mul(i, g));
  return {mul(o, tanh(c_new)), c_new};
}

std::tuple<Tensor, Tensor> lstm_cell_backward_composite(const Tensor& gh, const Tensor& gc, const Tensor& gates,
                                                        const Tensor& c, const Tensor& c_new) {
  auto a = chunk(gates, 4, 1);
  Tensor i = sigmoid(a[0]), f = sigmoid(a[1]), g = tanh(a[2]), o = sigmoid(a[3]);
  Tensor t = tanh(c_new);
  Tensor dc = gc + gh * o * (1 - t * t);
  Tensor da_o = gh * t * (o * (1 - o));
  Tensor da_i = dc * g * (i * (1 - i));
  Tensor da_f = dc * c * (f * (1 - f));
  Tensor da_g = dc * i * (1 - g * g);
  return {cat({da_i, da_f, da_g, da_o}, 1), dc * f};
}

std::tuple<Tensor, Tensor> lstm_cell_ag(const Tensor& gates, const Tensor& c) {
  auto [h, c_new] = below_autograd([&] { return ops::_lstm_cell()(gates, c); });
  record("ThnnFusedLstmCellBackward0", {gates, c}, {h, c_new},
         {saved_input(gates), saved_input(c), saved_output(c_new)},
         [](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor gates = n.unpack(0), c = n.unpack(1), c_new = n.unpack(2);
           Tensor gh = g[0].defined() ? g[0] : zeros_like(c_new);
           Tensor gc = g[1].defined() ? g[1] : zeros_like(c_new);
           // create_graph: the composition, whose ops record their own gradients
           // (std::get, not a structured binding: clang before 16 cannot capture those in lambdas)
           const std::tuple<Tensor, Tensor> d = GradMode::is_enabled()
                                                    ? lstm_cell_backward_composite(gh, gc, gates, c, c_new)
                                                    : ops::_lstm_cell_backward()(gh, gc, gates, c, c_new);
           return {grad_for(n, 0, [&] { return std::get<0>(d); }), grad_for(n, 1, [&] { return std::get<1>(d); })};
         });
  return {h, c_new};
}

// The GRU step as the layer composed it: r, z, n, then h' = n + z (h - n).
Tensor gru_cell_composite(const Tensor& xg, const Tensor& hg, const Tensor& h) {
  check_gru_cell("_gru_cell", xg, hg, h);
  auto x = chunk(xg, 3, 1), hh = chunk(hg, 3, 1);
  Tensor r = sigmoid(add(x[0], hh[0])), z = sigmoid(add(x[1], hh[1]));
  Tensor n = tanh(add(x[2], mul(r, hh[2])));
  return add(n, mul(z, sub(h, n)));
}

//   dn = g (1 - z), dz = g (h - n), dh = g z
//   da_n = dn (1 - n^2)        -> grad_xg_n = da_n, grad_hg_n = da_n r
//   da_r = da_n hg_n r (1 - r) -> grad_xg_r = grad_hg_r = da_r
//   da_z = dz z (1 - z)        -> grad_xg_z = grad_hg_z = da_z
std::tuple<Tensor, Tensor, Tensor> gru_cell_backward_composite(const Tensor& g, const Tensor& xg, const Tensor& hg,
                                                               const Tensor& h) {
  auto x = chunk(xg, 3, 1), hh = chunk(hg, 3, 1);
  Tensor r = sigmoid(x[0] + hh[0]), z = sigmoid(x[1] + hh[1]);
  Tensor n = tanh(x[2] + r * hh[2]);
  Tensor da_n = g * (1 - z) * (1 - n * n);
  Tensor da_r = da_n * hh[2] * (r * (1 - r));
  Tensor da_z = g * (h - n) * (z * (1 - z));
  return {cat({da_r, da_z, da_n}, 1), cat({da_r, da_z, da_n * r}, 1), g * z};
}

Tensor gru_cell_ag(const Tensor& xg, const Tensor& hg, const Tensor& h) {
  Tensor out = below_autograd([&] { return ops::_gru_cell()(xg, hg, h); });
  record("ThnnFusedGruCellBackward0", {xg, hg, h}, {out}, {saved_input(xg), saved_input(hg), saved_input(h)},
         [](const variable_list& g, LambdaNode& n) -> variable_list {
           Tensor xg = n.unpack(0), hg = n.unpack(1), h = n.unpack(2);
           const std::tuple<Tensor, Tensor, Tensor> d = GradMode::is_enabled()
                                                            ? gru_cell_backward_composite(g[0], xg, hg, h)
                                                            : ops::_gru_cell_backward()(g[0], xg, hg, h);
           return {grad_for(n, 0, [&] { return std::get<0>(d); }), grad_for(n, 1, [&] { return std::get<1>(d); }),
                   grad_for(n, 2, [&] { return std::get<2>(d); })};
         });
  return out;
}

}  // namespace

Tensor gru_cell_pointwise(const Tensor& xg, const Tensor& hg, const Tensor& h) {
  check_gru_cell("_gru_cell", xg, hg, h);
  const DType dt = h.dtype();
  if (xg.dtype() != dt || hg.dtype() != dt || !(dt == kFloat32 || dt == kFloat64)) return gru_cell_composite(xg, hg, h);
  return ops::_gru_cell()(xg, hg, h);
}

std::tuple<Tensor, Tensor> lstm_cell_pointwise(const Tensor& gates, const Tensor& c) {
  check_lstm_cell("_lstm_cell", gates, c);
  // the fused kernels take float32/float64 of one dtype; anything else (autocast's mixes) composes
  if (gates.dtype() != c.dtype() || !(gates.dtype() == kFloat32 || gates.dtype() == kFloat64))
    return lstm_cell_composite(gates, c);
  return ops::_lstm_cell()(gates, c);
}

EMBER_REGISTER_KERNEL(_lstm_cell, Autograd, lstm_cell_ag);
EMBER_REGISTER_KERNEL(_lstm_cell, CompositeBackend, lstm_cell_composite);
EMBER_REGISTER_KERNEL(_lstm_cell_backward, CompositeBackend, lstm_cell_backward_composite);
EMBER_REGISTER_KERNEL(_gru_cell, Autograd, gru_cell_ag);
EMBER_REGISTER_KERNEL(_gru_cell, CompositeBackend, gru_cell_composite);
EMBER_REGISTER_KERNEL(_gru_cell_backward, CompositeBackend, gru_cell_backward_composite);

}  // namespace ember
