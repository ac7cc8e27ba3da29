"""Thread-local autograd state: grad mode, inference mode, anomaly mode, and their context managers.

Each context manager is also a decorator, like PyTorch's: ``@ag.no_grad()`` on a function runs its body
with gradient recording off. The state is per thread: a ``no_grad`` in one thread does not affect another.
"""

from __future__ import annotations

import functools
import inspect
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]


class _State(threading.local):
    def __init__(self):
        self.grad_enabled = True
        self.inference = False
        self.anomaly = False
        self.anomaly_check_nan = True
        self.autocast = None  # {device type: dtype} while an autocast region is active (autograd.amp)


STATE = _State()


def is_grad_enabled() -> bool:
    return STATE.grad_enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference


def is_anomaly_enabled() -> bool:
    return STATE.anomaly


class _DecoratorContextManager:
    """A context manager usable as a decorator (a fresh instance per call, so it nests and recurses)."""

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                # each step of the generator runs in the mode; its return value (StopIteration) ends this one
                gen = fn(*args, **kwargs)
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
                        except BaseException as e:
                            with self.clone():
                                response = gen.throw(e)
                        else:
                            with self.clone():
                                response = gen.send(request)
                except StopIteration as e:
                    return e.value
            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return type(self)()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as a bare decorator (``@ag.no_grad`` without parentheses), like PyTorch's."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):  # noqa: N801 - PyTorch's name
    """Operations inside record no graph: results have ``requires_grad=False``."""

    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = False

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev
        return False


class enable_grad(_NoParamDecoratorContextManager):  # noqa: N801
    """Turns gradient recording back on inside ``no_grad`` (not inside ``inference_mode``... it does, like
    PyTorch, record again but tensors created in inference mode stay inference tensors)."""

    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = True

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):  # noqa: N801
    """``set_grad_enabled(False)`` as a function call sets the mode; as a context manager it restores it."""

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): mode must be a bool, got {type(mode).__name__}")
        self.prev = STATE.grad_enabled
        self.mode = mode
        STATE.grad_enabled = mode

    def __call__(self, fn):
        STATE.grad_enabled = self.prev  # as a decorator it sets nothing now, only while fn runs (PyTorch)
        return super().__call__(fn)

    def __enter__(self):
        STATE.grad_enabled = self.mode

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev
        return False

    def clone(self):
        return type(self)(self.mode)


class inference_mode(_DecoratorContextManager):  # noqa: N801
    """Like ``no_grad`` and stricter: tensors created inside are *inference tensors*, which can never be
    recorded in a graph later (using one in an op that records a graph raises)."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # bare decorator: @ag.inference_mode

    def __init__(self, mode: bool = True):
        self.mode = mode

    def __enter__(self):
        self.prev = (STATE.grad_enabled, STATE.inference)
        if self.mode:
            STATE.grad_enabled = False
            STATE.inference = True
        else:
            STATE.inference = False

    def __exit__(self, *exc):
        STATE.grad_enabled, STATE.inference = self.prev
        return False

    def clone(self):
        return type(self)(self.mode)


class detect_anomaly(_DecoratorContextManager):  # noqa: N801
    """Record where each graph node was created and check every backward result for NaN/Inf; an error in
    a backward function then names the node (``SqrtBackward0 returned nan values in its 0th output``) and
    shows the traceback of the forward call that created it. Slows backward: for debugging."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = (STATE.anomaly, STATE.anomaly_check_nan)
        STATE.anomaly = True
        STATE.anomaly_check_nan = self.check_nan

    def __exit__(self, *exc):
        STATE.anomaly, STATE.anomaly_check_nan = self.prev
        return False

    def clone(self):
        return type(self)(self.check_nan)


def set_detect_anomaly(mode: bool, check_nan: bool = True) -> None:
    STATE.anomaly = bool(mode)
    STATE.anomaly_check_nan = check_nan
