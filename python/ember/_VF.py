"""torch._VF: the recurrent-layer functions nn.RNN / LSTM / GRU call with their flat weights,
`lstm(input, (h_0, c_0), params, has_biases, num_layers, dropout, train, bidirectional, batch_first)`
and `rnn_tanh` / `rnn_relu` / `gru` with a single `hx` (include/ember/nn/functional.h). Unlike
torch's, they also take unbatched input and `hx=None` / `()` (zeros), and make the argument checks
that torch's modules make before calling them."""
from ._C._nn import rnn_tanh, rnn_relu, gru, lstm  # noqa: F401

__all__ = ["rnn_tanh", "rnn_relu", "gru", "lstm"]


# ---- single steps (torch._VF.lstm_cell / gru_cell / rnn_tanh_cell / rnn_relu_cell), what
# nn.LSTMCell / GRUCell / RNNCell call: one time step of the C++ recurrence above (the same gate
# math the layers run), on batched (N, in) input and (N, H) state.

def _check_cell_input(input, w_ih):
    if input.size(1) != w_ih.size(1):
        raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {w_ih.size(1)}")


def _check_cell_hidden(input, hx, hidden_size, label):
    if input.size(0) != hx.size(0):
        raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{label} batch size {hx.size(0)}")
    if hx.size(1) != hidden_size:
        raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {hx.size(1)}, expected {hidden_size}")


def _cell_params(w_ih, w_hh, b_ih, b_hh):
    if b_ih is None and b_hh is None:
        return [w_ih, w_hh], False
    from . import _C
    if b_ih is None:
        b_ih = _C.zeros_like(b_hh)
    if b_hh is None:
        b_hh = _C.zeros_like(b_ih)
    return [w_ih, w_hh, b_ih, b_hh], True


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _check_cell_input(input, w_ih)
    _check_cell_hidden(input, hx[0], w_hh.size(1), 0)
    _check_cell_hidden(input, hx[1], w_hh.size(1), 1)
    params, has_biases = _cell_params(w_ih, w_hh, b_ih, b_hh)
    _, h, c = lstm(input.unsqueeze(0), (hx[0].unsqueeze(0), hx[1].unsqueeze(0)), params, has_biases, 1, 0.0, False,
                   False, False)
    return h.squeeze(0), c.squeeze(0)


def _single_state_cell(fn):
    def cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
        _check_cell_input(input, w_ih)
        _check_cell_hidden(input, hx, w_hh.size(1), 0)
        params, has_biases = _cell_params(w_ih, w_hh, b_ih, b_hh)
        _, h = fn(input.unsqueeze(0), hx.unsqueeze(0), params, has_biases, 1, 0.0, False, False, False)
        return h.squeeze(0)
    return cell


gru_cell = _single_state_cell(gru)
rnn_tanh_cell = _single_state_cell(rnn_tanh)
rnn_relu_cell = _single_state_cell(rnn_relu)

__all__ += ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"]
