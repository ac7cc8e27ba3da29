"""DLPack through ctypes: the C structs, dtype codes, and capsules made and consumed by the Python C API.

The structs follow ``dlpack.h`` 1.x: ``DLManagedTensor`` (legacy capsule ``"dltensor"``) and
``DLManagedTensorVersioned`` (capsule ``"dltensor_versioned"``). Producing (``to_capsule``): one
``PyMem_Malloc`` block holds the managed struct followed by shape and strides; ``manager_ctx`` is a strong
reference to an owner object (the storage being exported); the deleter frees the block and drops that
reference; the capsule's destructor calls the deleter unless a consumer renamed the capsule to ``"used_..."``.
Consuming (``from_capsule``): read the struct, validate it, rename the capsule, and return an ``Imported``
whose ``owner`` calls the producer's deleter exactly once when it dies.

Why the C functions come from NumPy: a capsule destructor (or a DLPack deleter) written in Python, as a ctypes
callback, runs Python code while the interpreter may be unwinding an exception (a capsule that is a temporary
in an expression that raises dies with the exception set); the callback then loses that exception and
CPython crashes. NumPy's own DLPack destructor and deleter are C and do exactly what the DLPack standard
mandates (destructor: call ``managed->deleter`` unless the capsule was renamed ``used_*``; deleter: take the
GIL, ``PyMem_Free`` the single block, ``Py_DECREF(manager_ctx)``). ``_native()`` takes their addresses from two
NumPy capsules after checking that NumPy uses that layout (NumPy >= 2.1: shape and strides in the same block,
``manager_ctx`` the exported object); otherwise ctypes callbacks of the same behaviour are used.
"""

from __future__ import annotations

import ctypes
import threading

from . import dtypes as _dt
from .validation import OpTypeError

__all__ = [
    "kDLCPU", "kDLCUDA", "kDLCUDAHost", "kDLCUDAManaged", "DLPACK_VERSION", "FLAG_READ_ONLY", "FLAG_IS_COPIED",
    "DLDevice", "DLDataType", "DLTensor", "DLManagedTensor", "DLPackVersion", "DLManagedTensorVersioned",
    "dl_dtype", "dtype_from_dl", "dl_dtype_name", "to_capsule", "from_capsule", "capsule_name", "Imported",
]

kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13  # noqa: N816 - the names of dlpack.h
DLPACK_VERSION = (1, 0)  # what we produce; we consume any 1.x
FLAG_READ_ONLY, FLAG_IS_COPIED = 1, 2

DEVICE_NAMES = {1: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan", 8: "kDLMetal",
                9: "kDLVPI", 10: "kDLROCM", 11: "kDLROCMHost", 12: "kDLExtDev", 13: "kDLCUDAManaged",
                14: "kDLOneAPI", 15: "kDLWebGPU", 16: "kDLHexagon", 17: "kDLMAIA", 18: "kDLTrn"}


# --------------------------------------------------------------------------------------------- structs
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


def _head(struct) -> int:
    """Bytes before shape/strides in our single block: the struct, rounded up to 8."""
    return (ctypes.sizeof(struct) + 7) // 8 * 8


# ------------------------------------------------------------------------------------------------ dtypes
_CODE = {"i": 0, "u": 1, "f": 2, "b": 6, "c": 5}  # kDLComplex (5): bits of the whole element (64, 128)
_TO_DL = {d: (4 if d is _dt.bfloat16 else _CODE[d.kind], d.bits, 1) for d in _dt.all_dtypes}
_FROM_DL = {v: d for d, v in _TO_DL.items()}
_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque_handle", 4: "bfloat", 5: "complex", 6: "bool",
               7: "float8_e3m4", 8: "float8_e4m3", 9: "float8_e4m3b11fnuz", 10: "float8_e4m3fn",
               11: "float8_e4m3fnuz", 12: "float8_e5m2", 13: "float8_e5m2fnuz", 14: "float8_e8m0fnu",
               15: "float6_e2m3fn", 16: "float6_e3m2fn", 17: "float4_e2m1fn"}


def dl_dtype(dtype) -> tuple[int, int, int]:
    """(code, bits, lanes) of one of our dtypes: bfloat16 is kDLBfloat (4), bool is kDLBool (6)."""
    return _TO_DL[_dt.as_dtype(dtype)]


def dl_dtype_name(code: int, bits: int, lanes: int) -> str:
    """A readable name for a DLPack dtype: ``float32``, ``complex64``, ``float8_e4m3fn``, ``float32x4``."""
    base = _CODE_NAMES.get(code)
    if base is None:
        name = f"<unknown type code {code}, {bits} bits>"
    elif code == 4:
        name = f"bfloat{bits}"
    elif code >= 7 or code == 3:
        name = base if bits in (4, 6, 8) or code == 3 else f"{base} ({bits} bits)"
    else:
        name = f"{base}{bits}"
    return name if lanes == 1 else f"{name}x{lanes}"


def dtype_from_dl(code: int, bits: int, lanes: int, op: str = "from_dlpack") -> _dt.DType:
    """Our dtype for a DLPack dtype; BufferError naming it when we have no such dtype."""
    d = _FROM_DL.get((code, bits, lanes))
    if d is None:
        what = "vector (lanes != 1) dtypes are" if lanes != 1 else "this dtype is"
        raise BufferError(f"{op}: unsupported DLPack dtype {dl_dtype_name(code, bits, lanes)} (code={code}, "
                          f"bits={bits}, lanes={lanes}): {what} not supported; supported: "
                          f"{', '.join(x.name for x in _dt.all_dtypes)}")
    return d


# ------------------------------------------------------------------------------------ the Python C API
_api = ctypes.pythonapi
_P = ctypes.PYFUNCTYPE  # keeps the GIL; raises the Python error the call set
_capsule_new = _P(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(("PyCapsule_New", _api))
_capsule_is_valid = _P(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_capsule_get_pointer = _P(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))
_capsule_get_destructor = _P(ctypes.c_void_p, ctypes.py_object)(("PyCapsule_GetDestructor", _api))
_capsule_set_name = _P(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(("PyCapsule_SetName", _api))
_capsule_get_name = _P(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", _api))
_mem_malloc = _P(ctypes.c_void_p, ctypes.c_size_t)(("PyMem_Malloc", _api))
_mem_free = _P(None, ctypes.c_void_p)(("PyMem_Free", _api))
_incref = _P(None, ctypes.py_object)(("Py_IncRef", _api))
_decref_addr = _P(None, ctypes.c_void_p)(("Py_DecRef", _api))
# used inside the fallback capsule destructor, where the capsule is being deallocated: raw pointers only
_raw_is_valid = _P(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_raw_get_pointer = _P(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))

# capsule names must outlive the capsules: static buffers
_NAME_BUFS = {n: ctypes.create_string_buffer(n) for n in
              (b"dltensor", b"dltensor_versioned", b"used_dltensor", b"used_dltensor_versioned")}
_NAME_ADDR = {n: ctypes.addressof(b) for n, b in _NAME_BUFS.items()}

_DELETER_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # void (*)(DLManagedTensor[Versioned] *): C ABI, GIL released


def _py_deleter(ctx_offset):
    def deleter(addr):
        ctx = ctypes.c_void_p.from_address(addr + ctx_offset).value
        _mem_free(addr)
        if ctx:
            _decref_addr(ctx)

    return deleter


_py_deleter_legacy = _DELETER_T(_py_deleter(DLManagedTensor.manager_ctx.offset))
_py_deleter_versioned = _DELETER_T(_py_deleter(DLManagedTensorVersioned.manager_ctx.offset))


@_DELETER_T
def _py_capsule_destructor(capsule):
    """Fallback capsule destructor: call the deleter unless a consumer renamed the capsule ``used_*``."""
    for name, struct in ((b"dltensor_versioned", DLManagedTensorVersioned), (b"dltensor", DLManagedTensor)):
        if _raw_is_valid(capsule, name):
            addr = _raw_get_pointer(capsule, name)
            fn = struct.from_address(addr).deleter
            if fn:
                _DELETER_T(fn)(addr)
            return


_PY_FUNCS = tuple(ctypes.cast(f, ctypes.c_void_p).value for f in
                  (_py_capsule_destructor, _py_deleter_legacy, _py_capsule_destructor, _py_deleter_versioned))
_funcs = None  # (legacy destructor, legacy deleter, versioned destructor, versioned deleter)
_funcs_lock = threading.Lock()
use_native = True  # tests switch this off to exercise the ctypes-callback fallback


def _native():
    """NumPy's C destructor/deleter addresses, when NumPy's capsules have our layout; else None."""
    import numpy as np

    nd = np.zeros(3, np.float32)
    try:
        caps = ((nd.__dlpack__(), b"dltensor", DLManagedTensor),
                (nd.__dlpack__(max_version=DLPACK_VERSION), b"dltensor_versioned", DLManagedTensorVersioned))
    except (TypeError, BufferError, RuntimeError):  # NumPy < 2.1: no versioned capsules, another layout
        return None
    out = []
    for cap, name, struct in caps:
        if not _capsule_is_valid(cap, name):
            return None
        addr = _capsule_get_pointer(cap, name)
        m = struct.from_address(addr)
        versioned = struct is DLManagedTensorVersioned
        if (m.manager_ctx != id(nd) or m.dl_tensor.shape != addr + _head(struct) or not m.deleter
                or (versioned and m.version.major != 1)):
            return None
        out += [_capsule_get_destructor(cap), m.deleter]
    return tuple(out) if all(out) else None


def _functions():
    global _funcs
    if not use_native:
        return _PY_FUNCS
    if _funcs is None:
        with _funcs_lock:
            if _funcs is None:
                _funcs = _native() or _PY_FUNCS
    return _funcs


def native_functions_in_use() -> bool:
    """Whether capsules are destroyed by C code (NumPy's), safe while an exception propagates."""
    return _functions() is not _PY_FUNCS


# ------------------------------------------------------------------------------------------ producing
def to_capsule(owner, data: int | None, device: tuple[int, int], dtype: tuple[int, int, int], shape, strides, *,
               versioned: bool, copied: bool = False, read_only: bool = False):
    """A DLPack capsule describing ``shape``/``strides`` (elements) of ``dtype`` (code, bits, lanes) at ``data``.

    ``owner`` stays alive until the consumer calls the deleter, or until the capsule dies unconsumed.
    """
    struct = DLManagedTensorVersioned if versioned else DLManagedTensor
    ndim = len(shape)
    head = _head(struct)
    addr = _mem_malloc(head + 16 * ndim)
    if not addr:
        raise MemoryError("__dlpack__: out of host memory for the DLPack tensor descriptor")
    ctypes.memset(addr, 0, head)
    m = struct.from_address(addr)
    t = m.dl_tensor
    t.data = data or None
    t.device = DLDevice(*device)
    t.ndim = ndim
    t.dtype = DLDataType(*dtype)
    if ndim:
        dims = (ctypes.c_int64 * (2 * ndim)).from_address(addr + head)
        dims[:ndim] = list(shape)
        dims[ndim:] = list(strides)
        t.shape, t.strides = addr + head, addr + head + 8 * ndim
    t.byte_offset = 0
    destructor_l, deleter_l, destructor_v, deleter_v = _functions()
    if versioned:
        m.version = DLPackVersion(*DLPACK_VERSION)
        m.flags = (FLAG_IS_COPIED if copied else 0) | (FLAG_READ_ONLY if read_only else 0)
        m.deleter, destructor, name = deleter_v, destructor_v, b"dltensor_versioned"
    else:
        m.deleter, destructor, name = deleter_l, destructor_l, b"dltensor"
    m.manager_ctx = id(owner)
    _incref(owner)  # released by the deleter
    try:
        return _capsule_new(addr, _NAME_ADDR[name], destructor)
    except BaseException:
        _DELETER_T(m.deleter)(addr)
        raise


# ------------------------------------------------------------------------------------------ consuming
class _ManagedRef:
    """Calls the producer's deleter once, when the last Array over the imported memory dies."""

    __slots__ = ("addr", "deleter", "__weakref__")

    def __init__(self, addr: int, deleter: int | None):
        self.addr = addr
        self.deleter = deleter

    def release(self, _call=_DELETER_T) -> None:  # bound now: module globals may be gone at interpreter exit
        fn, self.deleter = self.deleter, None
        if fn:
            _call(fn)(self.addr)

    def __del__(self):
        self.release()


class Imported:
    """What a consumed capsule describes: ``data`` (address of element 0, byte_offset included), ``device``
    (type, id), ``dtype`` (ours), ``shape``, ``strides`` (elements, None when C-contiguous), flags, ``owner``."""

    __slots__ = ("data", "device", "dtype", "shape", "strides", "versioned", "read_only", "copied", "owner")


def capsule_name(capsule) -> str | None:
    """The name of a PyCapsule (``"dltensor"``, ``"used_dltensor_versioned"``...)."""
    name = _capsule_get_name(capsule)
    return None if name is None else name.decode()


def from_capsule(capsule, op: str = "from_dlpack") -> Imported:
    """Read and consume a DLPack capsule (renamed ``used_*``); BufferError, leaving it unconsumed, if unusable."""
    if type(capsule).__name__ != "PyCapsule":
        raise OpTypeError(f"{op}: __dlpack__() returned {type(capsule).__name__}, expected a PyCapsule")
    if _capsule_is_valid(capsule, b"dltensor_versioned"):
        name, struct = b"dltensor_versioned", DLManagedTensorVersioned
    elif _capsule_is_valid(capsule, b"dltensor"):
        name, struct = b"dltensor", DLManagedTensor
    else:
        got = capsule_name(capsule)
        why = "it was already consumed" if got and got.startswith("used_") else "it is not a DLPack capsule"
        raise BufferError(f"{op}: cannot use the capsule named {got!r}: {why}")
    addr = _capsule_get_pointer(capsule, name)
    m = struct.from_address(addr)
    out = Imported()
    out.versioned = struct is DLManagedTensorVersioned
    if out.versioned:
        v = (m.version.major, m.version.minor)
        if v[0] != DLPACK_VERSION[0]:
            raise BufferError(f"{op}: unsupported DLPack version {v[0]}.{v[1]} (we read {DLPACK_VERSION[0]}.x)")
        flags = m.flags
    else:
        flags = 0
    t = m.dl_tensor
    out.device = (t.device.device_type, t.device.device_id)
    out.dtype = dtype_from_dl(t.dtype.code, t.dtype.bits, t.dtype.lanes, op)
    ndim = t.ndim
    if ndim < 0 or (ndim and not t.shape):
        raise BufferError(f"{op}: malformed DLTensor (ndim={ndim}, shape pointer {t.shape})")
    out.shape = tuple((ctypes.c_int64 * ndim).from_address(t.shape)) if ndim else ()
    if not ndim:
        out.strides = ()
    else:
        out.strides = tuple((ctypes.c_int64 * ndim).from_address(t.strides)) if t.strides else None
    out.data = (t.data or 0) + t.byte_offset
    out.read_only = bool(flags & FLAG_READ_ONLY)
    out.copied = bool(flags & FLAG_IS_COPIED)
    deleter = m.deleter
    _capsule_set_name(capsule, _NAME_ADDR[b"used_" + name])
    out.owner = _ManagedRef(addr, deleter)
    return out
