"""Anomaly detection switches (torch.autograd.detect_anomaly / set_detect_anomaly).

ember keeps the flag so that code which turns anomaly detection on runs unchanged, but its
engine does not yet add the checks (NaN detection, forward tracebacks) torch adds.
"""
import threading

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]

_state = {"enabled": False}
_lock = threading.Lock()


def is_anomaly_enabled():
    return _state["enabled"]


class set_detect_anomaly:
    """Sets the anomaly-detection flag now; as a context manager, restores it on exit."""

    def __init__(self, mode, check_nan=True):
        with _lock:
            self.prev = _state["enabled"]
            _state["enabled"] = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        with _lock:
            _state["enabled"] = self.prev


class detect_anomaly:
    """Context manager (and decorator) turning the anomaly-detection flag on."""

    def __init__(self, check_nan=True):
        self.prev = False

    def __enter__(self):
        with _lock:
            self.prev = _state["enabled"]
            _state["enabled"] = True
        return self

    def __exit__(self, *exc):
        with _lock:
            _state["enabled"] = self.prev

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return func(*args, **kwargs)
        return wrapper
