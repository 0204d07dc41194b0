"""ember.backends.mkldnn: oneDNN (formerly MKL-DNN). ember's CPU kernels use it for float32 GEMM
and convolution when the library was built against it; is_available() says whether it was."""
from ... import _C

enabled = True


def is_available():
    return bool(_C._has_onednn())
