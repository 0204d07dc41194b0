"""Tensor.is_xpu / is_mps / is_mkldnn / is_nested / ...: the device and layout predicates torch
programs test. ember tensors are strided and live on the CPU (or CUDA, is_cuda), never on these."""
from ._C import Tensor


def _false(self):
    return False


for _name in ("is_xpu", "is_mps", "is_mkldnn", "is_nested", "is_ipu", "is_vulkan", "is_ort", "is_sparse_csr",
              "is_maia", "is_hpu", "is_mtia"):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, property(_false))
