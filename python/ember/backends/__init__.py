"""ember.backends: flags torch programs read or set (cudnn.benchmark, mps availability)."""
import types as _types

cudnn = _types.SimpleNamespace(benchmark=False, deterministic=False, enabled=True, allow_tf32=True,
                               is_available=lambda: False)
mps = _types.SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
cuda = _types.SimpleNamespace(matmul=_types.SimpleNamespace(allow_tf32=False), is_built=lambda: False)
