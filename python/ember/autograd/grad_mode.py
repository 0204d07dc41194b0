"""Grad mode: no_grad, enable_grad, set_grad_enabled, inference_mode.

Each is a context manager and a decorator (``@ember.no_grad()``; the bare ``@ember.no_grad``
form of torch 2 also works for no_grad, enable_grad and inference_mode). The mode lives in the
C++ library and is per thread, as in torch: a thread started inside ``no_grad`` has grad
enabled.
"""
import functools
import inspect
import sys

from .. import _C

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]

is_grad_enabled = _C.is_grad_enabled
is_inference_mode_enabled = _C.is_inference_mode_enabled


class _DecoratorContextManager:
    """A context manager that also decorates functions (and generator functions) so that every
    call runs inside a fresh copy of it."""

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def decorate_context(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return decorate_context

    def _wrap_generator(self, func):
        # A generator is suspended at each yield: the mode must hold while it runs and the
        # caller's mode while the caller runs, so every resumption re-enters the context.
        @functools.wraps(func)
        def generator_context(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException:
                        with self.clone():
                            response = gen.throw(*sys.exc_info())
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as e:
                return e.value
        return generator_context

    def clone(self):
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also allows the bare decorator form: ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disables gradient recording in this thread: results of ops have requires_grad=False."""

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, exc_type, exc_value, traceback):
        _C._set_grad_enabled(self.prev)


class enable_grad(_NoParamDecoratorContextManager):
    """Enables gradient recording in this thread (inside no_grad, for example)."""

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, exc_type, exc_value, traceback):
        _C._set_grad_enabled(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode to `mode` right away (usable as a plain function) and, as a context
    manager or decorator, restores the previous mode on exit."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not {type(mode).__name__}")
        self.prev = _C.is_grad_enabled()
        self.mode = mode
        _C._set_grad_enabled(mode)

    def __call__(self, func):
        # Used as a decorator: the mode applies to the calls, not to the decoration itself.
        _C._set_grad_enabled(self.prev)
        return super().__call__(func)

    def __enter__(self):
        pass

    def __exit__(self, exc_type, exc_value, traceback):
        _C._set_grad_enabled(self.prev)

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_NoParamDecoratorContextManager):
    """Like no_grad, for code that never needs autograd. inference_mode(False) leaves inference
    mode (and enables grad), as in torch. ember does not mark tensors made inside as inference
    tensors."""

    def __new__(cls, mode=True):
        if callable(mode):  # bare @inference_mode
            return cls()(mode)
        return object.__new__(cls)

    def __init__(self, mode=True):
        self.mode = mode
        self._prev = None

    def __enter__(self):
        self._prev = _C._enter_inference_mode(bool(self.mode))

    def __exit__(self, exc_type, exc_value, traceback):
        _C._exit_inference_mode(self._prev)

    def clone(self):
        return self.__class__(self.mode)
