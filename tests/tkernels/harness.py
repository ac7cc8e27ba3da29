"""The table-driven op harness shared by every backend and by autograd.

An ``OpInfo`` describes one op: how to call it, a NumPy reference, the dtypes it supports, a generator of
sample inputs, tolerances and whether it is differentiable. ``tests/tkernels/test_ops.py`` runs every
OpInfo of ``tests/tkernels/opinfos/*.py`` on every device (cpu; interpreted cuda when available) for each
dtype, on contiguous and non-contiguous copies of each sample, and checks values, result kinds, and that the
inputs were left unchanged. The autograd tests reuse the same table for gradcheck.

Writing an OpInfo (one per op, in the opinfos module of its family)::

    OpInfo("exp", op=tk.exp, ref=np.exp, dtypes=FLOATS, samples=unary_samples(low=-3, high=3))

``samples(rng, dtype)`` yields ``Sample(args, kwargs)`` whose array arguments are NumPy arrays (the harness
turns them into Arrays on the device under test) and whose other arguments are passed as they are. ``ref``
receives the same arguments as NumPy arrays (float16/bfloat16 upcast to float32) and returns NumPy arrays
(or a tuple of them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import ml_dtypes
import numpy as np

import tkernels as tk

FLOATS = ("float32", "float64", "float16", "bfloat16")
FLOATS_FULL = ("float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8")
SIGNED_INTS = ("int8", "int16", "int32", "int64")
ALL_NUMERIC = FLOATS + INTS
ALL = ALL_NUMERIC + ("bool",)

# torch.testing.assert_close defaults
TOLS = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}
ODD_SIZES = (1, 7, 127, 129)


@dataclasses.dataclass
class Sample:
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    desc: str = ""

    def __repr__(self) -> str:
        shapes = [getattr(a, "shape", a) for a in self.args]
        return f"Sample({self.desc or shapes}, {self.kwargs})"


@dataclasses.dataclass
class OpInfo:
    name: str
    op: Callable
    ref: Callable
    samples: Callable[[np.random.Generator, str], Iterable[Sample]]
    dtypes: tuple = FLOATS
    # per-dtype (rtol, atol) overrides
    tols: dict = dataclasses.field(default_factory=dict)
    differentiable: bool = True
    # argument positions that carry gradients (None: every floating array argument)
    grad_args: tuple | None = None
    # skip the non-contiguous copies (for ops whose samples are not plain arrays)
    noncontig: bool = True
    # compare only what can be compared (e.g. ops returning unordered values)
    compare: Callable | None = None
    # the dtype of the result must equal the reference's (set False for refs that compute in other dtypes)
    check_dtype: bool = True
    # the autograd function and gradcheck settings are filled by the autograd tests
    extra: dict = dataclasses.field(default_factory=dict)

    def __repr__(self) -> str:
        return f"OpInfo({self.name})"

    def tol(self, dtype: str):
        return self.tols.get(dtype, TOLS.get(dtype, (0.0, 0.0)))


# ----------------------------------------------------------------------------------------- input makers
def make(rng: np.random.Generator, shape, dtype: str, *, low=None, high=None, nonzero=False) -> np.ndarray:
    """Random values of ``dtype`` (never all zeros): floats uniform in [low, high) (default [-3, 3)), ints in a
    range that does not overflow under arithmetic, bools half true."""
    shape = tuple(shape)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    npd = np.dtype(dtype) if dtype != "bfloat16" else np.dtype(ml_dtypes.bfloat16)
    if npd.kind == "f" or dtype == "bfloat16":
        lo = -3.0 if low is None else low
        hi = 3.0 if high is None else high
        v = rng.uniform(lo, hi, shape)
        if nonzero:
            v = np.where(np.abs(v) < 0.1, 0.5, v)
        return np.asarray(v).astype(npd)
    info = np.iinfo(npd)
    lo = max(info.min, -9 if low is None else int(low))
    hi = min(info.max, 10 if high is None else int(high))
    v = rng.integers(lo, hi, shape)
    if nonzero:
        v = np.where(v == 0, 1, v)
    return np.asarray(v).astype(npd)


def noncontig(x: tk.Array) -> tk.Array:
    """The same values in a non-contiguous layout: every other element of a twice-as-long last axis."""
    if x.ndim == 0 or x.size == 0:
        return x
    shape = x.shape[:-1] + (x.shape[-1] * 2,)
    big = tk.zeros(shape, dtype=x.dtype, device=x.device)
    view = big[..., ::2]
    view[...] = x
    assert not view.is_contiguous() or x.shape[-1] == 1
    return view


def transposed(x: tk.Array) -> tk.Array:
    """The same values held transposed in memory (a ``.mT`` view of a contiguous copy of ``x.mT``)."""
    if x.ndim < 2:
        return x
    return tk.asarray(np.array(np.swapaxes(x.numpy(), -1, -2), order="C"), device=x.device).mT


def to_device(v, device: str, layout: str):
    if isinstance(v, np.ndarray):
        a = tk.asarray(np.array(v, order="C"), device=device, copy=True)
        if layout == "noncontig":
            a = noncontig(a)
        elif layout == "transposed":
            a = transposed(a)
        return a
    if isinstance(v, list | tuple) and any(isinstance(e, np.ndarray) for e in v):
        return type(v)(to_device(e, device, layout) for e in v)
    return v


def ref_arg(v):
    """NumPy arguments for the reference: half floats upcast to float32."""
    if isinstance(v, np.ndarray) and v.dtype in (np.float16, np.dtype(ml_dtypes.bfloat16)):
        return v.astype(np.float32)
    if isinstance(v, list | tuple) and any(isinstance(e, np.ndarray) for e in v):
        return type(v)(ref_arg(e) for e in v)
    return v


def host(v) -> np.ndarray:
    if isinstance(v, tk.Array):
        return np.asarray(v.to("cpu").numpy())
    return np.asarray(v)


def assert_close(actual, expected, dtype: str, rtol: float, atol: float, msg: str = "", check_dtype=True):
    """Compare a result (Array or tuple of Arrays) with a NumPy reference; NaNs must match."""
    if isinstance(expected, tuple | list):
        assert isinstance(actual, tuple | list), f"{msg}: expected a tuple of results, got {type(actual)}"
        assert len(actual) == len(expected), f"{msg}: {len(actual)} results, expected {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, dtype, rtol, atol, f"{msg}[{i}]", check_dtype)
        return
    if expected is None:
        assert actual is None, f"{msg}: expected None, got {actual!r}"
        return
    assert isinstance(actual, tk.Array), f"{msg}: expected an Array, got {type(actual).__name__}"
    a = host(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape, f"{msg}: shape {a.shape} != expected {e.shape}"
    if check_dtype:
        ak, ek = _kind(a.dtype), _kind(e.dtype)
        assert ak == ek, f"{msg}: result dtype {actual.dtype} is not of the kind of the reference's {e.dtype}"
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=msg)
        return
    np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol, err_msg=msg,
                               equal_nan=True)


def _kind(d: np.dtype) -> str:
    return "f" if d.kind == "f" or d == np.dtype(ml_dtypes.bfloat16) else ("b" if d.kind == "b" else "i")


def run_op(info: OpInfo, sample: Sample, dtype: str, device: str, layout: str):
    """Run one sample on one device and layout and compare with the reference."""
    args = tuple(to_device(a, device, layout) for a in sample.args)
    kwargs = {k: to_device(v, device, layout) for k, v in sample.kwargs.items()}
    before = [host(a).copy() for a in args if isinstance(a, tk.Array)]
    result = info.op(*args, **kwargs)
    after = [host(a) for a in args if isinstance(a, tk.Array)]
    for b, a in zip(before, after):  # compared as bytes: NaNs and bfloat16 included
        assert a.shape == b.shape and a.tobytes() == b.tobytes(), f"{info.name}: an input was modified by the op"
    expected = info.ref(*(ref_arg(a) for a in sample.args), **{k: ref_arg(v) for k, v in sample.kwargs.items()})
    rtol, atol = info.tol(dtype)
    msg = f"{info.name}[{dtype}, {device}, {layout}] {sample!r}"
    if info.compare is not None:
        info.compare(result, expected, dtype, rtol, atol, msg)
    else:
        assert_close(result, expected, dtype, rtol, atol, msg, info.check_dtype)
    return result


# --------------------------------------------------------------------------------- common sample makers
UNARY_SHAPES = ((), (0,), (1,), (7,), (127,), (3, 129), (2, 0, 3), (4, 5, 6))
BINARY_SHAPES = (((), ()), ((7,), (7,)), ((3, 129), (3, 129)), ((0,), (0,)), ((3, 1), (1, 4)), ((5, 3, 4), (4,)),
                 ((), (3, 3)), ((2, 3), ()), ((1,), (127,)), ((2, 0, 3), (1, 3)))


def unary_samples(low=None, high=None, nonzero=False, **kwargs):
    def gen(rng, dtype):
        for s in UNARY_SHAPES:
            yield Sample((make(rng, s, dtype, low=low, high=high, nonzero=nonzero),), dict(kwargs))

    return gen


def binary_samples(low=None, high=None, rhs_low=None, rhs_high=None, rhs_nonzero=False, scalars=(2, 0.5)):
    def gen(rng, dtype):
        for s1, s2 in BINARY_SHAPES:
            yield Sample((make(rng, s1, dtype, low=low, high=high),
                          make(rng, s2, dtype, low=rhs_low, high=rhs_high, nonzero=rhs_nonzero)))
        for sc in scalars:
            yield Sample((make(rng, (3, 5), dtype, low=low, high=high), sc), desc=f"(3, 5) op scalar {sc}")

    return gen


# --------------------------------------------------------------------------- backward entries vs finite differences
def fd_vjp_check(f, args, grad_out, grads, wrt, *, eps=1e-6, rtol=1e-5, atol=1e-8, seed=0, msg=""):
    """Check backward results with central finite differences along random directions (float64).

    ``f(*args)`` returns a NumPy array (or a tuple; ``grad_out`` then is a tuple) computed from float64 NumPy
    ``args``; ``grads[i]`` is the gradient claimed for ``args[wrt[i]]``. For a random direction ``v`` of each
    checked argument, ``<grads[i], v>`` must equal ``d/dt <grad_out, f(args + t v)>`` at t = 0.
    """
    rng = np.random.default_rng(seed)

    def dot_out(out):
        outs = out if isinstance(out, tuple | list) else (out,)
        gos = grad_out if isinstance(grad_out, tuple | list) else (grad_out,)
        return sum(float(np.sum(np.asarray(o, np.float64) * np.asarray(g, np.float64)))
                   for o, g in zip(outs, gos) if g is not None)

    for g, i in zip(grads, wrt):
        base = np.asarray(args[i], np.float64)
        v = rng.standard_normal(base.shape)
        plus = list(args)
        minus = list(args)
        plus[i] = base + eps * v
        minus[i] = base - eps * v
        numeric = (dot_out(f(*plus)) - dot_out(f(*minus))) / (2 * eps)
        analytic = float(np.sum(np.asarray(g, np.float64) * v))
        assert abs(numeric - analytic) <= atol + rtol * max(abs(numeric), abs(analytic)), (
            f"{msg}: gradient of argument {i} disagrees with finite differences: analytic {analytic!r}, "
            f"numeric {numeric!r}")
