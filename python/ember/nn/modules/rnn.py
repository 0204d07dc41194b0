"""RNN, LSTM, GRU: C++-backed (include/ember/nn/rnn.h); see _cpp.py for how they share tensors."""
import math
import numbers
import warnings

from ... import _C
from ._cpp import CppModule

__all__ = ["RNNBase", "RNN", "LSTM", "GRU"]


class RNNBase(CppModule):
    mode = None
    _cpp_class = None

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None, nonlinearity="tanh"):
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be an integer greater than zero")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("num_layers must be an integer greater than zero")
        if proj_size != 0:
            raise NotImplementedError("ember: LSTM(proj_size=...) is not supported")
        if self.mode in ("RNN_TANH", "RNN_RELU") and nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        cpp = self._cpp_class(input_size, hidden_size, num_layers, nonlinearity, bias, batch_first, float(dropout),
                              bidirectional)
        init_args = ((input_size, hidden_size), dict(num_layers=num_layers, bias=bias, batch_first=batch_first,
                                                     dropout=dropout, bidirectional=bidirectional))
        if self.mode in ("RNN_TANH", "RNN_RELU"):
            init_args[1]["nonlinearity"] = nonlinearity
        super().__init__(cpp, init_args)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        if self.mode in ("RNN_TANH", "RNN_RELU"):
            self.nonlinearity = nonlinearity
        if dtype is not None or (device is not None and str(device) != "cpu"):
            self.to(device=device, dtype=dtype)

    @property
    def _flat_weights_names(self):
        return list(self._parameters.keys())

    @property
    def _flat_weights(self):
        return [p for p in self._parameters.values()]

    @property
    def all_weights(self):
        per_layer = 4 if self.bias else 2
        names = self._flat_weights_names
        return [[getattr(self, n) for n in names[i:i + per_layer]] for i in range(0, len(names), per_layer)]

    def flatten_parameters(self):
        pass

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size)
        from .. import init
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)


class RNN(RNNBase):
    _cpp_class = _C._nn.RNN

    def __init__(self, *args, **kwargs):
        nonlinearity = kwargs.get("nonlinearity", "tanh")
        self.__dict__["mode"] = "RNN_RELU" if nonlinearity == "relu" else "RNN_TANH"
        super().__init__(*args, **kwargs)

    def forward(self, input, hx=None):
        self._sync_cpp()
        output, h_n = self._cpp.forward(input, hx)
        return output, h_n


class GRU(RNNBase):
    _cpp_class = _C._nn.GRU
    mode = "GRU"

    def forward(self, input, hx=None):
        self._sync_cpp()
        output, h_n = self._cpp.forward(input, hx)
        return output, h_n


class LSTM(RNNBase):
    _cpp_class = _C._nn.LSTM
    mode = "LSTM"

    def forward(self, input, hx=None):
        self._sync_cpp()
        if hx is None:
            output, h_n, c_n = self._cpp.forward(input)
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise RuntimeError("LSTM: hx must be a tuple (h_0, c_0)")
            output, h_n, c_n = self._cpp.forward(input, hx[0], hx[1])
        return output, (h_n, c_n)
