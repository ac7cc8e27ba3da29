"""Anomaly mode (``ag.detect_anomaly``): a NaN/Inf produced by a backward function raises naming it and shows
the traceback of the forward call that created it; off by default; ``check_nan=False``."""

import math

import pytest

import autograd as ag


def _sqrt_of_negative():
    x = ag.tensor([-1.0, 4.0], requires_grad=True)
    y = x.sqrt()  # the forward line the traceback must show
    return x, y


def test_nan_in_backward_names_the_function_and_the_forward_call():
    with ag.detect_anomaly():
        assert ag.is_anomaly_enabled()
        x, y = _sqrt_of_negative()
        with pytest.raises(RuntimeError, match=r"Function 'SqrtBackward0' returned nan values in its 0th output") \
                as e:
            y.sum().backward()
    msg = str(e.value)
    assert "Traceback of forward call that created SqrtBackward0" in msg
    assert __file__ in msg and "y = x.sqrt()" in msg and "_sqrt_of_negative" in msg
    assert not ag.is_anomaly_enabled()


def test_inf_in_backward_is_reported():
    with ag.detect_anomaly():
        x = ag.tensor([0.0, 1.0], requires_grad=True)
        y = x.log()
        with pytest.raises(RuntimeError, match=r"Function 'LogBackward0' returned inf values in its 0th output"):
            y.sum().backward()


def test_without_anomaly_mode_no_check():
    assert not ag.is_anomaly_enabled()
    x, y = _sqrt_of_negative()
    assert y.grad_fn._trace is None  # nothing recorded at forward time either
    y.sum().backward()
    g = x.grad.tolist()
    assert math.isnan(g[0]) and g[1] == 0.25


def test_check_nan_false_records_traces_but_does_not_check():
    with ag.detect_anomaly(check_nan=False):
        x, y = _sqrt_of_negative()
        assert y.grad_fn._trace is not None
        y.sum().backward()
    assert math.isnan(x.grad.tolist()[0])


def test_anomaly_as_decorator_and_set_detect_anomaly():
    @ag.detect_anomaly()
    def run():
        x, y = _sqrt_of_negative()
        y.sum().backward()

    with pytest.raises(RuntimeError, match="SqrtBackward0' returned nan"):
        run()
    ag.set_detect_anomaly(True)
    try:
        assert ag.is_anomaly_enabled()
    finally:
        ag.set_detect_anomaly(False)
    assert not ag.is_anomaly_enabled()


def test_error_inside_a_backward_function_gets_the_forward_trace():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with ag.detect_anomaly():
        h = x * 1
        y = h.exp()  # saves its output
        y.mul_(2)
        with pytest.raises(RuntimeError, match=r"(?s)modified by an inplace operation.*Traceback of forward call "
                                               r"that created ExpBackward0"):
            y.sum().backward()


def test_the_nth_output_is_named():
    class Two(ag.graph.Node):
        def backward(self, g):
            return g * 1, g * float("nan")

    a = ag.tensor([1.0], requires_grad=True)
    b = ag.tensor([1.0], requires_grad=True)
    with ag.detect_anomaly():
        node = Two((a, b))
        out = node.output((a.detach() + b.detach())._data)
        with pytest.raises(RuntimeError, match=r"Function 'Two' returned nan values in its 1th output"):
            out.sum().backward()
