"""ember.nn.attention (torch.nn.attention): choosing the kernels behind
F.scaled_dot_product_attention. `with sdpa_kernel(SDPBackend.FLASH_ATTENTION):` enables only the
listed backends for the block and restores the switches after (they are the process-wide
switches of ember.backends.cuda: enable_flash_sdp, enable_math_sdp, ...).

ember's kernels: FLASH_ATTENTION (no mask, no dropout; on CUDA float16/bfloat16 with head dim
64 or 128, on the CPU any float dtype and head dim) and MATH (everywhere). EFFICIENT_ATTENTION
and CUDNN_ATTENTION are accepted, but ember has no such kernels: a call that only they could
serve fails saying which kernels apply."""
import contextlib as _contextlib
import enum as _enum

from ...backends import cuda as _cuda


class SDPBackend(_enum.IntEnum):
    """torch.nn.attention.SDPBackend's members and values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_SWITCHES = {
    SDPBackend.MATH: (_cuda.math_sdp_enabled, _cuda.enable_math_sdp),
    SDPBackend.FLASH_ATTENTION: (_cuda.flash_sdp_enabled, _cuda.enable_flash_sdp),
    SDPBackend.EFFICIENT_ATTENTION: (_cuda.mem_efficient_sdp_enabled, _cuda.enable_mem_efficient_sdp),
    SDPBackend.CUDNN_ATTENTION: (_cuda.cudnn_sdp_enabled, _cuda.enable_cudnn_sdp),
}


@_contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Enables exactly `backends` (one SDPBackend or a list) for the block, as torch's."""
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(backends)
    for b in backends:
        if not isinstance(b, SDPBackend):
            raise TypeError(f"sdpa_kernel: expected SDPBackend members, got {b!r}")
    saved = {b: get() for b, (get, _) in _SWITCHES.items()}
    try:
        for b, (_, set_) in _SWITCHES.items():
            set_(b in backends)
        yield
    finally:
        for b, (_, set_) in _SWITCHES.items():
            set_(saved[b])
