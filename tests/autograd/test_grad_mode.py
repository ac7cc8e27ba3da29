"""Grad modes: no_grad / enable_grad / set_grad_enabled / inference_mode as context managers and decorators
(with and without parentheses, on generators), nesting, thread-locality, inference tensors."""

import threading

import pytest

import autograd as ag


def _leaf():
    return ag.tensor([1.0, 2.0], requires_grad=True)


def test_no_grad_and_nested_enable_grad():
    x = _leaf()
    assert ag.is_grad_enabled()
    with ag.no_grad():
        assert not ag.is_grad_enabled()
        y = x * 2
        assert not y.requires_grad and y.grad_fn is None
        with ag.enable_grad():
            assert ag.is_grad_enabled() and (x * 2).requires_grad
            with ag.no_grad():
                assert not (x * 2).requires_grad
            assert (x * 2).requires_grad
        assert not ag.is_grad_enabled()
    assert ag.is_grad_enabled() and (x * 2).requires_grad


def test_modes_restore_after_an_exception():
    with pytest.raises(ValueError), ag.no_grad():
        raise ValueError
    assert ag.is_grad_enabled()
    with pytest.raises(ValueError), ag.inference_mode():
        raise ValueError
    assert ag.is_grad_enabled() and not ag.is_inference_mode_enabled()


def test_decorators_with_and_without_parentheses():
    x = _leaf()

    @ag.no_grad()
    def f():
        return (x * 2).requires_grad

    @ag.no_grad
    def g():
        return (x * 2).requires_grad

    @ag.enable_grad
    def h():
        return (x * 2).requires_grad

    @ag.inference_mode
    def i():
        return ag.is_inference_mode_enabled(), (x * 2).requires_grad

    @ag.inference_mode(False)
    def j():
        return ag.is_inference_mode_enabled()

    @ag.set_grad_enabled(False)
    def k():
        return ag.is_grad_enabled()

    assert f() is False and g() is False and f.__name__ == "f" and g.__name__ == "g"
    with ag.no_grad():
        assert h() is True
    assert i() == (True, False)
    with ag.inference_mode():
        assert j() is False
    assert k() is False and ag.is_grad_enabled()


def test_decorated_function_recursion_and_generators():
    @ag.no_grad()
    def gen():
        for _ in range(2):
            yield ag.is_grad_enabled()

    g = gen()
    assert next(g) is False
    assert ag.is_grad_enabled()  # outside the generator's body
    assert next(g) is False
    with pytest.raises(StopIteration):  # exhausted: a plain StopIteration, not "generator raised StopIteration"
        next(g)
    assert list(gen()) == [False, False]

    @ag.inference_mode()
    def empty():
        return "done"
        yield  # noqa: B901 - (a generator function that returns at once)

    assert list(empty()) == []
    r = []

    def delegate():
        r.append((yield from empty()))

    assert list(delegate()) == [] and r == ["done"]  # the return value passes through

    @ag.no_grad()
    def echo():
        got = yield 1
        yield got

    e = echo()
    assert next(e) == 1 and e.send(5) == 5


def test_set_grad_enabled_as_function_and_context():
    ag.set_grad_enabled(False)
    try:
        assert not ag.is_grad_enabled()
    finally:
        ag.set_grad_enabled(True)
    assert ag.is_grad_enabled()
    with ag.set_grad_enabled(False):
        assert not ag.is_grad_enabled()
        with ag.set_grad_enabled(True):
            assert ag.is_grad_enabled()
        assert not ag.is_grad_enabled()
    assert ag.is_grad_enabled()
    with pytest.raises(TypeError, match="mode must be a bool"):
        ag.set_grad_enabled(1)


def test_grad_mode_is_thread_local():
    inside, other = threading.Event(), threading.Event()
    seen = {}

    def worker():
        inside.wait(5)
        seen["enabled"] = ag.is_grad_enabled()
        seen["records"] = (_leaf() * 2).requires_grad
        other.set()

    t = threading.Thread(target=worker)
    t.start()
    with ag.no_grad():
        inside.set()
        other.wait(5)
        assert not ag.is_grad_enabled()
    t.join()
    assert seen == {"enabled": True, "records": True}


def test_no_grad_in_thread_does_not_leak():
    def worker():
        ag.set_grad_enabled(False)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert ag.is_grad_enabled()


def test_inference_mode_tensors():
    x = _leaf()
    with ag.inference_mode():
        assert ag.is_inference_mode_enabled() and not ag.is_grad_enabled()
        it = ag.ones(2) * 2
        y = x * 2
    assert it.is_inference() and not it.requires_grad and not y.requires_grad
    assert not ag.ones(2).is_inference()
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        it * x  # mul saves both inputs
    (it + x).sum().backward()  # add saves nothing: allowed, like PyTorch
    assert x.grad.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor outside InferenceMode"):
        it.requires_grad_()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        it.add_(1)
    c = it.clone()
    assert not c.is_inference()
    (c * x).sum().backward()


def test_inference_mode_false_and_nesting():
    with ag.inference_mode():
        with ag.inference_mode(False):
            assert not ag.is_inference_mode_enabled()
        assert ag.is_inference_mode_enabled()
    assert not ag.is_inference_mode_enabled() and ag.is_grad_enabled()
