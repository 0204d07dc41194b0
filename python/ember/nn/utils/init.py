"""skip_init: a module for callers that load or initialise its parameters themselves."""
import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs), whose parameter and buffer values the caller must not rely on.

    torch builds the module on the meta device and gives it empty storage, skipping the
    initialisation work. ember has no meta device yet, so the module is built normally: its values
    are the default initialisation (a valid instance of "uninitialised"), and nothing is saved in
    time. Like torch's, it requires the module to take a `device` argument."""
    from ..modules.module import Module
    if not (inspect.isclass(module_cls) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)
