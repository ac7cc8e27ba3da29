"""Timers: how long one call of a function takes, measured carefully.

A timer knows how to time ``loops`` back-to-back calls of ``fn`` (one *sample*); everything else is shared:
warm-up calls, an adaptive loop count so that one sample lasts at least ``min_time`` (about 20 ms: long
enough that clock resolution and one-off hiccups do not matter), several samples, and the median per call.
``measure(f, g, ...)`` interleaves the samples of several functions (f, g, f, g...) so that slow drift of
the machine (frequency, a neighbour process) falls on all of them alike: ratios of its results are fair.

Interleaving has a trap on the CPU: a thread pool stays busy for a while after its last job (OpenBLAS's
threads spin for 2**28 TSC cycles, about 0.1 s; OpenMP's for its spin count), so the first function's BLAS
threads compete for the cores with the next function's threads during its whole sample. With NumPy's OpenBLAS
and PyTorch's OpenMP side by side, that doubled PyTorch's time on a 2-core machine (char GPT step 8 -> 16 ms).
A timer's ``settle`` (seconds; ``python -m bench --settle MS``) is slept before each sample and each
calibration when ``measure`` interleaves several functions, so each sample sees only its own threads.

``CPUTimer`` uses ``time.perf_counter`` with the garbage collector paused (as ``timeit`` does) and subtracts
the cost of calling an empty Python function in the loop, measured in the same process, so a per-call time
is what the body costs. A GPU timer later implements ``sample`` with a pair of CUDA events around the loop
and a synchronize, and sets ``overhead`` to 0; ``measure`` stays as it is.

>>> import numpy as np
>>> a = np.ones(16, np.float32)
>>> t = time_per_call(lambda: a + a)   # seconds per call, e.g. 3e-07
"""

from __future__ import annotations

import gc
import itertools
import math
import statistics
import time
from dataclasses import dataclass

__all__ = ["Measurement", "Timer", "CPUTimer", "measure", "time_per_call"]


@dataclass(frozen=True)
class Measurement:
    """Per-call seconds of one function: the median of the samples, their 20th and 80th percentiles."""

    seconds: float
    p20: float
    p80: float
    loops: int          # calls per sample
    samples: tuple[float, ...]  # per-call seconds of each sample (overhead already subtracted)

    @property
    def us(self) -> float:
        return self.seconds * 1e6

    @property
    def ms(self) -> float:
        return self.seconds * 1e3


class Timer:
    """Interface of a timer. ``sample(fn, loops)`` returns the seconds taken by ``loops`` calls of ``fn``.

    ``overhead``: seconds per call that the timing loop itself adds (subtracted by ``measure``).
    """

    name = "abstract"
    overhead = 0.0

    def __init__(self, *, min_time: float = 0.02, repeat: int = 7, warmup: int = 3, settle: float = 0.0):
        if min_time <= 0 or repeat < 1 or warmup < 0 or settle < 0:
            raise ValueError(f"{type(self).__name__}: need min_time > 0, repeat >= 1, warmup >= 0, settle >= 0; "
                             f"got min_time={min_time}, repeat={repeat}, warmup={warmup}, settle={settle}")
        self.min_time = min_time
        self.repeat = repeat
        self.warmup = warmup
        self.settle = settle

    def sample(self, fn, loops: int) -> float:
        raise NotImplementedError

    def describe(self) -> str:
        text = (f"{self.name}; median of {self.repeat} samples of >= {self.min_time * 1e3:g} ms each, "
                f"after up to {self.warmup} warm-up call(s)")
        if self.settle:
            text += (f"; {self.settle * 1e3:g} ms idle before each interleaved sample (thread pools of the "
                     f"previous function go quiet)")
        return text


class CPUTimer(Timer):
    """Wall-clock timer for host code (``time.perf_counter``), garbage collector paused while sampling."""

    name = "cpu perf_counter"

    def __init__(self, *, min_time: float = 0.02, repeat: int = 7, warmup: int = 3, settle: float = 0.0):
        super().__init__(min_time=min_time, repeat=repeat, warmup=warmup, settle=settle)
        self._overhead: float | None = None

    def sample(self, fn, loops: int) -> float:
        it = itertools.repeat(None, loops)
        gc_on = gc.isenabled()
        gc.disable()
        try:
            t0 = time.perf_counter()
            for _ in it:
                fn()
            t1 = time.perf_counter()
        finally:
            if gc_on:
                gc.enable()
        return t1 - t0

    @property
    def overhead(self) -> float:
        """Seconds per call of an empty function in the timing loop (measured once, lazily)."""
        if self._overhead is None:
            def nop():
                return None

            loops = _calibrate(nop, self, 0.005)
            self._overhead = min(self.sample(nop, loops) / loops for _ in range(5))
        return self._overhead

    def describe(self) -> str:
        return super().describe() + f"; loop overhead {self.overhead * 1e9:.0f} ns/call subtracted"


def _calibrate(fn, timer: Timer, min_time: float) -> int:
    """The number of calls for one sample of ``fn`` to last at least ``min_time`` seconds."""
    loops = 1
    while True:
        t = timer.sample(fn, loops)
        if t >= min_time:
            return loops
        if t < min_time / 100:
            loops *= 10
        else:  # aim 20% past the target so that the next try usually suffices
            loops = max(loops + 1, math.ceil(loops * 1.2 * min_time / t))


def _percentile(sorted_values, q: float) -> float:
    """Linear-interpolated percentile (q in [0, 1]) of a sorted non-empty sequence."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def measure(*fns, timer: Timer | None = None) -> list[Measurement]:
    """Per-call time of each function, sampled interleaved (one sample of each in turn, ``repeat`` rounds), with
    ``timer.settle`` seconds idle before each sample and calibration when there are several functions."""
    if not fns:
        raise ValueError("measure: give at least one function")
    timer = timer or CPUTimer()
    overhead = timer.overhead
    settle = getattr(timer, "settle", 0.0) if len(fns) > 1 else 0.0
    loops = []
    for fn in fns:
        if settle:
            time.sleep(settle)
        t0 = time.perf_counter()
        for _ in range(timer.warmup):  # at most ~min_time of warm-up: big ops are warm after one call
            fn()
            if time.perf_counter() - t0 >= timer.min_time:
                break
        loops.append(_calibrate(fn, timer, timer.min_time))
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(timer.repeat):
        for i, fn in enumerate(fns):
            if settle:
                time.sleep(settle)
            per_call = timer.sample(fn, loops[i]) / loops[i] - overhead
            samples[i].append(max(per_call, 1e-12))  # never 0 or negative: ratios stay finite
    out = []
    for s, n in zip(samples, loops):
        srt = sorted(s)
        out.append(Measurement(statistics.median(srt), _percentile(srt, 0.2), _percentile(srt, 0.8), n, tuple(s)))
    return out


def time_per_call(fn, *, timer: Timer | None = None) -> float:
    """Median seconds per call of ``fn`` (see ``measure``)."""
    return measure(fn, timer=timer)[0].seconds
