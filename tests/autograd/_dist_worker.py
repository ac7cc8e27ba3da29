"""Run under mpiexec -n 2 by tests/autograd/test_distributed.py. ``collectives DEVICE``: every collective on
every dtype against NumPy; the other modes are the failure cases (a rank raises, is killed, hangs, or calls a
mismatched collective)."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

import autograd as ag  # noqa: E402
import autograd.distributed as dist  # noqa: E402

R = dist.ReduceOp
NP = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64,
      "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "bool": np.bool_}
FLOATS = ("float16", "bfloat16", "float32", "float64")


def values(rank, dt, shape, salt=0):
    rng = np.random.default_rng(1000 * rank + 17 * list(NP).index(dt) + salt)
    if dt == "bool":
        return rng.random(shape) < 0.5
    if dt in FLOATS:
        return rng.uniform(-2, 2, shape).astype(NP[dt])
    lo = 0 if dt == "uint8" else -3
    return rng.integers(lo, 4, shape).astype(NP[dt])


def reference(op, arrs, dt):
    if dt == "bool":
        f = np.logical_or if op in (R.SUM, R.MAX) else np.logical_and
        return f.reduce(arrs)
    wide = [a.astype(np.float32) if dt in ("float16", "bfloat16") else a for a in arrs]
    out = {R.SUM: np.sum, R.AVG: np.mean, R.PRODUCT: np.prod, R.MIN: np.min, R.MAX: np.max}[op](np.stack(wide), axis=0)
    return out.astype(NP[dt])


def same(name, got, want, dt):
    got = got.cpu().numpy() if isinstance(got, ag.Tensor) else got
    if dt in FLOATS:
        tol = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-12}[dt]
        ok = got.shape == want.shape and np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                                                     atol=tol)
    else:
        ok = got.shape == want.shape and (got == want).all()
    assert ok, f"{name} {dt}: got {got} want {want}"


def collectives(dev):
    r, n = dist.get_rank(), dist.get_world_size()
    T = lambda a: ag.tensor(a, device=dev)  # noqa: E731
    checked = 0
    for dt in NP:
        allv = [values(k, dt, (3, 5)) for k in range(n)]
        ops = [R.SUM, R.PRODUCT, R.MIN, R.MAX] + ([R.AVG] if dt in FLOATS else [])
        for op in ops:
            for shape in ((3, 5), (), (0, 4)):
                vs = [values(k, dt, shape, 1) for k in range(n)]
                t = T(vs[r])
                dist.all_reduce(t, op=op)
                same(f"all_reduce {op} {shape}", t, reference(op, vs, dt), dt)
            t = T(allv[r])
            dist.all_reduce(t, op=op, async_op=True).wait()
            same(f"all_reduce async {op}", t, reference(op, allv, dt), dt)
            t = T(allv[r])
            dist.reduce(t, dst=1, op=op)
            same(f"reduce {op}", t, reference(op, allv, dt) if r == 1 else allv[r], dt)
            big = [values(k, dt, (n * 2, 3), 2) for k in range(n)]
            o = T(np.zeros((2, 3), NP[dt]))
            dist.reduce_scatter_tensor(o, T(big[r]), op=op)
            same(f"reduce_scatter_tensor {op}", o, reference(op, big, dt)[2 * r:2 * r + 2], dt)
            o = T(np.zeros((2, 3), NP[dt]))
            dist.reduce_scatter(o, [T(big[r][2 * k:2 * k + 2]) for k in range(n)], op=op)
            same(f"reduce_scatter {op}", o, reference(op, big, dt)[2 * r:2 * r + 2], dt)
            checked += 7
        t = T(allv[r])
        dist.broadcast(t, src=1)
        same("broadcast", t, allv[1], dt)
        lst = [T(np.zeros((3, 5), NP[dt])) for _ in range(n)]
        dist.all_gather(lst, T(allv[r]))
        for k in range(n):
            same("all_gather", lst[k], allv[k], dt)
        o = T(np.zeros((3 * n, 5), NP[dt]))
        dist.all_gather_into_tensor(o, T(allv[r]))
        same("all_gather_into_tensor", o, np.concatenate(allv), dt)
        gl = [T(np.zeros((3, 5), NP[dt])) for _ in range(n)] if r == 0 else None
        dist.gather(T(allv[r]), gl, dst=0)
        if r == 0:
            for k in range(n):
                same("gather", gl[k], allv[k], dt)
        o = T(np.zeros((3, 5), NP[dt]))
        dist.scatter(o, [T(values(k, dt, (3, 5), 3)) for k in range(n)] if r == 1 else None, src=1)
        same("scatter", o, values(r, dt, (3, 5), 3), dt)
        # all_to_all: piece k of rank j has k + 1 rows (uneven sizes)
        pieces = lambda j, dt=dt: [values(j, dt, (k + 1, 2), 10 + k) for k in range(n)]  # noqa: E731
        outs = [T(np.zeros((r + 1, 2), NP[dt])) for _ in range(n)]
        dist.all_to_all(outs, [T(p) for p in pieces(r)])
        for j in range(n):
            same("all_to_all", outs[j], pieces(j)[r], dt)
        o = T(np.zeros((2 * n, 3), NP[dt]))
        dist.all_to_all_single(o, T(values(r, dt, (2 * n, 3), 20)))
        same("all_to_all_single", o, np.concatenate([values(j, dt, (2 * n, 3), 20)[2 * r:2 * r + 2]
                                                     for j in range(n)]), dt)
        if r == 0:
            dist.send(T(allv[0]), dst=1, tag=3)
            w = dist.isend(T(allv[0]), dst=1)
            w.wait()
        else:
            t = T(np.zeros((3, 5), NP[dt]))
            assert dist.recv(t, src=0, tag=3) == 0
            same("send/recv", t, allv[0], dt)
            t = T(np.zeros((3, 5), NP[dt]))
            w = dist.irecv(t)
            assert w.source_rank() == 0
            same("isend/irecv", t, allv[0], dt)
        checked += 9
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": r, "payload": list(range(r + 3))})
    assert objs == [{"rank": k, "payload": list(range(k + 3))} for k in range(n)], objs
    lst = [r, "x" * 100, None] if r == 0 else [None, None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [0, "x" * 100, None], lst
    g = dist.new_group([1])
    if r == 1:
        assert dist.get_world_size(g) == 1 and dist.get_rank(g) == 0
        t = T(np.ones(3, np.float32))
        dist.all_reduce(t, group=g)
        same("all_reduce on a 1-rank group", t, np.ones(3, np.float32), "float32")
    else:
        assert g is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1
    dist.barrier()
    for bad, match in ((lambda: dist.all_reduce(T(np.zeros((4, 4), np.float32))[:, 1]), "contiguous"),
                       (lambda: dist.all_reduce(T(np.zeros(3, np.int32)), op=R.AVG), "AVG"),
                       (lambda: dist.all_gather([T(np.zeros(3, np.float32))], T(np.zeros(3, np.float32))),
                        "list of 2"),
                       (lambda: dist.broadcast(T(np.zeros(3, np.float32)), src=5), "src=5")):
        try:
            bad()
        except (ValueError, TypeError) as e:
            assert match in str(e), (match, e)
        else:
            raise AssertionError(f"no error ({match})")
    # a collective writes in place: a tensor saved for backward then refuses the stale graph
    w = ag.ones(3, device=dev, requires_grad=True)
    h = w * 2
    y = (h * h).sum()
    dist.all_reduce(h)
    try:
        y.backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e) or "version" in str(e), e
    else:
        raise AssertionError("all_reduce on a saved tensor went unnoticed")
    print(f"rank {r}: {checked} collective checks OK on {dev}", flush=True)


def main():
    mode = sys.argv[1]
    dist.init_process_group("mpi", timeout=float(os.environ.get("DIST_TIMEOUT", "60")))
    r = dist.get_rank()
    if mode == "collectives":
        collectives(sys.argv[2])
    elif mode == "raise":
        if r == 1:
            raise ZeroDivisionError("rank 1 divided by zero")
        try:
            dist.all_reduce(ag.ones(4))
        except dist.DistBackendError as e:  # one line, one write: the two ranks' tracebacks interleave on stderr
            print(f"rank 0 caught: {type(e).__name__}: {e}", flush=True)
            raise
    elif mode == "kill":
        if r == 1:
            print(f"rank 1 is pid {os.getpid()}", flush=True)
            os.kill(os.getpid(), 9)
        dist.all_reduce(ag.ones(4))
    elif mode == "hang":
        if r == 1:
            time.sleep(30)
        dist.all_reduce(ag.ones(4))
    elif mode == "mismatch":  # shapes differ: a DETAIL check raises; without it MPI would mix the bytes
        dist.all_reduce(ag.ones(4 + r))
    elif mode == "mismatch-op":
        if r == 0:
            dist.all_reduce(ag.ones(4))
        else:
            dist.broadcast(ag.ones(4), 0)
    dist.destroy_process_group()


main()
