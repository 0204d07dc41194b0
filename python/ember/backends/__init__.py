"""ember.backends: the flags and queries torch programs read or set (cudnn.benchmark,
cuda.matmul.allow_tf32, mps/mkldnn availability), as real submodules so that
`import ember.backends.cudnn as cudnn` works like torch's."""
from . import cuda, cudnn, mkldnn, mps, openmp  # noqa: F401
