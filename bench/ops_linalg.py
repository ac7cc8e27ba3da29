"""The ``linalg`` cases of ``python -m bench ops`` (issue 18 item 5): batched small QR, Cholesky, solves, LU,
inverses and determinants (``B`` matrices of n x n, n = 16 and 64) and one large solve, as FLOP/s, with NumPy
(cpu; SciPy for lu_factor) and PyTorch beside ours.

FLOPs per matrix (the LAPACK operation counts): QR with Q formed (geqrf + orgqr) ``8/3 n^3``, Cholesky ``n^3/3``,
a solve with one right-hand side (LU + two triangular solves) ``2/3 n^3 + 2 n^2``, LU and det ``2/3 n^3``, inv
``2 n^3``, eig with eigenvectors (a batch of 64 x 64 and one 256 x 256; on cuda one program per matrix, a tiled
one past 64) ``EIG_FLOPS n^3``. A function tkernels.linalg lacks makes its rows "skipped" with the reason printed.
"""

from __future__ import annotations

import numpy as np

from .ops_cases import COMPUTE, Built, Case, _torch_or_none, compare, f32

# profile: (batch B, small sizes, the large solve's n, (eig's batch, its small n, its large n))
SIZES = {"cuda": (10_000, (16, 64), 4096, (1000, 64, 256)), "cuda-quick": (1000, (16, 64), 1024, (100, 64, 256)),
         "cpu": (10_000, (16, 64), 4096, (1000, 64, 256)), "cpu-quick": (64, (16,), 256, (8, 64, 128))}
EIG_FLOPS = 25.0  # eig with eigenvectors: ~25 n^3 per matrix (the usual count for geev with right vectors)


def _need(tk, name):
    if not hasattr(tk.linalg, name):
        raise NotImplementedError(f"tkernels.linalg.{name} is missing (it comes with helper A1's branch; the row "
                                  f"is measured once that has landed on main)")
    return getattr(tk.linalg, name)


def _spd(env, shape, dt):
    a = env.rand(shape, dt).astype(np.float64)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n)).astype(np.float64 if dt == "float64" else np.float32)


def _qr_case(B, n, dt) -> Case:
    def build(env):
        tk = env.tk
        h = env.rand((B, n, n), dt)
        a = env.dev(h)
        fh = f32(h)

        def ours():
            return tk.linalg.qr(a)

        def check():
            q, r = ours()
            return compare(np.asarray(q.to("cpu").numpy(), np.float64) @ np.asarray(r.to("cpu").numpy(), np.float64),
                           fh.astype(np.float64), dt)
        return Built(ours, check, (lambda: np.linalg.qr(fh)) if env.cpu else None,
                     _torch_or_none(env, lambda t: (lambda at=env.th(h, dt): t.linalg.qr(at))))
    return Case("linalg", "qr", dt, f"{B} x {n}x{n}", COMPUTE, B * 8.0 / 3.0 * n**3, build)


def _cholesky_case(B, n, dt) -> Case:
    def build(env):
        tk = env.tk
        chol = _need(tk, "cholesky")
        h = _spd(env, (B, n, n), dt)
        a = env.dev(h)

        def check():
            low = np.asarray(chol(a).to("cpu").numpy(), np.float64)
            return compare(low @ np.swapaxes(low, -1, -2), h.astype(np.float64), dt)
        return Built(lambda: chol(a), check, (lambda: np.linalg.cholesky(h)) if env.cpu else None,
                     _torch_or_none(env, lambda t: (lambda at=env.th(h, dt): t.linalg.cholesky(at))))
    return Case("linalg", "cholesky", dt, f"{B} x {n}x{n}", COMPUTE, B * n**3 / 3.0, build)


def _solve_case(B, n, dt) -> Case:
    def build(env):
        tk = env.tk
        solve = _need(tk, "solve")
        shape = (B, n, n) if B > 1 else (n, n)
        h = _spd(env, shape, dt) + f32(env.rand(shape, dt)) / n  # well conditioned, not symmetric
        hb = f32(env.rand(shape[:-1] + (1,), dt))
        a, b = env.dev(h), env.dev(hb)

        def check():
            x = np.asarray(solve(a, b).to("cpu").numpy(), np.float64)
            return compare(h.astype(np.float64) @ x, hb.astype(np.float64), dt)
        def peer(t):
            at, bt = env.th(h, dt), env.th(hb, dt)
            return lambda: t.linalg.solve(at, bt)
        return Built(lambda: solve(a, b), check, (lambda: np.linalg.solve(h, hb)) if env.cpu else None,
                     _torch_or_none(env, peer))
    shown = f"{B} x {n}x{n}" if B > 1 else f"{n}x{n}"
    return Case("linalg", "solve", dt, shown + ", 1 rhs", COMPUTE, B * (2.0 / 3.0 * n**3 + 2.0 * n * n), build)


def _eig_case(B, n, dt) -> Case:
    def build(env):
        tk = env.tk
        shape = (B, n, n) if B > 1 else (n, n)
        h = env.rand(shape, dt)
        a = env.dev(h)
        fh = f32(h)

        def check():
            w, v = tk.linalg.eig(a)
            w, v = np.asarray(w.to("cpu").numpy(), np.complex128), np.asarray(v.to("cpu").numpy(), np.complex128)
            av, vw = fh.astype(np.float64) @ v, v * w[..., None, :]  # A V = V diag(w)
            return compare(np.stack([av.real, av.imag]), np.stack([vw.real, vw.imag]), dt)
        return Built(lambda: tk.linalg.eig(a), check, (lambda: np.linalg.eig(fh)) if env.cpu else None,
                     _torch_or_none(env, lambda t: (lambda at=env.th(h, dt): t.linalg.eig(at))))
    shown = f"{B} x {n}x{n}" if B > 1 else f"{n}x{n}"
    return Case("linalg", "eig", dt, shown, COMPUTE, B * EIG_FLOPS * n**3, build)


def _lu_case(B, n, dt) -> Case:
    """lu_factor (pivots and all): the peer on cpu is SciPy's lu_factor of the stack (NumPy has none)."""
    def build(env):
        tk = env.tk
        h = f32(env.rand((B, n, n), dt))
        a = env.dev(h)

        def check():
            lu, piv = tk.linalg.lu_factor(a)
            lu = np.asarray(lu.to("cpu").numpy(), np.float64)
            k = np.arange(n)
            low = np.tril(lu, -1)
            low[..., k, k] = 1
            p = np.asarray(piv.to("cpu").numpy()) - 1
            perm = np.tile(np.arange(n), (B, 1))
            rows = np.arange(B)
            for j in range(n):  # P^T A: LAPACK's swaps in order, on the whole batch
                pj = perm[rows, p[:, j]].copy()
                perm[rows, p[:, j]] = perm[:, j]
                perm[:, j] = pj
            pa = np.take_along_axis(h.astype(np.float64), perm[:, :, None], axis=1)
            return compare(low @ np.triu(lu), pa, dt)

        def peer():
            import scipy.linalg as sl
            return sl.lu_factor(h, check_finite=False)
        return Built(lambda: tk.linalg.lu_factor(a), check, peer if env.cpu else None,
                     _torch_or_none(env, lambda t: (lambda at=env.th(h, dt): t.linalg.lu_factor(at))))
    return Case("linalg", "lu_factor", dt, f"{B} x {n}x{n}", COMPUTE, B * 2.0 / 3.0 * n**3, build)


def _inv_det_case(B, n, dt, op) -> Case:
    """inv (LU + inverse: ``2 n^3``) and det (LU: ``2/3 n^3``) of well-conditioned matrices."""
    def build(env):
        tk = env.tk
        h = _spd(env, (B, n, n), dt) + f32(env.rand((B, n, n), dt)) / n
        a = env.dev(h)
        ref = getattr(np.linalg, op)

        def check():
            return compare(getattr(tk.linalg, op)(a).to("cpu").numpy(), ref(h.astype(np.float64)), dt)
        return Built(lambda: getattr(tk.linalg, op)(a), check, (lambda: ref(h)) if env.cpu else None,
                     _torch_or_none(env, lambda t: (lambda at=env.th(h, dt): getattr(t.linalg, op)(at))))
    flops = 2.0 * n**3 if op == "inv" else 2.0 / 3.0 * n**3
    return Case("linalg", op, dt, f"{B} x {n}x{n}", COMPUTE, B * flops, build)


def linalg(P, dts, head) -> list[Case]:
    B, small, big, (eig_b, eig_small, eig_big) = P["linalg"]
    out = []
    for dt in dts:
        for n in small:
            out += [_qr_case(B, n, dt), _cholesky_case(B, n, dt), _solve_case(B, n, dt), _lu_case(B, n, dt),
                    _inv_det_case(B, n, dt, "inv"), _inv_det_case(B, n, dt, "det")]
        out.append(_solve_case(1, big, dt))
        out += [_eig_case(eig_b, eig_small, dt), _eig_case(1, eig_big, dt)]
    return out
