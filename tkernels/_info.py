"""``tkernels.__array_namespace_info__()``: the array API 2024.12 inspection namespace.

>>> import tkernels as tk
>>> info = tk.__array_namespace_info__()
>>> info.default_dtypes()["indexing"], sorted(info.dtypes(kind="signed integer"))
(tkernels.int64, ['int16', 'int32', 'int64', 'int8'])

Deviations from the standard: ``default_dtypes()["complex floating"]`` is complex64 (complex128 when the
default float dtype is float64). The extra floating dtypes ``float16`` and ``bfloat16`` are listed, as
``isdtype(..., "real floating")`` counts them.
"""

from __future__ import annotations

from . import dtypes as _dt
from .device import CPU, Device, get_default_device
from .validation import OpTypeError, OpValueError

__all__ = ["__array_namespace_info__"]

# NumPy 2's NPY_MAXDIMS (pyproject requires numpy>=2); cpu arrays are NumPy arrays.
_CPU_MAX_DIMS = 64

_NOT_ARRAY_API = (_dt.float16, _dt.bfloat16)  # supported everywhere, but not array API dtypes

_KINDS = {
    "bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu", "real floating": "f",
    "complex floating": "c", "numeric": "iufc",
}


def _cuda_devices() -> list[Device]:
    from . import cuda

    if not cuda.is_available():
        return []
    return [Device("cuda", i) for i in range(cuda.device_count())]


class ArrayNamespaceInfo:
    """What tkernels supports: capabilities, devices, dtypes and default dtypes (array API 2024.12)."""

    __slots__ = ()

    def capabilities(self) -> dict:
        """``{"boolean indexing": True, "data-dependent shapes": True, "max dimensions": N}``.

        ``x[mask]``, ``nonzero`` and ``unique_*`` run on every device. ``max dimensions`` is the smallest limit
        over ``devices()``: NumPy's 64 on cpu; on cuda the strided kernels take at most 6 dimensions left after
        merging the ones contiguous in every operand (``MAX_DIMS`` of the triton backend), so 6 is what every
        array is guaranteed (contiguous arrays of more dimensions merge and work too).
        """
        max_dims = _CPU_MAX_DIMS
        if _cuda_devices():
            from .backends.triton._launch import MAX_DIMS

            max_dims = min(max_dims, MAX_DIMS)
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": max_dims}

    def default_device(self) -> Device:
        """The device that factories use when none is given (``tkernels.get_default_device()``)."""
        return get_default_device()

    def devices(self) -> list[Device]:
        """``cpu``, then ``cuda:0``... when ``tkernels.cuda.is_available()`` (interpreted cuda counts)."""
        return [CPU, *_cuda_devices()]

    def default_dtypes(self, *, device=None) -> dict:
        """The default dtype of each kind on ``device`` (None: the default device): ``"real floating"`` is
        ``get_default_dtype()`` (float32 unless changed), ``"integral"`` and ``"indexing"`` are int64,
        ``"complex floating"`` the complex dtype of the default float dtype (complex64 unless changed)."""
        self._device("default_dtypes", device)
        return {"real floating": _dt.get_default_dtype(), "complex floating": _dt.default_complex(),
                "integral": _dt.default_int, "indexing": _dt.int64}

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The dtypes ``device`` supports (None: the default device), by name: all of them (``kind=None``), those
        of one kind (``"bool"``, ``"signed integer"``, ``"unsigned integer"``, ``"integral"``, ``"real floating"``,
        ``"complex floating"``, ``"numeric"``) or of any kind in a tuple of kinds. As the standard specifies, these
        are the array API's dtypes: float16 and bfloat16, which every device also supports, are not listed (they
        are not array API dtypes: code that iterates this dictionary expects the standard's semantics)."""
        self._device("dtypes", device)
        if kind is None:
            codes = "biufc"
        elif isinstance(kind, str):
            codes = self._kind(kind)
        elif isinstance(kind, tuple):
            codes = "".join(self._kind(k) for k in kind)
        else:
            raise OpTypeError(f"__array_namespace_info__().dtypes: kind must be None, a kind name or a tuple of kind "
                              f"names, got {type(kind).__name__} {kind!r}; kinds: {', '.join(map(repr, _KINDS))}")
        return {d.name: d for d in _dt.all_dtypes if d.kind in codes and d not in _NOT_ARRAY_API}

    @staticmethod
    def _kind(kind) -> str:
        codes = _KINDS.get(kind) if isinstance(kind, str) else None
        if codes is None:
            raise OpValueError(f"__array_namespace_info__().dtypes: unknown kind {kind!r}; kinds: "
                               f"{', '.join(map(repr, _KINDS))}")
        return codes

    def _device(self, op: str, device) -> Device:
        """``device`` (a Device or a string like ``"cuda:0"``) when it is one of ``devices()``."""
        if device is None:
            return get_default_device()
        where = f"__array_namespace_info__().{op}"
        try:
            dev = Device(device)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{where}: bad device {device!r} ({e})") from None
        devices = self.devices()
        if dev.type == "cuda" and dev.index is None and len(devices) > 1:
            return dev  # "cuda": the current cuda device
        if dev not in devices:
            raise OpValueError(f"{where}: device {dev} is not available here; devices(): "
                               f"{', '.join(map(str, devices))}" + ("" if len(devices) > 1 else
                               "; hint: set TKERNELS_INTERPRET=1 before importing tkernels to run cuda code on "
                               "the host"))
        return dev

    def __repr__(self) -> str:
        return "tkernels.__array_namespace_info__()"


_INFO = ArrayNamespaceInfo()


def __array_namespace_info__() -> ArrayNamespaceInfo:  # noqa: N807 - the array API name
    """The array API inspection namespace of tkernels (one shared, stateless object)."""
    return _INFO
