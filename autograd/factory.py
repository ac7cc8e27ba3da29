"""Tensor factories with PyTorch's names and arguments (``*size``, ``dtype``, ``device``, ``requires_grad``),
random numbers (``manual_seed``, ``Generator``) and dtype defaults."""

from __future__ import annotations

import numpy as np

import tkernels as tk
import tkernels.random as _rnd
from tkernels import dtypes as _dt
from tkernels.checks import device_assert
from tkernels.cuda import device_errors as _errors
from tkernels.validation import OpTypeError

from .tensor import Tensor

__all__ = ["tensor", "as_tensor", "from_numpy", "asarray", "zeros", "ones", "empty", "full", "zeros_like",
           "ones_like", "empty_like", "full_like", "arange", "linspace", "logspace", "eye", "rand", "randn",
           "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like", "bernoulli", "multinomial",
           "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "Generator",
           "default_generator", "get_default_dtype", "set_default_dtype", "scalar_tensor", "empty_strided",
           "zeros_like", "tril_indices", "triu_indices", "is_tensor", "is_floating_point", "numel"]

Generator = _rnd.Generator
get_default_dtype = _dt.get_default_dtype


def set_default_dtype(d) -> None:
    d = _dt.as_dtype(d)
    if d.kind != "f":
        raise OpTypeError(f"set_default_dtype(): only floating-point types are supported as the default type, got "
                          f"{d}")
    _dt.set_default_dtype(d)


def _dtype(d):
    return None if d is None else (d if isinstance(d, _dt.DType) else _dt.as_dtype(d))


def _size(op, size, keyword=None):
    """The shape from ``f(2, 3)``, ``f((2, 3))`` or ``f(size=(2, 3))`` (PyTorch accepts all three)."""
    if keyword is not None:
        if size:
            raise OpTypeError(f"{op}(): got the size both positionally {size} and as size={keyword!r}")
        size = (keyword,)
    if len(size) == 1 and not isinstance(size[0], int | np.integer):
        size = size[0]
    try:
        size = tuple(int(s) for s in size)
    except TypeError:
        raise OpTypeError(f"{op}(): size must be a sequence of ints, got {size!r}") from None
    for s in size:
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: {list(size)}")
    return size


def _finish(arr, requires_grad):
    t = Tensor._wrap(arr)
    if requires_grad:
        t.requires_grad = True
    return t


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, NumPy arrays, tensors)."""
    if isinstance(data, Tensor):
        data = data.detach()._data
    arr = tk.asarray(data, dtype=_dtype(dtype), device=device, copy=True)
    if pin_memory:
        arr = arr.pin_memory()
    return _finish(arr, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with ``data`` when dtype and device allow."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype) if (device is not None or dtype is not None) else data
    return Tensor._wrap(tk.asarray(data, dtype=_dtype(dtype), device=device))


asarray = as_tensor


def from_numpy(ndarray) -> Tensor:
    """A cpu tensor sharing memory with the NumPy array."""
    if not isinstance(ndarray, np.ndarray):
        raise OpTypeError(f"from_numpy(): expected np.ndarray (got {type(ndarray).__name__})")
    return Tensor._wrap(tk.from_numpy(ndarray))


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return tensor(s, dtype=dtype or _dt.get_default_dtype(), device=device, requires_grad=requires_grad)


def zeros(*size_, size=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _finish(tk.zeros(_size("zeros", size_, size), dtype=_dtype(dtype), device=device), requires_grad)


def ones(*size_, size=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _finish(tk.ones(_size("ones", size_, size), dtype=_dtype(dtype), device=device), requires_grad)


def empty(*size_, size=None, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    arr = tk.empty(_size("empty", size_, size), dtype=_dtype(dtype), device=device)
    return _finish(arr.pin_memory() if pin_memory else arr, requires_grad)


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return empty(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    size = _size("full", (size,))
    if dtype is None and isinstance(fill_value, bool):
        dtype = _dt.bool
    elif dtype is None and isinstance(fill_value, int):
        dtype = _dt.int64
    return _finish(tk.full(size, fill_value, dtype=_dtype(dtype), device=device), requires_grad)


def _like(x, dtype, device):
    return (x.dtype if dtype is None else _dtype(dtype)), (x.device if device is None else device)


def zeros_like(input, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    d, dev = _like(input, dtype, device)
    return _finish(tk.zeros(tuple(input.shape), dtype=d, device=dev), requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    d, dev = _like(input, dtype, device)
    return _finish(tk.ones(tuple(input.shape), dtype=d, device=dev), requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    d, dev = _like(input, dtype, device)
    return _finish(tk.empty(tuple(input.shape), dtype=d, device=dev), requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    d, dev = _like(input, dtype, device)
    return _finish(tk.full(tuple(input.shape), fill_value, dtype=d, device=dev), requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``arange(end)`` or ``arange(start, end, step)``; integer arguments give int64, else the default float."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if dtype is None:
        dtype = _dt.int64 if all(isinstance(v, int | np.integer) for v in vals) else _dt.get_default_dtype()
    if vals[2] == 0:
        raise RuntimeError("arange(): step must be nonzero")
    return _finish(tk.arange(vals[0], vals[1], vals[2], dtype=_dtype(dtype), device=device), requires_grad)


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
    return _finish(tk.linspace(start, end, steps, dtype=_dtype(dtype) or _dt.get_default_dtype(), device=device),
                   requires_grad)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    lin = tk.linspace(start, end, steps, dtype=_dt.float64, device=device)
    out = tk.astype(tk.pow(float(base), lin), _dtype(dtype) or _dt.get_default_dtype())
    return _finish(out, requires_grad)


def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _finish(tk.eye(n, m, dtype=_dtype(dtype), device=device), requires_grad)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None) -> Tensor:
    r, c = np.tril_indices(row, offset, col)
    return Tensor._wrap(tk.asarray(np.stack([r, c]), dtype=_dtype(dtype) or _dt.int64, device=device))


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None) -> Tensor:
    r, c = np.triu_indices(row, offset, col)
    return Tensor._wrap(tk.asarray(np.stack([r, c]), dtype=_dtype(dtype) or _dt.int64, device=device))


# ------------------------------------------------------------------------------------------- random
default_generator = _rnd.default_generator  # the one every call without generator= draws from


def manual_seed(seed: int):
    """Seed every generator (cpu and the cuda Philox counter) for reproducible runs."""
    _rnd.seed(int(seed))
    return _rnd._gen(None)


def seed() -> int:
    s = int(np.random.SeedSequence().entropy % (2**63))
    _rnd.seed(s)
    return s


def initial_seed() -> int:
    return _rnd.initial_seed()


def get_rng_state():
    return _rnd.get_state()


def set_rng_state(state) -> None:
    _rnd.set_state(state)


def rand(*size_, size=None, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _finish(tk.random.rand(_size("rand", size_, size), dtype=_dtype(dtype), device=device, generator=generator),
                   requires_grad)


def randn(*size_, size=None, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _finish(tk.random.randn(_size("randn", size_, size), dtype=_dtype(dtype), device=device,
                                   generator=generator), requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """``randint(high, size)`` or ``randint(low, high, size)``: integers in ``[low, high)`` (int64)."""
    if size is None:
        if high is None or not isinstance(high, tuple | list):
            raise OpTypeError("randint(): missing the size argument, e.g. randint(10, (3,))")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    return _finish(tk.random.randint(low, high, tuple(size), dtype=_dtype(dtype) or _dt.int64, device=device,
                                     generator=generator), requires_grad)


def randperm(n: int, *, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return _finish(tk.random.permutation(int(n), dtype=_dtype(dtype) or _dt.int64, device=device,
                                         generator=generator), requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Samples of N(mean, std²); ``mean``/``std`` may be tensors (then the shape is theirs)."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        shape = tk.broadcast_shapes(tuple(getattr(mean, "shape", ())), tuple(getattr(std, "shape", ())))
        z = tk.random.randn(shape, dtype=ref.dtype, device=ref.device, generator=generator)
        m = mean._data if isinstance(mean, Tensor) else mean
        s = std._data if isinstance(std, Tensor) else std
        return Tensor._wrap(tk.add(tk.multiply(z, s), m))
    if size is None:
        size = ()
    return _finish(tk.random.normal(mean, std, tuple(size), dtype=_dtype(dtype), device=device, generator=generator),
                   requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    d, dev = _like(input, dtype, device)
    return rand(tuple(input.shape), dtype=d, device=dev, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    d, dev = _like(input, dtype, device)
    return randn(tuple(input.shape), dtype=d, device=dev, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None) -> Tensor:
    if high is None:
        low, high = 0, low
    d, dev = _like(input, dtype, device)
    return randint(low, high, tuple(input.shape), dtype=d, device=dev)


def bernoulli(input, p=None, *, generator=None) -> Tensor:
    """0/1 samples with probability ``input`` (or the scalar ``p``), in input's dtype."""
    prob = input._data if p is None else p
    arr = tk.random.bernoulli(prob, tuple(input.shape), dtype=input.dtype, device=input.device, generator=generator)
    return Tensor._wrap(arr)


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None) -> Tensor:
    """Indices sampled from the rows of ``input`` (non-negative weights), on the input's device: with
    replacement by inverting each row's CDF (one searchsorted over the rows' CDFs laid end to end), without
    replacement by the Gumbel top-k trick (the k largest of log(w) + Gumbel noise are an exact draw)."""
    x = input.detach()._data
    if x.ndim not in (1, 2):
        raise RuntimeError(f"multinomial(): prob_dist must be 1 or 2 dim, got shape {list(x.shape)}")
    rows = x if x.ndim == 2 else tk.reshape(x, (1, -1))
    n, c = rows.shape
    w = tk.astype(rows, tk.float64)
    total = tk.sum(w, axis=1)
    k = int(num_samples)
    if k <= 0:
        raise RuntimeError(f"multinomial(): cannot sample n_sample <= 0 samples (got {k})")
    # checked on the device (cpu raises here, cuda at the next synchronising call): no host read per draw
    rows_ok = tk.logical_and(tk.all(tk.logical_and(tk.isfinite(w), tk.greater_equal(w, 0)), axis=1),
                             tk.greater(total, 0))
    device_assert(rows_ok, "multinomial", _errors.INVALID_DISTRIBUTION)
    dev, gen = x.device, generator
    if replacement:
        cdf = tk.divide(tk.cumulative_sum(w, axis=1), tk.expand_dims(total, axis=1))
        offs = tk.expand_dims(tk.arange(n, dtype=tk.float64, device=dev), axis=1)
        flat = tk.reshape(tk.add(tk.minimum(cdf, 1.0), offs), (-1,))  # row i's CDF in (i, i + 1]
        u = tk.random.rand((n, k), dtype=tk.float64, device=dev, generator=gen)
        pos = tk.searchsorted(flat, tk.reshape(tk.add(u, offs), (-1,)), side="right")
        idx = tk.subtract(tk.reshape(pos, (n, k)), tk.multiply(tk.astype(offs, tk.int64), c))
        idx = tk.clip(idx, 0, c - 1)  # u + i can land exactly on i + 1 through rounding (and NaN weights anywhere)
    else:
        if k > c:
            raise RuntimeError(f"multinomial(): cannot sample n_sample={k} > prob_dist.size(-1)={c} without "
                               f"replacement (shape {list(x.shape)})")
        device_assert(tk.greater_equal(tk.count_nonzero(w, axis=1), k), "multinomial", _errors.TOO_FEW_CATEGORIES, k)
        u = tk.random.uniform(1e-300, 1.0, (n, c), dtype=tk.float64, device=dev, generator=gen)
        keys = tk.subtract(tk.log(w), tk.log(tk.negative(tk.log(u))))  # log w + Gumbel(0, 1); -inf for w = 0
        idx = tk.topk(keys, k, axis=1).indices
    idx = tk.astype(idx, tk.int64)
    return Tensor._wrap(idx if x.ndim == 2 else tk.reshape(idx, (k,)))


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(input) -> bool:
    return input.dtype.kind == "f"


def numel(input) -> int:
    return input.numel()

