"""``tkernels.ops.spmm`` / ``sddmm`` (sparse COO @ dense and its values' gradient; one kernel launch each on cuda)
vs NumPy on cpu and interpreted cuda: unordered indices with duplicates, strided dense operands, every float
dtype, empty cases; ``autograd.sparse.mm`` through them with gradcheck and gradgradcheck; bad input refused."""

import ml_dtypes
import numpy as np
import pytest

import autograd as ag
import tkernels as tk

BF16 = np.dtype(ml_dtypes.bfloat16)
TOL = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 1e-5, np.dtype(np.float16): 1e-2, BF16: 3e-2}
RNG = np.random.default_rng(11)


def _coo(n, m, nnz):
    rows = RNG.integers(0, n, nnz)
    cols = RNG.integers(0, m, nnz)
    rows[:3], cols[:3] = rows[0], cols[0]  # a duplicated entry
    return rows, cols


def _np(x):
    return tk.to_device(x, "cpu").numpy()


@pytest.fixture
def launches(monkeypatch):
    from tkernels.backends.triton import ops_spmm as backend

    calls = []
    real = backend.run
    monkeypatch.setattr(backend, "run", lambda k, g, *a, **m: (calls.append(m["MODE"]), real(k, g, *a, **m))[1])
    return calls


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_spmm_and_sddmm_match_numpy(device, launches):
    n, m, K, nnz = 7, 9, 5, 23
    rows, cols = _coo(n, m, nnz)
    dtypes = [np.float64, np.float32, np.float16, BF16] if device == "cpu" else [np.float64, BF16]
    for dt in map(np.dtype, dtypes):
        vals = RNG.standard_normal(nnz).astype(dt)
        big = RNG.standard_normal((m, 2 * K)).astype(dt)
        dense = tk.asarray(big, device=device)[:, ::2]  # strided: read by strides
        r, c = tk.asarray(rows, device=device), tk.asarray(cols, device=device)
        launches.clear()
        out = tk.ops.spmm(r, c, tk.asarray(vals, device=device), dense, n)
        ref = np.zeros((n, K))
        np.add.at(ref, rows, vals.astype(np.float64)[:, None] * big[:, ::2].astype(np.float64)[cols])
        assert out.shape == (n, K) and out.dtype.name == dt.name
        np.testing.assert_allclose(_np(out).astype(np.float64), ref, rtol=TOL[dt], atol=TOL[dt])
        g = RNG.standard_normal((n, K)).astype(dt)
        got = tk.ops.sddmm(r, c, tk.asarray(g, device=device), dense)
        want = np.einsum("jk,jk->j", g.astype(np.float64)[rows], big[:, ::2].astype(np.float64)[cols])
        np.testing.assert_allclose(_np(got).astype(np.float64), want, rtol=TOL[dt], atol=TOL[dt])
        if device == "cuda":
            assert launches == [0, 1]  # one SCATTER launch for the product, one SDDMM for the values' gradient
    z = tk.asarray(np.zeros(0, np.int64), device=device)
    empty = tk.ops.spmm(z, z, tk.zeros((0,), dtype=tk.float32, device=device), tk.ones((4, 3), device=device), 2)
    assert _np(empty).tolist() == [[0.0] * 3] * 2
    assert tk.ops.sddmm(z, z, tk.ones((2, 3), device=device), tk.ones((4, 3), device=device)).shape == (0,)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_sparse_mm_gradients_through_the_kernels(device):
    rows, cols = _coo(4, 5, 9)
    i = ag.tensor(np.stack([rows, cols]), device=device)
    v = ag.tensor(RNG.standard_normal(9), device=device, requires_grad=True)
    d = ag.tensor(RNG.standard_normal((5, 3)), device=device, requires_grad=True)

    def f(v, d):
        return ag.sparse.mm(ag.sparse_coo_tensor(i, v, (4, 5)), d)

    assert ag.gradcheck(f, (v, d))
    if device == "cpu":  # (interpreted cuda: the second order takes ~15 s; the same code path)
        assert ag.gradgradcheck(f, (v, d))
        x = d[:, 0].detach().requires_grad_()
        assert ag.gradcheck(lambda v, x: ag.sparse.mm(ag.sparse_coo_tensor(i, v, (4, 5)), x), (v, x))


def test_bad_input_is_refused():
    r = tk.asarray(np.array([0, 1]))
    with pytest.raises(TypeError, match="spmm: rows must be a 1-D int64 Array"):
        tk.ops.spmm(tk.asarray(np.array([0, 1], np.int32)), r, tk.ones((2,)), tk.ones((2, 2)), 2)
    with pytest.raises(TypeError, match="spmm: dense must be floating of one dtype"):
        tk.ops.spmm(r, r, tk.ones((2,)), tk.ones((2, 2), dtype=tk.float64), 2)
    with pytest.raises(ValueError, match="sddmm: expected a \\(n, K\\) and b \\(m, K\\)"):
        tk.ops.sddmm(r, r, tk.ones((2, 3)), tk.ones((2, 2)))
    with pytest.raises(RuntimeError, match="spmm: cols is on cuda"):
        tk.ops.spmm(r, tk.asarray(np.array([0, 1]), device="cuda"), tk.ones((2,)), tk.ones((2, 2)), 2)
