"""tkernels: an array library for cpu (NumPy) and cuda (Triton kernels), following the Python array API.

>>> import tkernels as tk
>>> x = tk.arange(6, dtype=tk.float32).reshape(2, 3)
>>> tk.sum(x * 2, axis=1)
Array([ 6., 24.], dtype=float32, device=cpu)
"""

import sys as _sys

from . import array as _array_mod
from . import dtypes
from ._info import *  # noqa: F403
from .array import Array
from .copying import *  # noqa: F403
from .creation import *  # noqa: F403
from .device import Device, get_default_device, set_default_device
from .dtypes import (
    DType, bfloat16, bool, can_cast, finfo, float16, float32, float64, get_default_dtype, iinfo, int8, int16,
    int32, int64, isdtype, promote_types, result_type, set_default_dtype, uint8,
    uint16, uint32, uint64,
)
from ._complex import angle, complex, conj, imag, polar, real, view_as_complex, view_as_real  # noqa: A004
from .dtypes import complex64, complex128
from .elementwise import *  # noqa: F403
from .elementwise import BINARY as _BINARY
from .elementwise import UNARY as _UNARY
from .elementwise import clip, elu, gelu, leaky_relu, lerp, logit, nan_to_num, round, softplus, where
from .indexing import *  # noqa: F403
from .products import *  # noqa: F403
from .manipulation import *  # noqa: F403
from .reduction import *  # noqa: F403
from .searching import *  # noqa: F403
from .validation import NegativeIntegerPowerError, OpIndexError, OpTypeError, OpValueError, ZeroDivisionError
from . import cuda  # noqa: E402
from . import random  # noqa: E402
from . import graphs  # noqa: E402
from . import ops  # noqa: E402
from . import fft  # noqa: E402
from . import linalg  # noqa: E402
from .threads import get_num_threads, set_num_threads  # noqa: E402

__version__ = "0.1.0"
__array_api_version__ = "2024.12"

e = 2.718281828459045
pi = 3.141592653589793
inf = float("inf")
nan = float("nan")
newaxis = None

_mod = _sys.modules[__name__]
for _n in list(_UNARY) + list(_BINARY):
    if not hasattr(_mod, _n) or _n in ("round", "abs", "pow"):
        setattr(_mod, _n, getattr(_sys.modules["tkernels.elementwise"], _n))


def permute_dims(x, /, axes):
    """A view of ``x`` with its axes permuted."""
    return _check_array("permute_dims", x).permute_dims(axes)


def matrix_transpose(x, /):
    """A view with the last two axes swapped."""
    return _check_array("matrix_transpose", x).matrix_transpose()


def reshape(x, /, shape, *, copy=None):
    """``x`` with a new shape (a view when the strides allow it)."""
    return _check_array("reshape", x).reshape(shape, copy=copy)


def broadcast_to(x, /, shape):
    """A view of ``x`` broadcast to ``shape``."""
    return _check_array("broadcast_to", x).broadcast_to(shape)


def broadcast_arrays(*arrays):
    """Views of the arrays broadcast to one shape."""
    from .validation import broadcast_shapes as _bs

    shape = _bs(*(_check_array("broadcast_arrays", a).shape for a in arrays), op="broadcast_arrays")
    return [a.broadcast_to(shape) for a in arrays]


def broadcast_shapes(*shapes):
    from .validation import broadcast_shapes as _bs

    return _bs(*(tuple(s) for s in shapes), op="broadcast_shapes")


def squeeze(x, /, axis=None):
    return _check_array("squeeze", x).squeeze(axis)


def expand_dims(x, /, axis=0):
    return _check_array("expand_dims", x).expand_dims(axis)


def flatten(x, /, start_axis=0, end_axis=-1):
    return _check_array("flatten", x).flatten(start_axis, end_axis)


def unflatten(x, /, axis, sizes):
    return _check_array("unflatten", x).unflatten(axis, sizes)


def moveaxis(x, source, destination, /):
    return _check_array("moveaxis", x).moveaxis(source, destination)


def swapaxes(x, axis1, axis2, /):
    return _check_array("swapaxes", x).swapaxes(axis1, axis2)


def _check_array(op, x):
    if not isinstance(x, Array):
        from .validation import describe

        raise OpTypeError(f"{op}: expected an Array, got {describe(x)}")
    return x


_array_mod._F = _mod
