"""Fast paths of the NumPy backend on the eager training step, against the previous formulas (kept here as the
reference): bit-equal results on random odd-size inputs with the special values (NaN payloads, +-0.0, +-inf,
subnormals), views and every float dtype."""

import ml_dtypes
import numpy as np
import pytest

import tkernels as tk
from tkernels.backends.numpy import elementwise as npe

_SPECIAL = [-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, 1.0, -1.0, 1e-45, -1e-45, 3.5, -2.25]
_BITS = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(_BITS[a.dtype.itemsize])


def _values(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 3
    x[: min(n, len(_SPECIAL))] = _SPECIAL[: min(n, len(_SPECIAL))]
    rng.shuffle(x)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("n", [0, 1, 13, npe._ZERO_RUN, npe._ZERO_RUN + 7, 2 * npe._ZERO_RUN + 333])
def test_relu_matches_maximum_with_scalar_zero(dtype, n):
    x = _values(n, dtype)
    ref = np.maximum(x.astype(np.float32) if x.dtype.itemsize == 2 else x, 0).astype(dtype)  # the previous impl
    got = tk.relu(tk.asarray(x)).numpy()
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_array_equal(_bits(got), _bits(ref))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_views_and_shapes(dtype):
    x = _values(7 * 11 * 5, dtype, seed=1).reshape(7, 11, 5)
    for v in (x, x[:, ::2], x.transpose(2, 0, 1), x[3, 4, 2], x[:, :, :0]):
        ref = np.maximum(v, dtype(0))
        got = tk.relu(tk.asarray(v)).numpy()
        assert got.shape == ref.shape
        np.testing.assert_array_equal(_bits(got), _bits(ref))
    a = tk.asarray(x)
    out = tk.empty((7, 11, 5), dtype=tk.float32 if dtype is np.float32 else tk.float64)
    tk.relu(a, out=out)  # out= path
    np.testing.assert_array_equal(_bits(out.numpy()), _bits(np.maximum(x, dtype(0))))
    tk.relu(a, out=a)  # in place
    np.testing.assert_array_equal(_bits(a.numpy()), _bits(np.maximum(x, dtype(0))))


# ------------------------------------------------------------------ adam_step over states made as one buffer
def _state_lists(shapes, dtype, flat, rng):
    """exp_avg/exp_avg_sq/max lists: consecutive views of one buffer each (flat) or separate arrays."""
    out = []
    for _ in range(3):
        vals = [np.abs(rng.standard_normal(s)).astype(dtype) for s in shapes]
        if flat:
            buf = tk.asarray(np.concatenate([v.reshape(-1) for v in vals]))
            arrs, off = [], 0
            for v in vals:
                arrs.append(tk.reshape(buf[off:off + v.size], v.shape))
                off += v.size
        else:
            arrs = [tk.asarray(v) for v in vals]
        out.append(arrs)
    return out


@pytest.mark.parametrize("chunk", [None, 8])  # (8: pieces of several parameters and slices of larger ones)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("flags", [dict(), dict(maximize=True), dict(weight_decay=0.1), dict(weight_decay=0.1,
                                   decoupled=True), dict(amsgrad=True, maximize=True, weight_decay=0.03)])
@pytest.mark.parametrize("shapes", [[(7, 3), (5,), (1,), (2, 3, 3), (0,), (13,), (2,)], [(9, 5)],
                                    [(3, 1), (4, 6), (17,)]])
def test_adam_step_flat_states_bit_equal_to_the_per_tensor_loop(dtype, flags, chunk, shapes, monkeypatch):
    from tkernels.backends.numpy import optim as npo

    if chunk is not None:
        monkeypatch.setattr(npo, "_FLAT_CHUNK", chunk)
    results = []
    for flat in (True, False):
        rng = np.random.default_rng(5)
        ps = [tk.asarray(rng.standard_normal(s).astype(dtype)) for s in shapes]
        if (4, 6) in shapes:  # a parameter that is a transposed view: a larger one, not cut (whole)
            i = shapes.index((4, 6))
            ps[i] = tk.asarray(rng.standard_normal((6, 4)).astype(dtype)).T
        ms, vs, xs = _state_lists(shapes, dtype, flat, rng)
        amsgrad = flags.get("amsgrad", False)
        for step in (1, 2, 3):
            gs = [tk.asarray(rng.standard_normal(s).astype(dtype)) for s in shapes]
            gs[0] = gs[0][:, ::-1] if gs[0].shape[1] > 1 else gs[0]  # a non-contiguous gradient
            before = [gg.numpy().copy() for gg in gs]
            tk.ops.adam_step(ps, gs, ms, vs, xs if amsgrad else None, step=step, lr=1e-2, beta1=0.9, beta2=0.99,
                             eps=1e-8, **flags)
            for gg, b in zip(gs, before):  # the gradients are read, never written (maximize, weight decay)
                np.testing.assert_array_equal(_bits(gg.numpy()), _bits(b))
        results.append([a.numpy() for a in ps + ms + vs + (xs if amsgrad else [])])
    for a, b in zip(*results):
        np.testing.assert_array_equal(_bits(a), _bits(b))


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the aliased call takes sqrt of a negative m
def test_adam_step_flat_path_taken_only_for_runs(monkeypatch):
    from tkernels.backends.numpy import optim as npo

    taken = []
    real = npo._adam_flat
    monkeypatch.setattr(npo, "_adam_flat", lambda *a: taken.append(real(*a)) or taken[-1])
    rng = np.random.default_rng(0)
    shapes = [(3, 2), (4,)]
    ps = [tk.asarray(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    gs = [tk.asarray(rng.standard_normal(s).astype(np.float32)) for s in shapes]
    ms, vs, _ = _state_lists(shapes, np.float32, True, rng)
    kw = dict(step=1, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)
    tk.ops.adam_step(ps, gs, ms, vs, None, **kw)
    tk.ops.adam_step(ps, gs, ms, [vs[0], tk.asarray(vs[1].numpy())], None, **kw)  # v not one run
    tk.ops.adam_step(ps, gs, ms, ms, None, **kw)  # the same run twice: not flat (aliasing)
    ps16 = [tk.astype(p, tk.float16) for p in ps]
    tk.ops.adam_step(ps16, [tk.astype(g, tk.float16) for g in gs], [tk.astype(m, tk.float16) for m in ms],
                     [tk.astype(v, tk.float16) for v in vs], None, **kw)  # halves: separate arrays, the loop
    tk.ops.adam_step(ps, [gs[0], ps[1][:]], ms, vs, None, weight_decay=0.1, decoupled=True,
                     **kw)  # a gradient viewing its parameter, with AdamW's decay: the loop
    assert taken == [True, False, False, False, False]


def test_nn_adam_states_are_one_buffer_and_match_the_reference():
    import autograd as ag
    import nn

    results = []
    for foreach in (None, False):
        ag.manual_seed(0)
        model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3))
        opt = nn.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1, foreach=foreach)
        x = ag.tensor(np.random.default_rng(1).standard_normal((9, 5)).astype(np.float32))
        for _ in range(3):
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
        if foreach is None:
            st = [opt.state[p]["exp_avg"]._data._storage for p in model.parameters()]
            assert all(s is st[0] for s in st)
        results.append([p.detach().numpy() for p in model.parameters()])
    for a, b in zip(*results):
        np.testing.assert_array_equal(_bits(a), _bits(b))


# ------------------------------------------------------------------ threshold_backward (relu's gradient)
def _devices():
    import tkernels.cuda as tkc

    return ["cpu"] + (["cuda"] if tkc.is_available() else [])


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("n", [1, 37, 2048 + 5])  # (both sides of the where backend's bits path)
def test_threshold_backward_equals_the_previous_where(device, dtype, n):
    y = np.maximum(_values(n, np.float64, seed=2), 0).astype(dtype)  # relu outputs, NaN kept
    y[::7] = -np.nan if n > 7 else y[::7]  # a NaN with its sign bit
    g = _values(n, dtype, seed=3)
    ya, ga = tk.asarray(y, device=device), tk.asarray(g, device=device)
    for thr in (0.0, 0.3):
        want = tk.where(tk.less_equal(ya, thr), 0.0, ga).numpy()  # the previous formula
        got = tk.ops.threshold_backward(ga, ya, thr).numpy()
        np.testing.assert_array_equal(_bits(got), _bits(want))
    if device == "cpu":  # views (non-contiguous grad and y)
        g2 = tk.asarray(_values(3 * n, dtype, seed=4))[::3]
        y2 = tk.asarray(np.maximum(_values(2 * n, np.float64, seed=5), 0).astype(dtype))[1::2]
        want = tk.where(tk.less_equal(y2, 0.0), 0.0, g2).numpy()
        np.testing.assert_array_equal(_bits(tk.ops.threshold_backward(g2, y2).numpy()), _bits(want))


def test_threshold_backward_errors():
    g = tk.ones((3,))
    with pytest.raises(TypeError, match="threshold_backward: y must be an Array"):
        tk.ops.threshold_backward(g, np.ones(3))
    with pytest.raises(TypeError, match="threshold_backward: grad .* must have one dtype"):
        tk.ops.threshold_backward(g, tk.ones((3,), dtype=tk.float64))
    with pytest.raises(ValueError, match="threshold_backward: grad .* must have the same shape"):
        tk.ops.threshold_backward(g, tk.ones((4,)))
    with pytest.raises(TypeError, match="threshold_backward: grad must be a floating array"):
        tk.ops.threshold_backward(tk.ones((3,), dtype=tk.int32), g)
    with pytest.raises(TypeError, match="threshold must be a real number"):
        tk.ops.threshold_backward(g, g, "0")


def test_nn_adam_step_counts_made_together_read_and_written_as_before():
    import autograd as ag
    import nn

    def run(foreach, poke):
        ag.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
        opt = nn.optim.Adam(model.parameters(), lr=1e-2, foreach=foreach)
        x = ag.tensor(np.random.default_rng(2).standard_normal((5, 3)).astype(np.float32))
        for i in range(4):
            opt.zero_grad()
            model(x).square().mean().backward()
            if i == 2 and poke:  # a count changed in place (one parameter ahead): its own bias correction
                opt.state[model[0].weight]["step"].fill_(10.0)
            opt.step()
        steps = [float(opt.state[p]["step"]) for p in model.parameters()]
        return steps, [p.detach().numpy() for p in model.parameters()]

    for poke in (False, True):
        (s1, p1), (s2, p2) = run(None, poke), run(False, poke)
        assert s1 == s2 == ([12.0, 4.0, 4.0, 4.0] if poke else [4.0] * 4)
        for a, b in zip(p1, p2):
            np.testing.assert_array_equal(_bits(a), _bits(b))
