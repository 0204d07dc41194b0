"""ember.backends.cuda: the matmul precision flags torch programs set, kept in C++
(ember/matmul_precision.h) where the CUDA GEMMs read them; the scaled-dot-product-attention
switches (enable_flash_sdp, enable_math_sdp, ..., sdp_kernel), kept in C++ (ember/sdp_flags.h)
where F.scaled_dot_product_attention reads them; and is_built()."""
import contextlib as _contextlib

from ... import _C


class _MatmulFlags:
    """torch.backends.cuda.matmul: allow_tf32 mirrors ember.get_float32_matmul_precision() as
    torch's does ("highest" <-> False, "high"/"medium" <-> True; setting True selects "high")."""

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self):
        return _C._cuda.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value):
        _C._cuda.set_float32_matmul_precision("high" if value else "highest")


matmul = _MatmulFlags()


def is_built():
    return bool(_C._cuda.is_built())


def preferred_linalg_library(backend=None):
    return "default"


def flash_sdp_enabled():
    """Whether F.scaled_dot_product_attention may take the flash-attention kernels (CUDA,
    float16/bfloat16, head dim 64 or 128, no mask, no dropout)."""
    return bool(_C._cuda.sdp_flags()[0])


def mem_efficient_sdp_enabled():
    return bool(_C._cuda.sdp_flags()[1])


def math_sdp_enabled():
    return bool(_C._cuda.sdp_flags()[2])


def enable_flash_sdp(enabled):
    _C._cuda.enable_flash_sdp(bool(enabled))


def enable_mem_efficient_sdp(enabled):
    _C._cuda.enable_mem_efficient_sdp(bool(enabled))


def enable_math_sdp(enabled):
    _C._cuda.enable_math_sdp(bool(enabled))


# cuDNN's attention kernel: torch's switch, kept for programs that set it; ember has no such
# kernel, so turning it on serves no call by itself.
_cudnn_sdp = [True]


def cudnn_sdp_enabled():
    return _cudnn_sdp[0]


def enable_cudnn_sdp(enabled):
    _cudnn_sdp[0] = bool(enabled)


@_contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    """torch.backends.cuda.sdp_kernel (deprecated in torch for torch.nn.attention.sdpa_kernel):
    sets the switches for the block and restores them after."""
    saved = (flash_sdp_enabled(), math_sdp_enabled(), mem_efficient_sdp_enabled(), cudnn_sdp_enabled())
    try:
        enable_flash_sdp(enable_flash)
        enable_math_sdp(enable_math)
        enable_mem_efficient_sdp(enable_mem_efficient)
        enable_cudnn_sdp(enable_cudnn)
        yield
    finally:
        enable_flash_sdp(saved[0])
        enable_math_sdp(saved[1])
        enable_mem_efficient_sdp(saved[2])
        enable_cudnn_sdp(saved[3])
