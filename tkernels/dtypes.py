"""Data types shared by tkernels, autograd and nn, and PyTorch's type promotion.

A ``DType`` is a small immutable object whose ``str()`` is the plain name (``"bfloat16"``); Triton's
specializer reads exactly that name, and NumPy reads ``.numpy`` (bfloat16 comes from ``ml_dtypes``).

Promotion follows PyTorch's table: categories bool < integer < floating; within a category the wider
type wins; an unsigned integer with a signed one goes to the smallest signed type that holds both (the
array API table: ``uint8``/``int8`` is ``int16``, ``uint16``/``int16`` ``int32``, ``uint32``/``int32`` ``int64``);
``uint64`` with a signed integer raises TypeError (no integer holds both: the standard leaves it undefined,
PyTorch raises, NumPy 2 gives float64, which loses values above 2**53 silently); ``float16`` with
``bfloat16`` gives ``float32``. Python scalars are *weak*: they only matter when their category is higher
than the array's (``int32_array + 2.5`` gives the default float dtype, ``float16_array + 2.5`` stays
``float16``, ``uint8_array + 300`` stays ``uint8``). 0-d arrays rank between the two, as in PyTorch (and unlike
the array API, where they promote like any array): among themselves they promote by the table, and they change
the result of dimensioned arrays only when their category is higher (``int32[n]`` with an ``int64`` 0-d array
is ``int32``, with a ``float64`` one ``float64``; ``float32[n]`` with a ``float64`` 0-d array is ``float32``).
Every op that promotes several operands (binary ops, where, clip, lerp) uses ``result_type``'s rule.

Complex (``complex64``, ``complex128``; kind ``"c"``) is the category above floating, as in PyTorch: a complex
dtype with a floating one keeps the wider of the two component widths (``complex64`` with ``float64`` is
``complex128``); a 0-d or Python complex over a floating array takes that array's width (``float64[n] + 1j`` is
``complex128``, ``float32[n]`` with a ``complex128`` 0-d array ``complex64``); over integers or bools a Python
complex gives the default complex dtype (``complex128`` when the default float is float64, else ``complex64``).
PyTorch's ``float16 + 1j`` is ``complex32``, which tkernels lacks: it gives ``complex64``.
"""

from __future__ import annotations

import builtins as _builtins

import ml_dtypes
import numpy as np

from .validation import OpTypeError, OpValueError, check_scalar_fits

__all__ = [
    "DType", "bool", "int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32",
    "float64", "all_dtypes", "as_dtype", "result_type", "promote_types", "can_cast", "finfo", "iinfo",
    "isdtype", "get_default_dtype", "set_default_dtype", "default_int", "is_floating", "is_integer",
    "uint16", "uint32", "uint64",
    "complex64", "complex128", "is_complex", "to_complex", "to_real",
]


class DType:
    """One element type. Compare with ``==`` (also against NumPy dtypes and names)."""

    __slots__ = ("name", "numpy", "itemsize", "kind", "rank", "_hash")

    def __init__(self, name: str, np_dtype, kind: str, rank: int):
        self.name = name
        self.numpy = np.dtype(np_dtype)
        self.itemsize = self.numpy.itemsize
        self.kind = kind  # "b" bool, "u" unsigned, "i" signed, "f" floating, "c" complex
        self.rank = rank  # order within the kind, by width
        self._hash = hash(name)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"tkernels.{self.name}"

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if isinstance(other, DType):
            return self is other
        if other is None:  # (``d in (float16, bfloat16)`` with d None: no as_dtype error message built and dropped)
            return False
        try:
            return as_dtype(other) is self
        except Exception:  # noqa: BLE001 - == never raises: anything that is not a dtype is just unequal
            return False

    def __reduce__(self):
        return (as_dtype, (self.name,))

    @property
    def is_floating_point(self) -> bool:
        return self.kind == "f"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def is_signed(self) -> bool:
        return self.kind in "ifc"

    @property
    def bits(self) -> int:
        return self.itemsize * 8


bool = DType("bool", np.bool_, "b", 0)  # noqa: A001 - the array API name
uint8 = DType("uint8", np.uint8, "u", 0)
uint16 = DType("uint16", np.uint16, "u", 1)
uint32 = DType("uint32", np.uint32, "u", 2)
uint64 = DType("uint64", np.uint64, "u", 3)
int8 = DType("int8", np.int8, "i", 0)
int16 = DType("int16", np.int16, "i", 1)
int32 = DType("int32", np.int32, "i", 2)
int64 = DType("int64", np.int64, "i", 3)
float16 = DType("float16", np.float16, "f", 0)
bfloat16 = DType("bfloat16", ml_dtypes.bfloat16, "f", 0)
float32 = DType("float32", np.float32, "f", 1)
float64 = DType("float64", np.float64, "f", 2)

all_dtypes = (bool, uint8, uint16, uint32, uint64, int8, int16, int32, int64, float16, bfloat16, float32, float64)
# complex dtypes (rank = the rank of their real component's float dtype: complex64 ~ float32)
complex64 = DType("complex64", np.complex64, "c", 1)
complex128 = DType("complex128", np.complex128, "c", 2)
all_dtypes = (*all_dtypes, complex64, complex128)

_by_name = {d.name: d for d in all_dtypes}
_by_name.update({"half": float16, "float": float32, "double": float64, "long": int64, "int": int32,
                 "short": int16, "bf16": bfloat16, "fp16": float16, "fp32": float32, "fp64": float64})
_by_name.update({"cfloat": complex64, "cdouble": complex128, "complex": complex64})
_by_np = {d.numpy: d for d in all_dtypes}

_default_float = float32
default_int = int64


def as_dtype(obj) -> DType:
    """Turn a DType, a name, a NumPy dtype or type, or a Python type into a DType."""
    if isinstance(obj, DType):
        return obj
    if obj is None:
        raise OpTypeError("dtype: None is not a dtype; pass one of "
                          f"{', '.join(x.name for x in all_dtypes)} (or omit the argument for the default)")
    if isinstance(obj, str):
        d = _by_name.get(obj.split(".")[-1])
        if d is None:
            raise OpTypeError(f"dtype: unknown dtype name {obj!r}; known: {', '.join(x.name for x in all_dtypes)}")
        return d
    if obj is _builtins.float:
        return _default_float
    if obj is _builtins.int:
        return int64
    if obj is _builtins.bool:
        return bool
    if obj is _builtins.complex:
        return default_complex()
    name = getattr(obj, "name", None)  # autograd/tk objects with a .name, and torch-like dtypes via str
    if isinstance(name, str) and name in _by_name and not isinstance(obj, np.dtype):
        return _by_name[name]
    try:
        npd = np.dtype(obj)
    except TypeError:
        raise OpTypeError(f"dtype: cannot interpret {obj!r} as a dtype; use one of "
                          f"{', '.join(x.name for x in all_dtypes)}") from None
    d = _by_np.get(npd)
    if d is None:
        raise OpTypeError(f"dtype: unsupported dtype {npd}; supported: {', '.join(x.name for x in all_dtypes)}")
    return d


def get_default_dtype() -> DType:
    """The floating dtype that Python floats and float factories produce (float32 unless changed)."""
    return _default_float


def set_default_dtype(dtype) -> None:
    """Set the default floating dtype (float16, bfloat16, float32 or float64), like PyTorch."""
    global _default_float
    d = as_dtype(dtype)
    if d.kind != "f":
        raise OpTypeError(f"set_default_dtype: only floating dtypes are allowed, got {d}")
    _default_float = d


def is_floating(d: DType) -> bool:
    return d.kind == "f"


def is_integer(d: DType) -> bool:
    return d.kind in "iu"


def is_complex(d: DType) -> bool:
    return d.kind == "c"


def to_complex(d: DType) -> DType:
    """The complex dtype whose components are ``d`` (float64 -> complex128; other floats -> complex64, since
    tkernels has no complex32); complex dtypes map to themselves."""
    if d.kind == "c":
        return d
    if d.kind != "f":
        raise OpTypeError(f"to_complex: {d} is not a floating dtype")
    return complex128 if d is float64 else complex64


def to_real(d: DType) -> DType:
    """The dtype of a complex dtype's components (complex64 -> float32, complex128 -> float64); others map to
    themselves."""
    if d.kind != "c":
        return d
    return float64 if d is complex128 else float32


def default_complex() -> DType:
    """The complex dtype Python complex numbers take: complex128 with a float64 default float, else complex64."""
    return complex128 if _default_float is float64 else complex64


# ---------------------------------------------------------------------------------------------------------
# Promotion

_CAT = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _promote2(a: DType, b: DType) -> DType:
    if a is b:
        return a
    ca, cb = _CAT[a.kind], _CAT[b.kind]
    if ca == 3 or cb == 3:  # complex: the wider component width of the two
        ra = a.rank if a.kind in "fc" else 0
        rb = b.rank if b.kind in "fc" else 0
        return complex128 if max(ra, rb) == 2 else complex64
    if ca != cb:
        return a if ca > cb else b
    if ca == 2:  # floats
        if a.rank == b.rank:  # float16 vs bfloat16
            return float32
        return a if a.rank > b.rank else b
    if a.kind == b.kind:
        return a if a.rank > b.rank else b
    # an unsigned with a signed integer -> the smallest signed type holding both (none for uint64)
    u, i = (a, b) if a.kind == "u" else (b, a)
    if i.itemsize > u.itemsize:
        return i
    return _SIGNED_OF_SIZE.get(2 * u.itemsize)


_SIGNED_OF_SIZE = {2: int16, 4: int32, 8: int64}


class _PromotionTable(dict):
    """``(dtype, dtype) -> dtype``; a pair without a result (uint64 with a signed integer) raises TypeError."""

    def __missing__(self, key):
        a, b = key
        raise OpTypeError(f"type promotion: {a} and {b} have no common dtype (no integer type holds every uint64 "
                          f"and every {b if a is uint64 else a} value; the array API standard leaves this pair "
                          f"undefined and PyTorch raises); hint: cast one side explicitly, e.g. "
                          f"x.astype(tkernels.int64) or x.astype(tkernels.float64)")


_PROMO = _PromotionTable({(a, b): r for a in all_dtypes for b in all_dtypes if (r := _promote2(a, b)) is not None})


def promote_types(a, b) -> DType:
    """PyTorch's promotion of two dtypes (the array API's for the unsigned types; see the module docstring)."""
    return _PROMO[as_dtype(a), as_dtype(b)]


def _scalar_kind(x) -> int:
    if isinstance(x, _builtins.bool | np.bool_):
        return 0
    if isinstance(x, _builtins.int | np.integer):
        return 1
    if isinstance(x, _builtins.float | np.floating):
        return 2
    if isinstance(x, complex | np.complexfloating):
        return 3
    raise OpTypeError(f"expected a number, got {type(x).__name__}")


def scalar_dtype(x) -> DType:
    """The dtype a Python scalar takes on its own (bool, int64, or the default float)."""
    k = _scalar_kind(x)
    return default_complex() if k == 3 else (bool, int64, _default_float)[k]


# ---------------------------------------------------------------------------------------------------------
# Literals: every path that stores a Python number (creation, fills, item assignment, scalar sides of where
# and clip) converts it here, once and straight to the target dtype, as ``np.asarray(value, dtype)`` does.
# Never through float32 or the default float dtype first: a float64 target keeps 0.3, 1e-300 and 2**53 + 1
# exactly, an int64 target keeps 2**62 + 1 (no float round trip), a float16 one rounds 1 + 2**-11 + 2**-40 once.

_FMAX = {d: float(ml_dtypes.finfo(d.numpy).max) for d in (float16, bfloat16, float32)}


def literal(value, dtype: DType, op: str = "asarray") -> np.ndarray:
    """A Python or NumPy number, or a nested sequence of them, as a NumPy array of ``dtype``.

    Integer targets refuse NaN, infinities and out-of-range values with a ValueError naming ``op`` (as
    PyTorch does; NumPy would raise or wrap) and truncate in-range floats toward zero; floats beyond a float
    dtype's range become +-inf, as NumPy casts them. A NumPy array is cast like ``astype``.
    """
    npd = dtype.numpy
    cls = value.__class__
    if dtype.kind == "c" or cls is _builtins.complex or isinstance(value, np.complexfloating):
        return _complex_literal(value, dtype, op)
    if cls is _builtins.float or cls is _builtins.int or cls is _builtins.bool:  # the hot case: fills, zeros...
        if dtype.kind != "f":
            check_scalar_fits(op, value, dtype)
            return np.asarray(value, npd)
        try:
            if dtype is float64 or abs(value) <= _FMAX[dtype]:
                return np.asarray(value, npd)
            with np.errstate(over="ignore"):  # beyond the range: inf, as NumPy's cast makes it (it also warns)
                return np.asarray(value, npd)
        except OverflowError:  # a Python int beyond float64's range
            raise OpValueError(f"{op}: value {value} cannot be converted to {dtype} without overflow") from None
    if isinstance(value, np.ndarray):
        return value if value.dtype == npd else value.astype(npd)
    if isinstance(value, _builtins.bool | _builtins.int | _builtins.float | np.generic):  # NumPy numbers, subclasses
        check_scalar_fits(op, value, dtype)
        with np.errstate(over="ignore"):  # beyond a narrower float dtype: inf (NumPy warns)
            return np.asarray(value, npd)
    try:
        if dtype.kind in "iu":  # NumPy infers exact ints (int64, uint64) or float64, then one checked cast
            src = np.asarray(value)
            if dtype is uint64 and src.dtype.kind == "f" and src.size and np.isfinite(src).all() \
                    and src.min() >= 0 and src.max() <= 2.0 ** 64:  # ints mixing int64 and beyond: NumPy infers
                return np.asarray(value, npd)  # float64; straight to uint64 keeps them exact (OverflowError above)
            if src.dtype != npd and src.dtype.kind in "iuf" and src.size:
                if src.dtype.kind == "f" and not np.isfinite(src).all():
                    check_scalar_fits(op, src[~np.isfinite(src)].flat[0].item(), dtype)
                check_scalar_fits(op, src.min().item(), dtype)
                check_scalar_fits(op, src.max().item(), dtype)
            return src.astype(npd, copy=False)
        with np.errstate(over="ignore"):
            return np.asarray(value, npd)
    except OverflowError:  # Python ints beyond int64 (for integer targets) or float64
        raise OpValueError(f"{op}: a value of {type(value).__name__} cannot be converted to {dtype} without "
                           f"overflow") from None


def _complex_literal(value, dtype: DType, op: str) -> np.ndarray:
    """``literal`` for a complex target (any number converts, each component cast once) or a complex value (only
    a complex target holds one: PyTorch refuses ``full(..., 1j, dtype=float32)``, NumPy would drop the imaginary
    part)."""
    if dtype.kind != "c":
        raise OpTypeError(f"{op}: cannot convert the complex value {value!r} to {dtype}; hint: take .real or "
                          f"abs() first, or ask for a complex dtype")
    if isinstance(value, np.ndarray):
        return value if value.dtype == dtype.numpy else value.astype(dtype.numpy)
    try:
        with np.errstate(over="ignore"):
            return np.asarray(value, dtype.numpy)
    except OverflowError:
        raise OpValueError(f"{op}: a value of {type(value).__name__} cannot be converted to {dtype} without "
                           f"overflow") from None


def literal_scalar(value, dtype: DType, op: str = "asarray"):
    """``literal`` of one number as the Python bool, int or float that equals the stored value exactly (what a
    kernel argument carries: float16, bfloat16 and float32 values are exact in float32, float64 ones in a
    Python float)."""
    v = literal(value, dtype, op)
    return (_builtins.bool, _builtins.int, _builtins.float, _builtins.complex)[_CAT[dtype.kind]](v)


def combine_tiers(higher: DType, lower: DType) -> DType:
    """PyTorch's ``combine_categories``: the dtype of a higher-priority tier (dimensioned arrays over 0-d arrays
    over Python scalars) stays, unless the lower tier's category (bool < integer < floating < complex) is
    higher; a complex lower tier over a floating higher one keeps the higher one's width (float64 ->
    complex128)."""
    if _CAT[lower.kind] > _CAT[higher.kind]:
        return to_complex(higher) if lower.kind == "c" and higher.kind == "f" else lower
    return higher


def promote_arrays(d1: DType, d2: DType, ndim1: int, ndim2: int) -> DType:
    """``result_type`` of two arrays of dtypes ``d1``, ``d2`` and those numbers of dimensions (one of them 0-d:
    it ranks below the other)."""
    if (ndim1 == 0) == (ndim2 == 0):
        return _PROMO[d1, d2]
    return combine_tiers(d2, d1) if ndim1 == 0 else combine_tiers(d1, d2)


def result_type(*args) -> DType:
    """Promote dtypes, arrays and Python scalars with PyTorch's rules: dtypes and dimensioned arrays first, then
    0-d arrays, then Python scalars (weak); a lower tier matters only when its category is higher (see the
    module's docstring: ``result_type(int32[n], int64 0-d)`` is ``int32``, as ``torch.result_type``)."""
    from .array import Array

    strong = zero = None
    weak_cat = -1
    for x in args:
        if isinstance(x, Array):
            d = x._dtype
            if not x._shape:
                zero = d if zero is None else _PROMO[zero, d]
                continue
        elif isinstance(x, DType | str | np.dtype | type):
            d = as_dtype(x)
        elif hasattr(x, "dtype") and not isinstance(x, np.generic):
            d = as_dtype(x.dtype)
        else:
            weak_cat = max(weak_cat, _scalar_kind(x))
            continue
        strong = d if strong is None else _PROMO[strong, d]
    if zero is not None:
        lower = promote_weak(zero, weak_cat)
    elif weak_cat >= 0:
        lower = (bool, int64, _default_float, default_complex())[weak_cat]
    elif strong is None:
        raise OpTypeError("result_type: at least one array, dtype or scalar is required")
    else:
        return strong
    return lower if strong is None else combine_tiers(strong, lower)


def promote_weak(d: DType, weak_cat: int) -> DType:
    """Promote dtype ``d`` with a weak scalar of category ``weak_cat`` (-1 none, 0 bool, 1 int, 2 float,
    3 complex)."""
    if weak_cat > _CAT[d.kind]:
        if weak_cat == 3:
            return to_complex(d) if d.kind == "f" else default_complex()
        return int64 if weak_cat == 1 else _default_float
    return d


def can_cast(from_, to, /) -> bool:
    """True when casting follows the promotion lattice (array API ``can_cast``)."""
    f, t = as_dtype(from_), as_dtype(to)
    return _PROMO.get((f, t)) is t


def isdtype(dtype, kind) -> bool:
    """Array API ``isdtype``: kind is a dtype, a kind name, or a tuple of them."""
    d = as_dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(d, k) for k in kind)
    if isinstance(kind, str):
        table = {"bool": d.kind == "b", "signed integer": d.kind == "i", "unsigned integer": d.kind == "u",
                 "integral": d.kind in "iu", "real floating": d.kind == "f", "numeric": d.kind in "iufc",
                 "complex floating": d.kind == "c"}
        if kind not in table:
            raise OpValueError(f"isdtype: unknown kind {kind!r}; known: {', '.join(table)}")
        return table[kind]
    return d is as_dtype(kind)


class finfo:  # noqa: N801 - array API name
    """Machine limits of a floating dtype: bits, eps, max, min, smallest_normal, tiny, resolution, dtype.

    For a complex dtype, those of its components (``finfo(complex64)`` is float32's, ``dtype`` float32), as in
    the array API, NumPy and PyTorch."""

    def __init__(self, dtype):
        from .array import Array

        d = dtype.dtype if isinstance(dtype, Array) else as_dtype(dtype)
        d = to_real(d)
        if d.kind != "f":
            raise OpTypeError(f"finfo: {d} is not a floating dtype; use iinfo for integers")
        fi = ml_dtypes.finfo(d.numpy)
        self.dtype = d
        self.bits = d.bits
        self.eps = float(fi.eps)
        self.max = float(fi.max)
        self.min = float(fi.min)
        self.smallest_normal = float(fi.smallest_normal)
        self.tiny = self.smallest_normal
        self.resolution = float(fi.resolution)

    def __repr__(self) -> str:
        return f"finfo(dtype={self.dtype}, eps={self.eps}, max={self.max}, min={self.min})"


class iinfo:  # noqa: N801 - array API name
    """Limits of an integer dtype: bits, max, min, dtype."""

    def __init__(self, dtype):
        from .array import Array

        d = dtype.dtype if isinstance(dtype, Array) else as_dtype(dtype)
        if d.kind not in "iub":
            raise OpTypeError(f"iinfo: {d} is not an integer dtype; use finfo for floating dtypes")
        ii = np.iinfo(np.uint8 if d.kind == "b" else d.numpy)
        self.dtype = d
        self.bits = d.bits
        self.max = 1 if d.kind == "b" else int(ii.max)
        self.min = 0 if d.kind == "b" else int(ii.min)

    def __repr__(self) -> str:
        return f"iinfo(dtype={self.dtype}, min={self.min}, max={self.max})"
