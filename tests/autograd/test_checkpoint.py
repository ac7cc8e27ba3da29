"""Activation checkpointing (gradients equal to the unchecked run, dropout masks reproduced, memory saved) and
the saved-tensor memory ledger ``autograd.graph.saved_tensors_report``."""

import inspect
import warnings

import numpy as np
import pytest

import autograd as ag
from autograd.checkpoint import checkpoint, checkpoint_sequential

MODES = [False, True]  # use_reentrant


def _np(t):
    return t.detach().cpu().numpy()


def _leaf(shape, seed, device="cpu", dtype=ag.float64):
    a = np.random.default_rng(seed).standard_normal(shape)
    return ag.tensor(a, dtype=dtype, device=device, requires_grad=True)


def _dropout(h, p=0.4):
    keep = (ag.rand(*h.shape, dtype=h.dtype, device=h.device) > p).to(h.dtype)
    return h * keep / (1 - p)


def block(x, w, b):
    """Two outputs, dropout in the middle."""
    h = (x @ w + b).tanh()
    h = _dropout(h)
    return h.exp(), (h * h).sum(dim=1)


def _loss(outs):
    y, s = outs
    return (y * y).sum() + (s * 3).sum()


def _grads(fn, inputs, seed=7):
    ag.manual_seed(seed)
    loss = _loss(fn(*inputs))
    grads = ag.grad(loss, inputs)
    return _np(loss), [_np(g) for g in grads]


@pytest.mark.parametrize("reentrant", MODES)
def test_gradients_equal_without_checkpoint_dropout_two_outputs(reentrant):
    inputs = (_leaf((4, 5), 0), _leaf((5, 6), 1), _leaf((6,), 2))
    l0, g0 = _grads(block, inputs)
    l1, g1 = _grads(lambda *a: checkpoint(block, *a, use_reentrant=reentrant), inputs)
    np.testing.assert_allclose(l1, l0)
    for a, b in zip(g1, g0):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert any(np.abs(g).sum() > 0 for g in g0)


@pytest.mark.parametrize("reentrant", MODES)
def test_rng_state_restored_and_left_as_without_checkpoint(reentrant):
    x = _leaf((3, 4), 3)
    ag.manual_seed(11)
    y = checkpoint(_dropout, x, use_reentrant=reentrant)
    after_forward = _np(ag.rand(3))
    y.sum().backward()  # recomputes with the state of the forward, then puts the current one back
    after_backward = _np(ag.rand(3))
    ag.manual_seed(11)
    ref = _dropout(x)
    np.testing.assert_array_equal(_np(ag.rand(3)), after_forward)
    np.testing.assert_array_equal(_np(ag.rand(3)), after_backward)
    np.testing.assert_allclose(_np(x.grad), _np((ref != 0).to(ag.float64)) / 0.6)


def test_without_preserved_rng_state_masks_differ():
    x = _leaf((50,), 4)
    ag.manual_seed(5)
    y = checkpoint(_dropout, x, use_reentrant=False, preserve_rng_state=False)
    kept = _np(y) != 0
    y.sum().backward()
    assert not np.array_equal(_np(x.grad) != 0, kept)  # the recomputation drew another mask


@pytest.mark.parametrize("reentrant", MODES)
def test_parameters_closed_over_get_gradients(reentrant):
    w, b = _leaf((5, 3), 6), _leaf((3,), 7)
    x = _leaf((2, 5), 8)

    def layer(inp):
        return (inp @ w + b).sigmoid()

    ref = ag.grad((layer(x) ** 2).sum(), (x, w, b))
    (checkpoint(layer, x, use_reentrant=reentrant) ** 2).sum().backward()
    for t, r in zip((x, w, b), ref):
        np.testing.assert_allclose(_np(t.grad), _np(r), rtol=1e-12)


def test_inputs_not_requiring_grad():
    w = _leaf((4, 4), 9)
    x = ag.tensor(np.random.default_rng(10).standard_normal((2, 4)))
    (gw_ref,) = ag.grad(((x @ w).tanh() @ w).sum(), w)
    y = checkpoint(lambda t: (t @ w).tanh() @ w, x)
    (gw,) = ag.grad(y.sum(), w)
    np.testing.assert_allclose(_np(gw), _np(gw_ref), rtol=1e-12)
    with pytest.warns(UserWarning, match="none of the inputs have requires_grad=True"):
        y = checkpoint(lambda t: t @ w, x, use_reentrant=True)
    assert y.grad_fn is None  # reentrant mode records nothing then (PyTorch's behaviour, with its warning)


def test_memory_saved_in_report():
    inputs = (_leaf((16, 32), 0), _leaf((32, 64), 1), _leaf((64,), 2))
    ag.manual_seed(0)
    plain = ag.graph.saved_tensors_report(_loss(block(*inputs)))
    for reentrant in MODES:
        ag.manual_seed(0)
        rep = ag.graph.saved_tensors_report(_loss(checkpoint(block, *inputs, use_reentrant=reentrant)))
        assert rep.total < plain.total / 2, (reentrant, rep.total, plain.total)
    # the reentrant node keeps exactly its tensor inputs
    ag.manual_seed(0)
    rep = ag.graph.saved_tensors_report(_loss(checkpoint(block, *inputs, use_reentrant=True)))
    row = [r for r in rep.rows if r["op"] == "CheckpointFunctionBackward"]
    assert len(row) == 1 and row[0]["bytes"] == sum(t.nbytes for t in inputs)


def test_input_modified_in_place_after_forward_errors():
    x = _leaf((3,), 12)
    h = x * 1
    y = checkpoint(lambda t: t.exp() * t, h)
    h.add_(1)
    with pytest.raises(RuntimeError, match=r"checkpoint: argument 0 .* modified by an inplace operation after the "
                                           r"forward pass \(version 1; expected version 0\)"):
        y.sum().backward()
    h2 = x * 1
    y = checkpoint(lambda t: t.exp() * t, h2, use_reentrant=True)
    h2.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_no_grad_runs_plainly_and_kwargs():
    x = _leaf((3,), 13)
    with ag.no_grad():
        y = checkpoint(lambda t, s=1.0: t * s, x, s=2.0)
    assert y.grad_fn is None
    np.testing.assert_allclose(_np(y), 2 * _np(x))
    y = checkpoint(lambda t, s=1.0: (t * s).exp(), x, s=2.0)
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), 2 * np.exp(2 * _np(x)))
    with pytest.raises(ValueError, match="unexpected keyword arguments s"):
        checkpoint(lambda t, s=1.0: t * s, x, s=2.0, use_reentrant=True)


def test_double_backward_non_reentrant():
    x, w = _leaf((3, 4), 14), _leaf((4, 2), 15)

    def f(a, b):
        return (a @ b).tanh().exp()

    def second(fn):
        (g,) = ag.grad(fn(x, w).sum(), x, create_graph=True)
        return [_np(g)] + [_np(t) for t in ag.grad((g * g).sum(), (x, w))]

    ref = second(f)
    got = second(lambda a, b: checkpoint(f, a, b))
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_double_backward_reentrant_raises():
    x = _leaf((3,), 16)
    (g,) = ag.grad((checkpoint(lambda t: t.exp(), x, use_reentrant=True) ** 2).sum(), x, create_graph=True)
    np.testing.assert_allclose(_np(g), 2 * np.exp(2 * _np(x)))
    with pytest.raises(RuntimeError, match="differentiate twice"):
        g.sum().backward()


def test_nested_checkpoints():
    x = _leaf((4,), 17)

    def inner(t):
        return t.sin() * t

    def outer(t):
        return checkpoint(inner, t.exp()).cos()

    (ref,) = ag.grad(inner(x.exp()).cos().sum(), x)
    (g,) = ag.grad(checkpoint(outer, x).sum(), x)
    np.testing.assert_allclose(_np(g), _np(ref), rtol=1e-12)


def test_retain_graph_twice():
    x = _leaf((3,), 18)
    y = checkpoint(lambda t: t.exp() * t, x)
    y.sum().backward(retain_graph=True)
    first = _np(x.grad).copy()
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), 2 * first)


def test_nondeterministic_function_is_detected():
    x = _leaf((3,), 19)
    calls = []

    def f(t):
        calls.append(1)
        return t.exp() if len(calls) == 1 else t.sin().exp()

    y = checkpoint(f, x)
    with pytest.raises(RuntimeError, match="recomputing the checkpointed function recorded different operations"):
        y.sum().backward()


def test_checkpoint_sequential():
    ws = [_leaf((4, 4), s) for s in range(20, 25)]
    fns = [(lambda t, w=w: (t @ w).tanh()) for w in ws]
    x = _leaf((2, 4), 25)

    def run():
        h = x
        for f in fns:
            h = f(h)
        return h

    ref = ag.grad(run().sum(), [x, *ws])
    for segments in (1, 2, 3, 5):
        got = ag.grad(checkpoint_sequential(fns, segments, x).sum(), [x, *ws])
        for a, b in zip(got, ref):
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12)
    with pytest.raises(ValueError, match="segments must be in"):
        checkpoint_sequential(fns, 0, x)


@pytest.mark.skipif(not ag.cuda.is_available(), reason="needs cuda (interpreted is enough)")
@pytest.mark.parametrize("reentrant", MODES)
def test_on_interpreted_cuda(reentrant):
    def f(x, w):
        h = (x * w).tanh()
        return h.exp(), (h * h).sum()

    res = {}
    for dev in ("cpu", "cuda"):
        x, w = _leaf((3, 5), 26, dev, ag.float32), _leaf((5,), 27, dev, ag.float32)
        y, s = checkpoint(f, x, w, use_reentrant=reentrant)
        assert y.device.type == dev
        (y.sum() + s).backward()
        res[dev] = (_np(x.grad), _np(w.grad))
    for a, b in zip(res["cuda"], res["cpu"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------------ the ledger
def _line_of(marker):
    src, start = inspect.getsourcelines(test_report_rows_bytes_and_sites)
    return start + next(i for i, s in enumerate(src) if marker in s)


def test_report_rows_bytes_and_sites():
    x = ag.tensor(np.random.default_rng(0).standard_normal((8, 16)), dtype=ag.float32, requires_grad=True)
    w = ag.tensor(np.random.default_rng(1).standard_normal((16, 4)), dtype=ag.float32, requires_grad=True)
    h = x @ w  # MARK-mm
    e = h.exp()  # MARK-exp
    loss = (e * h).sum()  # MARK-mul
    rep = ag.graph.saved_tensors_report(loss)
    ops = [r["op"] for r in rep.rows]
    assert ops == ["MmBackward0", "ExpBackward0", "MulBackward0"]  # creation order; SumBackward0 saves nothing
    by = {r["op"]: r for r in rep.rows}
    assert by["MmBackward0"]["bytes"] == x.nbytes + w.nbytes == (8 * 16 + 16 * 4) * 4
    assert by["ExpBackward0"]["bytes"] == 8 * 4 * 4  # its output
    assert by["MulBackward0"]["bytes"] == 2 * 8 * 4 * 4  # e and h
    assert by["ExpBackward0"]["shapes"] == ["float32[8, 4]"]
    for op, mark in (("MmBackward0", "MARK-mm"), ("ExpBackward0", "MARK-exp"), ("MulBackward0", "MARK-mul")):
        assert by[op]["site"] == f"{__file__}:{_line_of(mark)} in test_report_rows_bytes_and_sites", by[op]["site"]
    # total: each storage once (e saved by Exp and Mul, h by Mul only; x, w by Mm)
    assert rep.total == x.nbytes + w.nbytes + e.nbytes + h.nbytes
    assert sum(r["bytes"] for r in rep.rows) == rep.total + e.nbytes
    text = str(rep)
    assert "total (distinct storages)" in text and str(rep.total) in text.splitlines()[-1]
    assert "MmBackward0" in text and "test_checkpoint.py" in text


def test_report_shared_storage_views_counted_once_and_after_backward():
    x = ag.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    y = x.exp()
    a, b = y[0], y[1:]  # views of one storage
    loss = (a * a).sum() + (b * b).sum()
    rep = ag.graph.saved_tensors_report(loss)
    assert rep.total == y.nbytes  # Exp saves y; the two Muls save views of it
    loss.backward()
    assert ag.graph.saved_tensors_report(loss).total == 0  # freed by backward
    assert ag.graph.saved_tensors_report(ag.tensor([1.0])).rows == []  # no graph


def test_report_several_roots_and_function_nodes():
    from autograd.function import Function

    class Square(Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return 2 * t * g

    x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y1 = Square.apply(x)
    y2 = x.exp()
    rep = ag.graph.saved_tensors_report(y1, y2)
    assert [r["op"] for r in rep.rows] == ["SquareBackward", "ExpBackward0"]
    assert rep.total == x.nbytes + y2.nbytes
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        str(rep)
