"""The code generator of ``autograd.compile``: one Triton kernel per region (``schedule.Region``).

The kernel's programs are split between the region's segments (``if pid < END0: ... elif pid < END1: ...``).
An elementwise segment loads each operand once, computes every op of its chain in registers with the very
``@triton.jit`` helpers of the eager kernels (``tkernels/kernels/elementwise.py``: bitwise the eager values) and
stores only what is read elsewhere or outlives the step. A segment holding a row op (``rowgen.py``) indexes the
same way but by blocks of whole rows, so the row op's sums see a row's values wherever they come from (loaded, or
computed by the ops before it). A sum segment reduces the rows (leading dimensions) or the
columns (trailing ones) of a contiguous array in blocks; a matmul segment computes its output in tiles with
``tl.dot`` (float32 accumulation, IEEE or TF32 products as the eager kernel's switch says).

Sources are readable Python files written to the cache directory (``$TKERNELS_CACHE_DIR/compile``, default
``~/.cache/tkernels/compile``) under the hash of the source and the Triton version, and imported from there: a
second process (or a second compile of the same region) finds the file and writes nothing."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys

from tkernels import dtypes as _dt
from tkernels.kernels import elementwise as ek

from .rowgen import count_code, mean_code, row_code
from .rows import row_tile
from .schedule import layout

__all__ = ["Kernel", "generate", "cache_dir", "load"]

BLOCK = 1024
RB, RR = 32, 32  # sum segments: outputs per program, reduced elements per step
MB, MK = 32, 32  # matmul segments: output tile (MB x MB), K step
_LOADED: dict = {}  # source hash -> jit function
STATS = {"written": 0, "reused": 0, "loaded": 0}


def cache_dir() -> str:
    base = os.environ.get("TKERNELS_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tkernels")
    return os.path.join(base, "compile")


def _triton_version() -> str:
    import triton

    return triton.__version__


class Kernel:
    """A generated kernel: its source, the arguments of a launch and the grid (programs of every segment)."""

    def __init__(self, source, args, programs, names, block_size):
        self.source, self.args, self.programs, self.names, self.block = source, args, programs, names, block_size
        self.fn = None
        self.key = hashlib.sha256((source + "\ntriton " + _triton_version()).encode()).hexdigest()[:24]


class _Gen:
    def __init__(self):
        self.params = []  # names of the kernel's runtime arguments
        self.values = []  # what a launch passes for each
        self.ptr_of = {}  # array layout -> argument name
        self.scalars = []  # names not to specialize on
        self.lines = []

    def arg(self, prefix, value, scalar=False):
        name = f"{prefix}{len(self.params)}"
        self.params.append(name)
        self.values.append(value)
        if scalar:
            self.scalars.append(name)
        return name

    def ptr(self, a):
        key = layout(a)
        if key not in self.ptr_of:
            self.ptr_of[key] = self.arg("p", a)
        return self.ptr_of[key]

    def emit(self, line, depth=2):
        self.lines.append("    " * depth + line)


def _ct(dtype) -> int:
    return ek.CT_F64 if dtype is _dt.float64 else ek.CT_F32


def _tl_compute(ct):
    return "tl.float64" if ct == ek.CT_F64 else "tl.float32"


def _scalar(g, v, cd, ct):
    from tkernels.backends.triton.elementwise import _scalar_arg

    return g.arg("c", _scalar_arg(v, cd, ct), scalar=True)


def _elementwise(g: _Gen, seg, s: int, start, end) -> None:
    from tkernels.backends.triton._launch import collapse
    from tkernels.backends.triton.elementwise import _bstrides, _unary_code_params

    shape = seg[0].shape
    n = 1
    for d in shape:
        n *= d
    arrays = []
    for op in seg:
        for a in [*op.reads, op.out]:
            if all(layout(a) != layout(b) for b in arrays):
                arrays.append(a)
    row = next((op for op in seg if op.kind == "row"), None)
    if row is not None:  # a row op's statistics, affine parameters and partials are indexed by rows or columns
        aux = {layout(a) for a in [*row.reads, *row.outs]} - row.space
        arrays = [a for a in arrays if layout(a) not in aux]
    strided = [a for a in arrays if not (a._shape == shape and a.is_contiguous())]
    nn_ = g.arg("n", n)
    g.emit(f"# segment {s}: {len(seg)} op(s) over {tuple(shape)}" + (" in blocks of whole rows" if row else ""), 1)
    g.emit(f"{'if' if s == 0 else 'elif'} pid < {end}:", 1)
    blk = "BLOCK"
    if row is None:
        g.emit(f"idx = (pid - {start}).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)")
        g.emit(f"mask = idx < {nn_}")
    else:
        bm, bn = row_tile(row.extra["M"], row.extra["N"])
        blk = str(bm * bn)
        rm_, rn_ = g.arg("m", row.extra["M"]), g.arg("w", row.extra["N"])
        g.emit(f"lane = tl.arange(0, {blk})")
        g.emit(f"rows = (pid - {start}).to(tl.int64) * {bm} + lane // {bn}")
        g.emit(f"cols = (lane % {bn}).to(tl.int64)")
        g.emit(f"rmask = rows < {rm_}")
        g.emit(f"cmask = cols < {rn_}")
        g.emit("mask = rmask & cmask")
        g.emit(f"idx = rows * {rn_} + cols")
    offs = {}
    if strided:
        sizes, strides = collapse(shape, *[_bstrides(a, shape) for a in strided])
        zs = [g.arg("z", v) for v in sizes[1:]]
        for a, st in zip(strided, strides):
            ts = [g.arg("t", v) for v in st]
            o = f"off{len(offs)}"
            g.emit(f"{o} = strided_offset(idx, {', '.join(zs)}, {', '.join(ts)})")
            offs[layout(a)] = o
    vals = {}
    stores = {}
    nv = [0]

    def fresh():
        nv[0] += 1
        return f"v{nv[0]}"

    def read(a, ct):
        key = layout(a)
        if key in vals:
            return vals[key]
        v = fresh()
        g.emit(f"{v} = tl.load({g.ptr(a)} + {offs.get(key, 'idx')}, mask=mask, other=0).to({_tl_compute(ct)})")
        vals[key] = v
        return v

    for op in seg:
        ct = _ct(op.compute)
        cd = op.compute
        if op.kind == "unary":
            x = read(op.ins[0], ct)
            code, p0, p1, _ = _unary_code_params(op.name, op.out, ct, op.extra["params"]) if op.extra["params"] \
                else (ek.UNARY_CODES[op.name], 0, 0, 0)
            if op.name == "gelu" and op.extra["params"].get("approximate", "none") == "tanh":
                code = ek.UNARY_CODES["gelu_tanh"]
            c0 = g.arg("c", p0, scalar=True) if p0 else "0"
            c1 = g.arg("c", p1, scalar=True) if p1 else "0"
            if code < 11:
                expr = f"ek._unary_basic({x}, {c0}, {code}, {ct}, {blk})"
            elif code < 33:
                expr = f"ek._unary_transcendental({x}, {code}, {ct})"
            else:
                expr = f"ek._unary_activation({x}, {c0}, {c1}, {code}, {ct}, {blk})"
        elif op.kind == "binary":
            ab = []
            for v in op.ins:
                if hasattr(v, "_storage"):
                    ab.append(read(v, ct))
                else:
                    ab.append(f"ek._scalar_param({_scalar(g, v, cd, ct)}, {ct}, {blk})")
            expr = f"ek._binary_arith({ab[0]}, {ab[1]}, {ek.BINARY_CODES[op.name]}, {ct})"
        elif op.kind == "copy":
            expr = read(op.ins[0], ct)
        elif op.kind == "row":
            expr = row_code(g, op, read, fresh, ct, (bm, bn), (rm_, rn_), start)
        else:  # fill
            value = _dt.literal_scalar(op.ins[0], op.out._dtype, "fill")
            expr = f"ek._scalar_param({_scalar(g, value, cd, ct)}, {ct}, {blk})"
        v = fresh()
        g.emit(f"{v} = {expr}  # {op.name} (call #{op.call.index})")
        key = layout(op.out)
        vals[key] = v
        if op.store:
            stores[key] = op.out
        elif key in stores and stores[key] is not None:
            pass  # an earlier op's value of this layout is stored: the later one overwrites it in memory too
    for key, a in stores.items():
        g.emit(f"tl.store({g.ptr(a)} + {offs.get(key, 'idx')}, {vals[key]}.to({g.ptr(a)}.dtype.element_ty), "
               f"mask=mask)")


def _sum(g: _Gen, op, s: int, start, end) -> None:
    ct = _ct(op.compute)
    rows, cols = op.extra["rows"], op.extra["cols"]
    x, y = g.ptr(op.ins[0]), g.ptr(op.out)
    nr, nc = g.arg("r", rows), g.arg("k", cols)
    tlc = _tl_compute(ct)
    g.emit(f"# segment {s}: sum over the {'rows' if op.extra['leading'] else 'columns'} of ({rows}, {cols}) "
           f"(call #{op.call.index})", 1)
    g.emit(f"{'if' if s == 0 else 'elif'} pid < {end}:", 1)
    g.emit(f"o = (pid - {start}).to(tl.int64) * RB + tl.arange(0, RB)")
    if op.extra["leading"]:
        g.emit(f"omask = o < {nc}")
        g.emit(f"acc = tl.zeros([RB], dtype={tlc})")
        g.emit(f"for r0 in range(0, {nr}, RR):")
        g.emit("r = r0 + tl.arange(0, RR).to(tl.int64)", 3)
        g.emit(f"t = tl.load({x} + r[:, None] * {nc} + o[None, :], mask=(r[:, None] < {nr}) & omask[None, :], "
               f"other=0).to({tlc})", 3)
        g.emit("acc += tl.sum(t, axis=0)", 3)
    else:
        g.emit(f"omask = o < {nr}")
        g.emit(f"acc = tl.zeros([RB], dtype={tlc})")
        g.emit(f"for c0 in range(0, {nc}, RR):")
        g.emit("c = c0 + tl.arange(0, RR).to(tl.int64)", 3)
        g.emit(f"t = tl.load({x} + o[:, None] * {nc} + c[None, :], mask=omask[:, None] & (c[None, :] < {nc}), "
               f"other=0).to({tlc})", 3)
        g.emit("acc += tl.sum(t, axis=1)", 3)
    g.emit(f"tl.store({y} + o, acc.to({y}.dtype.element_ty), mask=omask)")


def _mm(g: _Gen, op, s: int, start, end) -> None:
    """A matmul segment: ``C (B, M, N) = A (B, M, K) @ B (B, K, N)`` in MB x MB tiles, float32 accumulation (IEEE or
    TF32 products, as the eager kernel's switch says)."""
    from tkernels.backends.triton.linalg import dot_code
    from tkernels.kernels import matmul as mk

    c, a, b = op.out, op.ins[0], op.ins[1]
    batched = len(c._shape) == 3
    M, N = c._shape[-2:]
    K = a._shape[-1]
    pa, pb_, pc = g.ptr(a), g.ptr(b), g.ptr(c)
    m_, n_, k_ = g.arg("m", M), g.arg("n", N), g.arg("k", K)
    sa = [g.arg("q", v) for v in ((a._strides[0],) if batched else (0,)) + a._strides[-2:]]
    sb = [g.arg("q", v) for v in ((b._strides[0],) if batched else (0,)) + b._strides[-2:]]
    sc = g.arg("q", c._strides[0] if batched else 0)
    precision = "tf32" if dot_code(_dt.float32) == mk.DOT_TF32 else "ieee"
    g.emit(f"# segment {s}: matmul {tuple(c._shape)} = {tuple(a._shape)} @ {tuple(b._shape)} (call #{op.call.index})",
           1)
    g.emit(f"{'if' if s == 0 else 'elif'} pid < {end}:", 1)
    g.emit(f"t = pid - {start}")
    g.emit(f"tiles_n = tl.cdiv({n_}, MB)")
    g.emit(f"per_b = tl.cdiv({m_}, MB) * tiles_n")
    g.emit("bi = (t // per_b).to(tl.int64)")
    g.emit("t = t % per_b")
    g.emit("rm = (t // tiles_n) * MB + tl.arange(0, MB)")
    g.emit("rn = (t % tiles_n) * MB + tl.arange(0, MB)")
    g.emit(f"am = (rm % {m_}).to(tl.int64)")  # rows/columns past M/N read valid rows; the store masks them
    g.emit(f"bn = (rn % {n_}).to(tl.int64)")
    g.emit("acc = tl.zeros((MB, MB), dtype=tl.float32)")
    g.emit(f"for k0 in range(0, {k_}, MK):")
    g.emit("kk = (k0 + tl.arange(0, MK)).to(tl.int64)", 3)
    g.emit(f"x = tl.load({pa} + bi * {sa[0]} + am[:, None] * {sa[1]} + kk[None, :] * {sa[2]}, "
           f"mask=kk[None, :] < {k_}, other=0)", 3)
    g.emit(f"w = tl.load({pb_} + bi * {sb[0]} + kk[:, None] * {sb[1]} + bn[None, :] * {sb[2]}, "
           f"mask=kk[:, None] < {k_}, other=0)", 3)
    g.emit(f"acc = tl.dot(x.to(tl.float32), w.to(tl.float32), acc, input_precision=\"{precision}\")", 3)
    g.emit(f"cmask = (rm[:, None] < {m_}) & (rn[None, :] < {n_})")
    g.emit(f"tl.store({pc} + bi * {sc} + rm[:, None].to(tl.int64) * {n_} + rn[None, :].to(tl.int64), "
           f"acc.to({pc}.dtype.element_ty), mask=cmask)")


def segments(region):
    """The region's ops split into segments: elementwise ops by index space, each sum alone (computed once: the
    segment lists are what ``runtime`` tells segments apart by)."""
    segs = getattr(region, "segs", None)
    if segs is not None and sum(map(len, segs)) == len(region.ops):
        return segs
    segs, by_shape = [], {}
    for op in region.ops:
        if op.kind in ("sum", "mm", "count", "mean"):
            segs.append([op])
        elif op.shape in by_shape:
            by_shape[op.shape].append(op)
        else:
            by_shape[op.shape] = [op]
            segs.append(by_shape[op.shape])
    region.segs = segs
    return segs


def generate(region) -> Kernel:
    """The kernel of a region (see the module docstring)."""
    g = _Gen()
    programs, ends, names = 0, [], []
    segs = segments(region)
    for s, seg in enumerate(segs):
        if seg[0].kind == "sum":
            op = seg[0]
            count = -(-(op.extra["cols"] if op.extra["leading"] else op.extra["rows"]) // RB)
        elif seg[0].kind in ("count", "mean"):
            count = 1
        elif any(op.kind == "row" for op in seg):
            row = next(op for op in seg if op.kind == "row")
            count = -(-row.extra["M"] // row_tile(row.extra["M"], row.extra["N"])[0])
        elif seg[0].kind == "mm":
            c = seg[0].out
            count = (c._shape[0] if len(c._shape) == 3 else 1) * -(-c._shape[-2] // MB) * -(-c._shape[-1] // MB)
        else:
            n = 1
            for d in seg[0].shape:
                n *= d
            count = -(-n // BLOCK)
        start = "0" if s == 0 else ends[-1]
        programs += count
        end = g.arg("e", programs)
        kind = seg[0].kind
        gen = {"sum": _sum, "mm": _mm, "count": count_code, "mean": mean_code}.get(kind, _elementwise)
        gen(g, seg[0] if kind in ("sum", "mm", "count", "mean") else seg, s, start, end)
        ends.append(end)
        names += [op.name for op in seg]
    body = "\n".join(g.lines)
    head = ["# generated by autograd.compile: one kernel for a region of "
            f"{len(names)} op(s): {', '.join(names)}",
            "import triton", "import triton.language as tl", "",
            "from tkernels.kernels import elementwise as ek", "from tkernels.kernels.norm import _SUM, _rsqrt",
            "from tkernels.kernels.softmax import _MAXIMUM",
            "from tkernels.kernels import errors as kerr",
            "from tkernels.kernels import loss as lk",
            "from tkernels.kernels.strided import strided_offset", "",
            "", f"@triton.jit(do_not_specialize={g.scalars!r})",
            f"def fused_kernel({', '.join(g.params)}, BLOCK: tl.constexpr, RB: tl.constexpr, RR: tl.constexpr, "
            f"MB: tl.constexpr, MK: tl.constexpr):",
            "    pid = tl.program_id(0)"]
    source = "\n".join(head) + "\n" + body + "\n"
    return Kernel(source, g.values, programs, names, BLOCK)


def load(kernel: Kernel):
    """The jit function of a generated kernel: from the cache directory (written there first when missing)."""
    fn = _LOADED.get(kernel.key)
    if fn is None:
        d = cache_dir()
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, f"fused_{kernel.key}.py")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                if f.read() != kernel.source:  # a corrupt or foreign file: written anew
                    _write(path, kernel.source)
                else:
                    STATS["reused"] += 1
        else:
            _write(path, kernel.source)
        name = f"tkernels_compiled_{kernel.key}"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        fn = _LOADED[kernel.key] = mod.fused_kernel
        STATS["loaded"] += 1
    kernel.fn = fn
    return fn


def _write(path, source) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(source)
    os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the whole new one
    STATS["written"] += 1
