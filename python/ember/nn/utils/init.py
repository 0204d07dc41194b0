"""skip_init: a module for callers that load or initialise its parameters themselves."""
import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) without its initialisation, as torch's: the module is built on
    the meta device (no memory, nothing computed) and given uninitialised storage on the device
    asked for (`device=`, default the CPU) with `to_empty`. Requires the module to take a `device`
    argument."""
    from ..modules.module import Module
    if not (inspect.isclass(module_cls) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
