"""ember.backends.cuda: the matmul precision flags torch programs set, kept in C++
(ember/matmul_precision.h) where the CUDA GEMMs read them, and is_built()."""
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
