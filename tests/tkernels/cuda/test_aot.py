"""Tier 3 (DESIGN.md §9): every kernel specialization dispatch can produce compiles ahead of time for sm_90 and
sm_80 (``triton.compile`` with a ``GPUTarget``: Triton's front end, LLVM and ``ptxas``; no GPU needed).

The table of specializations, ``SPECS``, is built per kernel by the generators in ``GENERATORS`` (a kernel
added to the backend adds a generator here). What a table guarantees (``test_table_covers_what_dispatch_
launches`` checks it against the launches a workload of ops really makes):
- on the contiguous path, every combination of the kernel's ``EXACT`` arguments (output dtype, scalar types,
  dtype pairs of conversions) with every constexpr set is compiled;
- on the other paths (strided operands, scalar operands), every constexpr set (``OP`` aside) is compiled, and
  every dtype or scalar type appears in every argument position at least once;
- integer arguments other than those listed are compiled unspecialized ("i32": the code any value can use;
  the JIT may specialize 1-valued sizes as constants, which only removes code), plus one ``n: i64`` variant
  per kernel (arrays past 2**31 elements); pointers are 16-byte aligned (allocator blocks are 512-byte
  aligned), plus one unaligned variant per kernel (views at an odd offset).

The kernels are compiled by a helper process (one per test worker) where Triton is not interpreted: the
test process runs interpreted cuda, where ``@triton.jit`` (also inside ``triton.language``) made interpreter
objects that Triton cannot compile, and that cannot be undone in the same process.
"""

import json
import os
import select
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import tkernels as tk
from tkernels import elementwise as _elementwise
from tkernels.kernels.elementwise import BINARY_CODES

ROOT = Path(__file__).resolve().parents[3]
CAPS = (90, 80)
PTX_TARGET = {90: ".target sm_90a", 80: ".target sm_80"}
GPU_BLOCK = 1024  # ELEMENTWISE_BLOCK on a GPU (the interpreter uses larger blocks)
DTYPES = [d.name for d in tk.dtypes.all_dtypes]
HALF = ("float16", "bfloat16")


@dataclass(frozen=True)
class Spec:
    """One specialization: ``kernel`` ("module:function"), pointer arguments' dtypes (tkernels names), Triton
    types of the scalar arguments that are not plain "i32", and every constexpr."""

    kernel: str
    pointers: tuple
    scalars: tuple
    constexprs: tuple
    aligned: bool = True

    @property
    def name(self) -> str:
        return self.kernel.rsplit(":", 1)[1]

    def typed(self) -> dict:
        """Pointer and scalar arguments -> their dtype or Triton type."""
        return {**dict(self.pointers), **dict(self.scalars)}

    def __str__(self) -> str:
        short = {"CONTIGUOUS": "C", "X_CONTIGUOUS": "XC", "Y_CONTIGUOUS": "YC", "TO_BOOL": "TB", "F64_BITS": "F64",
                 "A_SCALAR": "AS", "B_SCALAR": "BS", "COMPUTE_F32": "F32", "BOOL_OUT": "BO"}
        parts = [f"{a}={d}" for a, d in self.pointers] + [f"{a}:{t}" for a, t in self.scalars]
        parts += [f"{short.get(k, k)}={int(v) if isinstance(v, bool) else v}" for k, v in self.constexprs
                  if k != "BLOCK"]
        return f"{self.name}[{','.join(parts)}{'' if self.aligned else ',unaligned'}]"


def spec(kernel, pointers, scalars=None, aligned=True, **constexprs) -> Spec:
    scalars = {k: v for k, v in (scalars or {}).items() if v != "i32"}
    return Spec(kernel, tuple(sorted(pointers.items())), tuple(sorted(scalars.items())),
                tuple(sorted(constexprs.items())), aligned)


def _value_types(d: str) -> list:
    """(Triton type, F64_BITS) of a fill value / scalar operand for output dtype ``d`` (memory.fill rules)."""
    if d == "float64":  # a float's int64 bit pattern; 0.0's is 0 (an i32); a bool is an int
        return [("i64", True), ("i32", True), ("i32", False)]
    if d in ("float32", *HALF):  # a float; a bool is an int
        return [("fp32", False), ("i32", False)]
    if d == "int64":
        return [("i32", False), ("i64", False)]
    return [("i32", False)]


# ----------------------------------------------------------------------------------- the generators
FILL = "tkernels.kernels.copy:fill_kernel"
COPY = "tkernels.kernels.copy:copy_kernel"
BINARY = "tkernels.kernels.elementwise:binary_kernel"


def fill_specs():
    out = []
    for d in DTYPES:
        for vt, bits in _value_types(d):
            out.append(spec(FILL, {"y_ptr": d}, {"value": vt}, CONTIGUOUS=True, TO_BOOL=d == "bool", F64_BITS=bits,
                            BLOCK=GPU_BLOCK))
    for d in DTYPES:  # strided: every dtype once (with it every value type and flag set)
        vt, bits = _value_types(d)[0]
        out.append(spec(FILL, {"y_ptr": d}, {"value": vt}, CONTIGUOUS=False, TO_BOOL=d == "bool", F64_BITS=bits,
                        BLOCK=GPU_BLOCK))
    out.append(spec(FILL, {"y_ptr": "float32"}, {"value": "fp32", "n": "i64"}, CONTIGUOUS=True, TO_BOOL=False,
                    F64_BITS=False, BLOCK=GPU_BLOCK))
    out.append(spec(FILL, {"y_ptr": "bfloat16"}, {"value": "fp32"}, aligned=False, CONTIGUOUS=True, TO_BOOL=False,
                    F64_BITS=False, BLOCK=GPU_BLOCK))
    return out


def _copy(x, y, xc, yc, **kw):
    return spec(COPY, {"x_ptr": x, "y_ptr": y}, X_CONTIGUOUS=xc, Y_CONTIGUOUS=yc,
                TO_BOOL=y == "bool" and x != "bool", BLOCK=GPU_BLOCK, **kw)


def copy_specs():
    out = [_copy(x, y, True, True) for x in DTYPES for y in DTYPES]  # every conversion
    n = len(DTYPES)
    out += [_copy(DTYPES[i], DTYPES[(i + 3) % n], False, False) for i in range(n)]  # every dtype, both ends
    out += [_copy("float32", "bool", True, False), _copy("bfloat16", "float32", True, False),
            _copy("float64", "bool", False, True), _copy("int64", "float16", False, True)]
    out.append(spec(COPY, {"x_ptr": "float32", "y_ptr": "float16"}, {"n": "i64"}, X_CONTIGUOUS=True,
                    Y_CONTIGUOUS=True, TO_BOOL=False, BLOCK=GPU_BLOCK))
    out.append(spec(COPY, {"x_ptr": "int8", "y_ptr": "float32"}, aligned=False, X_CONTIGUOUS=True, Y_CONTIGUOUS=True,
                    TO_BOOL=False, BLOCK=GPU_BLOCK))
    return out


def _binary_ops(d):
    return [op for op in BINARY_CODES if not (d == "bool" and op in _elementwise._NO_BOOL)]


def _binary(op, y, a=None, b=None, a_scalar=None, b_scalar=None, contiguous=False, scalars=None, aligned=True):
    """``a``/``b``: operand dtypes (arrays); ``a_scalar``/``b_scalar``: Triton type of a scalar operand (its
    pointer slot then holds the output, as in the backend)."""
    return spec(BINARY, {"a_ptr": a or y, "b_ptr": b or y, "y_ptr": y},
                {"a_scalar": a_scalar or "i32", "b_scalar": b_scalar or "i32", **(scalars or {})}, aligned=aligned,
                OP=BINARY_CODES[op], A_SCALAR=a_scalar is not None, B_SCALAR=b_scalar is not None,
                F64_BITS=y == "float64", CONTIGUOUS=contiguous, COMPUTE_F32=y in HALF, BOOL_OUT=y == "bool",
                BLOCK=GPU_BLOCK)


def _scalar_types(y: str) -> list:
    """Triton types of a scalar operand for output dtype ``y`` (elementwise backend rules)."""
    return {"float64": ["i64", "i32"], "int64": ["i32", "i64"]}.get(y, ["fp32"] if y in ("float32", *HALF)
                                                                     else ["i32"])


def binary_specs():
    out = []
    for y in DTYPES:  # contiguous arrays: every op and output dtype
        out += [_binary(op, y, contiguous=True) for op in _binary_ops(y)]
    # mixed operand dtypes on the contiguous path: every dtype in both operand positions
    n = len(DTYPES)
    for i, x in enumerate(DTYPES):
        y = "float32" if x != "float32" else "float64"
        out.append(_binary("add", y, a=x, contiguous=True))
        out.append(_binary("multiply", y, b=DTYPES[(i + 4) % n], contiguous=True))
    # strided and scalar operands: every layout for every class of output dtype (the F64_BITS/COMPUTE_F32/
    # BOOL_OUT flags), every dtype once as output and once in each operand slot, every scalar type
    classes = [DTYPES[1:6] + ["float32"], list(HALF), ["float64"], ["bool"]]
    ia = ib = k = 0
    for members in classes:
        for j in range(max(len(members), 3)):
            y = members[j % len(members)]
            ops, scal = _binary_ops(y), _scalar_types(y)
            op = ops[k % len(ops)]
            k += 1
            if j % 3 == 0:
                out.append(_binary(op, y, a=DTYPES[ia % n], b=DTYPES[ib % n]))
                ia, ib = ia + 1, ib + 1
            elif j % 3 == 1:
                out.append(_binary(op, y, b=DTYPES[ib % n], a_scalar=scal[-1]))
                ib += 1
            else:
                out.append(_binary(op, y, a=DTYPES[ia % n], b_scalar=scal[0]))
                ia += 1
    out.append(_binary("add", "float32", scalars={"n": "i64"}, contiguous=True))
    out.append(_binary("multiply", "float16", aligned=False, contiguous=True))
    return out


GENERATORS = {"fill_kernel": fill_specs, "copy_kernel": copy_specs, "binary_kernel": binary_specs}
SPECS = list(dict.fromkeys(s for gen in GENERATORS.values() for s in gen()))

# how coverage is judged per kernel (see the module docstring)
EXACT = {"fill_kernel": ("y_ptr", "value"), "copy_kernel": ("x_ptr", "y_ptr"),
         "binary_kernel": ("y_ptr", "a_scalar", "b_scalar")}
CONTIGUOUS_FLAGS = {"fill_kernel": ("CONTIGUOUS",), "copy_kernel": ("X_CONTIGUOUS", "Y_CONTIGUOUS"),
                    "binary_kernel": ("CONTIGUOUS",)}
FREE_ON_STRIDED = {"binary_kernel": ("OP",)}
TYPED_SCALARS = {"fill_kernel": ("value", "n"), "copy_kernel": ("n",), "binary_kernel": ("a_scalar", "b_scalar", "n")}



def _is_contiguous(s: Spec) -> bool:
    consts = dict(s.constexprs)
    return all(consts[f] for f in CONTIGUOUS_FLAGS[s.name])


def _args(s: Spec) -> dict:
    """Pointer dtypes and typed scalars of ``s`` (unlisted scalars are "i32")."""
    typed = s.typed()
    return {**dict(s.pointers), **{a: typed.get(a, "i32") for a in TYPED_SCALARS[s.name]}}


def _flags(s: Spec, free=()) -> dict:
    return {k: v for k, v in s.constexprs if k != "BLOCK" and k not in free}


def uncovered(obs: Spec, table) -> str | None:
    """Why ``table`` does not cover the observed specialization ``obs`` (None when it does)."""
    contiguous = _is_contiguous(obs)
    pool = [s for s in table if s.kernel == obs.kernel and _is_contiguous(s) == contiguous]
    args = _args(obs)
    if contiguous:
        exact = {a: args[a] for a in EXACT[obs.name]}
        if not any(_flags(s) == _flags(obs) and all(_args(s)[a] == v for a, v in exact.items()) for s in pool):
            return f"no contiguous specialization with {_flags(obs)} and {exact}"
    else:
        free = FREE_ON_STRIDED.get(obs.name, ())
        if not any(_flags(s, free) == _flags(obs, free) for s in pool):
            return f"no strided/scalar specialization with {_flags(obs, free)}"
    for arg, value in args.items():
        if not any(_args(s)[arg] == value for s in pool):
            return f"{arg}={value} appears in no {'contiguous' if contiguous else 'strided/scalar'} specialization"
    return None


# ------------------------------------------------------------- what dispatch launches (interpreted here)
def _triton_type(v) -> str:
    if isinstance(v, bool):
        return "u1"
    if isinstance(v, int):
        return "i32" if -(2**31) <= v < 2**31 else ("i64" if -(2**63) <= v < 2**63 else "u64")
    if isinstance(v, float):
        return "fp32"
    raise TypeError(f"unexpected kernel argument {v!r}")


@pytest.fixture
def recorded_launches(monkeypatch):
    """Replace the backend's ``launch`` with a recorder (kernels do not run): yields the list of Specs."""
    import importlib
    import pkgutil

    import tkernels.backends.triton as backend
    from tkernels.array import Array

    seen = []

    def record(kernel, grid, *args, **meta):
        fn = getattr(kernel, "fn", kernel)
        names = kernel.arg_names
        values = dict(zip(names, args))
        pointers = {a: str(v.dtype) for a, v in values.items() if isinstance(v, Array)}
        scalars = {a: _triton_type(v) for a, v in values.items() if not isinstance(v, Array)}
        scalars = {a: t for a, t in scalars.items() if a in TYPED_SCALARS[fn.__name__]}
        seen.append(spec(f"{fn.__module__}:{fn.__name__}", pointers, scalars, **{**meta, "BLOCK": GPU_BLOCK}))

    for m in pkgutil.iter_modules(backend.__path__):
        mod = importlib.import_module(f"{backend.__name__}.{m.name}")
        if getattr(mod, "launch", None) is not None and m.name != "_launch":
            monkeypatch.setattr(mod, "launch", record)
    return seen


def _workload():
    """Ops that exercise every kind of launch the backend makes: fills, conversions, strided views, scalars."""
    vals = {"f": [0.0, 2.5, True, 3], "i": [0, -7, True], "u": [0, 200], "b": [True, False]}
    for d in tk.dtypes.all_dtypes:
        for v in vals[d.kind] + ([-(2**40)] if d is tk.int64 else []):
            tk.full((3, 5), v, dtype=d, device="cuda")
            tk.empty((4, 6), dtype=d, device="cuda")[1:, ::2][...] = v
    arrays = {d: tk.empty((4, 6), dtype=d, device="cuda") for d in tk.dtypes.all_dtypes}
    for d, x in arrays.items():
        for dd in tk.dtypes.all_dtypes:
            x.astype(dd)
            x[:, ::2].astype(dd)
            x.mT.astype(dd)
        tk.empty((6, 4), dtype=d, device="cuda")[:, ::2][...] = x[::2].mT
    for d, x in arrays.items():
        scal = {"f": [2.5, 0.0, 3], "i": [3, -(2**40) if d is tk.int64 else 5], "u": [3], "b": [True]}[d.kind]
        for op in BINARY_CODES:
            if d.kind == "b" and op in _elementwise._NO_BOOL:
                continue
            f = getattr(tk, op)
            f(x, x)
            f(x[:, ::2], x[:, 1::2])
            f(x, x[:1])  # broadcast
            for v in scal:
                f(x, v)
                f(v, x)
        for other in arrays.values():
            tk.add(x, other)
            tk.multiply(x[::2], other[1::2])
        if d.kind in "iub":
            tk.add(x, 2.5)  # an integer array with a float scalar: float32 output


def test_table_covers_what_dispatch_launches(recorded_launches):
    _workload()
    observed = list(dict.fromkeys(recorded_launches))
    kernels = {s.name for s in observed}
    assert kernels <= set(GENERATORS), f"kernels launched without an AOT generator: {kernels - set(GENERATORS)}"
    assert len(observed) > 100
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


def test_the_coverage_check_can_fail():
    contiguous_bf16_to_i16 = _copy("bfloat16", "int16", True, True)
    assert uncovered(contiguous_bf16_to_i16, SPECS) is None
    assert "contiguous" in uncovered(contiguous_bf16_to_i16, [s for s in SPECS if s != contiguous_bf16_to_i16])
    strided = _copy("bool", "float16", True, False)
    assert uncovered(strided, SPECS) is None
    no_bool_source = [s for s in SPECS if _is_contiguous(s) or dict(s.pointers).get("x_ptr") != "bool"]
    assert "x_ptr=bool" in uncovered(strided, no_bool_source)


# ----------------------------------------------------------------------------------------- compiling
_SERVER = textwrap.dedent("""
    import importlib, json, sys, time
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import mangle_type
    from tkernels import dtypes

    class Meta:  # what Triton reads from a pointer argument: dtype and data_ptr
        def __init__(self, dtype):
            self.dtype = dtypes.as_dtype(dtype)
        def data_ptr(self):
            return 0x10000

    for line in sys.stdin:
        req = json.loads(line)
        t0 = time.perf_counter()
        try:
            module, name = req["kernel"].split(":")
            fn = getattr(importlib.import_module(module), name)
            if type(fn).__name__ != "JITFunction":
                raise TypeError(f"{req['kernel']} is a {type(fn).__name__}, not a JITFunction")
            pointers, scalars, consts = req["pointers"], req["scalars"], req["constexprs"]
            unknown = (set(pointers) | set(scalars) | set(consts)) - set(fn.arg_names)
            const_params = {p.name for p in fn.params if p.is_constexpr}
            if unknown or set(consts) != const_params:
                raise ValueError(f"spec does not match {name}{tuple(fn.arg_names)}: unknown {sorted(unknown)}, "
                                 f"constexprs {sorted(consts)} vs {sorted(const_params)}")
            sig, aligned = {}, []
            for i, arg in enumerate(fn.arg_names):
                if arg in consts:
                    sig[arg] = "constexpr"
                elif arg in pointers:
                    sig[arg] = mangle_type(Meta(pointers[arg]))
                    if req["aligned"]:
                        aligned.append(i)
                else:
                    sig[arg] = scalars.get(arg, "i32")
            attrs = {(i,): [["tt.divisibility", 16]] for i in aligned}
            ck = triton.compile(ASTSource(fn, sig, consts, attrs), target=GPUTarget("cuda", req["cap"], 32))
            ptx = ck.asm["ptx"]
            out = {"ok": True, "targets": [ln for ln in ptx.splitlines() if ln.startswith(".target")],
                   "cubin_bytes": len(ck.asm.get("cubin") or b""), "num_warps": ck.metadata.num_warps,
                   "signature": sig}
        except Exception as e:  # noqa: BLE001 - reported to the test
            out = {"ok": False, "error": f"{type(e).__name__}: {e}"[-6000:]}
        out["seconds"] = time.perf_counter() - t0
        print(json.dumps(out), flush=True)
    """)


class Compiler:
    """A helper process compiling specializations on request (one per test worker, Triton not interpreted)."""

    def __init__(self, workdir: Path):
        script = workdir / "aot_server.py"
        script.write_text(_SERVER)
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        env.update(TKERNELS_INTERPRET="0", TRITON_CACHE_DIR=str(workdir / "triton_cache"), PYTHONPATH=str(ROOT),
                   TRITON_DEFAULT_FP_FUSION="1")  # as tkernels' driver sets it
        self.log = open(workdir / "aot_server.log", "w")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, env=env, cwd=ROOT)
        self.workdir = workdir
        self.seconds = 0.0

    def compile(self, s: Spec, cap: int, timeout: float = 300.0) -> dict:
        req = {"kernel": s.kernel, "pointers": dict(s.pointers), "scalars": dict(s.scalars),
               "constexprs": dict(s.constexprs), "aligned": s.aligned, "cap": cap}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.log.flush()
            raise RuntimeError(f"the compile helper {'timed out' if not ready else 'died'}; its log:\n"
                               + (self.workdir / "aot_server.log").read_text()[-6000:])
        out = json.loads(line)
        self.seconds += out["seconds"]
        return out

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.log.close()


@pytest.fixture(scope="module")
def compiler(tmp_path_factory):
    c = Compiler(tmp_path_factory.mktemp("aot"))
    yield c
    print(f"\nAOT: {c.seconds:.1f} s of compiling in this worker")
    c.close()


@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize("s", SPECS, ids=str)
def test_compiles(compiler, s, cap):
    out = compiler.compile(s, cap)
    assert out["ok"], f"{s} for sm_{cap}: {out['error']}"
    assert out["targets"] == [PTX_TARGET[cap]]
    assert out["cubin_bytes"] > 0  # ptxas assembled it
