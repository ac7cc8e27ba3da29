"""autograd: the everyday tensor API of the framework, PyTorch's names and semantics (``import autograd as ag``).

A ``Tensor`` wraps a tkernels Array (cpu: NumPy, cuda: our Triton kernels) and records the operations that
need gradients on a tape; ``backward`` and ``grad`` walk it in reverse.
"""

from tkernels import dtypes as _dt
from tkernels.device import Device as device  # noqa: N813

from . import amp, graph, grad_mode, ops  # noqa: F401
from .amp import autocast
from . import tensor as _tensor_mod
from .engine import backward, grad
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .checkpoint import checkpoint, checkpoint_sequential
from .factory import *  # noqa: F401,F403
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (detect_anomaly, enable_grad, inference_mode, is_anomaly_enabled, is_grad_enabled,
                        is_inference_mode_enabled, no_grad, set_detect_anomaly, set_grad_enabled)
from .ops import *  # noqa: F401,F403
linalg = __import__("importlib").import_module(".linalg", __name__)  # ag.linalg (the star import bound ops.linalg)
fft = __import__("importlib").import_module(".fft", __name__)  # ag.fft (torch.fft)
from .ops.reduction import return_types  # noqa: E402,F401
from .tensor import Size, Tensor

_tensor_mod._ops = ops
from . import methods as _methods  # noqa: E402,F401  (installs Tensor methods)

import tkernels.cuda as cuda  # noqa: E402

from . import accelerator, backends, distributions  # noqa: E402
from . import sparse  # noqa: E402
from .sparse import sparse_coo_tensor, spmm  # noqa: E402
from .sparse.layout import layout, sparse_coo, strided  # noqa: E402
from .legacy import *  # noqa: E402,F403
from tkernels import graphs  # noqa: E402,F401
from .config import *  # noqa: E402,F401,F403

bool = _dt.bool  # noqa: A001
uint8 = _dt.uint8
uint16 = _dt.uint16
uint32 = _dt.uint32
uint64 = _dt.uint64
int8 = _dt.int8
int16 = _dt.int16
short = int16
int32 = _dt.int32
int = int32  # noqa: A001
int64 = _dt.int64
long = int64
float16 = _dt.float16
half = float16
bfloat16 = _dt.bfloat16
float32 = _dt.float32
float = float32  # noqa: A001
float64 = _dt.float64
double = float64
complex64 = _dt.complex64
cfloat = complex64
complex128 = _dt.complex128
cdouble = complex128
dtype = _dt.DType
finfo = _dt.finfo
iinfo = _dt.iinfo
promote_types = _dt.promote_types
can_cast = _dt.can_cast
result_type = None  # set below


def result_type(tensor1, tensor2):  # noqa: F811
    a = tensor1._data if isinstance(tensor1, Tensor) else tensor1
    b = tensor2._data if isinstance(tensor2, Tensor) else tensor2
    return _dt.result_type(a, b)


def is_nonzero(input) -> "builtins.bool":  # noqa: F821
    return input.__bool__()


from . import jit, onnx  # noqa: E402  (tracing and ONNX export; the onnx package itself is imported on export)
from .compile import compile  # noqa: E402,A004  (the function: torch's name; autograd.compile.* the package)


def __getattr__(name):
    # ag.multiprocessing without importing it (and multiprocessing's machinery) on every `import autograd`
    if name == "multiprocessing":
        import importlib

        return importlib.import_module(".multiprocessing", __name__)
    raise AttributeError(f"module 'autograd' has no attribute {name!r}")
