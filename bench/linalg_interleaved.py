"""Interleaved timing of tkernels.linalg's batched small factorizations against NumPy/SciPy on the same host
arrays (cpu): each op and its peer alternate ``N`` times and the minimum of each is kept, which holds up better
than ``bench ops``'s medians on a shared, loaded machine (bench/results/2026-12-03-cpu-linalg.md).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHONPATH=. python -m bench.linalg_interleaved [N]
"""

from __future__ import annotations

import sys
import time

import numpy as np
import scipy.linalg as sl

import tkernels as tk


def _once(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def cases(B: int, n: int, rng):
    g = rng.standard_normal((B, n, n)).astype(np.float32)
    spd = (g @ np.swapaxes(g, -1, -2) / n + np.eye(n)).astype(np.float32)
    a = (spd + rng.standard_normal((B, n, n)).astype(np.float32) / n).astype(np.float32)
    b = rng.standard_normal((B, n, 1)).astype(np.float32)
    A, S, Bv = tk.asarray(a), tk.asarray(spd), tk.asarray(b)  # noqa: N806
    lu, piv = tk.linalg.lu_factor(A)
    lus, pivs = sl.lu_factor(a, check_finite=False)
    return [  # (op, ours, peer, FLOPs per matrix)
        ("cholesky", lambda: tk.linalg.cholesky(S), lambda: np.linalg.cholesky(spd), n**3 / 3),
        ("solve", lambda: tk.linalg.solve(A, Bv), lambda: np.linalg.solve(a, b), 2 / 3 * n**3 + 2 * n * n),
        ("lu_factor", lambda: tk.linalg.lu_factor(A), lambda: sl.lu_factor(a, check_finite=False), 2 / 3 * n**3),
        ("lu_solve", lambda: tk.linalg.lu_solve(lu, piv, Bv),
         lambda: sl.lu_solve((lus, pivs), b, check_finite=False), 2 * n * n),
        ("inv", lambda: tk.linalg.inv(A), lambda: np.linalg.inv(a), 2 * n**3),
        ("det", lambda: tk.linalg.det(A), lambda: np.linalg.det(a), 2 / 3 * n**3),
        ("slogdet", lambda: tk.linalg.slogdet(A), lambda: np.linalg.slogdet(a), 2 / 3 * n**3),
        ("qr", lambda: tk.linalg.qr(A), lambda: np.linalg.qr(a), 8 / 3 * n**3),
    ]


def main(reps: int = 5, B: int = 10_000, sizes=(16, 64)) -> None:
    rng = np.random.default_rng(0)
    print("| op | shape | tkernels ms | NumPy/SciPy ms | tkernels GFLOP/s | NumPy/SciPy GFLOP/s | x NumPy |")
    print("|:--|:--|--:|--:|--:|--:|--:|")
    for n in sizes:
        for name, ours, peer, flops in cases(B, n, rng):
            ours(), peer()
            to = tp = float("inf")
            for _ in range(reps):
                to = min(to, _once(ours))
                tp = min(tp, _once(peer))
            work = B * flops / 1e9
            print(f"| {name} | {B} x {n}x{n} | {to * 1e3:.1f} | {tp * 1e3:.1f} | {work / to:.2f} | {work / tp:.2f} "
                  f"| {tp / to:.2f} |", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
