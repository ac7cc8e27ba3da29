"""matrix_norm's singular-value orders ('nuc', 2, -2) and linalg.svd / svdvals on cuda: the one-sided Jacobi kernels
(tkernels/kernels/svd.py)
against NumPy's SVD on random, rank-deficient, ill-conditioned, tall, wide, 1x1, batched and strided matrices,
columns longer than a row block, the scaling that keeps sums of squares finite, empty and non-finite inputs.

Errors are measured relative to the largest singular value (what a backward-stable SVD promises); the
interpreter runs the same kernel as a GPU, one program per matrix, so the matrices here are small.
"""

from __future__ import annotations

import numpy as np
import pytest

import tkernels as tk
import tkernels.cuda as tkc
from tkernels.dispatch import lookup

pytestmark = pytest.mark.skipif(not tkc.is_available(), reason="needs cuda (real or interpreted)")

if tkc.is_available():
    from tkernels.backends.triton import linalg_svd as backend_svd
else:  # pragma: no cover - the module is skipped
    backend_svd = None

ORDS = ("nuc", 2, -2)
# relative to the largest singular value: a few ulps of the compute type times the size
TOL = {"float64": 1e-13, "float32": 2e-6, "float16": 2e-3, "bfloat16": 1.6e-2}
_REAL = {"complex64": "float32", "complex128": "float64"}


def _want(a: np.ndarray, ord):  # noqa: A002
    """NumPy's norm of the matrices of ``a`` (float64) and their largest singular values (the error scale)."""
    s = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    r = {"nuc": s.sum(-1), 2: s.max(-1), -2: s.min(-1)}[ord]
    return r, s.max(-1)


def check(a: np.ndarray, dtype="float64", view=None, ords=ORDS, tol=None):
    """matrix_norm on cuda of ``a`` cast to ``dtype`` (then ``view``-ed) vs NumPy's SVD of the same values."""
    x = tk.asarray(a, device="cuda").astype(dtype)
    if view is not None:
        x = view(x)
    ref = x.to("cpu").astype("float64").numpy()
    for o in ords:
        got = tk.matrix_norm(x, ord=o)
        assert got.device.type == "cuda" and got.dtype == x.dtype and got.shape == x.shape[:-2], (got, o)
        want, scale = _want(ref, o)
        err = np.abs(got.numpy().astype(np.float64) - want) / np.maximum(scale, np.finfo(np.float64).tiny)
        assert np.all(err <= (tol or TOL[dtype])), f"ord={o} {dtype} {x.shape}: relative errors {err}"


def _with_singular_values(rng, m, n, s):
    """An m x n matrix with singular values ``s`` (random orthogonal factors)."""
    u, _ = np.linalg.qr(rng.standard_normal((m, m)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    k = len(s)
    return (u[:, :k] * s) @ v[:, :k].T


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_random_tall_wide_and_tiny(dtype):
    rng = np.random.default_rng(1)
    check(rng.standard_normal((6, 4)), dtype)  # every order once; the cases below take one each (a launch apiece)
    check(rng.standard_normal((3, 7)), dtype, ords=(2,))  # wide: the kernel works on the transpose
    check(rng.standard_normal((1, 1)) * 3, dtype, ords=(-2,))
    check(rng.standard_normal((1, 6)), dtype, ords=("nuc",))
    check(rng.standard_normal((6, 1)), dtype, ords=(-2,))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_rank_deficient_and_ill_conditioned(dtype):
    rng = np.random.default_rng(2)
    check(rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4)), dtype, ords=("nuc", -2))  # rank 2: -2 is ~0
    ill = _with_singular_values(rng, 5, 4, np.logspace(0, -6, 4))  # condition number 1e6
    check(ill, dtype, ords=(-2,))
    check(np.zeros((3, 4)), dtype, ords=(2,))
    if dtype == "float64":  # one-sided Jacobi finds small singular values to high relative accuracy
        got = tk.matrix_norm(tk.asarray(ill, device="cuda"), ord=-2).item()
        np.testing.assert_allclose(got, 1e-6, rtol=1e-9)


def test_batched_and_strided_layouts():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 2, 4, 3))
    check(a, ords=("nuc",))
    check(a, view=lambda x: x.mT, ords=(2,))  # every matrix transposed
    check(a, view=lambda x: x[:, ::-1, 1:, ::2], ords=(-2,))  # steps in the batch and in the matrices
    check(a, view=lambda x: tk.permute_dims(x, (2, 0, 3, 1))[::3], ords=("nuc",))  # batch axes that do not merge
    check(a[0, 0], view=lambda x: x[::-1, ::-1], ords=(2,))  # negative strides
    check(rng.standard_normal((3, 1, 2, 2)), "float32", ords=(-2,))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_halves_compute_in_float32(dtype):
    check(np.random.default_rng(4).uniform(-3, 3, (2, 4, 3)), dtype, ords=("nuc", -2) if dtype == "float16" else (2,))


def test_columns_longer_than_a_row_block(monkeypatch):
    """The rows walked in blocks: 8-row blocks over columns of 19 (tall) and rows of 21 (wide, transposed)."""
    monkeypatch.setattr(backend_svd, "TILE", 8)
    backend_svd._plan.cache_clear()
    try:
        rng = np.random.default_rng(5)
        check(rng.standard_normal((19, 3)), "float32", ords=("nuc", -2))
        check(rng.standard_normal((2, 21)), ords=(2,))
    finally:
        backend_svd._plan.cache_clear()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_no_overflow_or_underflow_in_sums_of_squares(dtype):
    """Squares of 1e30 overflow float32 and squares of 1e-30 underflow it: the matrix is scaled by its max |a_ij|."""
    a = np.random.default_rng(6).standard_normal((3, 2))
    for k, o in ((1e30, "nuc"), (1e-30, 2), (1e-40 if dtype == "float32" else 1e-300, -2)):  # 1e-40: subnormals
        x = tk.asarray(a * k, device="cuda").astype(dtype)
        want, _ = _want(x.to("cpu").numpy(), o)
        np.testing.assert_allclose(tk.matrix_norm(x, ord=o).numpy(), want, rtol=TOL[dtype] * 4, err_msg=k)


def test_empty_matrices_and_batches():
    for shape in [(2, 0, 3), (2, 3, 0), (0, 0)]:  # no singular values: their sum is 0 (as the cpu backend)
        got = tk.matrix_norm(tk.zeros(shape, device="cuda"), ord="nuc")
        assert got.shape == shape[:-2]
        np.testing.assert_array_equal(got.numpy(), np.zeros(shape[:-2]))
    for o in ORDS:
        x = tk.zeros((0, 3, 3), device="cuda")
        assert tk.matrix_norm(x, ord=o).shape == (0,)
        assert tk.matrix_norm(x, ord=o, keepdims=True).shape == (0, 1, 1)


def test_keepdims_and_a_strided_out():
    a = np.random.default_rng(7).standard_normal((2, 3, 2))
    x = tk.asarray(a, device="cuda")
    got = tk.matrix_norm(x, ord="nuc", keepdims=True)
    assert got.shape == (2, 1, 1)
    np.testing.assert_allclose(got.numpy()[:, 0, 0], _want(a, "nuc")[0], rtol=1e-13)
    out = tk.zeros((2, 2), dtype=tk.float64, device="cuda")[:, 1]  # the backend writes through a temporary
    lookup("matrix_norm", x.device)(out, x, tk.float64, 2.0)
    np.testing.assert_allclose(out.numpy(), _want(a, 2)[0], rtol=1e-13)


def test_non_finite_inputs():
    """The entry raises PyTorch's LinAlgError on them (for nuc / 2 / -2: test_linalg_errors.py); the backend's
    kernel cannot raise: NaN propagates, an inf gives a non-finite nuc and 2-norm, and neither hangs the sweeps."""
    a = np.ones((2, 3, 3))
    a[0, 1, 1] = np.nan
    a[1, 0, 2] = np.inf
    x = tk.asarray(a, device="cuda")
    for o in ORDS:
        out = tk.empty((2,), dtype=tk.float64, device="cuda")
        lookup("matrix_norm", x.device)(out, x, tk.float64, o)
        got = out.numpy()
        assert np.isnan(got[0]) and (o == -2 or not np.isfinite(got[1])), (o, got)
    with pytest.raises(tk.linalg.LinAlgError, match=r"linalg\.svd: \(Batch element 0\): .*non-finite"):
        tk.matrix_norm(x, ord=2)


# ------------------------------------------------------------------------- svd / svdvals (svd_kernel)
def check_svd(a: np.ndarray, dtype="float64", view=None, full=False, tol=None, vals=True):
    """tk.linalg.svd on cuda vs NumPy: S, U S Vh = A, U and Vh with orthonormal columns and rows (also where
    singular values are 0 or noise: svd_complete_kernel's completion); svdvals too (``vals``). Real or complex."""
    x = tk.asarray(a, device="cuda").astype(dtype)
    if view is not None:
        x = view(x)
    cplx = dtype.startswith("complex")
    wide = "complex128" if cplx else "float64"
    ref = x.to("cpu").astype(wide).numpy()
    r = tk.linalg.svd(x, full_matrices=full)
    assert all(t.device.type == "cuda" for t in r) and r.U.dtype == r.Vh.dtype == x.dtype
    u, vh = (t.to("cpu").astype(wide).numpy() for t in (r.U, r.Vh))
    s = r.S.to("cpu").astype("float64").numpy()
    *batch, m, n = ref.shape
    k = min(m, n)
    assert u.shape == (*batch, m, m if full else k) and vh.shape == (*batch, n if full else k, n), (u.shape, vh.shape)
    want = np.linalg.svd(ref, compute_uv=False)
    scale = max(float(want.max()), np.finfo(np.float64).tiny) if want.size else 1.0
    t = tol or TOL[_REAL.get(dtype, dtype)] * 4
    np.testing.assert_allclose(s, want, rtol=0, atol=t * scale)
    assert np.all(np.diff(s, axis=-1) <= 0), "S is not in descending order"
    np.testing.assert_allclose((u[..., :k] * s[..., None, :]) @ vh[..., :k, :], ref, rtol=0, atol=t * scale)
    for q in (u, np.swapaxes(vh, -1, -2)):
        np.testing.assert_allclose(np.conj(np.swapaxes(q, -1, -2)) @ q, np.eye(q.shape[-1]) + 0 * q[..., :1, :1],
                                   rtol=0, atol=t)
    if vals:
        np.testing.assert_allclose(tk.linalg.svdvals(x).to("cpu").astype("float64").numpy(), s, rtol=0, atol=t * scale)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_svd_tall_wide_full_and_reduced(dtype):
    rng = np.random.default_rng(11)
    check_svd(rng.standard_normal((6, 4)), dtype)
    check_svd(rng.standard_normal((3, 5)), dtype)
    check_svd(rng.standard_normal((5, 3)), dtype, full=True)  # U: V of the transpose (C = 5 > R = 3)
    check_svd(rng.standard_normal((2, 4)), dtype, full=True)
    check_svd(rng.standard_normal((1, 1)) * 3, dtype, full=True)


def test_svd_batched_strided_and_long_columns(monkeypatch):
    rng = np.random.default_rng(12)
    a = rng.standard_normal((2, 2, 4, 3))
    check_svd(a, view=lambda x: x[:, ::-1, 1:, ::2])
    check_svd(a, view=lambda x: tk.permute_dims(x, (2, 0, 3, 1))[::3], full=True)  # batch axes that do not merge
    monkeypatch.setattr(backend_svd, "TILE", 4)  # 4-row blocks over columns of 9 and a V of 5 rows
    backend_svd._plan.cache_clear()
    try:
        check_svd(rng.standard_normal((9, 3)), "float32")
        check_svd(rng.standard_normal((5, 2)), full=True)
    finally:
        backend_svd._plan.cache_clear()


def test_svd_rank_deficient_zero_and_halves():
    rng = np.random.default_rng(13)
    check_svd(rng.standard_normal((5, 2)) @ rng.standard_normal((2, 4)))  # rank 2: U's last two columns completed
    u, s, vh = tk.linalg.svd(tk.zeros((3, 2), device="cuda"), full_matrices=False)
    np.testing.assert_array_equal(s.numpy(), [0, 0])
    np.testing.assert_array_equal(u.numpy(), np.eye(3, 2))  # the completion of nothing: e_0, e_1
    np.testing.assert_array_equal(vh.numpy(), np.eye(2))
    check_svd(rng.uniform(-3, 3, (2, 4, 3)), "float16", tol=1e-2)
    check_svd(rng.uniform(-3, 3, (3, 2)), "bfloat16", tol=6e-2, full=True)


def test_svd_scaling_and_non_finite():
    a = np.random.default_rng(14).standard_normal((3, 2))
    check_svd(a * 1e30, "float32")  # squares would overflow without the scaling
    check_svd(a * 1e-30, "float32")
    bad = np.ones((2, 3, 3))
    bad[0, 1, 1] = np.nan
    x = tk.asarray(bad, device="cuda")
    s = tk.empty((2, 3), dtype=tk.float64, device="cuda")
    lookup("svd", x.device)(None, s, None, x, tk.float64)  # the kernel (the entry raises LinAlgError first)
    s = s.numpy()
    assert np.isnan(s[0]).any() and np.all(np.isfinite(s[1]))  # NaN sorts first; no hang
    with pytest.raises(tk.linalg.LinAlgError, match=r"linalg\.svd: \(Batch element 0\): .*non-finite"):
        tk.linalg.svdvals(x)


def test_svd_empty():
    for shape, full in (((2, 0, 3), True), ((0, 3, 3), False), ((3, 0), False)):
        u, s, vh = tk.linalg.svd(tk.zeros(shape, device="cuda"), full_matrices=full)
        want = np.linalg.svd(np.zeros(shape), full_matrices=full)
        for got, w in zip((u, s, vh), want):
            assert got.shape == w.shape and got.device.type == "cuda"
            np.testing.assert_array_equal(got.numpy(), w)


# -------------------------------------------------- rank-deficient factors (svd_complete_kernel)
@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128", "complex64"])
def test_svd_factors_of_rank_deficient_matrices_are_orthonormal(dtype):
    """Zero matrices, rank 1, repeated and zero columns/rows, rank 2 plus noise at 1e-7 of the largest (float32's
    rounding: those columns are never rotated): U and Vh orthonormal, reduced and full, tall, wide and square,
    batched (a stride-0 batch) and strided; U S Vh = A as before."""
    rng = np.random.default_rng(15)

    def g(*shape):
        a = rng.standard_normal(shape)
        return a + 1j * rng.standard_normal(shape) if dtype.startswith("complex") else a

    real = not dtype.startswith("complex")
    check_svd(np.zeros((3, 5)), dtype, vals=False)
    check_svd(np.zeros((4, 2)), dtype, full=True, vals=False)
    check_svd(np.outer(g(5), g(3)), dtype, full=True, vals=False)
    if real:
        check_svd(np.zeros((1, 1)), dtype, vals=False)
        check_svd(np.outer(g(2), g(6)), dtype, vals=False)
    a = g(4, 4)
    a[:, 2] = a[:, 0]
    a[3] = 0
    check_svd(a, dtype, vals=False)  # rank 2, square: a repeated column and a zero row
    if real:
        check_svd(a[:, :3], dtype, view=lambda x: x.mT, full=True, vals=False)  # wide, transposed on the device
    low = g(6, 2) @ g(2, 4)
    low += 1e-7 * np.abs(low).max() * g(6, 4)
    check_svd(low, dtype, vals=False)
    if real:
        check_svd(low, dtype, view=lambda x: x.mT[::2], vals=False)  # wide, steps in the rows
    check_svd(np.stack([np.outer(g(2), g(3)), g(2, 3)]), dtype, view=lambda x: x[:1].broadcast_to((3, 2, 3)),
              vals=False)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_svd_rank_deficient_halves(dtype):
    """Halves: fp32 compute and completion, the vectors stored in the half."""
    rng = np.random.default_rng(16)
    tol = 1e-2 if dtype == "float16" else 6e-2
    check_svd(np.outer(rng.uniform(-3, 3, 4), rng.uniform(-3, 3, 3)), dtype, tol=tol, vals=False)
    check_svd(np.zeros((2, 3)), dtype, tol=tol, full=True, vals=False)


def test_svd_completion_walks_rows_in_several_blocks(monkeypatch):
    """4-row blocks over vectors of 9 (tall, reduced) and a W side of 9 x 9 (the zero matrix, every vector an e_i)."""
    monkeypatch.setattr(backend_svd, "TILE", 4)
    backend_svd._plan.cache_clear()
    try:
        rng = np.random.default_rng(17)
        check_svd(np.outer(rng.standard_normal(9), rng.standard_normal(3)), "float32", vals=False)
        check_svd(np.zeros((9, 2)), "complex128", full=True, vals=False)
    finally:
        backend_svd._plan.cache_clear()


def test_svd_completion_leaves_full_rank_factors_alone():
    """Every singular value above the bound: a second pass of the kernel over U (tall) and Vh (wide) changes no bit;
    the same pass over completed factors moves them by rounding only."""
    from tkernels._complex import view_as_real
    from tkernels.backends.triton.reduction import _launch
    from tkernels.kernels.svd_complete import svd_complete_kernel

    rng = np.random.default_rng(18)
    for a, cplx in ((rng.standard_normal((2, 6, 4)), False), (rng.standard_normal((3, 5)) * (1 + 1j), True),
                    (np.outer(rng.standard_normal(5), rng.standard_normal(3)), False)):
        u, s, vh = tk.linalg.svd(tk.asarray(a, device="cuda"), full_matrices=False)
        q = u if a.shape[-2] >= a.shape[-1] else vh  # W's side
        m, k = q.shape[-2:] if q is u else q.shape[-1:-3:-1]
        before = q.numpy().copy()
        words = view_as_real(q) if cplx else q
        st = words._strides[:q.ndim]
        vec, el = (st[-1], st[-2]) if q is u else (st[-2], st[-1])
        b = q.size // (m * k)
        _launch(svd_complete_kernel, (b,), words, s, tk.empty((b, 2 * m), dtype=tk.float64, device="cuda"), m, k,
                (2 if cplx else 1) * m * k, vec, el, k, 2 * m, COMPLEX=cplx, F64=True, BLOCK_R=8)
        if np.all(np.linalg.matrix_rank(a) == min(a.shape[-2:])):
            np.testing.assert_array_equal(q.numpy(), before)
        else:
            np.testing.assert_allclose(q.numpy(), before, rtol=0, atol=1e-14)


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex64"])
def test_eigh_of_repeated_and_zero_eigenvalues_has_unitary_eigenvectors(dtype):
    """eigh on cuda is svd_kernel on a Gershgorin-shifted matrix, its vectors V's (always a full unitary basis):
    diag(1, 1, 1, 0, 0), a rank-2 projector, the zero matrix (a batch) and a rank-1 Hermitian projector."""
    rng = np.random.default_rng(19)
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)) + (1j * rng.standard_normal((4, 4)) if dtype[0] == "c" else 0))
    cases = [np.diag([1.0, 1, 1, 0, 0]), np.stack([q[:, :2] @ np.conj(q[:, :2]).T, np.zeros((4, 4))])]
    if dtype[0] == "c":
        cases = [q[:, :1] @ np.conj(q[:, :1]).T]
    t = TOL[_REAL.get(dtype, dtype)] * 8
    for a in cases:
        w, v = (r.to("cpu").numpy().astype(np.complex128) for r in tk.linalg.eigh(tk.asarray(a, device="cuda")
                                                                                     .astype(dtype)))
        np.testing.assert_allclose(w.real, np.linalg.eigvalsh(a), rtol=0, atol=t)
        vh = np.conj(np.swapaxes(v, -1, -2))
        np.testing.assert_allclose(vh @ v, np.broadcast_to(np.eye(a.shape[-1]), a.shape), rtol=0, atol=t)
        np.testing.assert_allclose((v * w[..., None, :]) @ vh, a, rtol=0, atol=t)


# ------------------------------------------------------------------------------------ real GPU sweeps
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_sizes(dtype):
    """Both row blocks, many programs, hundreds of columns, ill-conditioned and rank-deficient batches."""
    rng = np.random.default_rng(8)
    check(rng.standard_normal((300, 7, 5)), dtype)
    check(rng.standard_normal((4, 700, 90)), dtype, tol=TOL[dtype] * 10)
    check(rng.standard_normal((2, 60, 1000)), dtype, tol=TOL[dtype] * 10)
    check(rng.standard_normal((256, 256)), dtype, tol=TOL[dtype] * 10)
    ill = np.stack([_with_singular_values(rng, 80, 40, np.logspace(0, -6, 40)) for _ in range(8)])
    check(ill, dtype, tol=TOL[dtype] * 10)
    low = rng.standard_normal((16, 100, 3)) @ rng.standard_normal((16, 3, 50))
    check(low, dtype, tol=TOL[dtype] * 10)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_svd_sizes(dtype):
    """svd_kernel with both row blocks, many programs and full factors of long sides."""
    rng = np.random.default_rng(9)
    check_svd(rng.standard_normal((300, 7, 5)), dtype)
    check_svd(rng.standard_normal((4, 700, 90)), dtype, tol=TOL[dtype] * 40)
    check_svd(rng.standard_normal((2, 60, 200)), dtype, tol=TOL[dtype] * 40, full=True)
    check_svd(rng.standard_normal((128, 128)), dtype, tol=TOL[dtype] * 40)
