"""ember.autograd.graph: the nodes of the autograd graph as Python objects, and the hooks on the
tensors the graph saves for backward.

``tensor.grad_fn`` is an instance of a subclass of Node named after the operation
(MulBackward0, AccumulateGrad, ExpBackward for a Python Function Exp, ...), with ``name()`` and
``next_functions`` ((node or None, input index) per input of the operation).

``saved_tensors_hooks(pack_hook, unpack_hook)`` routes every tensor saved for backward inside
the block through pack_hook (what it returns is kept instead) and back through unpack_hook when
backward needs it (C++: ember/autograd/saved_tensor_hooks.h); ``save_on_cpu`` is the pair that
parks saved tensors in (optionally pinned) CPU memory until backward.
"""
import threading as _threading

from .. import _C

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]

Node = _C.Node
Node.__module__ = "ember.autograd.graph"

_disabled = _threading.local()  # .message: why hooks are refused on this thread, or absent


class saved_tensors_hooks:
    """Context manager: tensors saved for backward inside it go through pack_hook when saved
    and unpack_hook when backward unpacks them (innermost pair wins; per thread)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        message = getattr(_disabled, "message", None)
        if message is not None:
            raise RuntimeError(message)
        _C._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc):
        _C._pop_saved_tensors_hooks()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors live on the CPU (pinned if pin_memory) between forward and backward and go
    back to their device when backward needs them: GPU memory for activations traded for copies."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(tensor):
            if tensor.device.type == "cpu":
                return (tensor.device, tensor)
            from .. import cuda
            packed = _C.empty(tuple(tensor.shape), dtype=tensor.dtype, device="cpu",
                              pin_memory=bool(pin_memory and cuda.is_available()))
            packed.copy_(tensor)
            return (tensor.device, packed)

        def unpack(packed):
            device, tensor = packed
            return tensor if device.type == "cpu" else tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager (and decorator): entering saved_tensors_hooks inside it raises
    RuntimeError(error_message), for code whose saved tensors must stay as they are."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self._previous = getattr(_disabled, "message", None)
        _disabled.message = self.error_message
        return self

    def __exit__(self, *exc):
        _disabled.message = self._previous
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper
