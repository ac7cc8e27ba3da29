"""complex64 / complex128 in tkernels (cpu): dtypes and promotion (vs PyTorch's table), creation, views
(real/imag/view_as_real/view_as_complex), elementwise ops vs NumPy and their special cases (the array API's,
C99 Annex G), reductions, vecdot/matmul/vector_norm, and the clear errors (ordering, cuda without kernels)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import tkernels as tk
from tkernels import cuda as tkc
from tkernels.dtypes import as_dtype

C = ("complex64", "complex128")
TOL = {"complex64": dict(rtol=1.3e-6, atol=1e-5), "complex128": dict(rtol=1e-7, atol=1e-7)}
REAL = {"complex64": np.float32, "complex128": np.float64}


def rand(rng, shape, dtype, low=-2.0, high=2.0):
    return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(dtype)


def close(got, want, dtype):
    got = got.numpy() if isinstance(got, tk.Array) else got
    np.testing.assert_allclose(got, want, **TOL[dtype], equal_nan=True)


def variants(nd):
    """The sample as a contiguous Array and as a non-contiguous view holding the same values."""
    yield tk.asarray(nd)
    big = np.zeros(nd.shape[:-1] + (2 * nd.shape[-1],), nd.dtype) if nd.ndim else None
    if big is not None:
        big[..., ::2] = nd
        yield tk.asarray(big)[..., ::2]


# ------------------------------------------------------------------------------------------ dtypes
def test_dtype_objects_and_names():
    assert str(tk.complex64) == "complex64" and tk.complex64.itemsize == 8 and tk.complex128.itemsize == 16
    assert tk.complex64.kind == "c" and tk.complex64.is_complex and not tk.complex64.is_floating_point
    assert as_dtype(np.complex64) is tk.complex64 and as_dtype("cdouble") is tk.complex128
    assert as_dtype(complex) is tk.complex64 and tk.complex128 == np.complex128
    assert tk.isdtype(tk.complex64, "complex floating") and tk.isdtype(tk.complex128, "numeric")
    assert not tk.isdtype(tk.complex64, "real floating")
    f = tk.finfo(tk.complex128)
    assert f.dtype is tk.float64 and f.eps == np.finfo(np.float64).eps and f.bits == 64
    info = tk.__array_namespace_info__()
    assert set(info.dtypes(kind="complex floating")) == set(C)
    assert info.default_dtypes()["complex floating"] is tk.complex64
    assert tk.can_cast(tk.float32, tk.complex64) and not tk.can_cast(tk.complex64, tk.float64)


def test_promotion_matches_torch():
    torch = pytest.importorskip("torch")
    names = [d.name for d in tk.dtypes.all_dtypes if d.name in C or d.name in ("bool", "uint8", "int32", "int64",
                                                                                "float16", "bfloat16", "float32",
                                                                                "float64")]
    for a, b in itertools.product(names, C):
        got = tk.promote_types(getattr(tk, a), getattr(tk, b)).name
        assert got == str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[1], (a, b)
    # Python complex scalars are weak; 0-d arrays rank below dimensioned ones
    for a in names:
        if a in ("float16", "bfloat16"):
            continue  # PyTorch: complex32, which tkernels lacks (complex64, see tkernels/dtypes.py)
        x, t = tk.ones(3, dtype=getattr(tk, a)), torch.ones(3, dtype=getattr(torch, a))
        assert (x + 1j).dtype.name == str((t + 1j).dtype).split(".")[1], a
        for z in C:
            got = tk.result_type(x, tk.asarray(1j, dtype=getattr(tk, z)))
            want = torch.result_type(t, torch.tensor(1j, dtype=getattr(torch, z)))
            assert got.name == str(want).split(".")[1], (a, z)
    assert (tk.ones(3, dtype=tk.float16) + 1j).dtype is tk.complex64
    assert (tk.ones(3, dtype=tk.complex64) + 2.5).dtype is tk.complex64


@pytest.mark.parametrize("a,b,want", [
    ("complex64", "float64", "complex128"), ("complex64", "float32", "complex64"),
    ("complex64", "float16", "complex64"), ("complex64", "bfloat16", "complex64"), ("complex64", "int64", "complex64"),
    ("complex64", "bool", "complex64"), ("complex128", "float32", "complex128"),
    ("complex64", "complex128", "complex128"), ("uint8", "complex64", "complex64"),
])
def test_promotion_table(a, b, want):  # (PyTorch's, checked against torch in test_promotion_matches_torch)
    assert tk.promote_types(getattr(tk, a), getattr(tk, b)).name == want
    assert tk.promote_types(getattr(tk, b), getattr(tk, a)).name == want


def test_weak_and_0d_promotion():
    f64, f32, i32 = (tk.ones(3, dtype=d) for d in (tk.float64, tk.float32, tk.int32))
    assert (f64 + 1j).dtype is tk.complex128 and (f32 + 1j).dtype is tk.complex64 and (i32 * 1j).dtype is tk.complex64
    assert tk.result_type(f64, tk.asarray(1j, dtype=tk.complex64)) is tk.complex128
    assert tk.result_type(f32, tk.asarray(1j, dtype=tk.complex128)) is tk.complex64
    assert tk.result_type(i32, tk.asarray(1j, dtype=tk.complex128)) is tk.complex128
    assert tk.result_type(tk.asarray(1.0, dtype=tk.float64), 1j) is tk.complex128


def test_default_complex_follows_default_float():
    tk.set_default_dtype(tk.float64)
    try:
        assert tk.asarray(1j).dtype is tk.complex128 and tk.asarray([1, 2j]).dtype is tk.complex128
        assert (tk.ones(2, dtype=tk.int32) + 1j).dtype is tk.complex128
    finally:
        tk.set_default_dtype(tk.float32)


# ------------------------------------------------------------------------------------------ creation
def test_creation_and_conversion():
    z = tk.asarray([1 + 2j, 3])
    assert z.dtype is tk.complex64 and z.tolist() == [1 + 2j, 3 + 0j]
    assert tk.asarray(np.array([1 - 1j], np.complex128)).dtype is tk.complex128
    assert tk.asarray(0.1 + 0.3j, dtype=tk.complex128).item() == 0.1 + 0.3j  # no float32 on the way
    assert tk.asarray([0.1], dtype=tk.complex128).item() == 0.1 + 0j
    assert tk.full((2,), 1j).dtype is tk.complex64 and tk.zeros(2, dtype=tk.complex128).tolist() == [0j, 0j]
    assert complex(tk.asarray(2 - 3j)) == 2 - 3j
    x = tk.asarray([1.5, -2.0]).astype(tk.complex128)
    assert x.dtype is tk.complex128 and x.tolist() == [1.5 + 0j, -2 + 0j]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = z.astype(tk.float32)  # the real part, as PyTorch (and no NumPy ComplexWarning)
    assert r.tolist() == [1.0, 3.0]
    y = tk.zeros(3, dtype=tk.complex64)
    y[1] = 2 + 5j
    y[tk.asarray([0, 2])] = -1j
    assert y.tolist() == [-1j, 2 + 5j, -1j]
    with pytest.raises(TypeError, match="full: cannot store the complex value"):
        tk.full((2,), 1j, dtype=tk.float32)
    with pytest.raises(TypeError, match="complex"):
        tk.ones(2)[0] = 1j
    assert "complex64" in repr(z) and "1.+2.j" in repr(z) and "1.+2.j" in str(z)


def test_random_complex():
    z = tk.random.randn((4000,), dtype=tk.complex64, generator=tk.random.Generator(0))
    assert z.dtype is tk.complex64 and z.shape == (4000,)
    n = z.numpy()
    assert abs(np.mean(np.abs(n) ** 2) - 1) < 0.1 and abs(n.real.mean()) < 0.05 and abs(np.var(n.imag) - 0.5) < 0.05
    u = tk.random.rand((3, 5), dtype=tk.complex128).numpy()
    assert u.dtype == np.complex128 and (u.real >= 0).all() and (u.imag < 1).all() and len(np.unique(u.imag)) == 15


def test_dlpack_round_trip():
    z = tk.asarray(rand(np.random.default_rng(0), (3, 5), np.complex64))[:, 1::2]
    n = np.from_dlpack(z)
    assert n.dtype == np.complex64
    np.testing.assert_array_equal(n, z.numpy())
    back = tk.from_dlpack(n)
    assert back.dtype is tk.complex64 and np.array_equal(back.numpy(), z.numpy())


# ------------------------------------------------------------------------------------------ views
@pytest.mark.parametrize("dtype", C)
def test_real_imag_views(dtype):
    nd = rand(np.random.default_rng(1), (4, 7), dtype)
    z = tk.asarray(nd)
    v = z[1:, ::3]
    re, im = tk.real(v), tk.imag(v)
    assert re.dtype.name == np.dtype(REAL[dtype]).name and re._storage is z._storage
    np.testing.assert_array_equal(re.numpy(), nd[1:, ::3].real)
    np.testing.assert_array_equal(im.numpy(), nd[1:, ::3].imag)
    im[...] = 0  # a view: writes reach the complex array
    assert (z.numpy()[1:, ::3].imag == 0).all() and (z.numpy()[0].imag == nd[0].imag).all()
    r = tk.view_as_real(v)
    assert r.shape == (3, 3, 2) and r._storage is z._storage
    np.testing.assert_array_equal(r.numpy()[..., 0], nd[1:, ::3].real)
    back = tk.view_as_complex(r)
    assert back.dtype.name == dtype and back._storage is z._storage
    np.testing.assert_array_equal(back.numpy(), z.numpy()[1:, ::3])
    assert tk.real(tk.ones(2)) is not None and tk.imag(tk.ones(2)).tolist() == [0.0, 0.0]
    c = tk.conj(v)
    np.testing.assert_array_equal(c.numpy(), np.conj(z.numpy()[1:, ::3]))
    np.testing.assert_array_equal(v.mH.numpy(), np.conj(z.numpy()[1:, ::3]).T)
    np.testing.assert_array_equal(tk.view_as_real(tk.asarray(nd[0, 0])).numpy(), [nd[0, 0].real, nd[0, 0].imag])


def test_view_as_complex_errors():
    x = tk.ones((3, 4))
    with pytest.raises(ValueError, match="view_as_complex: the last dimension must have size 2"):
        tk.view_as_complex(x)
    with pytest.raises(ValueError, match="view_as_complex: the last dimension must have stride 1"):
        tk.view_as_complex(tk.ones((2, 3)).mT)
    with pytest.raises(ValueError, match="must be even"):
        tk.view_as_complex(tk.ones((7,))[1:5].reshape(2, 2))
    with pytest.raises(TypeError, match="view_as_complex: expected a float32 or float64"):
        tk.view_as_complex(tk.ones((2,), dtype=tk.int32))
    with pytest.raises(TypeError, match="view_as_real: expected a complex array"):
        tk.view_as_real(x)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_complex_polar_angle(dtype):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((3, 5)).astype(dtype), rng.standard_normal((1, 5)).astype(dtype)
    z = tk.complex(tk.asarray(a), tk.asarray(b))
    assert z.dtype.name == ("complex64" if dtype == "float32" else "complex128")
    np.testing.assert_array_equal(z.numpy(), a + 1j * b)
    ctol = "complex64" if dtype == "float32" else "complex128"
    close(tk.polar(tk.asarray(np.abs(a)), tk.asarray(b)), np.abs(a) * np.exp(1j * b), ctol)
    close(tk.angle(z), np.angle(a + 1j * b), ctol)
    assert tk.angle(z).dtype.name == dtype
    np.testing.assert_array_equal(tk.angle(tk.asarray([-1.0, 2.0, np.nan], dtype=dtype)).numpy(),
                                  np.array([np.pi, 0.0, np.nan], dtype))
    with pytest.raises(TypeError, match="complex: expected two float32 or two float64"):
        tk.complex(tk.asarray(a), tk.asarray(b.astype(np.float16)))


# ------------------------------------------------------------------------------------------ elementwise
def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


UNARY = {  # op -> NumPy reference (on complex128 values)
    "exp": np.exp, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt,
    "rsqrt": lambda z: 1 / np.sqrt(z), "reciprocal": lambda z: 1 / z, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "sigmoid": _sigmoid, "negative": np.negative,
    "positive": np.positive, "square": np.square, "sign": lambda z: z / np.abs(z), "abs": np.abs, "exp2": np.exp2,
    "log1p": lambda z: np.log(1 + z), "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
    "logical_not": np.logical_not,
}


@pytest.mark.parametrize("dtype", C)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_vs_numpy(op, dtype):
    rng = np.random.default_rng(3)
    for shape in ((), (1,), (7, 3), (0, 4)):
        nd = rand(rng, shape, dtype)
        want = UNARY[op](nd.astype(np.complex128))
        for z in variants(nd):
            got = getattr(tk, op)(z)
            if op == "abs":
                assert got.dtype.name == np.dtype(REAL[dtype]).name
            elif want.dtype == bool:
                assert got.dtype is tk.bool
            else:
                assert got.dtype.name == dtype
            close(got, want.astype(got.dtype.numpy), dtype)
    o = tk.empty((7, 3), dtype=getattr(tk, dtype) if op != "abs" else REAL[dtype])
    if op not in ("isnan", "isinf", "isfinite", "logical_not"):
        assert getattr(tk, op)(tk.asarray(nd := rand(rng, (7, 3), dtype)), out=o) is o
        close(o, UNARY[op](nd.astype(np.complex128)).astype(o.dtype.numpy), dtype)


BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide, "pow": np.power,
          "equal": np.equal, "not_equal": np.not_equal, "logical_and": np.logical_and}


@pytest.mark.parametrize("dtype", C)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_vs_numpy(op, dtype):
    rng = np.random.default_rng(4)
    fn = getattr(tk, op)
    for s1, s2 in (((7, 3), (7, 3)), ((5, 1), (1, 3)), ((), (4,)), ((0, 2), (1, 2))):
        a, b = rand(rng, s1, dtype, 0.5, 2), rand(rng, s2, dtype, 0.5, 2)
        want = BINARY[op](a.astype(np.complex128), b.astype(np.complex128))
        for x, y in zip(variants(a), variants(b)):
            got = fn(x, y)
            close(got, want.astype(got.dtype.numpy), dtype)
    # mixed with real arrays and Python scalars (weak)
    a = rand(rng, (3, 4), dtype, 0.5, 2)
    r = rng.uniform(0.5, 2, (3, 4))
    got = fn(tk.asarray(a), tk.asarray(r))  # float64 real: complex128
    assert got.dtype is (tk.bool if op in ("equal", "not_equal", "logical_and") else tk.complex128)
    close(got, BINARY[op](a.astype(np.complex128), r), "complex64")
    got = fn(tk.asarray(a), 1.5 - 0.5j)
    assert got.dtype.name == dtype or got.dtype is tk.bool
    close(got, BINARY[op](a.astype(np.complex128), 1.5 - 0.5j).astype(got.dtype.numpy), dtype)
    got = fn(2 + 1j, tk.asarray(a))
    close(got, BINARY[op](2 + 1j, a.astype(np.complex128)).astype(got.dtype.numpy), dtype)


def test_operators_and_where():
    a = tk.asarray([1 + 1j, 2 - 1j])
    np.testing.assert_allclose((a * a + 1j - a / (2 + 0j) - 1).numpy(), np.array([1 + 1j, 2 - 1j]) ** 2 + 1j
                               - np.array([1 + 1j, 2 - 1j]) / 2 - 1, rtol=1e-6)
    assert (a == a).tolist() == [True, True] and (a != 1 + 1j).tolist() == [False, True]
    np.testing.assert_allclose((a ** 2).numpy(), np.array([1 + 1j, 2 - 1j]) ** 2, rtol=1e-6)
    assert (-a).tolist() == [-1 - 1j, -2 + 1j] and abs(a).dtype is tk.float32
    w = tk.where(tk.asarray([True, False]), a, 5.0)
    assert w.dtype is tk.complex64 and w.tolist() == [1 + 1j, 5 + 0j]
    w = tk.where(tk.asarray([True, False]), tk.asarray([1.0, 2.0], dtype=tk.float64), 1j)
    assert w.dtype is tk.complex128 and w.tolist() == [1 + 0j, 1j]


# the array API's complex special cases (C99 Annex G) where NumPy's own ufunc differs, and a few NumPy keeps
def _c(re, im):
    z = np.empty((), np.complex128)
    z.real, z.imag = re, im
    return z[()]


INF, NAN = float("inf"), float("nan")
SPECIAL = [
    ("reciprocal", _c(0.0, 0.0), _c(INF, NAN)),  # 1 / 0: complex infinity (np.reciprocal: nan + nan j)
    ("rsqrt", _c(0.0, 0.0), _c(INF, NAN)),
    ("sign", _c(INF, 1.0), _c(NAN, 0.0)),  # z / |z| by the division rules (np.sign: 1)
    ("sign", _c(0.0, -0.0), _c(0.0, 0.0)),
    ("sign", _c(NAN, 1.0), _c(NAN, NAN)),
    ("log1p", _c(-1.0, 0.0), _c(-INF, 0.0)),
    ("log1p", _c(-2.5, -0.0), _c(np.log(1.5), -np.pi)),  # the sign of the zero imaginary part is kept
    ("log1p", _c(INF, NAN), _c(INF, NAN)),
    ("log1p", _c(1e-8, 1e-8), _c(1e-8, 1e-8 / (1 + 1e-8))),  # real part not lost to log(1 + z)
    ("log", _c(-0.0, 0.0), _c(-INF, np.pi)),
    ("log", _c(INF, NAN), _c(INF, NAN)),
    ("exp", _c(0.0, 0.0), _c(1.0, 0.0)),
    ("exp", _c(-INF, 1.0), _c(0.0, 0.0)),
    ("exp", _c(INF, 0.0), _c(INF, 0.0)),
    ("sqrt", _c(-4.0, 0.0), _c(0.0, 2.0)),
    ("sqrt", _c(-4.0, -0.0), _c(0.0, -2.0)),
    ("sqrt", _c(1.0, INF), _c(INF, INF)),
    ("sqrt", _c(-INF, 1.0), _c(0.0, INF)),
    ("tanh", _c(INF, 1.0), _c(1.0, 0.0)),
    ("isnan", _c(1.0, NAN), True), ("isinf", _c(NAN, INF), True), ("isfinite", _c(1.0, INF), False),
]


@pytest.mark.parametrize("dtype", C)
@pytest.mark.parametrize("op,z,want", SPECIAL, ids=[f"{o}{i}" for i, (o, _, _) in enumerate(SPECIAL)])
def test_special_cases(op, z, want, dtype):
    got = getattr(tk, op)(tk.asarray(np.asarray(z, dtype))).item()
    if isinstance(want, bool):
        assert got is want
        return
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        if np.isnan(w):
            assert np.isnan(g), (got, want)
        else:
            assert g == pytest.approx(w, rel=1e-6, abs=0) and np.signbit(g) == np.signbit(w), (got, want)


def test_special_cases_match_torch_on_a_grid():
    torch = pytest.importorskip("torch")
    vals = [0.0, -0.0, 1.0, -2.5, INF, -INF, NAN, 1e-8]
    z = np.array([_c(a, b) for a, b in itertools.product(vals, vals)])
    # where PyTorch differs from the array API standard, the standard wins: PyTorch's log1p of z with an infinite
    # component is NaN + NaN j, the standard's +inf + (the angle or NaN) j (test_special_cases checks those)
    skip = {"log1p": np.isinf(z.real) | np.isinf(z.imag)}
    tmap = {"sign": "sgn"}
    for op in ("exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh", "asinh", "sign",
               "sigmoid", "abs", "atan", "acosh"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = getattr(torch, tmap.get(op, op))(torch.tensor(z)).numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no NumPy warnings escape
            got = getattr(tk, op)(tk.asarray(z)).numpy()
        keep = ~skip.get(op, np.zeros(z.shape, bool))
        for part in ((lambda v: v.real, lambda v: v.imag) if got.dtype.kind == "c" else (lambda v: v,)):
            np.testing.assert_allclose(part(got)[keep], part(ref)[keep], rtol=1e-6, atol=1e-300, equal_nan=True,
                                       err_msg=op)


@pytest.mark.parametrize("op", ["less", "less_equal", "greater", "greater_equal", "maximum", "minimum",
                                "floor_divide", "remainder", "atan2", "copysign"])
def test_ordering_and_real_only_binary_ops_raise(op):
    a = tk.asarray([1 + 1j])
    with pytest.raises(TypeError, match=f"{op}: complex arrays are not supported"):
        getattr(tk, op)(a, a)
    with pytest.raises(TypeError, match=f"{op}: complex arrays are not supported"):
        getattr(tk, op)(tk.ones(1), 1j)


@pytest.mark.parametrize("op", ["floor", "ceil", "trunc", "signbit", "erf", "relu", "lgamma"])
def test_real_only_unary_ops_raise(op):
    with pytest.raises(TypeError, match=f"{op}: complex arrays are not supported"):
        getattr(tk, op)(tk.asarray([1 + 1j]))


def test_ordering_operators_raise():
    a = tk.asarray([1 + 1j])
    with pytest.raises(TypeError, match="less: complex arrays are not supported.*no order"):
        _ = a < a
    with pytest.raises(TypeError, match="clip: complex arrays"):
        tk.clip(a, 0, 1)
    for op in ("max", "min", "argmax", "argmin"):
        with pytest.raises(TypeError, match=f"{op}: complex arrays are not supported"):
            getattr(tk, op)(a)
    with pytest.raises(TypeError, match="var: complex arrays"):
        tk.var(a)
    for fn in (tk.sort, tk.argsort, lambda x: tk.topk(x, 1)):
        with pytest.raises(TypeError, match="complex arrays are not supported.*no order"):
            fn(a)
    with pytest.raises(TypeError, match="searchsorted: x1 must have a real numeric dtype"):
        tk.searchsorted(a, a)


# ------------------------------------------------------------------------------------------ reductions, linalg
@pytest.mark.parametrize("dtype", C)
def test_reductions(dtype):
    rng = np.random.default_rng(5)
    nd = rand(rng, (5, 7), dtype, -1, 1)
    w = nd.astype(np.complex128)
    for z in variants(nd):
        for axis in (None, 0, 1, (0, 1)):
            close(tk.sum(z, axis=axis), w.sum(axis=axis), dtype)
            close(tk.prod(z, axis=axis), w.prod(axis=axis), dtype)
            m = tk.mean(z, axis=axis)
            assert m.dtype.name == dtype
            close(m, w.mean(axis=axis), dtype)
        close(tk.cumulative_sum(z, axis=1), np.cumsum(w, axis=1), dtype)
        close(tk.cumulative_prod(z, axis=0), np.cumprod(w, axis=0), dtype)
    assert tk.sum(tk.asarray([1, 2]), dtype=tk.complex64).item() == 3 + 0j
    assert tk.sum(tk.zeros((0,), dtype=getattr(tk, dtype))).item() == 0j
    assert tk.prod(tk.zeros((0,), dtype=getattr(tk, dtype))).item() == 1 + 0j
    assert tk.any(tk.asarray([0j, 1j])).item() and not tk.all(tk.asarray([0j, 1j])).item()
    assert tk.count_nonzero(tk.asarray([0j, 1j, 1 + 0j])).item() == 2


@pytest.mark.parametrize("dtype", C)
def test_vecdot_matmul_norm(dtype):
    rng = np.random.default_rng(6)
    a, b = rand(rng, (3, 1, 5), dtype), rand(rng, (4, 5), dtype)
    wa, wb = a.astype(np.complex128), b.astype(np.complex128)
    for x in variants(a):
        got = tk.vecdot(x, tk.asarray(b))
        close(got, np.sum(np.conj(wa) * wb, axis=-1), dtype)  # conjugates x1 (array API, torch.linalg.vecdot)
        close(tk.linalg.vecdot(x, tk.asarray(b), axis=-1), np.sum(np.conj(wa) * wb, axis=-1), dtype)
        close(tk.matmul(x, tk.asarray(b).mT), wa @ wb.T, dtype)
        close(tk.asarray(b) @ x.mT, wb @ np.swapaxes(wa, -1, -2), dtype)
    close(tk.matmul(tk.asarray(b[0]), tk.asarray(b).mT), wb[0] @ wb.T, dtype)
    r = rng.standard_normal((5, 2))
    got = tk.matmul(tk.asarray(b), tk.asarray(r))  # complex with float64: complex128
    assert got.dtype is tk.complex128
    close(got, wb @ r, "complex64")
    for ordv in (2, 1, float("inf"), 3):
        n = tk.linalg.vector_norm(tk.asarray(b), axis=1, ord=ordv)
        assert n.dtype.name == np.dtype(REAL[dtype]).name
        close(n, np.linalg.norm(wb, ord=ordv, axis=1), dtype)


# ------------------------------------------------------------------------------------------ cuda
@pytest.mark.skipif(not tkc.is_available(), reason="no cuda device, not even interpreted")
def test_cuda_complex_without_kernels_says_so():
    z = tk.asarray([1 + 2j, 3], device="cuda")  # creation, transfer and views need no kernel
    assert z.dtype is tk.complex64 and z.to("cpu").tolist() == [1 + 2j, 3 + 0j]
    assert tk.real(z).to("cpu").tolist() == [1.0, 3.0] and tk.view_as_real(z).shape == (2, 2)
    r = tk.random.randn((5,), dtype=tk.complex64, device="cuda")  # real samples viewed as complex: no kernel
    assert r.dtype is tk.complex64 and r.device.type == "cuda" and r.to("cpu").numpy().imag.any()
    # the complex cuda kernels (tests/tkernels/cuda/test_complex_kernels.py) serve elementwise ops, casts, where,
    # the reductions, cumulative ops and matmul; what has none yet (the indexing kernels) says so
    for fn in (lambda: tk.take(z, tk.asarray([1, 0], device="cuda")),):
        with pytest.raises(NotImplementedError, match="complex64 on cuda is not implemented yet"):
            fn()


def test_tanh_in_place_keeps_the_zero_signs_of_infinite_real_parts():
    # tanh(+-inf + i y) = +-1 + i copysign(0, y): y is read before the result overwrites x
    z = np.array([complex(-np.inf, -2.0), complex(np.inf, 2.0), complex(np.inf, -0.5), complex(0.3, -1.0)])
    x = tk.asarray(z.copy(), dtype=tk.complex128)
    want = tk.tanh(x).numpy()
    np.testing.assert_array_equal(np.signbit(want.imag[:3]), [True, False, True])
    tk.tanh(x, out=x)
    np.testing.assert_array_equal(x.numpy(), want)
    np.testing.assert_array_equal(np.signbit(x.numpy().imag), np.signbit(want.imag))
