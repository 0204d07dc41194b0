"""MultiheadAttention and TransformerEncoderLayer (C++-backed, see _cpp.py) and TransformerEncoder
(Python: a ModuleList of deep copies of the layer plus an optional norm, as torch's)."""
import copy

from ... import _C
from .. import functional as F
from ._cpp import CppModule
from .container import ModuleList
from .module import Module

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder"]


class MultiheadAttention(CppModule):
    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if add_bias_kv or add_zero_attn or (kdim not in (None, embed_dim)) or (vdim not in (None, embed_dim)):
            raise NotImplementedError("ember: MultiheadAttention supports kdim == vdim == embed_dim without "
                                      "add_bias_kv / add_zero_attn")
        if embed_dim % num_heads != 0:
            raise AssertionError("embed_dim must be divisible by num_heads")
        cpp = _C._nn.MultiheadAttention(embed_dim, num_heads, float(dropout), bias, batch_first)
        super().__init__(cpp, ((embed_dim, num_heads),
                               dict(dropout=dropout, bias=bias, batch_first=batch_first)))
        self.embed_dim = embed_dim
        self.kdim = self.vdim = embed_dim
        self._qkv_same_embed_dim = True
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        if dtype is not None or (device is not None and str(device) != "cpu"):
            self.to(device=device, dtype=dtype)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        self._sync_cpp()
        return self._cpp.forward(query, key, value, key_padding_mask, need_weights, attn_mask,
                                 average_attn_weights, is_causal)


def _activation_name(activation):
    if isinstance(activation, str):
        if activation not in ("relu", "gelu"):
            raise RuntimeError(f"activation should be relu/gelu, not {activation}")
        return activation
    if activation is F.relu or type(activation).__name__ == "ReLU":
        return "relu"
    if activation is F.gelu or type(activation).__name__ == "GELU":
        return "gelu"
    raise NotImplementedError("ember: TransformerEncoderLayer supports the relu and gelu activations")


class TransformerEncoderLayer(CppModule):
    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, device=None, dtype=None):
        act = _activation_name(activation)
        cpp = _C._nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, float(dropout), act,
                                             float(layer_norm_eps), batch_first, norm_first)
        super().__init__(cpp, ((d_model, nhead), dict(dim_feedforward=dim_feedforward, dropout=dropout,
                                                       activation=activation, layer_norm_eps=layer_norm_eps,
                                                       batch_first=batch_first, norm_first=norm_first)))
        self.norm_first = norm_first
        self.batch_first = batch_first
        self.activation_relu_or_gelu = 1 if act == "relu" else 2
        self.activation = F.relu if act == "relu" else F.gelu
        if dtype is not None or (device is not None and str(device) != "cpu"):
            self.to(device=device, dtype=dtype)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        self._sync_cpp()
        return self._cpp.forward(src, src_mask, src_key_padding_mask, bool(is_causal))


class TransformerEncoder(Module):
    __constants__ = ["norm"]

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                         is_causal=bool(is_causal))
        if self.norm is not None:
            output = self.norm(output)
        return output
