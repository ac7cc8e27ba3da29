"""Every op of every family against its NumPy reference, on each device, dtype and layout (the op harness).

On cpu every sample of every dtype runs on the three layouts (contiguous, non-contiguous, transposed).

On cuda (interpreted on CI: every kernel launch costs milliseconds of Python) the matrix is reduced, and the
reduction is fixed here, deterministic and the same for every family:
- every dtype of every op still runs, but the full check only for ``CUDA_FULL_DTYPES`` (float32, one half
  type: float16 or bfloat16 alternating by op name so that both are covered across the table, int64, bool);
  for those, ``CUDA_SAMPLES`` samples evenly spread over the op's list (first and last included), each on the
  contiguous layout plus one strided layout (non-contiguous and transposed in turn);
- the other dtypes run one sample (the op's largest), contiguous.
Block boundaries, strided and broadcast operands, every dtype through each kernel and the GPU-only paths are
tested by the kernel families' own tests in ``tests/tkernels/cuda/``.
"""

import importlib
import pkgutil
import zlib

import numpy as np
import pytest

from . import opinfos
from .harness import run_op

OP_INFOS = []
for _m in sorted(pkgutil.iter_modules(opinfos.__path__), key=lambda m: m.name):
    OP_INFOS.extend(importlib.import_module(f"{opinfos.__name__}.{_m.name}").OP_INFOS)

DEVICES = ["cpu"]
try:  # interpreted cuda joins when the runtime layer provides it (TKERNELS_INTERPRET=1)
    import tkernels.cuda as _tkc

    if _tkc.is_available():
        DEVICES.append("cuda")
except ImportError:
    pass

CUDA_SAMPLES = 5


def cuda_full_dtypes(name: str) -> tuple:
    """The dtypes that get the full (reduced-depth) check on cuda for op ``name``."""
    half = ("float16", "bfloat16")[zlib.crc32(name.encode()) % 2]
    return ("float32", half, "int64", "bool")


CASES = [pytest.param(info, dtype, device, id=f"{info.name}-{dtype}-{device}")
         for device in DEVICES for info in OP_INFOS for dtype in info.dtypes]


def test_op_names_unique():
    names = [i.name for i in OP_INFOS]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def _spread(n: int, k: int) -> list:
    """``k`` indices evenly spread over ``range(n)``, first and last included (all of them when n <= k)."""
    if n <= k:
        return list(range(n))
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def _size(sample) -> int:
    return sum(a.size for a in sample.args if isinstance(a, np.ndarray))


def _runs(info, dtype, samples):
    """(sample, layout) pairs to run on cuda (see the module docstring)."""
    if dtype not in cuda_full_dtypes(info.name):
        return [(max(samples, key=_size), "contiguous")]
    runs = []
    for j, i in enumerate(_spread(len(samples), CUDA_SAMPLES)):
        s = samples[i]
        runs.append((s, "contiguous"))
        if info.noncontig:
            two_d = any(isinstance(a, np.ndarray) and a.ndim >= 2 for a in s.args)
            runs.append((s, "transposed" if j % 2 and two_d else "noncontig"))
    return runs


@pytest.mark.parametrize("info,dtype,device", CASES)
def test_op(info, dtype, device):
    rng = np.random.default_rng(zlib.crc32(f"{info.name}-{dtype}".encode()))
    samples = list(info.samples(rng, dtype))
    assert samples, f"{info.name}: no samples"
    if device == "cuda":
        for sample, layout in _runs(info, dtype, samples):
            run_op(info, sample, dtype, device, layout)
        return
    for sample in samples:
        run_op(info, sample, dtype, device, "contiguous")
        if info.noncontig:
            run_op(info, sample, dtype, device, "noncontig")
            run_op(info, sample, dtype, device, "transposed")
