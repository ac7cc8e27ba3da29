"""Helpers of the NumPy backend."""

from __future__ import annotations

import numpy as np

from ...array import Array
from ...validation import LinAlgError

__all__ = ["npv", "wrap", "operand", "HALF_NP", "accumulate_dtype", "max_last", "lapack", "quiet", "quiet_on",
           "quiet_off"]

HALF_NP = (np.dtype(np.float16), np.dtype("bfloat16"))


def npv(x: Array) -> np.ndarray:
    """The NumPy view of a cpu Array."""
    v = x._nd
    return v if v is not None else x._materialize()


def wrap(nd: np.ndarray, dtype=None) -> Array:
    """A cpu Array owning a fresh NumPy result."""
    return Array._wrap(nd, dtype)


def operand(x, np_dtype: np.dtype):
    """An Array operand as a NumPy array of ``np_dtype``; a Python scalar as itself (wrapped to the dtype's
    range for integers, like PyTorch's casts)."""
    if isinstance(x, Array):
        v = x._nd
        if v is None:
            v = x._materialize()
        return v if v.dtype == np_dtype else v.astype(np_dtype)
    if type(x) is int and np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        if not info.min <= x <= info.max:
            return np.array(x).astype(np_dtype)
    return x


_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)


def accumulate_dtype(*arrays) -> np.dtype:
    """float64 when any of the (optional) Arrays is float64, else float32: what statistics accumulate in."""
    for a in arrays:
        if a is not None and a.dtype.numpy == _F64:
            return _F64
    return _F32


def lapack(op: str, repeated: str, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` (a NumPy LAPACK call) with its non-convergence raised as PyTorch's LinAlgError naming
    ``op`` (non-finite input is refused before: the entries' non-finite check), not as NumPy's exception."""
    try:
        return fn(*args, **kwargs)
    except np.linalg.LinAlgError as e:
        raise LinAlgError(f"linalg.{op}: The algorithm failed to converge because the input matrix is ill-conditioned "
                          f"or has too many repeated {repeated} (LAPACK: {e}); hint: compute in float64, or scale "
                          f"the input") from None


_maximum_reduce = np.maximum.reduce


_MAX_BLOCK = 8192  # values per block of rows in max_last's transposing copy


def max_last(a: np.ndarray, keepdims: bool = False) -> np.ndarray:
    """``np.maximum.reduce(a, axis=-1)``, the same values, faster on short rows. NumPy reduces a short contiguous
    last axis row by row (~60 ns a row: 128 rows of 10 float32, the logits of a small classifier, take 8 µs);
    reducing the transposed copy along its first axis runs one vectorized pass per column instead (1.7 µs with
    the copy; 4-12x for rows of 2-16 and 32-65536 of them, still ahead at 64; measured on a Xeon with AVX-512).
    The max is exact whatever the order, and NaN propagates either way. Rows are transposed by blocks of
    ``_MAX_BLOCK`` values for rows past 16 (the transposing copy of 64-wide rows slows down past L1: 4096 x 64
    366 -> 230 us, 16384 x 64 1.68 -> 1.06 ms), of 8 * ``_MAX_BLOCK`` for shorter ones."""
    if a.ndim >= 2:
        c = a.shape[-1]
        n = a.size
        if 2 <= c <= 64 and 32 * c <= n:
            rows = a.reshape(-1, c)
            block = max(1, (_MAX_BLOCK if c > 16 else 8 * _MAX_BLOCK) // c)
            if rows.shape[0] <= block:
                r = _maximum_reduce(np.ascontiguousarray(rows.T), axis=0)
            else:
                r = np.empty(rows.shape[0], a.dtype)
                for i in range(0, rows.shape[0], block):
                    _maximum_reduce(np.ascontiguousarray(rows[i:i + block].T), axis=0, out=r[i:i + block])
            r = r.reshape(a.shape[:-1])
            return r[..., None] if keepdims else r
    return _maximum_reduce(a, axis=-1, keepdims=keepdims)


# ``with np.errstate(all="ignore")`` costs a few µs per call (it builds a new error-state object each time);
# ops that silence NumPy's floating-point warnings (where PyTorch is silent) run on every step, so they
# use ``tok = quiet_on(); try: ... finally: quiet_off(tok)``: the same context variable NumPy's errstate
# sets, with the "ignore all" state built once per distinct current state (so seterrcall/setbufsize made
# by the user are kept, as errstate keeps them). Falls back to np.errstate when NumPy's internals differ.
try:
    from numpy._core._multiarray_umath import _make_extobj
    from numpy._core._ufunc_config import _extobj_contextvar as _EXTOBJ  # noqa: N812

    _EXTOBJ.reset(_EXTOBJ.set(_make_extobj(all="ignore")))  # the internals behave as expected
except Exception:  # noqa: BLE001 - another NumPy: the public, slower way
    _EXTOBJ = None

if _EXTOBJ is not None:
    _IGNORE: dict = {}
    _get, _set = _EXTOBJ.get, _EXTOBJ.set
    quiet_off = _EXTOBJ.reset

    def quiet_on():
        """Enter "ignore all floating-point errors"; returns the token for ``quiet_off``."""
        cur = _get()
        ign = _IGNORE.get(cur)
        if ign is None:
            ign = _make_extobj(all="ignore")
            if len(_IGNORE) > 64:
                _IGNORE.clear()
            _IGNORE[cur] = ign
        return _set(ign)
else:
    def quiet_on():
        e = np.errstate(all="ignore")
        e.__enter__()
        return e

    def quiet_off(e):
        e.__exit__(None, None, None)


class quiet:  # noqa: N801 - used like np.errstate
    """``with quiet():`` is ``with np.errstate(all="ignore"):``, cheaper (see ``quiet_on``)."""

    __slots__ = ("_tok",)

    def __enter__(self):
        self._tok = quiet_on()

    def __exit__(self, *exc):
        quiet_off(self._tok)
