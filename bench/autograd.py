"""``python -m bench autograd``: what autograd costs on the cpu, next to raw tkernels, NumPy and PyTorch.

Two tables:
1. per-op overhead on tiny tensors ((4, 4) float32): the raw tkernels forward call, the raw tkernels calls of
   forward + backward (the kernels the backward formula needs, written by hand), autograd without a graph
   (no_grad), autograd forward + ``backward(g)`` (graph recording, the engine, accumulation into ``.grad``),
   and PyTorch eager on the CPU doing the same when torch is importable (the column is empty otherwise).
   Ratios: autograd fwd+bwd / PyTorch fwd+bwd (target DESIGN §11: <= 2) and / raw tkernels fwd+bwd.
2. one training step of a small MLP (64-256-10, batch 128, ReLU, cross-entropy as ``x - logsumexp``, Adam
   written by hand under ``no_grad`` with in-place updates): autograd vs the same model written by hand in
   NumPy (forward, backward, Adam; target: <= 1.3x) and vs PyTorch CPU when importable. Each row first
   checks that the implementations agree (same losses over a few steps from the same initial weights).

``--profile`` adds the cProfile top functions of the autograd MLP step (where the time goes).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys

import numpy as np

from bench import peers
from bench.report import Column, Table, fmt_ratio, fmt_time
from bench.timing import measure

MACHINE = "cpu"



def add_arguments(p) -> None:
    p.add_argument("--profile", action="store_true", help="print the cProfile top functions of the MLP step")
    peers.add_arguments(p)


def environment(args) -> dict:
    return peers.environment(args)


def _progress(msg: str) -> None:
    if sys.stderr.isatty():
        print(f"  measuring {msg}...", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------ per-op table
def _cases(tk, ag, a, b, g44):
    """name, raw tk forward, raw tk forward+backward, ag forward (given leaves), torch forward (given leaves)."""
    x, y = tk.asarray(a), tk.asarray(b)
    g = tk.asarray(g44)
    g28 = tk.asarray(g44.reshape(2, 8))
    g22 = tk.asarray(g44[1:3, ::2].copy())
    one = tk.asarray(np.float32(1.0))
    t01 = (1, 0)

    def add_fb():
        tk.add(x, y)
        return g, g

    def mul_fb():
        tk.multiply(x, y)
        return tk.multiply(g, y), tk.multiply(g, x)

    def exp_fb():
        e = tk.exp(x)
        return tk.multiply(g, e)

    def sum_fb():
        tk.sum(x)
        return tk.broadcast_to(one, (4, 4))

    def mm_fb():
        tk.matmul(x, y)
        return tk.matmul(g, tk.permute_dims(y, t01)), tk.matmul(tk.permute_dims(x, t01), g)

    def relu_fb():
        tk.maximum(x, 0.0)
        return tk.multiply(g, tk.greater(x, 0.0))

    def reshape_fb():
        tk.reshape(x, (2, 8))
        return tk.reshape(g28, (4, 4))

    def getitem_fb():
        x[1:3, ::2]
        z = tk.zeros((4, 4), dtype=tk.float32)
        z[1:3, ::2] = g22
        return z

    return [
        ("add", lambda: tk.add(x, y), add_fb, lambda p, q: p + q, 2),
        ("mul", lambda: tk.multiply(x, y), mul_fb, lambda p, q: p * q, 2),
        ("exp", lambda: tk.exp(x), exp_fb, lambda p, q: p.exp(), 1),
        ("sum", lambda: tk.sum(x), sum_fb, lambda p, q: p.sum(), 1),
        ("matmul", lambda: tk.matmul(x, y), mm_fb, lambda p, q: p @ q, 2),
        ("relu", lambda: tk.maximum(x, 0.0), relu_fb, lambda p, q: p.relu(), 1),
        ("reshape", lambda: tk.reshape(x, (2, 8)), reshape_fb, lambda p, q: p.reshape(2, 8), 1),
        ("getitem", lambda: x[1:3, ::2], getitem_fb, lambda p, q: p[1:3, ::2], 1),
    ]


def _fwd_bwd(ag_or_torch, f, leaves, grads):
    """fn() running f on the leaves and backward with the output-shaped gradient; .grad reset each call."""
    p, q = leaves

    def step():
        p.grad = None
        q.grad = None
        out = f(p, q)
        out.backward(grads[out.ndim])

    return step


def op_table(tk, ag, timer, use_torch: bool) -> Table:
    t = Table("ops", "Per-op forward+backward time, (4, 4) float32: ratio = autograd / peer (lower is better)",
              [Column("op", "op"), Column("tk_fwd_us", "tk fwd µs", fmt_time),
               Column("tk_fb_us", "tk fwd+bwd µs", fmt_time), Column("ag_fwd_us", "ag no_grad µs", fmt_time),
               Column("ag_fb_us", "ag fwd+bwd µs", fmt_time), Column("torch_fb_us", "torch fwd+bwd µs", fmt_time),
               Column("vs_tk", "ag/tk fwd+bwd", fmt_ratio), Column("vs_torch", "ag/torch", fmt_ratio),
               Column("note", "note")])
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4), dtype=np.float32)
    b = rng.standard_normal((4, 4), dtype=np.float32)
    g44 = np.ones((4, 4), np.float32)
    pa = ag.tensor(a, requires_grad=True)
    pb = ag.tensor(b, requires_grad=True)
    na, nb = ag.tensor(a), ag.tensor(b)
    ag_grads = {0: ag.tensor(np.float32(1.0)), 2: None}
    if use_torch:
        import torch

        ta = torch.tensor(a, requires_grad=True)
        tb = torch.tensor(b, requires_grad=True)
    for name, tk_f, tk_fb, f, _nin in _cases(tk, ag, a, b, g44):
        _progress(name)
        row = t.add(op=name)
        try:
            out = f(pa, pb)
            grads = dict(ag_grads)
            grads[out.ndim] = ag.ones(tuple(out.shape))
            ag_fb = _fwd_bwd(ag, f, (pa, pb), grads)
            ag_fb()
            want = tk_f()
            if not np.allclose(out.detach().numpy(), np.asarray(want), rtol=1e-6, atol=1e-6):
                raise AssertionError("autograd and tkernels forward results differ")
            fns = [tk_f, tk_fb, lambda f=f: f(na, nb), ag_fb]
            if use_torch:
                tout = f(ta, tb)
                tgrads = {tout.ndim: torch.ones(tuple(tout.shape))}
                th_fb = _fwd_bwd(torch, f, (ta, tb), tgrads)
                th_fb()
                if not np.allclose(pa.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-6):
                    raise AssertionError("autograd and PyTorch gradients differ")
                fns.append(th_fb)
            ms = measure(*fns, timer=timer)
        except Exception as e:  # noqa: BLE001 - one broken op must not hide the others
            msg = str(e).splitlines()[0] if str(e) else ""
            row.update(status="failed", note=f"{type(e).__name__}: {msg}"[:140])
            continue
        row.update(status="ok", note="", tk_fwd_us=ms[0].us, tk_fb_us=ms[1].us, ag_fwd_us=ms[2].us,
                   ag_fb_us=ms[3].us, vs_tk=ms[3].seconds / ms[1].seconds,
                   tk_fwd_s=ms[0].seconds, tk_fb_s=ms[1].seconds, ag_fwd_s=ms[2].seconds, ag_fb_s=ms[3].seconds)
        if use_torch:
            row.update(torch_fb_us=ms[4].us, torch_fb_s=ms[4].seconds, vs_torch=ms[3].seconds / ms[4].seconds)
    t.notes += [
        "µs per call (median). tk fwd: the tkernels forward call alone; tk fwd+bwd: plus the kernels the "
        "backward formula calls, written by hand (no graph, no accumulation); ag no_grad: the autograd op "
        "without a graph; ag fwd+bwd and torch fwd+bwd: `x.grad = None`, forward, `out.backward(ones)` "
        "(graph recording, the engine, and the copy into .grad).",
        "target (DESIGN §11): ag/torch <= 2." + ("" if use_torch else " PyTorch is not importable here: "
                                                 "the torch columns are empty."),
    ]
    return t


# --------------------------------------------------------------------------------------------- the MLP
D_IN, HIDDEN, D_OUT, BATCH = 64, 256, 10, 128
LR, BETA1, BETA2, EPS = 1e-3, 0.9, 0.999, 1e-8


def _init(seed=0):
    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((D_IN, HIDDEN)) / np.sqrt(D_IN)).astype(np.float32)
    b1 = np.zeros(HIDDEN, np.float32)
    w2 = (rng.standard_normal((HIDDEN, D_OUT)) / np.sqrt(HIDDEN)).astype(np.float32)
    b2 = np.zeros(D_OUT, np.float32)
    x = rng.standard_normal((BATCH, D_IN)).astype(np.float32)
    y = rng.integers(0, D_OUT, BATCH)
    onehot = np.zeros((BATCH, D_OUT), np.float32)
    onehot[np.arange(BATCH), y] = 1.0
    return [w1, b1, w2, b2], x, onehot


class NumpyMLP:
    """The model, its backward and Adam by hand in NumPy (float32, in-place updates where natural)."""

    def __init__(self):
        params, self.x, self.onehot = _init()
        self.params = [p.copy() for p in params]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.t = 0

    def step(self) -> float:
        w1, b1, w2, b2 = self.params
        x, onehot = self.x, self.onehot
        h = x @ w1
        h += b1
        mask = h > 0
        h *= mask
        z = h @ w2
        z += b2
        zmax = z.max(axis=1, keepdims=True)
        e = np.exp(z - zmax)
        s = e.sum(axis=1, keepdims=True)
        logp = z - zmax - np.log(s)
        loss = -(logp * onehot).sum() / BATCH
        # backward
        dz = e / s
        dz -= onehot
        dz *= 1.0 / BATCH
        gw2 = h.T @ dz
        gb2 = dz.sum(axis=0)
        dh = dz @ w2.T
        dh *= mask
        gw1 = x.T @ dh
        gb1 = dh.sum(axis=0)
        # Adam
        self.t += 1
        c1 = 1 - BETA1 ** self.t
        c2 = 1 - BETA2 ** self.t
        for p, g, m, v in zip(self.params, (gw1, gb1, gw2, gb2), self.m, self.v):
            m *= BETA1
            m += (1 - BETA1) * g
            v *= BETA2
            v += (1 - BETA2) * (g * g)
            p -= (LR / c1) * m / (np.sqrt(v / c2) + EPS)
        return float(loss)


def _log_softmax(ag, z):
    if hasattr(z, "logsumexp"):
        return z - z.logsumexp(1, keepdim=True)
    return z - z.exp().sum(1, keepdim=True).log()


class AgMLP:
    """The same model with autograd: cross-entropy from autograd ops, Adam under no_grad with in-place ops."""

    def __init__(self, ag):
        self.ag = ag
        params, x, onehot = _init()
        self.params = [ag.tensor(p, requires_grad=True) for p in params]
        self.x, self.onehot = ag.tensor(x), ag.tensor(onehot)
        self.m = [ag.zeros_like(p) for p in self.params]
        self.v = [ag.zeros_like(p) for p in self.params]
        self.t = 0

    def step(self) -> float:
        ag = self.ag
        w1, b1, w2, b2 = self.params
        h = (self.x @ w1 + b1).relu()
        z = h @ w2 + b2
        loss = -(_log_softmax(ag, z) * self.onehot).sum() / BATCH
        for p in self.params:
            p.grad = None
        loss.backward()
        self.t += 1
        c1 = 1 - BETA1 ** self.t
        c2 = 1 - BETA2 ** self.t
        with ag.no_grad():
            for p, m, v in zip(self.params, self.m, self.v):
                g = p.grad
                m.mul_(BETA1).add_(g * (1 - BETA1))
                v.mul_(BETA2).add_(g * g * (1 - BETA2))
                p.sub_((LR / c1) * m / ((v / c2).sqrt() + EPS))
        return loss.item()


class TorchMLP(AgMLP):
    """The same code on torch (the autograd code is PyTorch's API)."""

    def __init__(self):
        import torch

        params, x, onehot = _init()
        self.ag = torch
        self.params = [torch.tensor(p, requires_grad=True) for p in params]
        self.x, self.onehot = torch.tensor(x), torch.tensor(onehot)
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0


class MyGradMLP:
    """The model and its backward in MyGrad (a pure-Python autograd over NumPy), Adam in NumPy on ``.data`` (MyGrad
    has no optimizers; this is how its users update parameters, and the cheapest way to)."""

    def __init__(self, mg):
        self.mg = mg
        params, self.x, self.onehot = _init()
        self.params = [mg.Tensor(p.copy()) for p in params]
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self) -> float:
        mg = self.mg
        w1, b1, w2, b2 = self.params
        h = mg.nnet.relu(mg.matmul(self.x, w1) + b1)
        z = mg.matmul(h, w2) + b2
        zmax = z.max(axis=1, keepdims=True).data
        logp = z - zmax - mg.log(mg.sum(mg.exp(z - zmax), axis=1, keepdims=True))
        loss = -(logp * self.onehot).sum() / BATCH
        loss.backward()
        self.t += 1
        c1 = 1 - BETA1 ** self.t
        c2 = 1 - BETA2 ** self.t
        for p, m, v in zip(self.params, self.m, self.v):
            g = p.grad
            m *= BETA1
            m += (1 - BETA1) * g
            v *= BETA2
            v += (1 - BETA2) * (g * g)
            p.data -= (LR / c1) * m / (np.sqrt(v / c2) + EPS)
        return loss.item()


def mlp_table(ag, timer, use_torch: bool, quick: bool, mygrad=None) -> tuple[Table, AgMLP]:
    t = Table("mlp", f"MLP training step ({D_IN}-{HIDDEN}-{D_OUT}, batch {BATCH}, ReLU, cross-entropy, Adam): "
                     f"ratio = time / NumPy by hand (lower is better)",
              [Column("impl", "implementation"), Column("ms", "ms/step", fmt_time),
               Column("ratio", "ratio vs NumPy", fmt_ratio), Column("loss", "loss after checks"),
               Column("note", "note")])
    impls = [("NumPy by hand", NumpyMLP), ("autograd", lambda: AgMLP(ag))]
    if use_torch:
        impls.append(("PyTorch CPU", TorchMLP))
    if mygrad is not None:
        impls.append(("MyGrad (Adam in NumPy)", lambda: MyGradMLP(mygrad)))
    models, losses = [], []
    for name, make in impls:
        _progress(f"MLP {name}")
        try:
            mdl = make()
            losses.append([mdl.step() for _ in range(3)])
            models.append((name, mdl))
        except Exception as e:  # noqa: BLE001
            msg = str(e).splitlines()[0] if str(e) else ""
            t.add(impl=name, status="failed", note=f"{type(e).__name__}: {msg}"[:140])
    ref = losses[0] if models and models[0][0] == "NumPy by hand" else None
    ms = measure(*(m.step for _, m in models), timer=timer) if models else []
    base = ms[0].seconds if ref is not None else None
    ag_model = None
    for (name, mdl), m, ls in zip(models, ms, losses):
        bad = None
        if ref is not None and not np.allclose(ls, ref, rtol=1e-4, atol=1e-5):
            bad = f"losses differ from NumPy's: {ls} vs {ref}"
        t.add(impl=name, ms=m.ms, ratio=None if base is None else m.seconds / base, loss=f"{ls[-1]:.5f}",
              status="failed" if bad else "ok", note=bad or "", s=m.seconds, p20_s=m.p20, p80_s=m.p80,
              loops=m.loops)
        if name == "autograd":
            ag_model = mdl
    t.notes += [
        "one step = forward, loss, backward, Adam update of the 4 parameters; the first 3 steps of every "
        "implementation start from the same weights and must give the same losses (checked).",
        "targets (DESIGN §11): autograd <= 1.3x NumPy by hand" + ("." if use_torch else
                                                                  "; PyTorch is not importable here."),
    ]
    return t, ag_model


def profile_table(model, steps: int = 200, top: int = 15) -> Table:
    t = Table("profile", f"cProfile of {steps} autograd MLP steps: top {top} functions by own time",
              [Column("func", "function"), Column("calls", "calls"), Column("tottime_ms", "own ms/step", fmt_time),
               Column("cumtime_ms", "cum ms/step", fmt_time)])
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(steps):
        model.step()
    pr.disable()
    st = pstats.Stats(pr, stream=io.StringIO())
    rows = sorted(st.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    for (fname, line, func), (_cc, nc, tt, ct, _) in rows:
        short = "/".join(fname.split("/")[-2:])
        t.add(func=f"{short}:{line}({func})", calls=f"{nc // steps}", tottime_ms=tt / steps * 1e3,
              cumtime_ms=ct / steps * 1e3)
    return t


def run(args, timer) -> list[Table]:
    import autograd as ag
    import tkernels as tk

    use_torch = peers.torch(not getattr(args, "no_torch", False)) is not None
    mygrad = peers.mygrad(not getattr(args, "no_mygrad", False))
    tables = [op_table(tk, ag, timer, use_torch)]
    mlp, model = mlp_table(ag, timer, use_torch, args.quick, mygrad)
    tables.append(mlp)
    if getattr(args, "profile", False) and model is not None:
        tables.append(profile_table(model, steps=20 if args.quick else 200))
    return tables
