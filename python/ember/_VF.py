"""torch._VF: the recurrent-layer functions nn.RNN / LSTM / GRU call with their flat weights,
`lstm(input, (h_0, c_0), params, has_biases, num_layers, dropout, train, bidirectional, batch_first)`
and `rnn_tanh` / `rnn_relu` / `gru` with a single `hx` (include/ember/nn/functional.h). Unlike
torch's, they also take unbatched input and `hx=None` / `()` (zeros), and make the argument checks
that torch's modules make before calling them."""
from ._C._nn import rnn_tanh, rnn_relu, gru, lstm  # noqa: F401

__all__ = ["rnn_tanh", "rnn_relu", "gru", "lstm"]
