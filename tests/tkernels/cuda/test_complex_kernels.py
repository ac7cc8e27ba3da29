"""The complex kernels (tkernels/kernels/complex.py) on interpreted cuda, through their launch wrappers on real
pair views, against NumPy's complex math: random values at odd sizes, strided and broadcast operands, complex,
real and scalar operands, and a grid of special values (zeros of both signs, infinities, NaNs, huge and tiny)."""

import math
import warnings

import numpy as np
import pytest

import tkernels as tk
from tkernels.backends.triton import complex_pairs as cp

CDTYPES = (np.complex64, np.complex128)
UNARY = ["negative", "conj", "square", "reciprocal", "exp", "expm1", "log", "log1p", "sqrt", "sin", "cos", "tan",
         "sinh", "cosh", "tanh", "sign", "log2", "log10", "exp2", "rsqrt", "sigmoid", "asin", "acos", "atan", "asinh",
         "acosh", "atanh"]
_NP_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh",
             "atanh": "arctanh"}
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30, 1e30, 100.0, -800.0, np.inf, -np.inf, np.nan]


def _real(dt):
    return np.float64 if dt == np.complex128 else np.float32


def _tk_real(dt):
    return tk.float64 if dt == np.complex128 else tk.float32


def pairs(z: np.ndarray):
    """A cuda pair view of the complex NumPy array ``z`` (a contiguous copy)."""
    z = np.ascontiguousarray(z)
    return tk.asarray(z.view(_real(z.dtype)).reshape(z.shape + (2,)), device="cuda")


def unpair(p, dt) -> np.ndarray:
    a = np.ascontiguousarray(np.asarray(p))
    return a.view(dt)[..., 0]


def _rand(rng, shape, dt, scale=1.0):
    return (scale * (rng.standard_normal(shape) + 1j * rng.standard_normal(shape))).astype(dt)


def _grid(dt):
    r, i = np.meshgrid(SPECIAL, SPECIAL)
    return np.array([complex(a, b) for a, b in zip(r.ravel(), i.ravel())], dtype=dt)


def _tol(dt):
    return 2e-6 if dt == np.complex64 else 1e-13


def assert_parts_close(got, want, rtol, what=""):
    """Each part within ``rtol`` times the reference's modulus (a part much smaller than the other carries the
    other's rounding); infinities and NaNs in the same places; the sign of zero is not compared (C99 leaves many
    unspecified)."""
    got, want = np.asarray(got), np.asarray(want)
    scale = np.abs(want)
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        with np.errstate(invalid="ignore"):
            err = np.abs(g - w)
        finite = np.isfinite(scale) & np.isfinite(w)
        bad = np.where(finite, ~(err <= rtol * scale), ~np.isclose(g, w, rtol=rtol, atol=0, equal_nan=True))
        assert not bad.any(), f"{what}: {got[bad][:6]} != {want[bad][:6]}"


def _numpy_unary(name, z):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "conj":
            return np.conj(z)
        if name == "rsqrt":
            return 1 / np.sqrt(z)
        if name == "reciprocal":  # 1 / z (the array API): NumPy's reciprocal gives NaN + i NaN for 0
            return 1 / z
        if name == "sigmoid":
            return 1 / (1 + np.exp(-z))
        ref = getattr(np, _NP_NAMES.get(name, name))(z)
    if name == "expm1":  # the standard's special cases (NumPy's differ at infinities, NaN and signed zeros)
        vals = [_spec_expm1(complex(v)) for v in z.reshape(-1)]
        ref = np.empty_like(z)  # parts set one by one (a complex constructor would lose NaN and zero signs)
        ref.real = np.reshape([v.real for v in vals], z.shape)
        ref.imag = np.reshape([v.imag for v in vals], z.shape)
    if name == "sign":  # the standard: z / |z| by division (NumPy 2: an infinite part gives a finite direction)
        with np.errstate(all="ignore"):
            a = np.abs(z)
            ref = np.empty_like(z)
            ref.real = np.where(a == 0, 0, z.real / np.where(a == 0, 1, a))
            ref.imag = np.where(a == 0, 0, z.imag / np.where(a == 0, 1, a))
    return ref


def _spec_expm1(z: complex) -> complex:
    """expm1 of one value by the array API standard's table (2024.12), elementwise in Python floats."""
    x, y = z.real, z.imag
    inf, nan = math.inf, math.nan
    if math.isnan(x):
        return complex(nan, y) if y == 0 else complex(nan, nan)
    if x == -inf:
        return complex(-1.0, math.copysign(0.0, y) if math.isfinite(y) else 0.0)
    if x == inf:
        if y == 0:
            return complex(inf, y)
        if not math.isfinite(y):
            return complex(inf, nan)
        return complex(inf * math.cos(y), inf * math.sin(y))
    if not math.isfinite(y):
        return complex(nan, nan)
    big = x > 709.0  # (math.exp raises OverflowError past ~709.78)
    em1 = inf if big else math.expm1(x)
    if y == 0:
        return complex(0.0 if x == 0 else em1, y)
    return complex(em1 * math.cos(y) - 2 * math.sin(y / 2) ** 2, (inf if big else math.exp(x)) * math.sin(y))


@pytest.mark.parametrize("dt", CDTYPES)
def test_unary_special_values(dt):
    """C99 / the standard's special cases, where NumPy follows them (deviations: _numpy_unary)."""
    z = _grid(dt)
    x = pairs(z)
    tiny_or_huge = (np.abs(z.real) == 1e-30) | (np.abs(z.imag) == 1e-30) | (z.real == 1e30) | (z.imag == 1e30)
    for name in UNARY:
        out = tk.empty(z.shape + (2,), dtype=_tk_real(dt), device="cuda")
        cp.unary(name, out, x)
        got, want = unpair(out, dt), _numpy_unary(name, z)
        # square: x^2 - y^2 under- or overflows (NumPy rounds otherwise); log1p keeps digits NumPy loses; expm1: e^100
        # sin(1e-30) in float32 does not overflow (NumPy: inf)
        keep = ~tiny_or_huge if name in ("square", "log1p", "expm1") else slice(None)
        assert_parts_close(got[keep], want[keep], 10 * _tol(dt), name)


def test_log1p_expm1_keep_small_arguments():
    z = np.array([1e-30 + 1e-30j, 1e-30j, 1e-9 - 2e-9j], dtype=np.complex128)
    out = tk.empty((3, 2), dtype=tk.float64, device="cuda")
    cp.unary("log1p", out, pairs(z))
    # log1p(x + iy) = log1p(2x + x^2 + y^2) / 2 + i atan2(y, 1 + x), by hand to 1e-13 for the last one
    want = np.array([1e-30 + 1e-30j, 5e-61 + 1e-30j, 1.0000000015e-9 - 1.999999998e-9j])
    assert_parts_close(unpair(out, np.complex128), want, 1e-12, "log1p")
    cp.unary("expm1", out, pairs(z))
    want = np.array([1e-30 + 1e-30j, -5e-61 + 1e-30j, complex(np.expm1(1e-9) * np.cos(2e-9) - 2 * np.sin(1e-9) ** 2,
                                                     np.exp(1e-9) * np.sin(-2e-9))])
    assert_parts_close(unpair(out, np.complex128), want, 1e-12, "expm1")


@pytest.mark.parametrize("dt", CDTYPES)
def test_real_and_bool_outputs(dt):
    z = np.concatenate([_grid(dt), _rand(np.random.default_rng(2), (9,), dt, 1e3)])
    x = pairs(z)
    for name, ref, od in (("abs", np.abs(z), _tk_real(dt)), ("angle", np.angle(z), _tk_real(dt)),
                          ("isnan", np.isnan(z), tk.bool), ("isinf", np.isinf(z), tk.bool),
                          ("isfinite", np.isfinite(z), tk.bool)):
        out = tk.empty(z.shape, dtype=od, device="cuda")
        cp.unary(name, out, x)
        got = np.asarray(out)
        if od is tk.bool:
            np.testing.assert_array_equal(got, ref, err_msg=name)
        else:
            np.testing.assert_allclose(got, ref, rtol=_tol(dt), atol=0, equal_nan=True, err_msg=name)
    for big in (np.array([2e38 + 1e38j], dtype=np.complex64), np.array([3e307 - 4e307j])):  # x^2 overflows
        out = tk.empty((1,), dtype=_tk_real(big.dtype), device="cuda")
        cp.unary("abs", out, pairs(big))
        np.testing.assert_allclose(np.asarray(out), np.abs(big), rtol=_tol(big.dtype))


def _numpy_binary(name, a, b):
    with np.errstate(all="ignore"):
        return {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
                "pow": np.power, "equal": np.equal, "not_equal": np.not_equal}[name](a, b)


def _run_binary(name, a, b, want):
    """Launch ``name`` on NumPy operands ``a``/``b`` (complex arrays as pair views, real arrays as they are,
    Python scalars as they are) and compare with ``want``."""
    def operand(v):
        if isinstance(v, np.ndarray):
            return (pairs(v), True) if v.dtype.kind == "c" else (tk.asarray(v, device="cuda"), False)
        return v, False
    (x1, c1), (x2, c2) = operand(a), operand(b)
    cmp = name in ("equal", "not_equal")
    dt = want.dtype if not cmp else np.result_type(*(v for v in (a, b) if isinstance(v, np.ndarray)), np.complex64)
    f64 = dt == np.complex128
    out = tk.empty(want.shape if cmp else want.shape + (2,), dtype=tk.bool if cmp else _tk_real(dt), device="cuda")
    cp.binary(name, out, x1, x2, c1, c2, f64)
    if cmp:
        np.testing.assert_array_equal(np.asarray(out), want, err_msg=name)
    else:
        assert_parts_close(unpair(out, dt), want, 10 * _tol(dt), name)


@pytest.mark.parametrize("dt", CDTYPES)
def test_binary_complex_real_scalar_broadcast_strided(dt):
    rng = np.random.default_rng(3)
    a = _rand(rng, (3, 5), dt)
    r = rng.standard_normal((1, 5)).astype(_real(dt))
    bt = _rand(rng, (5, 3), dt).T  # strided (transposed)
    bt[0, 0] = a[0, 0]  # an equal pair
    for name in ("add", "subtract", "multiply", "divide", "pow", "equal", "not_equal"):
        for x, y in ((a, bt), (a, bt[:1]), (r, a), (a, 2.5 - 1j), (1.5j, a), (a[:, ::2], -2)):
            want = _numpy_binary(name, x, y)
            if not isinstance(want, np.ndarray) or want.dtype.kind == "c":
                want = np.asarray(want).astype(dt)
            _run_binary(name, x, y, want)


def test_binary_mixed_precision():
    rng = np.random.default_rng(4)
    a = _rand(rng, (7,), np.complex64)
    r = rng.standard_normal(7)  # float64 with complex64: complex128 (computed in float64)
    _run_binary("multiply", a, r, a.astype(np.complex128) * r)
    _run_binary("divide", r, a, r / a.astype(np.complex128))


@pytest.mark.parametrize("dt", CDTYPES)
def test_divide_and_multiply_special_values(dt):
    """Smith's division as NumPy's (0/0, x/0 inf or NaN parts, no overflow for huge divisors), multiply's plain
    formula (NumPy has no Annex G infinity recovery)."""
    g = _grid(dt)
    a = np.repeat(g[::3], 4)
    b = np.tile(g[::7], a.size // g[::7].size + 1)[:a.size]
    for name in ("divide", "multiply", "add", "subtract"):
        _run_binary(name, a, b, _numpy_binary(name, a, b))
    huge = np.array([1e300 + 1e300j], dtype=np.complex128)
    _run_binary("divide", huge, huge, np.array([1 + 0j]))  # the naive formula's |b|^2 overflows


@pytest.mark.parametrize("dt", CDTYPES)
def test_pow_cases(dt):
    rng = np.random.default_rng(5)
    a = _rand(rng, (11,), dt)
    b = _rand(rng, (11,), dt, 0.7)
    _run_binary("pow", a, b, _numpy_binary("pow", a, b))
    for e in (0, 3, -4, 99, -2.5, 1j):  # integer exponents by repeated squaring
        _run_binary("pow", a, e, _numpy_binary("pow", a, np.asarray(e, dtype=dt)))
    zeros = np.array([0j, 0j, 0j, 0j], dtype=dt)
    _run_binary("pow", zeros, np.array([2 + 0j, 0j, -1 + 0j, 1 + 1j], dtype=dt),
                np.array([0j, 1 + 0j, complex(np.nan, np.nan), 0j], dtype=dt))  # NumPy 2: 0 for Re b > 0


@pytest.mark.parametrize("dt", CDTYPES)
def test_prod_rows(dt):
    rng = np.random.default_rng(6)
    for m, r in ((3, 5), (1, 300), (4, 0)):
        z = _rand(rng, (m, r), dt, 0.9)
        out = tk.empty((m, 2), dtype=_tk_real(dt), device="cuda")
        cp.prod_rows(out, pairs(z))
        assert_parts_close(unpair(out, dt), np.prod(z, axis=1), 50 * _tol(dt))
    z = _rand(rng, (6, 5), dt)  # strided rows: the product over axis 0 of a transposed view
    out = tk.empty((5, 2), dtype=_tk_real(dt), device="cuda")
    cp.prod_rows(out, pairs(z)[::1].permute((1, 0, 2)) if hasattr(tk.Array, "permute")
                 else tk.permute_dims(pairs(z), (1, 0, 2)))
    assert_parts_close(unpair(out, dt), np.prod(z, axis=0), 50 * _tol(dt))


@pytest.mark.parametrize("dt", CDTYPES)
def test_matmul_pairs(dt):
    """One real GEMM on the interleaved layout: plain, a transposed (copied) operand, a batch, a shared b."""
    rng = np.random.default_rng(7)
    for sa, sb, ta in (((3, 5), (5, 7), False), ((5, 3), (5, 7), True), ((2, 3, 4), (2, 4, 3), False),
                       ((2, 3, 4), (4, 5), False), ((1, 1), (1, 3), False)):
        a = _rand(rng, sa, dt)
        b = _rand(rng, sb, dt)
        xa = pairs(a)
        if ta:  # a strided view: its K pairs are not adjacent
            xa = tk.permute_dims(xa, (1, 0, 2))
            a = a.T
        want = a @ b
        xb = pairs(b)
        if xb.ndim < xa.ndim:  # the caller broadcasts the batch (stride 0)
            xb = tk.broadcast_to(xb, (sa[0],) + xb.shape)
        out = tk.empty(want.shape + (2,), dtype=_tk_real(dt), device="cuda")
        cp.matmul_pairs(out, xa, xb)
        assert_parts_close(unpair(out, dt), want, 10 * _tol(dt) * np.sqrt(sa[-1]), "matmul")


# ------------------------------------------------------------------ the public ops: cuda equals cpu (NumPy backend)
def _both(z):
    return tk.asarray(z, device="cuda"), tk.asarray(z)


def _host(a):
    return np.asarray(a.to("cpu"))


def _assert_same(c, h, rtol, what):
    c, h = _host(c), np.asarray(h)
    assert c.dtype == h.dtype, (what, c.dtype, h.dtype)
    if c.dtype.kind == "c":
        assert_parts_close(c, h, rtol, what)
    elif c.dtype.kind == "b":
        np.testing.assert_array_equal(c, h, err_msg=what)
    else:
        np.testing.assert_allclose(c, h, rtol=rtol, atol=0, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("dt", CDTYPES)
def test_ops_cuda_equals_cpu(dt):
    from tkernels import elementwise as ew

    rng = np.random.default_rng(8)
    z = _rand(rng, (3, 5), dt, 0.8)
    z[0, :3] = [0, 1, -1j]
    c, h = _both(z)
    for name in sorted(ew.COMPLEX_UNARY):  # strided (the contiguous path: the special-value tests)
        f = getattr(tk, name)
        _assert_same(f(c[:, ::2]), f(h[:, ::2]), 10 * _tol(dt), name)
    _assert_same(tk.conj(c.mT), tk.conj(h.mT), 0, "conj")
    r = rng.standard_normal((1, 5))
    rc, rh = _both(r.astype(np.float32))
    ic, ih = _both(np.arange(5, dtype=np.int32) - 2)
    pairs_ = (((c, h), (c[:1], h[:1])), ((3, 3), (c, h)), ((rc, rh), (c, h)), ((c, h), (ic, ih)),
              ((c[:, ::2], h[:, ::2]), (1j, 1j)))
    for name in sorted(ew.COMPLEX_BINARY):
        f = getattr(tk, name)
        for (a1, b1), (a2, b2) in pairs_ if name == "multiply" else pairs_[:1] + pairs_[-1:]:
            _assert_same(f(a1, a2), f(b1, b2), 10 * _tol(dt), name)
    other = tk.complex128 if dt == np.complex64 else tk.complex64
    _assert_same(c * c.astype(other), h * h.astype(other), 10 * _tol(dt), "mixed precision")


@pytest.mark.parametrize("dt", CDTYPES)
def test_casts_fills_where_cuda_equals_cpu(dt):
    rng = np.random.default_rng(9)
    z = _rand(rng, (3, 4), dt)
    c, h = _both(z)
    for r in (tk.float32, tk.float64, tk.int32, tk.bool, tk.float16, tk.complex64, tk.complex128):
        _assert_same(c.astype(r), h.astype(r), 0, f"astype {r}")  # complex -> real: the real part
        _assert_same(c.mT.astype(r), h.mT.astype(r), 0, f"astype {r}")
        xr = (rng.standard_normal((3, 4)) * 3).astype(np.dtype(r.name) if r.kind != "c" else np.complex64)
        xc, xh = _both(xr)
        _assert_same(xc.astype(tk.dtypes.as_dtype(dt)), xh.astype(tk.dtypes.as_dtype(dt)), 0, f"astype from {r}")
    _assert_same(tk.full((2, 3), 1.5 - 2j, dtype=tk.dtypes.as_dtype(dt), device="cuda"),
                 tk.full((2, 3), 1.5 - 2j, dtype=tk.dtypes.as_dtype(dt)), 0, "full")
    c[1:, ::2] = 3j
    h[1:, ::2] = 3j
    _assert_same(c, h, 0, "setitem")
    m = rng.standard_normal((3, 4)) > 0
    mc, mh = _both(m)
    for o in (0.5, 2 - 1j, None):
        oc, oh = (c[:1], h[:1]) if o is None else (o, o)
        _assert_same(tk.where(mc, c, oc), tk.where(mh, h, oh), 0, "where")
        _assert_same(tk.where(mc[:, ::2], oc if o is not None else c[:1, ::2], c[:, 1::2]),
                     tk.where(mh[:, ::2], oh if o is not None else h[:1, ::2], h[:, 1::2]), 0, "where strided")


@pytest.mark.parametrize("dt", CDTYPES)
def test_reductions_and_matmul_cuda_equals_cpu(dt):
    rng = np.random.default_rng(10)
    z = _rand(rng, (3, 4, 5), dt, 0.9)
    c, h = _both(z)
    for op in ("sum", "prod", "mean"):
        for axis in (0, 2, (0, 2), None):
            _assert_same(getattr(tk, op)(c, axis=axis), getattr(tk, op)(h, axis=axis), 50 * _tol(dt), f"{op} {axis}")
            assert_parts_close(_host(getattr(tk, op)(c.mT, axis=axis)), getattr(np, op)(np.swapaxes(z, -1, -2),
                               axis=axis), 50 * _tol(dt), f"{op} {axis} vs NumPy")
    _assert_same(tk.sum(c, axis=1, dtype=tk.complex128), tk.sum(h, axis=1, dtype=tk.complex128), 1e-12, "sum dtype")
    _assert_same(tk.cumulative_sum(c, axis=1), tk.cumulative_sum(h, axis=1), 50 * _tol(dt), "cumulative_sum")
    for axis, init in ((1, False), (0, True)):
        _assert_same(tk.cumulative_prod(c.mT, axis=axis, include_initial=init),
                     tk.cumulative_prod(h.mT, axis=axis, include_initial=init), 50 * _tol(dt), "cumulative_prod")
    long = _rand(rng, (2, 150), dt, 0.99)  # rows longer than a tile: the running product carried across chunks
    assert_parts_close(_host(tk.cumulative_prod(tk.asarray(long, device="cuda"), axis=1)), np.cumprod(long, axis=1),
                       500 * _tol(dt), "cumulative_prod long")
    _assert_same(tk.vecdot(c, c[::-1]), tk.vecdot(h, h[::-1]), 50 * _tol(dt), "vecdot")  # conjugates x1
    _assert_same(tk.vector_norm(c, axis=-1), tk.vector_norm(h, axis=-1), 50 * _tol(dt), "vector_norm")
    for a, b in ((z[0], z[1].T), (z, np.swapaxes(z, 1, 2)), (z[:, 0], z[1].T)):
        (ac, ah), (bc, bh) = _both(a), _both(b)
        _assert_same(ac @ bc, ah @ bh, 20 * _tol(dt), "matmul")
        _assert_same(ac @ bc.mT.mT, a @ b, 20 * _tol(dt), "matmul vs NumPy")
    (ac, ah), (rc, rh) = _both(z[0]), _both(rng.standard_normal((5, 2)).astype(np.float32))
    _assert_same(ac @ rc, ah @ rh, 20 * _tol(dt), "complex @ real")


def test_complex_autograd_on_cuda():
    """The complex kernels under autograd (its conjugate-Wirtinger convention): gradcheck in complex128 on cuda,
    and a real loss's gradients equal to cpu's."""
    ag = pytest.importorskip("autograd")
    rng = np.random.default_rng(11)
    z0, w0 = _rand(rng, (2, 3), np.complex128), _rand(rng, (3, 2), np.complex128)
    z = ag.tensor(z0, device="cuda", requires_grad=True)
    w = ag.tensor(w0, device="cuda", requires_grad=True)
    v = ag.tensor(z0[0, :2], device="cuda", requires_grad=True)  # few parts: gradcheck evaluates twice per part
    assert ag.gradcheck(lambda a: (a.exp() * a.sin() / (a.abs() + 1)).sqrt(), (v,))
    loss = ((z @ w).abs() ** 2).sum() + (z.conj() * z.tanh()).real.prod()
    loss.backward()
    zc, wc = (ag.tensor(v, requires_grad=True) for v in (z0, w0))
    (((zc @ wc).abs() ** 2).sum() + (zc.conj() * zc.tanh()).real.prod()).backward()
    for g, gc in ((z.grad, zc.grad), (w.grad, wc.grad)):
        assert_parts_close(g.to("cpu").numpy(), gc.numpy(), 1e-12, "grad")


def test_matmul_is_one_gemm_on_the_interleaved_layout(monkeypatch):
    """The launches of a complex matmul (recorded, not run): B' built by 2 copies and a multiply by i, then ONE
    real GEMM reading a's and writing out's pair views in place (the 4M method would launch 4 GEMMs + a negation,
    3M 3 GEMMs + 5 elementwise passes); B' is twice b's bytes, and a broadcast b is expanded once."""
    import tkernels.backends.triton as backend

    seen = []

    def record(kernel, grid, *args, **meta):
        seen.append((getattr(kernel, "fn", kernel).__name__, [a for a in args if isinstance(a, tk.Array)]))

    for m in ("complex_pairs", "memory", "linalg", "elementwise"):
        monkeypatch.setattr(getattr(backend, m), "launch", record)
    a = tk.empty((2, 5, 3), dtype=tk.complex64, device="cuda")
    b = tk.empty((3, 4), dtype=tk.complex64, device="cuda")
    out = a @ b
    names = [n for n, _ in seen]
    assert names == ["copy_kernel", "complex_binary_kernel", "copy_kernel", "matmul_kernel"], names
    gemm = seen[-1][1]
    assert gemm[0]._storage is a._storage and gemm[2]._storage is out._storage  # a and out: no copies
    bp = gemm[1]
    assert bp.shape == (2, 6, 8) and bp._strides == (0, 8, 1)  # (2K, 2N), built once for the broadcast batch
