"""Random numbers from seedable generators.

A ``Generator`` owns a seed and two streams: a NumPy PCG64 bit generator for ``cpu`` arrays and a
(seed, offset) Philox counter for ``cuda`` kernels (the offset advances by the number of values each call
draws, so results are reproducible under ``seed``). ``get_state``/``set_state`` snapshot both, which is
what activation checkpointing and dataloader workers need.

The sampling functions take ``shape``; NumPy's and CuPy's names are accepted as keywords too: ``size`` for
``shape`` everywhere, ``loc`` and ``scale`` for ``normal``'s ``mean`` and ``std`` (a name and its alias together
are a TypeError).

>>> import tkernels as tk
>>> tk.random.seed(0); a = tk.random.rand((2,)); tk.random.seed(0); b = tk.random.rand((2,))
>>> bool(tk.all(a == b))
True
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from . import dtypes as _dt
from .array import Array
from .device import as_device
from .dispatch import lookup
from .validation import OpTypeError, OpValueError, as_int, describe, shape_tuple

__all__ = ["Generator", "seed", "manual_seed", "default_generator", "get_state", "set_state", "rand", "randn",
           "normal", "uniform", "randint", "permutation", "bernoulli", "initial_seed"]


class Generator:
    """An independent random stream: ``Generator(seed)``; pass it as ``generator=`` to any function here."""

    def __init__(self, seed: int | None = None):
        self.manual_seed(np.random.SeedSequence().entropy % (2**63) if seed is None else seed)

    def manual_seed(self, seed: int) -> Generator:
        """Reseed both streams: the cpu one (NumPy's PCG64) and the cuda kernels' Philox counter."""
        seed = operator.index(seed)
        self._seed = seed % (2**64)
        self._np = np.random.Generator(np.random.PCG64(self._seed))
        self.philox_seed(self._seed)
        return self

    def philox_seed(self, seed: int) -> Generator:
        """Reseed the cuda kernels' stream only (``tkernels.cuda.manual_seed``, as ``torch.cuda.manual_seed``
        leaves the cpu stream alone)."""
        self._philox = operator.index(seed) % (2**64)
        self.philox_offset = 0
        return self

    seed = manual_seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> dict:
        """A snapshot (a plain dict) of both streams."""
        return {"seed": self._seed, "numpy": self._np.bit_generator.state, "philox_offset": self.philox_offset,
                "philox_seed": self._philox}

    def set_state(self, state: dict) -> None:
        try:
            self._seed = int(state["seed"])
            self._np = np.random.Generator(np.random.PCG64(self._seed))
            self._np.bit_generator.state = state["numpy"]
            self.philox_offset = int(state["philox_offset"])
            self._philox = int(state.get("philox_seed", self._seed))  # (states saved before it was kept)
        except (KeyError, TypeError, ValueError) as e:
            raise OpValueError(f"Generator.set_state: not a state from get_state() ({e})") from None

    def philox_next(self, n: int) -> tuple[int, int]:
        """The (seed, offset) pair for a kernel drawing ``n`` values; advances the offset."""
        off = self.philox_offset
        self.philox_offset += (int(n) + 3) // 4 * 4  # Philox yields 4 values per counter
        return self._philox, off

    def __repr__(self) -> str:
        cuda = "" if self._philox == self._seed else f", philox_seed={self._philox}"
        return f"Generator(seed={self._seed}{cuda}, philox_offset={self.philox_offset})"


default_generator = Generator(0)


def seed(s: int) -> None:
    """Reseed the default generator."""
    default_generator.manual_seed(s)


manual_seed = seed


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_state() -> dict:
    return default_generator.get_state()


def set_state(state: dict) -> None:
    default_generator.set_state(state)


def _gen(generator) -> Generator:
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise OpTypeError(f"random: generator must be a tkernels.random.Generator, got {describe(generator)}")
    return generator


def _float_dtype(op, dtype):
    d = _dt.get_default_dtype() if dtype is None else _dt.as_dtype(dtype)
    if d.kind != "f":
        raise OpTypeError(f"{op}: dtype must be floating, got {d}")
    return d


def _alias(op: str, name: str, value, alias: str, alias_value, default=None):
    """The argument ``name``, given as itself or by its NumPy name ``alias`` (None: not given), else ``default``."""
    if alias_value is None:
        return default if value is None else value
    if value is not None:
        raise OpTypeError(f"{op}: got both {name}= ({describe(value)}) and {alias}= ({describe(alias_value)}); {alias} "
                          f"is NumPy's name for {name}: pass one of them")
    return alias_value


def _shape(op: str, shape, size):
    """``shape`` or NumPy's ``size`` for a function whose shape is required."""
    shape = _alias(op, "shape", shape, "size", size)
    if shape is None:
        raise OpTypeError(f"{op}: missing the shape of the result (shape=, or NumPy's size=); hint: {op}((2, 3))")
    return shape


def _sample(op, dist, shape, dtype, device, generator, **params) -> Array:
    dev = as_device(device)
    out = lookup("empty", dev)(shape_tuple(op, shape), dtype, dev)
    lookup("random_" + dist, dev)(out, _gen(generator), **params)
    return out


def _complex_pairs(op, dist, shape, dtype, device, generator, **params):
    """A complex dtype's samples: its real and imaginary parts drawn as a real ``(*shape, 2)`` array, viewed as
    complex (no complex kernel needed on any device)."""
    from ._complex import view_as_complex

    pairs = _sample(op, dist, (*shape_tuple(op, shape), 2), _dt.to_real(dtype), device, generator, **params)
    return view_as_complex(pairs)


def rand(shape=None, *, size=None, dtype=None, device=None, generator=None) -> Array:
    """Uniform samples in [0, 1) (``size``: NumPy's name for ``shape``); complex dtypes: both parts, as PyTorch."""
    shape = _shape("rand", shape, size)
    if dtype is not None and _dt.as_dtype(dtype).kind == "c":
        return _complex_pairs("rand", "uniform", shape, _dt.as_dtype(dtype), device, generator, low=0.0, high=1.0)
    return _sample("rand", "uniform", shape, _float_dtype("rand", dtype), device, generator, low=0.0, high=1.0)


def uniform(low=0.0, high=1.0, shape=None, *, size=None, dtype=None, device=None, generator=None) -> Array:
    """Uniform samples in [low, high); ``shape`` (NumPy: ``size``) defaults to ``()``; complex dtypes: both parts
    uniform in [low, high), as PyTorch's ``uniform_``."""
    shape = _alias("uniform", "shape", shape, "size", size, ())
    if not high >= low:
        raise OpValueError(f"uniform: expected low <= high, got low={low}, high={high}")
    if dtype is not None and _dt.as_dtype(dtype).kind == "c":
        return _complex_pairs("uniform", "uniform", shape, _dt.as_dtype(dtype), device, generator, low=float(low),
                              high=float(high))
    return _sample("uniform", "uniform", shape, _float_dtype("uniform", dtype), device, generator,
                   low=float(low), high=float(high))


def randn(shape=None, *, size=None, dtype=None, device=None, generator=None) -> Array:
    """Standard normal samples (``size``: NumPy's name for ``shape``); complex dtypes: the standard complex normal
    (real and imaginary parts independent with variance 1/2, so ``E|z|^2 = 1``, as PyTorch)."""
    shape = _shape("randn", shape, size)
    if dtype is not None and _dt.as_dtype(dtype).kind == "c":
        return _complex_pairs("randn", "normal", shape, _dt.as_dtype(dtype), device, generator, mean=0.0,
                              std=0.7071067811865476)
    return _sample("randn", "normal", shape, _float_dtype("randn", dtype), device, generator, mean=0.0, std=1.0)


def normal(mean=None, std=None, shape=None, *, loc=None, scale=None, size=None, dtype=None, device=None,
           generator=None) -> Array:
    """Normal samples with the given mean (default 0) and standard deviation (default 1, ``std >= 0``), scalars or
    Arrays that broadcast with ``shape`` (default ``()``). NumPy's names: ``loc``, ``scale``, ``size``. Complex
    dtypes: ``mean + std * randn`` (both parts with variance ``std^2 / 2``, as PyTorch)."""
    mean = _alias("normal", "mean", mean, "loc", loc, 0.0)
    std = _alias("normal", "std", std, "scale", scale, 1.0)
    shape = _alias("normal", "shape", shape, "size", size, ())
    if isinstance(std, Array):
        from .reduction import all as _all

        if not bool(_all(std >= 0)):
            raise OpValueError(f"normal: std must be >= 0 everywhere, got {describe(std)} with negative or NaN values")
    if isinstance(mean, Array) or isinstance(std, Array):
        base = randn(tuple(np.broadcast_shapes(getattr(mean, "shape", ()), getattr(std, "shape", ()),
                                               shape_tuple("normal", shape))), dtype=dtype, device=device,
                   generator=generator)
        return base * std + mean
    if not std >= 0:
        raise OpValueError(f"normal: std must be >= 0, got {std}")
    if dtype is not None and _dt.as_dtype(dtype).kind == "c":  # PyTorch's: std * the standard complex normal + mean
        z = _complex_pairs("normal", "normal", shape, _dt.as_dtype(dtype), device, generator, mean=0.0,
                           std=float(std) * 0.7071067811865476)
        return z + mean if mean != 0 else z
    return _sample("normal", "normal", shape, _float_dtype("normal", dtype), device, generator,
                   mean=float(mean), std=float(std))


def randint(low: int, high: int | None = None, shape=None, *, size=None, dtype=None, device=None,
            generator=None) -> Array:
    """Integers in [low, high) (``randint(high, shape=...)`` starts at 0); int64 by default; ``shape`` (NumPy:
    ``size``) defaults to ``()``."""
    shape = _alias("randint", "shape", shape, "size", size, ())
    if high is None:
        low, high = 0, low
    low, high = as_int("randint", "low", low), as_int("randint", "high", high)
    if high <= low:
        raise OpValueError(f"randint: expected low < high, got low={low}, high={high}")
    d = _dt.int64 if dtype is None else _dt.as_dtype(dtype)
    if d.kind in "iu":
        info = np.iinfo(d.numpy)
        if low < info.min or high - 1 > info.max:
            raise OpValueError(f"randint: the range [{low}, {high}) does not fit {d} ({info.min}..{info.max})")
    return _sample("randint", "integers", shape, d, device, generator, low=low, high=high)


def permutation(x, *, dtype=None, device=None, generator=None) -> Array:
    """A random permutation of ``range(x)`` (int64), or of the first axis of an Array (a copy)."""
    if isinstance(x, Array):
        idx = permutation(x.shape[0] if x.ndim else 1, device=x.device, generator=generator)
        from .indexing import take

        return take(x, idx, axis=0) if x.ndim else x.copy()
    n = operator.index(x)
    if n < 0:
        raise OpValueError(f"permutation: n must be non-negative, got {n}")
    d = _dt.int64 if dtype is None else _dt.as_dtype(dtype)
    return _sample("permutation", "permutation", (n,), d, device, generator)


def bernoulli(p, shape=None, *, size=None, dtype=None, device=None, generator=None) -> Array:
    """1 with probability ``p`` (a scalar or an Array of probabilities in [0, 1]), else 0; ``shape`` (NumPy:
    ``size``) defaults to ``p``'s."""
    shape = _alias("bernoulli", "shape", shape, "size", size)
    if isinstance(p, Array):
        from .reduction import all as _all

        if p.dtype.kind != "f":
            raise OpTypeError(f"bernoulli: p must be a floating array of probabilities, got {describe(p)}")
        if not bool(_all((p >= 0) & (p <= 1))):
            raise OpValueError(f"bernoulli: p must hold probabilities in [0, 1], got {describe(p)} with values outside")
        out_shape = p.shape if shape is None else shape_tuple("bernoulli", shape)
        dev = p.device
        d = p.dtype if dtype is None and p.dtype.kind == "f" else _dt.as_dtype(dtype or _dt.get_default_dtype())
        prob = p
    else:
        if not isinstance(p, builtins.int | builtins.float) or not 0 <= p <= 1:
            raise OpValueError(f"bernoulli: p must be a probability in [0, 1], got {p!r}")
        out_shape = shape_tuple("bernoulli", () if shape is None else shape)
        dev = as_device(device)
        d = _dt.as_dtype(dtype or _dt.get_default_dtype())
        prob = float(p)
    out = lookup("empty", dev)(out_shape, d, dev)
    lookup("random_bernoulli", dev)(out, _gen(generator), p=prob)
    return out
