"""The cpu fast paths of layer_norm (row means by GEMV, results computed in the outputs), embedding_backward
(sorted segment sums instead of np.add.at) and scaled_dot_product_attention (in-place softmax, cached causal
mask): equal to the formulas they replaced, to float32 rounding, on random odd-size inputs, strided views,
duplicates and padding, L != S and fully masked rows."""

import numpy as np
import pytest

import tkernels as tk


def _strided(rng, shape, dtype=np.float32):
    """A non-contiguous view with random values (every other column of a wider array)."""
    big = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(dtype)
    return tk.asarray(big)[..., ::2]


@pytest.mark.parametrize("dtype, tol", [("float32", 2e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("shape, k, affine", [((7, 13, 33), 1, True), ((127, 5, 3), 2, False), ((1, 1), 1, True),
                                                 ((3, 4099), 1, True)])  # (past the GEMV row length)
def test_layer_norm_matches_the_previous_formulas(dtype, tol, shape, k, affine):
    rng = np.random.default_rng(3)
    x = _strided(rng, shape, dtype)
    ns = shape[len(shape) - k:]
    w = tk.asarray(rng.standard_normal(ns).astype(dtype)) if affine else None
    b = tk.asarray(rng.standard_normal(ns).astype(dtype)) if affine else None
    out, mean, rstd = tk.ops.layer_norm(x, ns, w, b, 1e-5, return_stats=True)
    xn = x.numpy().astype(np.float64)
    axes = tuple(range(len(shape) - k, len(shape)))
    mu = xn.mean(axis=axes, keepdims=True)
    r = 1 / np.sqrt(((xn - mu) ** 2).mean(axis=axes, keepdims=True) + 1e-5)
    xhat = (xn - mu) * r
    ref = xhat * (w.numpy() if affine else 1) + (b.numpy() if affine else 0)
    np.testing.assert_allclose(out.numpy(), ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(rstd.numpy().reshape(r.shape), r, rtol=tol, atol=tol)
    g = _strided(rng, shape, dtype)
    gn = g.numpy().astype(np.float64)
    dx, dw, db = tk.ops.layer_norm_backward(g, x, mean, rstd, w, ns)
    gw = gn * (w.numpy() if affine else 1)
    ref_dx = (gw - gw.mean(axis=axes, keepdims=True) - xhat * (gw * xhat).mean(axis=axes, keepdims=True)) * r
    np.testing.assert_allclose(dx.numpy(), ref_dx, rtol=tol * 10, atol=tol * 10)
    if affine:
        lead = tuple(range(len(shape) - k))
        np.testing.assert_allclose(dw.numpy(), (gn * xhat).sum(axis=lead), rtol=tol * 10, atol=tol * 10)
        np.testing.assert_allclose(db.numpy(), gn.sum(axis=lead), rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_backward_matches_add_at(dtype, padding_idx):
    rng = np.random.default_rng(4)
    idx = rng.integers(0, 11, (9, 37))  # many duplicates, some rows never hit
    g = tk.asarray(rng.standard_normal((9, 37, 5)).astype(np.float32)).astype(getattr(tk, dtype))
    got = tk.ops.embedding_backward(g, tk.asarray(idx), 11, padding_idx=padding_idx).astype(tk.float64).numpy()
    ref = np.zeros((11, 5))
    np.add.at(ref, idx.ravel(), g.astype(tk.float64).numpy().reshape(-1, 5))
    if padding_idx is not None:
        ref[padding_idx] = 0
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-2}[dtype]
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    empty = tk.ops.embedding_backward(tk.zeros((0, 5)), tk.asarray(np.zeros(0, np.int64)), 4)
    assert empty.shape == (4, 5) and not empty.numpy().any()


def _sdpa_reference(q, k, v, mask, causal, scale):
    s = np.einsum("...ld,...sd->...ls", q, k) * scale
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tri(L, S, dtype=bool), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(s - m)
    tot = e.sum(axis=-1, keepdims=True)
    p = e / np.where(tot == 0, 1, tot)
    return p, p @ v


@pytest.mark.parametrize("causal, L, S", [(True, 13, 13), (True, 7, 19), (False, 11, 5), (True, 3, 4099)])
def test_sdpa_matches_the_previous_formulas(causal, L, S):
    rng = np.random.default_rng(5)
    q, k, v = (_strided(rng, (3, 2, n, 9)) for n in (L, S, S))
    mask = None if causal else tk.asarray(rng.random((L, S)) > 0.3)
    if mask is not None:
        mn = mask.numpy().copy()
        mn[2] = False  # a fully masked row: zeros
        mask = tk.asarray(mn)
    out, lse, _ = tk.ops.scaled_dot_product_attention(q, k, v, mask, 0.0, causal, 0.3, return_stats=True)
    qn, kn, vn = (a.numpy().astype(np.float64) for a in (q, k, v))
    p, ref = _sdpa_reference(qn, kn, vn, None if mask is None else mask.numpy(), causal, 0.3)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
    g = _strided(rng, (3, 2, L, 9))
    gn = g.numpy().astype(np.float64)
    dq, dk, dv = tk.ops.scaled_dot_product_attention_backward(g, q, k, v, out, lse, mask, 0.0, causal, 0.3)
    dp = gn @ np.swapaxes(vn, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) * 0.3
    np.testing.assert_allclose(dv.numpy(), np.swapaxes(p, -1, -2) @ gn, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dq.numpy(), ds @ kn, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dk.numpy(), np.swapaxes(ds, -1, -2) @ qn, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dropout_p", [0.0, 0.3])
@pytest.mark.parametrize("causal", [True, False])
def test_sdpa_backward_from_out_matches_the_one_from_p(dropout_p, causal):
    """The cpu backward takes rowsum(dP * P) as rowsum(grad * out) when the forward's output is passed; without it
    (out rounded to a half dtype, or not given) from P: both within float32 rounding, dropout and masks included."""
    from tkernels.backends.numpy import ops_attention

    rng = np.random.default_rng(8)
    q, k, v = (_strided(rng, (2, 3, n, 5)) for n in (9, 11, 11))
    mask = None if causal else tk.asarray(rng.random((9, 11)) > 0.4)
    gen = tk.random.Generator(4)
    out, lse, state = tk.ops.scaled_dot_product_attention(q, k, v, mask, dropout_p, causal, 0.4, return_stats=True,
                                                          generator=gen)
    g = _strided(rng, (2, 3, 9, 5))
    kw = dict(rng_state=state) if dropout_p else {}
    from_out = tk.ops.scaled_dot_product_attention_backward(g, q, k, v, out, lse, mask, dropout_p, causal, 0.4, **kw)
    backward = ops_attention.scaled_dot_product_attention_backward
    seen = []

    def without_out(dq, dk, dv, grad, q_, k_, v_, out_, *rest):  # the same call with out=None: P's row sums
        seen.append(out_ is not None)
        return backward(dq, dk, dv, grad, q_, k_, v_, None, *rest)

    impls = q.device._impls  # the cpu device's backend table (as bench/train.py's probe swaps it)
    handed_out = impls["scaled_dot_product_attention_backward"]
    assert handed_out.__wrapped__ is backward  # (under the backend's silent floating-point state)
    impls["scaled_dot_product_attention_backward"] = without_out
    try:
        from_p = tk.ops.scaled_dot_product_attention_backward(g, q, k, v, out, lse, mask, dropout_p, causal, 0.4,
                                                              **kw)
    finally:
        impls["scaled_dot_product_attention_backward"] = handed_out
    assert seen == [True]
    for a, b in zip(from_out, from_p):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape", [(128, 10), (33, 2), (4, 7, 64), (31, 3), (5000, 10), (9, 65), (2, 1),
                                   (1 << 15, 9), (0, 5), (7,), (3001, 64), (2, 350, 33), (16, 4, 64, 64)])
def test_max_last_is_numpys_row_max(dtype, shape):
    """max_last (the transposed-copy row max behind cross-entropy, softmax and attention on cpu) gives NumPy's
    values bit for bit, NaN and infinities included, on contiguous and strided inputs, inside and outside the
    sizes where it takes the transposed path, whole or by blocks of rows."""
    from tkernels.backends.numpy._util import max_last

    rng = np.random.default_rng(5)
    a = rng.standard_normal(shape).astype(dtype)
    if a.size > 4:
        flat = a.reshape(-1)
        flat[1], flat[3], flat[-1] = np.nan, np.inf, -np.inf
        if a.ndim > 1 and a.shape[0] > 2:
            flat[-2 * a.shape[-1] + 1] = np.nan  # in the last block of rows too
    for v in (a, np.repeat(a, 2, axis=-1)[..., ::2] if a.ndim else a):
        ref = np.maximum.reduce(v, axis=-1, keepdims=True) if v.size else None
        if ref is None:
            continue
        got = max_last(v, keepdims=True)
        assert got.shape == ref.shape and got.dtype == ref.dtype
        np.testing.assert_array_equal(got, ref)
        np.testing.assert_array_equal(max_last(v), ref[..., 0])


@pytest.mark.parametrize("m, c", [(128, 10), (257, 3), (40, 64), (5, 10)])
def test_cross_entropy_plain_path_matches_float64(m, c):
    """The plain cpu cross-entropy (row max by max_last, flat scatter in the backward) against a float64
    formula, forward and backward."""
    rng = np.random.default_rng(6)
    z = rng.standard_normal((m, c)).astype(np.float32) * 3
    t = rng.integers(0, c, m)
    loss, lse = tk.ops.cross_entropy(tk.asarray(z), tk.asarray(t), return_lse=True)
    z64 = z.astype(np.float64)
    lse64 = np.log(np.exp(z64 - z64.max(1, keepdims=True)).sum(1)) + z64.max(1)
    np.testing.assert_allclose(float(loss.numpy()), (lse64 - z64[np.arange(m), t]).mean(), rtol=1e-6)
    g = tk.ops.cross_entropy_backward(tk.asarray(np.float32(1.0)), tk.asarray(z), tk.asarray(t), lse=lse)
    p = np.exp(z64 - lse64[:, None])
    p[np.arange(m), t] -= 1
    np.testing.assert_allclose(g.numpy(), p / m, rtol=1e-5, atol=1e-7)
