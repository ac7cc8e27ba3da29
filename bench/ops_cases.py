"""The cases of ``python -m bench ops``: for each op family, the sizes, the work of one call (bytes read and
written once, or FLOPs), and how to build the three providers of one case on a device.

A ``Case`` is only a description (no array is made until ``build(env)``), so the full list is cheap and
``--op``/``--dtype`` filter it before anything is allocated. ``build`` returns a ``Built``: ``ours`` (tkernels),
``numpy`` (the same formula written in NumPy on host arrays; on cpu only), ``torch`` (PyTorch on the same
device; only when torch is importable) and ``check`` (our result against a NumPy reference: ``None`` or the
reason it is wrong). On big inputs the check compares a slice (first and last rows, first and last heads)
to keep the host reference short; the timed call's own output is what is checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import ml_dtypes
import numpy as np

MEMORY, COMPUTE = "memory", "compute"  # Case.kind: work in bytes (GB/s) or in FLOPs (FLOP/s)
# loose tolerances on max|ours - ref| / max|ref|: the check catches wrong kernels, not rounding
TOL = {"float64": 1e-6, "float32": 1e-3, "tf32": 1e-2, "float16": 1e-2, "bfloat16": 5e-2}
DTYPES = tuple(TOL)
_NP = {"float64": np.float64, "float32": np.float32, "tf32": np.float32, "float16": np.float16,
       "bfloat16": ml_dtypes.bfloat16}
CHECK_ROWS = 64  # rows (heads, images) checked at each end of a big output

# Sizes per profile: "cuda" is sized for an H200 (arrays of 0.5-1 GiB, past the 50 MB L2), "cpu" for a 2-core
# VM (about 3 minutes in all), the quick ones are smoke tests (seconds; interpreted cuda uses "cpu-quick").
# The copy roofline uses n (roof_n when given) float32 elements: past the caches.
PROFILES = {
    "cuda": dict(n=2**27, n_sweep=[2**k for k in range(15, 28, 2)], red=(8192, 8192), sm_rows=4096,
                 sm_sweep=[256 * 2**i for i in range(8)], sm_head=8192, ce_rows=4096, ce_sweep=[8192, 32768, 131072],
                 ce_head=32768, emb=(32768, 4096, 8192), mm=[1024, 2048, 4096, 8192], mm_tf=(8192, 4096, 14336),
                 conv=(32, 64, 64, 56), attn=(4, 16, 2048), attn_d=(64, 128), probe=8192,
                 fft=[2**20, 2**24], fft2=(64, 512, 512)),
    "cuda-quick": dict(n=2**24, n_sweep=[2**16, 2**20, 2**24], red=(4096, 4096), sm_rows=4096, sm_sweep=[1024, 8192],
                       sm_head=8192, ce_rows=2048, ce_sweep=[32768], ce_head=32768, emb=(32768, 1024, 4096),
                       mm=[1024, 4096], mm_tf=(4096, 1024, 4096), conv=(8, 64, 64, 28), attn=(2, 16, 1024),
                       attn_d=(128,), probe=4096, fft=[2**20], fft2=(16, 512, 512)),
    "cpu": dict(n=2**24, n_sweep=[2**k for k in range(10, 25, 2)], red=(4096, 4096), sm_rows=1024,
                sm_sweep=[16] + [64 * 2**i for i in range(7)], sm_head=1024, ce_rows=512,
                ce_sweep=[10, 1024, 8192, 32768], ce_head=32768, emb=(32768, 512, 4096), mm=[128, 256, 512, 1024, 2048],
                mm_tf=(2048, 768, 3072), conv=(8, 64, 64, 28), attn=(1, 8, 512), attn_d=(64, 128), probe=2048,
                fft=[2**20, 2**24], fft2=(64, 512, 512)),
    "cpu-quick": dict(n=2**16, n_sweep=[2**10, 2**13, 2**16], red=(256, 256), sm_rows=128, sm_sweep=[64, 256],
                      sm_head=256, ce_rows=64, ce_sweep=[1024, 4096], ce_head=4096, emb=(4096, 64, 256),
                      mm=[64, 128], mm_tf=(256, 96, 384), conv=(2, 8, 8, 16), attn=(1, 2, 64), attn_d=(32,),
                      probe=128, roof_n=2**22, fft=[2**12], fft2=(4, 32, 32)),
}


def default_dtypes(device: str) -> dict[str, tuple[str, ...]]:
    """Dtypes measured when ``--dtype`` is not given: per kind of op (memory-bound, matmul, conv, attention)."""
    if device == "cpu":
        return {"memory": ("float32",), "matmul": ("float32",), "conv": ("float32",), "attention": ("float32",),
                "linalg": ("float32",)}
    return {"memory": ("float32", "bfloat16"), "matmul": ("float32", "tf32", "float16", "bfloat16"),
            "conv": ("float32", "bfloat16"), "attention": ("bfloat16",), "linalg": ("float32", "float64")}


def head_dtype(device: str) -> str:
    """The dtype of the headline rows (the training dtype on a GPU)."""
    return "float32" if device == "cpu" else "bfloat16"


@dataclass
class Built:
    ours: Callable
    check: Callable[[], str | None]
    numpy: Callable | None = None
    torch: Callable | None = None


@dataclass
class Case:
    family: str       # table: elementwise, reduction, softmax, norm, loss, embedding, copy, matmul, conv2d, attention
    op: str           # --op name
    dtype: str        # float32, tf32, float16, bfloat16, float64
    shape: str        # shown
    kind: str         # MEMORY or COMPUTE
    work: float       # bytes or FLOPs per call
    build: Callable   # (Env) -> Built
    x: int = 0        # position on a sweep's plot (0: not part of a sweep)
    xlabel: str = ""
    headline: str = ""   # label of a bench.gpu_check summary line
    target: str = ""     # how the headline is judged: copy90, ahead, cublas95, info


class Env:
    """Where cases are built: the tkernels module, the device, optional torch, a seeded generator."""

    def __init__(self, tk, device: str, torch=None, seed: int = 0):
        self.tk, self.device, self.torch = tk, device, torch
        self.cpu = device == "cpu"
        self.rng = np.random.default_rng(seed)

    def rand(self, shape, dtype: str, scale: float = 1.0) -> np.ndarray:
        """Standard normal values (times ``scale``) stored in ``dtype`` on the host."""
        a = self.rng.standard_normal(shape, dtype=np.float64 if dtype == "float64" else np.float32)
        if scale != 1.0:
            a *= scale
        return a.astype(_NP[dtype], copy=False)

    def dev(self, h: np.ndarray):
        return self.tk.asarray(h, device=self.device)

    def th(self, h: np.ndarray, dtype: str | None = None):
        """``h`` as a torch tensor on our device (floats in ``dtype``), or None without torch."""
        if self.torch is None:
            return None
        t = self.torch
        if h.dtype.kind in "iub":
            return t.from_numpy(np.ascontiguousarray(h)).to(self.device)
        src = t.from_numpy(np.ascontiguousarray(h, dtype=np.float64 if h.dtype == np.float64 else np.float32))
        tdt = {"float64": t.float64, "float32": t.float32, "tf32": t.float32, "float16": t.float16,
               "bfloat16": t.bfloat16}[dtype or "float32"]
        return src.to(device=self.device, dtype=tdt)


def storage(dtype: str) -> str:
    return "float32" if dtype == "tf32" else dtype


def itemsize(dtype: str) -> int:
    return np.dtype(_NP[dtype]).itemsize


def f32(h: np.ndarray) -> np.ndarray:
    """A half-precision host array in float32 (others as they are): what the NumPy peer and references use."""
    return h.astype(np.float32) if h.dtype in (np.float16, _NP["bfloat16"]) else h


def host(a) -> np.ndarray:
    return a if isinstance(a, np.ndarray) else np.asarray(a.numpy())


def ends(a, k: int = CHECK_ROWS, axis: int = 0):
    """The first and last ``k`` entries along ``axis`` (all of them when there are at most 2k), on the host."""
    n = a.shape[axis]
    if n <= 2 * k:
        return f32(host(a))
    lo = tuple([slice(None)] * axis + [slice(0, k)])
    hi = tuple([slice(None)] * axis + [slice(n - k, n)])
    return np.concatenate([f32(host(a[lo])), f32(host(a[hi]))], axis=axis)


def compare(got, want, dtype: str) -> str | None:
    """None when ``got`` matches ``want`` within the dtype's tolerance (relative to max|want|), else why not."""
    g, w = np.asarray(host(got), np.float64), np.asarray(want, np.float64)
    if g.shape != w.shape:
        return f"wrong result: shape {g.shape} vs reference {w.shape}"
    if not w.size:
        return None
    err = float(np.max(np.abs(g - w))) / max(float(np.max(np.abs(w))), 1e-30)
    if err <= TOL[dtype]:  # NaN compares False: a NaN in ours fails
        return None
    return f"wrong result: max error {err:.2e} of max|ref| (tolerance {TOL[dtype]:g})"


def _torch_or_none(env: Env, make):
    """A torch peer from ``make(torch)``, or None when torch is absent."""
    return None if env.torch is None else make(env.torch)


# ------------------------------------------------------------------------------------------ memory-bound
def _erf(a):
    from scipy.special import erf

    return erf(a)


_UNARY_NP = {"exp": np.exp, "gelu": lambda a: 0.5 * a * (1.0 + _erf(a * (1 / math.sqrt(2))))}


def elementwise(P, dts, head) -> list[Case]:
    out = []

    def case(op, n, dt, x=0):
        nin = 2 if op in ("add", "mul") else 1
        work = (nin + 1) * n * itemsize(dt)

        def build(env):
            tk = env.tk
            hs = [env.rand((n,), dt) for _ in range(nin)]
            xs = [env.dev(h) for h in hs]
            ours = {"add": lambda: tk.add(*xs), "mul": lambda: tk.multiply(*xs), "exp": lambda: tk.exp(xs[0]),
                    "gelu": lambda: tk.gelu(xs[0])}[op]
            fs = [f32(h) for h in hs]

            def ref(*a):
                return a[0] + a[1] if op == "add" else a[0] * a[1] if op == "mul" else _UNARY_NP[op](a[0])

            def peer(t):
                ts = [env.th(h, dt) for h in hs]
                fn = {"add": lambda: ts[0] + ts[1], "mul": lambda: ts[0] * ts[1], "exp": lambda: t.exp(ts[0]),
                      "gelu": lambda: t.nn.functional.gelu(ts[0])}[op]
                return fn
            return Built(ours, lambda: compare(ours(), ref(*fs), dt), (lambda: ref(*fs)) if env.cpu else None,
                         _torch_or_none(env, peer))
        return Case("elementwise", op, dt, f"{n:,}" if n < 2**20 else f"2^{n.bit_length() - 1}", MEMORY, work,
                    build, x=x, xlabel="elements",
                    headline=f"add {dt} 2^{n.bit_length() - 1}" if op == "add" and n == P["n"] and dt == "float32"
                    else "", target="copy90")

    for dt in dts:
        for n in P["n_sweep"]:
            out.append(case("add", n, dt, x=n))
        for op in ("mul", "exp", "gelu"):
            out.append(case(op, P["n"], dt))
    return out


def copy(P, dts, head) -> list[Case]:
    out = []
    for dt in dts:
        n = P["n"]

        def build(env, n=n, dt=dt):
            h = env.rand((n,), dt)
            x = env.dev(h)
            return Built(lambda: env.tk.copy(x), lambda: compare(env.tk.copy(x), f32(h), dt),
                         (lambda: h.copy()) if env.cpu else None,
                         _torch_or_none(env, lambda t: (lambda xt=env.th(h, dt): xt.clone())))
        out.append(Case("copy", "copy", dt, f"2^{n.bit_length() - 1}", MEMORY, 2 * n * itemsize(dt), build))
    return out


_RED = {"sum_rows": ("sum", -1), "sum_cols": ("sum", 0), "max_rows": ("max", -1), "max_cols": ("max", 0),
        "var": ("var", -1)}


def reduction(P, dts, head) -> list[Case]:
    out = []
    M, N = P["red"]
    for dt in dts:
        for op, (fn, axis) in _RED.items():
            def build(env, fn=fn, axis=axis, dt=dt):
                h = env.rand((M, N), dt)
                x = env.dev(h)
                ours = {"sum": lambda: env.tk.sum(x, axis=axis), "max": lambda: env.tk.max(x, axis=axis),
                        "var": lambda: env.tk.var(x, axis=axis)}[fn]
                a = f32(h)
                ref = {"sum": lambda: a.sum(axis=axis), "max": lambda: a.max(axis=axis),
                       "var": lambda: a.var(axis=axis)}[fn]

                def peer(t):
                    xt = env.th(h, dt)
                    return {"sum": lambda: xt.sum(axis), "max": lambda: xt.amax(axis),
                            "var": lambda: xt.var(axis, correction=0)}[fn]
                return Built(ours, lambda: compare(ours(), np.asarray(a, np.float64).sum(axis=axis) if fn == "sum"
                                                   else ref(), dt), ref if env.cpu else None, _torch_or_none(env, peer))
            reduced = M if axis == -1 else N
            out.append(Case("reduction", op, dt, f"({M}, {N}) axis={axis}", MEMORY, (M * N + reduced) * itemsize(dt),
                            build))
    return out


def _np_softmax(a, log=False):
    m = a.max(axis=-1, keepdims=True)
    z = a - m
    if log:
        return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _np_layer_norm(a, w, b, eps=1e-5):
    mu = a.mean(axis=-1, keepdims=True)
    xc = a - mu
    return xc / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + eps) * w + b


def _np_rms_norm(a, w, eps=1e-6):
    return a / np.sqrt((a * a).mean(axis=-1, keepdims=True) + eps) * w


def _rowwise(family, op, M, N, dt, x, headline, target="ahead") -> Case:
    """softmax, log_softmax, layer_norm, rms_norm of an (M, N) input along its last axis."""
    es = itemsize(dt)
    params = {"layer_norm": 2, "rms_norm": 1}.get(op, 0)

    def build(env):
        tk = env.tk
        h = env.rand((M, N), dt, 2.0)
        x_ = env.dev(h)
        hw = [(1 + 0.1 * env.rng.standard_normal(N)).astype(_NP[dt]),
              (0.1 * env.rng.standard_normal(N)).astype(_NP[dt])]
        w, b = (env.dev(p) for p in hw)
        ours = {"softmax": lambda: tk.ops.softmax(x_, axis=-1), "log_softmax": lambda: tk.ops.log_softmax(x_, axis=-1),
                "layer_norm": lambda: tk.ops.layer_norm(x_, (N,), w, b, eps=1e-5),
                "rms_norm": lambda: tk.ops.rms_norm(x_, (N,), w, eps=1e-6)}[op]
        a, fw, fb = f32(h), f32(hw[0]), f32(hw[1])

        def ref(a):
            return {"softmax": lambda: _np_softmax(a), "log_softmax": lambda: _np_softmax(a, log=True),
                    "layer_norm": lambda: _np_layer_norm(a, fw, fb), "rms_norm": lambda: _np_rms_norm(a, fw)}[op]()

        def peer(t):
            F = t.nn.functional
            xt, wt, bt = env.th(h, dt), env.th(hw[0], dt), env.th(hw[1], dt)
            return {"softmax": lambda: t.softmax(xt, -1), "log_softmax": lambda: t.log_softmax(xt, -1),
                    "layer_norm": lambda: F.layer_norm(xt, (N,), wt, bt, 1e-5),
                    "rms_norm": lambda: F.rms_norm(xt, (N,), wt, 1e-6)}[op]
        return Built(ours, lambda: compare(ends(ours()), ref(ends(a).astype(np.float64)), dt),
                     (lambda: ref(a)) if env.cpu else None, _torch_or_none(env, peer))
    return Case(family, op, dt, f"({M}, {N})", MEMORY, (2 * M * N + params * N) * es, build, x=x,
                xlabel="N (columns)", headline=headline, target=target)


def softmax_norm(P, dts, head) -> list[Case]:
    out = []
    M, Nh = P["sm_rows"], P["sm_head"]
    for dt in dts:
        for fam, op in (("softmax", "softmax"), ("norm", "layer_norm")):
            for N in P["sm_sweep"]:
                hl = f"{op} {dt} ({M}, {N})" if N == Nh and dt == head else ""
                out.append(_rowwise(fam, op, M, N, dt, N, hl))
        out.append(_rowwise("softmax", "log_softmax", M, Nh, dt, 0, ""))
        out.append(_rowwise("norm", "rms_norm", M, Nh, dt, 0, ""))
    return out


def _np_cross_entropy(a, t):
    """Mean cross-entropy of logits ``a`` (M, V) for int targets ``t``, in row blocks (bounded temporaries)."""
    total = 0.0
    for i in range(0, a.shape[0], 256):
        blk = f32(a[i:i + 256])
        m = blk.max(axis=-1)
        lse = m + np.log(np.exp(blk - m[:, None]).sum(axis=-1))
        total += float((lse - blk[np.arange(len(blk)), t[i:i + 256]]).astype(np.float64).sum())
    return total / a.shape[0]


def loss(P, dts, head) -> list[Case]:
    out = []
    M = P["ce_rows"]
    for dt in dts:
        for V in P["ce_sweep"]:
            def build(env, V=V, dt=dt):
                h = env.rand((M, V), dt)
                ht = env.rng.integers(0, V, M)
                x, t = env.dev(h), env.dev(ht)

                def ours():
                    return env.tk.ops.cross_entropy(x, t)
                a = f32(h)

                def peer(tm):
                    xt, tt = env.th(h, dt), env.th(ht)
                    return lambda: tm.nn.functional.cross_entropy(xt, tt)
                return Built(ours, lambda: compare(ours(), _np_cross_entropy(h, ht), dt),
                             (lambda: _np_cross_entropy(a, ht)) if env.cpu else None, _torch_or_none(env, peer))
            hl = f"cross_entropy {dt} ({M}, {V})" if V == P["ce_head"] and dt == head else ""
            out.append(Case("loss", "cross_entropy", dt, f"({M}, {V}) mean", MEMORY, M * V * itemsize(dt) + 8 * M,
                            build, x=V, xlabel="V (vocabulary)", headline=hl, target="ahead"))
    return out


def embedding(P, dts, head) -> list[Case]:
    out = []
    V, D, T = P["emb"]
    for dt in dts:
        def build(env, dt=dt):
            hw = env.rand((V, D), dt)
            hi = env.rng.integers(0, V, T)
            w, i = env.dev(hw), env.dev(hi)

            def ours():
                return env.tk.ops.embedding(w, i)

            def peer(t):
                wt, it = env.th(hw, dt), env.th(hi)
                return lambda: t.nn.functional.embedding(it, wt)
            return Built(ours, lambda: compare(ends(ours()), f32(hw[ends(hi)]), dt),
                         (lambda: hw[hi]) if env.cpu else None, _torch_or_none(env, peer))
        out.append(Case("embedding", "embedding", dt, f"({V}, {D})[{T}]", MEMORY, 2 * T * D * itemsize(dt) + 8 * T,
                        build))
    return out


# ----------------------------------------------------------------------------------------- compute-bound
def _matmul_case(M, K, N, dt, x, headline, shape) -> Case:
    def build(env):
        tk = env.tk
        ha, hb = env.rand((M, K), dt, 1 / math.sqrt(math.sqrt(K))), env.rand((K, N), dt, 1 / math.sqrt(math.sqrt(K)))
        a, b = env.dev(ha), env.dev(hb)
        if dt == "tf32":
            from tkernels.backends import matmul as flags

            def ours():
                flags.allow_tf32 = True
                try:
                    return tk.matmul(a, b)
                finally:
                    flags.allow_tf32 = False
        else:
            def ours():
                return tk.matmul(a, b)
        fa, fb = f32(ha), f32(hb)

        def peer(t):
            at, bt = env.th(ha, dt), env.th(hb, dt)
            if dt != "tf32" or env.cpu:
                return lambda: at @ bt

            def tf32():
                t.backends.cuda.matmul.allow_tf32 = True
                try:
                    return at @ bt
                finally:
                    t.backends.cuda.matmul.allow_tf32 = False
            return tf32
        return Built(ours, lambda: compare(ends(ours()), ends(fa) @ fb, dt), (lambda: fa @ fb) if env.cpu else None,
                     _torch_or_none(env, peer))
    return Case("matmul", "matmul", dt, shape, COMPUTE, 2.0 * M * N * K, build, x=x, xlabel="n (n×n @ n×n)",
                headline=headline, target="cublas95")


def matmul(P, dts, head) -> list[Case]:
    out = []
    big = sorted(P["mm"])[-2:]
    for dt in dts:
        for n in P["mm"]:
            hl = f"matmul {dt} {n}" if dt == head and n in big else ""
            out.append(_matmul_case(n, n, n, dt, n, hl, f"{n}x{n} @ {n}x{n}"))
        M, K, N = P["mm_tf"]
        out.append(_matmul_case(M, K, N, dt, 0, "", f"{M}x{K} @ {K}x{N} (transformer MLP)"))
    return out


def _np_conv3x3(x, w):
    """3x3 convolution, stride 1, padding 1, of x (N, C, H, W) with w (O, C, 3, 3): im2col + tensordot."""
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # (N, C, H, W, 3, 3)
    return np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)


def conv2d(P, dts, head) -> list[Case]:
    out = []
    N, C, Co, HW = P["conv"]
    for dt in dts:
        def build(env, dt=dt):
            hx, hw = env.rand((N, C, HW, HW), dt), env.rand((Co, C, 3, 3), dt, 1 / math.sqrt(9 * C))
            x, w = env.dev(hx), env.dev(hw)

            def ours():
                return env.tk.ops.conv2d(x, w, None, 1, 1)
            fx, fw = f32(hx), f32(hw)

            def peer(t):
                xt, wt = env.th(hx, dt), env.th(hw, dt)
                return lambda: t.nn.functional.conv2d(xt, wt, None, 1, 1)
            return Built(ours, lambda: compare(ends(ours(), 1), _np_conv3x3(ends(fx, 1), fw), dt),
                         (lambda: _np_conv3x3(fx, fw)) if env.cpu else None, _torch_or_none(env, peer))
        out.append(Case("conv2d", "conv2d", dt, f"x ({N}, {C}, {HW}, {HW}), w ({Co}, {C}, 3, 3), pad 1",
                        COMPUTE, 2.0 * N * Co * HW * HW * C * 9, build))
    return out


def _np_attention(q, k, v, causal, g=None):
    """Forward (and with ``g`` the gradients dq, dk, dv) of softmax(q k^T / sqrt(d)) v over the last two axes."""
    scale = 1 / math.sqrt(q.shape[-1])
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        L = s.shape[-1]
        s = np.where(np.triu(np.ones((L, L), bool), 1), -np.inf, s)
    p = _np_softmax(s)
    if g is None:
        return p @ v
    dv = np.swapaxes(p, -1, -2) @ g
    dp = g @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    return ds @ k * scale, np.swapaxes(ds, -1, -2) @ q * scale, dv


def _heads(a):
    """Heads (0, 0) and (B-1, H-1) of a (B, H, L, d) array, on the host in float32."""
    B, H = a.shape[:2]
    return np.stack([f32(host(a[0, 0])), f32(host(a[B - 1, H - 1]))])


def attention(P, dts, head) -> list[Case]:
    out = []
    B, H, L = P["attn"]
    for dt in dts:
        for d in P["attn_d"]:
            for causal in (False, True):
                for bwd in (False, True):
                    out.append(_attention_case(B, H, L, d, causal, bwd, dt, head, max(P["attn_d"])))
    return out


def _attention_case(B, H, L, d, causal, bwd, dt, head, head_d) -> Case:
    fwd_flops = 4.0 * B * H * L * L * d * (0.5 if causal else 1.0)
    op = "attention_fwd_bwd" if bwd else "attention_fwd"

    def build(env):
        tk = env.tk
        hq, hk, hv, hg = (env.rand((B, H, L, d), dt) for _ in range(4))
        q, k, v, g = (env.dev(h) for h in (hq, hk, hv, hg))
        sdpa, sdpa_bwd = tk.ops.scaled_dot_product_attention, tk.ops.scaled_dot_product_attention_backward
        if bwd:
            def ours():
                o, lse, _ = sdpa(q, k, v, is_causal=causal, return_stats=True)
                return sdpa_bwd(g, q, k, v, o, lse, is_causal=causal)
        else:
            def ours():
                return sdpa(q, k, v, is_causal=causal)
        fs = [f32(h) for h in (hq, hk, hv, hg)]

        def check():
            got = ours()
            want = _np_attention(*(_heads(a).astype(np.float64) for a in fs[:3]), causal,
                                 _heads(fs[3]).astype(np.float64) if bwd else None)
            if not bwd:
                return compare(_heads(got), want, dt)
            for name, gi, wi in zip(("dq", "dk", "dv"), got, want):
                bad = compare(_heads(gi), wi, dt)
                if bad:
                    return f"{name}: {bad}"
            return None

        def peer(t):
            F = t.nn.functional
            qt, kt, vt, gt = (env.th(h, dt) for h in (hq, hk, hv, hg))
            if not bwd:
                return lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
            qt, kt, vt = (a.requires_grad_() for a in (qt, kt, vt))

            def fb():
                o = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
                return t.autograd.grad(o, (qt, kt, vt), gt)
            return fb
        return Built(ours, check, (lambda: _np_attention(*fs[:3], causal, fs[3] if bwd else None)) if env.cpu else None,
                     _torch_or_none(env, peer))
    hl = f"{op.replace('_', ' ')} {dt} d={d}{' causal' if causal else ''}" if (dt == head and d == head_d and causal) \
        else ""
    return Case("attention", op, dt, f"B{B} H{H} L{L} d{d}{' causal' if causal else ''}", COMPUTE,
                fwd_flops * (3.5 if bwd else 1.0), build, headline=hl, target="info")


# ------------------------------------------------------------------------------------------------- fft
_FFT_DT = {"float32": np.complex64, "float64": np.complex128}


def fft(P, dts, head) -> list[Case]:
    """The complex FFT of one long signal (2^20, 2^24 points: four-step on cuda) and a batch of 2-D FFTs (fft2
    over the last two axes), in complex64 (``float32``) or complex128 (``float64``); the work is one read and one
    write of the data (what a single-pass FFT would move)."""
    out = []
    shapes = [((n,), (-1,)) for n in P["fft"]] + [(tuple(P["fft2"]), (-2, -1))]
    for dt in dts:
        if dt not in _FFT_DT:
            continue
        for shape, axes in shapes:
            def build(env, shape=shape, axes=axes, dt=dt):
                cdt = _FFT_DT[dt]
                h = (env.rand(shape, dt) + 1j * env.rand(shape, dt)).astype(cdt)
                x = env.dev(h)

                def ours():
                    return env.tk.fft.fftn(x, axes=axes)

                def check():
                    got = np.asarray(host(ours()), np.complex128)
                    want = np.fft.fftn(h.astype(np.complex128), axes=axes)
                    err = float(np.max(np.abs(got - want))) / max(float(np.max(np.abs(want))), 1e-30)
                    return None if err <= TOL[dt] else f"wrong result: max error {err:.2e} of max|ref|"

                def peer(t):
                    xt = t.from_numpy(h).to(env.device)
                    return lambda: t.fft.fftn(xt, dim=axes)
                return Built(ours, check, (lambda: np.fft.fftn(h, axes=axes)) if env.cpu else None,
                             _torch_or_none(env, peer))
            n = math.prod(shape)
            label = f"2^{n.bit_length() - 1}" if len(shape) == 1 else f"{shape} fft2"
            out.append(Case("fft", "fft" if len(shape) == 1 else "fft2", dt, label, MEMORY,
                            2 * n * np.dtype(_FFT_DT[dt]).itemsize, build))
    return out


from .ops_linalg import SIZES as _LINALG_SIZES  # noqa: E402 - (it imports this module's helpers)
from .ops_linalg import linalg  # noqa: E402

for _name, _sizes in _LINALG_SIZES.items():
    PROFILES[_name]["linalg"] = _sizes

# family name: (builder, default-dtype kind); the order of the tables
FAMILIES = {"copy": (copy, "memory"), "elementwise": (elementwise, "memory"), "reduction": (reduction, "memory"),
            "softmax": (softmax_norm, "memory"), "loss": (loss, "memory"), "embedding": (embedding, "memory"),
            "matmul": (matmul, "matmul"), "conv2d": (conv2d, "conv"), "attention": (attention, "attention"),
            "fft": (fft, "memory"), "linalg": (linalg, "linalg")}


def all_cases(profile: str, device: str, dtypes: tuple[str, ...] | None) -> list[Case]:
    """Every case of a profile; ``dtypes`` (None: the device's defaults) says which dtypes to build."""
    P = PROFILES[profile]
    defaults = default_dtypes(device)
    head = head_dtype(device)
    out = []
    for build, kind in FAMILIES.values():
        dts = defaults[kind] if dtypes is None else tuple(d for d in dtypes if d != "tf32" or kind == "matmul")
        if device == "cpu":
            dts = tuple(d for d in dts if d != "tf32")  # no TF32 on a CPU
        out += build(P, dts, head)
    return out
