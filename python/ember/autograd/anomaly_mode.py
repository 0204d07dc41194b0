"""Anomaly detection switches (torch.autograd.detect_anomaly / set_detect_anomaly).

With check_nan (the default) the engine checks the gradients every backward node returns and
raises at the first NaN, naming the node ("Function 'DivBackward0' returned nan values in its 0th
output."), as torch does (C++: ember/autograd/anomaly_mode.h). torch also prints the forward
traceback of that node; ember does not record forward tracebacks.
"""
import threading

from .. import _C

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]

_state = {"enabled": False, "check_nan": True}
_lock = threading.Lock()


def is_anomaly_enabled():
    return _state["enabled"]


def is_anomaly_check_nan_enabled():
    return _state["enabled"] and _state["check_nan"]


class set_detect_anomaly:
    """Sets the anomaly-detection flag now; as a context manager, restores it on exit."""

    def __init__(self, mode, check_nan=True):
        with _lock:
            self.prev = (_state["enabled"], _state["check_nan"])
            _state["enabled"] = bool(mode)
            _state["check_nan"] = bool(check_nan)
            _C._set_anomaly_mode(_state["enabled"], _state["check_nan"])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        with _lock:
            _state["enabled"], _state["check_nan"] = self.prev
            _C._set_anomaly_mode(_state["enabled"], _state["check_nan"])


class detect_anomaly:
    """Context manager (and decorator) turning the anomaly-detection flag on."""

    def __init__(self, check_nan=True):
        self.check_nan = bool(check_nan)
        self.prev = (False, True)

    def __enter__(self):
        with _lock:
            self.prev = (_state["enabled"], _state["check_nan"])
            _state["enabled"], _state["check_nan"] = True, self.check_nan
            _C._set_anomaly_mode(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        with _lock:
            _state["enabled"], _state["check_nan"] = self.prev
            _C._set_anomaly_mode(_state["enabled"], _state["check_nan"])

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return func(*args, **kwargs)
        return wrapper
