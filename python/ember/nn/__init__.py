"""ember.nn (torch.nn): Module, Parameter, the layers, functional, init and utils.

Module is pure Python with torch's semantics (subclass it as in PyTorch); the layers hold their
Parameters and their forward calls ember's C++ functional ops (RNN/LSTM/GRU: ember._VF, as
torch's call torch._VF; MultiheadAttention: F.multi_head_attention_forward).
"""
from .parameter import Parameter, UninitializedParameter, UninitializedBuffer, Buffer  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules.module import register_module_forward_hook, register_module_forward_pre_hook  # noqa: F401
from . import functional, init, utils, parallel, attention  # noqa: F401
from .parallel import DataParallel  # noqa: F401
from . import modules  # noqa: F401
