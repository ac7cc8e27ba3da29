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
import math
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
from tkernels.kernels.elementwise import (
    BINARY_CODES,
    CT_F32,
    CT_F64,
    CT_I32,
    CT_I64,
    CT_U32,
    CT_U64,
    TERNARY_CODES,
    UNARY_CODES,
)
from tkernels.kernels.reduction import ACC_F32, ACC_F64, ACC_I64, GPU_COLUMN_TILE, GPU_ROW_TILES, SCAN_PROD, SCAN_SUM
from tkernels.kernels.reduction import OP_CODES as RED_CODES

# the real dtypes: complex ones have no cuda kernels yet (tests/tkernels/test_complex.py checks they say so)
REAL_DTYPES = tuple(d for d in tk.dtypes.all_dtypes if d.kind != "c")

ROOT = Path(__file__).resolve().parents[3]
CAPS = (90, 80)
PTX_TARGET = {90: ".target sm_90a", 80: ".target sm_80"}
SHARED_LIMIT = {90: 232448, 80: 166912}  # bytes of shared memory one block may use (opt-in maximum)
GPU_BLOCK = 1024  # ELEMENTWISE_BLOCK on a GPU (the interpreter uses larger blocks)
DTYPES = [d.name for d in REAL_DTYPES]
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
    caps: tuple = CAPS  # the targets it is compiled for
    options: tuple = ()  # compile options (num_warps, num_stages) of an autotune config
    ints: tuple = ()  # integer arguments specialized as the JIT does: (name, 1) a constant, (name, 16) divisible

    @property
    def name(self) -> str:
        return self.kernel.rsplit(":", 1)[1]

    def typed(self) -> dict:
        """Pointer and scalar arguments -> their dtype or Triton type."""
        return {**dict(self.pointers), **dict(self.scalars)}

    def __str__(self) -> str:
        short = {"CONTIGUOUS": "C", "X_CONTIGUOUS": "XC", "Y_CONTIGUOUS": "YC", "TO_BOOL": "TB", "F64_BITS": "F64",
                 "A_SCALAR": "AS", "B_SCALAR": "BS", "C_SCALAR": "CS", "COMPUTE_F32": "F32", "BOOL_OUT": "BO"}
        parts = [f"{a}={d}" for a, d in self.pointers] + [f"{a}:{t}" for a, t in self.scalars]
        parts += [f"{short.get(k, k)}={int(v) if isinstance(v, bool) else v}" for k, v in self.constexprs
                  if k != "BLOCK"]
        parts += [f"{k[4:]}={v}" for k, v in self.options]
        return f"{self.name}[{','.join(parts)}{'' if self.aligned else ',unaligned'}]"


# kernels that record errors take the device's int64 error buffer (tkernels/kernels/errors.py) as ``err_ptr``
RECORDING = {"axis_kernel", "base_kernel", "binary_kernel", "ce_fwd_kernel", "embedding_kernel", "assert_kernel"}


def spec(kernel, pointers, scalars=None, aligned=True, caps=CAPS, **constexprs) -> Spec:
    scalars = {k: v for k, v in (scalars or {}).items() if v != "i32"}
    if kernel.rsplit(":", 1)[1] in RECORDING:
        pointers = {**pointers, "err_ptr": "int64"}
    return Spec(kernel, tuple(sorted(pointers.items())), tuple(sorted(scalars.items())),
                tuple(sorted(constexprs.items())), aligned, tuple(caps))


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
    # every conversion; those without a half type (whose conversions differ between sm_80 and sm_90) on one
    # target each, the targets in turn
    out = [_copy(x, y, True, True, caps=CAPS if {x, y} & set(HALF) else (_rot(CAPS, i),))
           for i, (x, y) in enumerate((x, y) for x in DTYPES for y in DTYPES)]
    n = len(DTYPES)
    out += [_copy(DTYPES[i], DTYPES[(i + 3) % n], False, False) for i in range(n)]  # every dtype, both ends
    out += [_copy("float32", "bool", True, False), _copy("bfloat16", "float32", True, False),
            _copy("float64", "bool", False, True), _copy("int64", "float16", False, True)]
    out.append(spec(COPY, {"x_ptr": "float32", "y_ptr": "float16"}, {"n": "i64"}, X_CONTIGUOUS=True,
                    Y_CONTIGUOUS=True, TO_BOOL=False, BLOCK=GPU_BLOCK))
    out.append(spec(COPY, {"x_ptr": "int8", "y_ptr": "float32"}, aligned=False, X_CONTIGUOUS=True, Y_CONTIGUOUS=True,
                    TO_BOOL=False, BLOCK=GPU_BLOCK))
    return out


# ---------------------------------------------------------------------------------------- elementwise
# The three kernel families of tkernels/kernels/elementwise.py. Their code falls in independent regions, and a
# representative table compiles each region at least once rather than their product (which would be ~600
# specializations, minutes of CI); coverage is judged per region (``_ew_features``):
# - the op: every OP code, the compute types CT it takes used in turn across ops, so that every CT meets many
#   ops and the helpers of elementwise_math are compiled in float32 and in float64;
# - the layout: every value of every flag (CONTIGUOUS, *_SCALAR, BOOL_OUT) with every CT;
# - the operands: every dtype in every pointer slot (loads and stores convert through ``.to``, every dtype pair
#   of which the copy kernel's table compiles), every Triton type of every scalar argument with every CT (scalars
#   are decoded per CT), an i64 size, an unaligned pointer.
# Each specialization is compiled for one target, the targets taken in turn (these kernels use nothing
# target-specific; the conversions that differ between sm_80 and sm_90 are compiled for both by the copy table).
UNARY = "tkernels.kernels.elementwise:unary_kernel"
BINARY = "tkernels.kernels.elementwise:binary_kernel"
TERNARY = "tkernels.kernels.elementwise:ternary_kernel"
EW_KERNELS = ("unary_kernel", "binary_kernel", "ternary_kernel")
_CLASS = {CT_F32: ["float32", "float16", "bfloat16"], CT_F64: ["float64"],
          CT_I32: ["int32", "int8", "int16", "uint8", "uint16", "bool"], CT_I64: ["int64"],
          CT_U32: ["uint32"], CT_U64: ["uint64"]}  # dtypes computing in CT
_SCALAR_TYPES = {CT_F32: ["fp32"], CT_F64: ["i64", "i32"], CT_I32: ["i32"], CT_I64: ["i32", "i64"],
                 CT_U32: ["i64", "i32"], CT_U64: ["i32", "i64"]}  # (unsigned scalars: int64 bit patterns)
_INTS = (CT_I32, CT_I64, CT_U32, CT_U64)
_PARAM_OPS = {"round_scaled_up": 1, "round_scaled_down": 1, "softplus": 2, "elu": 1, "leaky_relu": 1, "logit_eps": 2,
              "nan_to_num": 3, "polygamma": 1}  # unary ops reading p0.. (float64 ones are i64 bit patterns)
_UNARY_VARIANTS = {"round": ("round", "round_scaled_up", "round_scaled_down"), "gelu": ("gelu", "gelu_tanh"),
                   "logit": ("logit", "logit_eps"), "positive": ()}  # positive is a copy
_EW_SCALARS = {"unary_kernel": ("p0", "p1", "p2", "n"), "binary_kernel": ("a_scalar", "b_scalar", "n"),
               "ternary_kernel": ("a_scalar", "b_scalar", "c_scalar", "n")}


def _rot(seq, k):
    return seq[k % len(seq)]


def _unary_cases():
    """(op code name, CT, BOOL_OUT) that the backend launches."""
    out = []
    for name, kind in _elementwise.UNARY.items():
        for code in _UNARY_VARIANTS.get(name, (name,)):
            if kind == "float" or kind == "round" or name == "nan_to_num":
                cts = (CT_F32, CT_F64)
            elif kind == "bits":
                cts = _INTS
            else:  # num; pred and lnot (the input's compute type, a bool out)
                cts = (CT_F32, CT_F64, *_INTS)
            out += [(code, ct, kind in ("pred", "lnot")) for ct in cts]
    return out


def _binary_cases():
    """(op, CT, BOOL_OUT) that the backend launches."""
    out = []
    for name, kind in _elementwise.BINARY.items():
        if kind == "logic":
            out.append((name, CT_I32, True))
            continue
        cts = {"float": (CT_F32, CT_F64), "bits": _INTS}.get(kind, (CT_F32, CT_F64, *_INTS))
        out += [(name, ct, kind == "cmp") for ct in cts]
        if kind in ("arith", "bits") and name not in _elementwise._NO_BOOL:
            out.append((name, CT_I32, True))  # bool arrays: computed in int32, stored != 0
    return out


def _ops_in_turn(cases):
    """One (op, CT, BOOL_OUT) per op: the CTs each op takes used in turn, continuing from op to op."""
    by_op = {}
    for op, ct, bo in cases:
        by_op.setdefault(op, []).append((ct, bo))
    return [(op, *_rot(cts, k)) for k, (op, cts) in enumerate(by_op.items())]


def _unary(code, ct, x, y, contiguous=True, p=None, scalars=None, aligned=True, caps=CAPS):
    p = p or {}
    types = {f"p{i}": p.get(f"p{i}", "i32" if ct == CT_F64 else "fp32") for i in range(3)}
    return spec(UNARY, {"x_ptr": x, "y_ptr": y}, {**types, **(scalars or {})}, aligned, caps=caps,
                OP=UNARY_CODES[code], CT=ct, CONTIGUOUS=contiguous, BOOL_OUT=y == "bool", BLOCK=GPU_BLOCK)


def _binary(op, ct, a, b, y, a_scalar=None, b_scalar=None, contiguous=True, scalars=None, aligned=True, caps=CAPS):
    """``a``/``b``: operand dtypes; ``a_scalar``/``b_scalar``: Triton type of a scalar operand (its pointer slot
    then holds the output, as in the backend)."""
    return spec(BINARY, {"a_ptr": y if a_scalar else a, "b_ptr": y if b_scalar else b, "y_ptr": y},
                {"a_scalar": a_scalar or "i32", "b_scalar": b_scalar or "i32", **(scalars or {})}, aligned,
                caps=caps, OP=BINARY_CODES[op], CT=ct, A_SCALAR=a_scalar is not None, B_SCALAR=b_scalar is not None,
                CONTIGUOUS=contiguous, BOOL_OUT=y == "bool", BLOCK=GPU_BLOCK)


def _ternary(op, ct, a, b, c, y, scal=(), contiguous=True, scalars=None, aligned=True, caps=CAPS):
    """``scal``: {slot: Triton type} of scalar operands (their pointer slot then holds the output)."""
    scal = dict(scal)
    return spec(TERNARY, {"a_ptr": y if "a" in scal else a, "b_ptr": y if "b" in scal else b,
                          "c_ptr": y if "c" in scal else c, "y_ptr": y},
                {**{f"{s}_scalar": scal.get(s, "i32") for s in "abc"}, **(scalars or {})}, aligned, caps=caps,
                OP=TERNARY_CODES[op], CT=ct, A_SCALAR="a" in scal, B_SCALAR="b" in scal, C_SCALAR="c" in scal,
                CONTIGUOUS=contiguous, BOOL_OUT=y == "bool", BLOCK=GPU_BLOCK)


def _ew_features(s: Spec) -> set:
    """The regions of elementwise code a specialization compiles (see the comment above)."""
    c = dict(s.constexprs)
    ct = c["CT"]
    typed = s.typed()
    feats = {("op", c["OP"])} | {("flag", ct, k, v) for k, v in c.items() if k not in ("OP", "CT", "BLOCK")}
    feats |= {("arg", a, v) for a, v in s.pointers}
    return feats | {("scalar", a, typed.get(a, "i32"), ct) for a in _EW_SCALARS[s.name]}


def _ew_uncovered(obs: Spec, table) -> str | None:
    have = set()
    for s in table:
        if s.kernel == obs.kernel:
            have |= _ew_features(s)
    missing = sorted(map(str, _ew_features(obs) - have))
    return f"no specialization with {missing}" if missing else None


def _operands(out, slots, make):
    """Append ``make({slot: dtype}, k)`` specs until every dtype has been in every pointer slot of ``slots``."""
    have = set().union(*(_ew_features(s) for s in out))
    todo = {slot: [d for d in DTYPES if ("arg", slot, d) not in have] for slot in slots}
    k = 0
    while any(todo.values()):
        out.append(make({slot: ds.pop() for slot, ds in todo.items() if ds}, k))
        k += 1
    return out


def unary_specs():
    """Every op once (CTs in turn); per CT contiguous and strided, bool out and not; every dtype in and out;
    float64 parameters; an i64 size; unaligned."""
    out = []
    for k, (code, ct, bo) in enumerate(_ops_in_turn(_unary_cases())):
        x = _rot(_CLASS[ct] if not bo else DTYPES, k)
        x = "int32" if x == "bool" and not bo else x
        y = "bool" if bo else x
        p = {f"p{i}": "i64" for i in range(_PARAM_OPS.get(code, 0))} if ct == CT_F64 else None
        out.append(_unary(code, ct, x, y, p=p, caps=(_rot(CAPS, k),)))
    for k, ct in enumerate(_CLASS):
        out.append(_unary("abs", ct, _CLASS[ct][0], _CLASS[ct][0], True, caps=(_rot(CAPS, k),)))
        out.append(_unary("isnan", ct, _CLASS[ct][-1], "bool", False, caps=(_rot(CAPS, k + 1),)))
    out.append(_unary("nan_to_num", CT_F64, "float64", "float64", p={"p0": "i64", "p1": "i64", "p2": "i64"},
                      caps=(80,)))
    _operands(out, ("x_ptr", "y_ptr"),
              lambda a, k: _unary("abs", CT_F32, a.get("x_ptr", "float32"), a.get("y_ptr", "float32"),
                                  caps=(_rot(CAPS, k),)))
    out.append(_unary("exp", CT_F32, "float32", "float32", scalars={"n": "i64"}, caps=(90,)))
    out.append(_unary("gelu", CT_F32, "bfloat16", "bfloat16", aligned=False, caps=(80,)))
    for k, (ct, d) in enumerate(((CT_U32, "uint32"), (CT_U64, "uint64"))):  # invert: its own unsigned branch
        out.append(_unary("bitwise_invert", ct, d, d, caps=(_rot(CAPS, k),)))
    return out


def binary_specs():
    """Every op once (CTs in turn); per CT every flag value (contiguous or strided, a scalar a or b, bool out or
    not) and every scalar type in both slots; every dtype in every slot; an i64 size; unaligned."""
    out = []
    for k, (name, ct, bo) in enumerate(_ops_in_turn(_binary_cases())):
        y = "bool" if bo else _rot([d for d in _CLASS[ct] if d != "bool"], k)
        a = "bool" if bo and _elementwise.BINARY[name] in ("arith", "bits") else _rot(_CLASS[ct], k)
        out.append(_binary(name, ct, a, a, y, caps=(_rot(CAPS, k),)))
    j = 0
    for ct in _CLASS:
        x, types = _CLASS[ct][0], _SCALAR_TYPES[ct]
        for i, t in enumerate(types):
            out.append(_binary("add", ct, x, x, x, b_scalar=t, contiguous=i == 0, caps=(_rot(CAPS, j),)))
            out.append(_binary("less", ct, x, x, "bool", a_scalar=t, contiguous=i != 0, caps=(_rot(CAPS, j + 1),)))
            j += 1
    _operands(out, ("a_ptr", "b_ptr", "y_ptr"),
              lambda a, k: _binary("add", CT_F32, a.get("a_ptr", "float32"), a.get("b_ptr", "float32"),
                                   a.get("y_ptr", "float32"), caps=(_rot(CAPS, k),)))
    out.append(_binary("add", CT_F32, "float32", "float32", "float32", scalars={"n": "i64"}, caps=(80,)))
    out.append(_binary("multiply", CT_F32, "float16", "float16", "float16", aligned=False, caps=(90,)))
    return out


def ternary_specs():
    """where/clip/lerp once each (CTs in turn); per CT every flag value and scalar type in every slot (a scalar
    start: lerp, floats only); every dtype in every slot (where's condition: bool only); an i64 size; unaligned."""
    out = []
    cases = [(op, ct, False) for op in ("where", "clip", "clip_min", "clip_max") for ct in _CLASS]
    cases += [("lerp", CT_F32, False), ("lerp", CT_F64, False)]
    for k, (op, ct, _) in enumerate(_ops_in_turn(cases)):
        y = _rot([d for d in _CLASS[ct] if d != "bool"], k)
        scal = {"clip_min": {"c": "i32"}, "clip_max": {"b": "i32"}}.get(op, {})
        out.append(_ternary(op, ct, "bool" if op == "where" else y, y, y, y, scal, caps=(_rot(CAPS, k),)))
    j = 0
    for ct in _CLASS:
        y = _CLASS[ct][0]
        for i, t in enumerate(_SCALAR_TYPES[ct]):
            out.append(_ternary("where", ct, "bool", y, y, y, contiguous=i != 0, caps=(_rot(CAPS, j),)))
            out.append(_ternary("where", ct, "bool", y, y, y, {"b": t, "c": t}, contiguous=i == 0,
                                caps=(_rot(CAPS, j + 1),)))
            if ct in (CT_F32, CT_F64):
                out.append(_ternary("lerp", ct, y, y, y, y, {"a": t}, caps=(_rot(CAPS, j),)))
            j += 1
    out.append(_ternary("where", CT_I32, "bool", "bool", "bool", "bool", caps=(90,)))  # bool out
    for k, (ct, y) in enumerate(((CT_U32, "uint32"), (CT_U64, "uint64"))):  # unsigned compares: clip too
        out.append(_ternary("clip", ct, y, y, y, y, caps=(_rot(CAPS, k),)))
    _operands(out, ("b_ptr", "c_ptr", "y_ptr"),  # (where's condition is bool: tk.where refuses other dtypes)
              lambda a, k: _ternary("where", CT_F32, "bool", a.get("b_ptr", "float32"),
                                    a.get("c_ptr", "float32"), a.get("y_ptr", "float32"), caps=(_rot(CAPS, k),)))
    _operands(out, ("a_ptr",),  # where's condition is bool (tk.where refuses others): clip's input takes the rest
              lambda a, k: _ternary("clip", CT_F32, a["a_ptr"], "float32", "float32", "float32", caps=(_rot(CAPS, k),)))
    out.append(_ternary("where", CT_F32, "bool", "float32", "float32", "float32", scalars={"n": "i64"}, caps=(80,)))
    out.append(_ternary("lerp", CT_F32, "float16", "float16", "float16", "float16", aligned=False, caps=(90,)))
    return out


GENERATORS = {"fill_kernel": fill_specs, "copy_kernel": copy_specs, "binary_kernel": binary_specs}
GENERATORS.update(unary_kernel=unary_specs, ternary_kernel=ternary_specs)


# -------------------------------------------------------------------------------- reductions and scans
REDUCE = "tkernels.kernels.reduction:reduce_kernel"
SCAN = "tkernels.kernels.reduction:scan_kernel"
_ACC_DTYPE = {ACC_F32: "float32", ACC_F64: "float64", ACC_I64: "int64"}
_F32_CLASS = ["float32", "float16", "bfloat16"]  # what accumulates in float32
_INT_CLASS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]  # ... in int64
_COUNT_OPS = ("any", "all", "count_nonzero")
_P_OPS = ("mean", "var", "std", "norm_p")  # ops reading the scalar (a float64 bit pattern: i64; 0.0 is i32)
_ROW_TILE = GPU_ROW_TILES[3]


def _same(x):
    return x


def _stage0_cases(op) -> list:
    """(ACC, TO_BOOL, input dtypes, output dtype of an input) the backend launches ``op`` with."""
    if op in ("sum", "prod"):
        return [(ACC_F32, False, _F32_CLASS + ["int32"], lambda x: x if x in _F32_CLASS else "float32"),
                (ACC_F64, False, ["float64", "float32"], lambda x: "float64"),  # dtype=float64
                (ACC_I64, False, _INT_CLASS, lambda x: "int64"),
                (ACC_I64, True, ["float32", "int32"], lambda x: "bool")]  # dtype=bool: "any" / "all"
    if op in ("norm2", "norm_p"):  # squares of float32-class values accumulate in float64
        return [(ACC_F64, False, _F32_CLASS + ["float64"], _same)]
    if op == "logsumexp":
        return [(ACC_F32, False, _F32_CLASS + ["int64", "bool"], lambda x: x if x in _F32_CLASS else "float32"),
                (ACC_F64, False, ["float64"], _same)]
    out = {"argmax": "int64", "argmin": "int64", "any": "bool", "all": "bool", "count_nonzero": "int64"}.get(op)
    cases = [(ACC_F32, False, _F32_CLASS, lambda x: out or x), (ACC_F64, False, ["float64"], lambda x: out or x)]
    if op in ("max", "min", "argmax", "argmin") + _COUNT_OPS:
        cases.append((ACC_I64, False, _INT_CLASS, lambda x: out or x))
    return cases


def _reduce(op, stage, acc, x, y, aux=None, stat=None, to_bool=False, scal=None, nd=(1, 1), tile=_ROW_TILE,
            scalars=None, aligned=True, caps=CAPS):
    scal = scal or ("i64" if op in _P_OPS else "i32")
    return spec(REDUCE, {"x_ptr": x, "y_ptr": y, "aux_ptr": aux or y, "stat_ptr": stat or y},
                {"scal": scal, **(scalars or {})}, aligned, caps, OP=RED_CODES[op], ACC=acc, TO_BOOL=to_bool,
                STAGE=stage, ROW_ND=nd[0], RED_ND=nd[1], BLOCK_M=tile[0], BLOCK_R=tile[1])


def _split_pair(op, case, x, caps):
    """The two launches of a split reduction: partial states (STAGE 1), then the result (STAGE 2)."""
    acc, to_bool, _, out = case
    y = out(x)
    part = "int64" if op in _COUNT_OPS else _ACC_DTYPE[acc]
    aux = "int64" if op in ("argmax", "argmin") else _ACC_DTYPE[acc] if op == "logsumexp" else y
    stat = _ACC_DTYPE[acc] if op in ("var", "std") else y  # the row means, computed by split launches first
    return [_reduce(op, 1, acc, x, part, aux, stat, to_bool, caps=caps),
            _reduce(op, 2, ACC_I64 if op in _COUNT_OPS else acc, part, y, aux, y, caps=caps)]


# the split (STAGE 1 + 2) pairs compiled: one op per kind of partial state
_SPLIT_OPS = {"sum": 0, "argmax": 1, "logsumexp": 0, "var": 1, "any": -1, "prod": -1}  # op -> its case (ACC)
_ALL_TILES = GPU_ROW_TILES + (GPU_COLUMN_TILE,)


def reduce_specs():
    """Every op code whole (STAGE 0), the accumulations taken in turn (sum: each); split (STAGE 1 + 2) for one op
    per kind of partial state (plain, with indices, with sums of exponentials, with row means, counts, a bool
    accumulator); every dtype in and out (max keeps it) with the GPU tiles in turn; inline (1-2 dims) and general
    offsets; i64 sizes; an unaligned input. Each is compiled for one target, the targets in turn (op codes,
    accumulations and tiles select arithmetic and layout, nothing target-specific)."""
    out = []
    for i, op in enumerate(RED_CODES):
        cases = _stage0_cases(op)
        for j, case in enumerate(cases if op == "sum" else [cases[i % len(cases)]]):
            x = case[2][(i + j) % len(case[2])]
            out.append(_reduce(op, 0, case[0], x, case[3](x), to_bool=case[1], caps=(CAPS[(i + j) % 2],)))
    for i, (op, c) in enumerate(_SPLIT_OPS.items()):
        case = _stage0_cases(op)[c]
        out += _split_pair(op, case, case[2][i % len(case[2])], (CAPS[i % 2],))
    out += _split_pair("norm2", (ACC_F64, False, ["bfloat16"], _same), "bfloat16", (80,))  # float64 partials
    out += [_reduce("mean", 0, ACC_F32, "float32", "float32", scal="i32", caps=(90,)),  # mean of nothing: N = 0
            _reduce("var", 2, ACC_F64, "float64", "float64", scal="i32", caps=(80,))]  # N - correction <= 0
    for i, d in enumerate(DTYPES):  # max keeps the dtype: every dtype as input and output
        acc = ACC_F64 if d == "float64" else ACC_F32 if d in _F32_CLASS else ACC_I64
        out.append(_reduce("max", 0, acc, d, d, tile=_rot(_ALL_TILES, i), caps=(_rot(CAPS, i),)))
    out += [_reduce("sum", 0, ACC_F32, "float32", "float32", nd=(0, 2), caps=(90,)),
            _reduce("argmin", 1, ACC_F64, "float64", "float64", "int64", nd=(2, 0),
                    scalars={"M": "i64", "R": "i64", "R_PER": "i64"}, caps=(80,)),
            _reduce("sum", 0, ACC_F32, "bfloat16", "bfloat16", aligned=False, caps=(90,))]
    return out


def _scan(op, acc, x, y, to_bool=False, initial=False, nd=1, tile=_ROW_TILE, scalars=None, aligned=True, caps=CAPS):
    return spec(SCAN, {"x_ptr": x, "y_ptr": y}, scalars, aligned, caps, OP=op, ACC=acc, TO_BOOL=to_bool,
                INITIAL=initial, ROW_ND=nd, BLOCK_M=tile[0], BLOCK_R=tile[1])


def scan_specs():
    """cumulative_sum/prod: every accumulation with and without the initial value, ops in turn; every dtype in and
    out with the GPU tiles in turn; inline and general row offsets, i64 sizes, unaligned. Each is compiled for one
    target, the targets in turn."""
    out = []
    cases = [(ACC_F32, False, _F32_CLASS), (ACC_F64, False, ["float64"]), (ACC_I64, False, _INT_CLASS),
             (ACC_I64, True, ["float32", "int32"])]  # dtype=bool: running "any" / "all"
    for j, (acc, to_bool, xs) in enumerate(cases):
        for initial in (False, True):
            op = (SCAN_SUM, SCAN_PROD)[(j + initial) % 2]
            x = xs[(j + initial) % len(xs)]
            y = "bool" if to_bool else x if acc != ACC_I64 else "int64"
            out.append(_scan(op, acc, x, y, to_bool, initial, caps=(CAPS[(j + initial) % 2],)))
    for i, d in enumerate(DTYPES):  # cumulative_sum(x, dtype=d) of x of dtype d: every dtype in and out
        acc = ACC_F64 if d == "float64" else ACC_F32 if d in _F32_CLASS else ACC_I64
        out.append(_scan((SCAN_SUM, SCAN_PROD)[i % 2], acc, d, d, to_bool=d == "bool", tile=_rot(_ALL_TILES, i),
                         caps=(_rot(CAPS, i),)))
    out += [_scan(SCAN_SUM, ACC_F32, "float32", "float32", nd=0, scalars={"M": "i64", "L": "i64"}, caps=(90,)),
            _scan(SCAN_SUM, ACC_F32, "float16", "float16", nd=2, aligned=False, caps=(80,))]
    return out


GENERATORS.update(reduce_kernel=reduce_specs, scan_kernel=scan_specs)


# ------------------------------------------------------------------------------------- optimizer steps
# adam_kernel / sgd_kernel (tkernels/kernels/optim.py): three int64 tables as pointers, the tensors' dtype a
# runtime switch inside (each specialization compiles the float32, float16, bfloat16 and float64 code); every
# constexpr set, each on one target, the targets in turn.
_OPTIM_TABLES = {"hdr_ptr": "int64", "info_ptr": "int64", "tiles_ptr": "int64"}


def _optim_specs(kernel, flag, **more):
    return [spec(kernel, _OPTIM_TABLES, caps=(_rot(CAPS, j),), **{flag: f}, **more, ALIGNED=al, BLOCK=GPU_BLOCK)
            for j, (f, al) in enumerate(((True, True), (False, True), (True, False), (False, False)))]


def _adam_specs():
    """The host-counted and the capturable (device step counts) update, every AMSGRAD/ALIGNED set."""
    kernel = "tkernels.kernels.optim:adam_kernel"
    return [*_optim_specs(kernel, "AMSGRAD", CAPTURABLE=False), *_optim_specs(kernel, "AMSGRAD", CAPTURABLE=True)]


GENERATORS.update(adam_kernel=_adam_specs,
                  adam_count_kernel=lambda: [spec("tkernels.kernels.optim:adam_count_kernel",
                                                  {"info_ptr": "int64"})],
                  sgd_kernel=lambda: _optim_specs("tkernels.kernels.optim:sgd_kernel", "MOMENTUM"))


# ------------------------------------------------------------------------------------ nn row kernels
# softmax (tkernels/kernels/softmax.py), layer/RMS norm (norm.py), cross-entropy/NLL (loss.py), embedding: every
# op / mode with each accumulation (fp32 for float32 and halves, fp64), one pass and chunked, with the GPU tiles
# and dtypes taken in turn; every dtype the workload passes in every pointer slot; an i64 size; unaligned. Each is
# compiled for one target, the targets in turn (nothing target-specific in them).
_NN = "tkernels.kernels."
_NN_X = {False: ["float32", "bfloat16", "float16"], True: ["float64"]}  # input dtypes per F64


def _softmax_spec(op, f64, x, one, tile, nd=1, scalars=None, aligned=True, caps=CAPS):
    return spec(_NN + "softmax:softmax_kernel", {"x_ptr": x, "g_ptr": x, "o_ptr": x}, scalars, aligned, caps,
                OP=op, F64=f64, ROW_ND=nd, ONE_PASS=one, BLOCK_M=tile[0], BLOCK_N=tile[1])


def nn_softmax_specs():
    from tkernels.backends.triton.ops_softmax import GPU_CHUNK, GPU_TILES

    out, k = [], 0
    for op in range(4):
        for f64 in (False, True):
            for one in (True, False):
                x = _rot(_NN_X[f64], k)
                out.append(_softmax_spec(op, f64, x, one, _rot(GPU_TILES, k) if one else GPU_CHUNK, nd=k % 2,
                                         caps=(_rot(CAPS, k),)))
                k += 1
    out.append(_softmax_spec(0, False, "float32", True, GPU_TILES[0], scalars={"M": "i64"}, caps=(90,)))
    out.append(_softmax_spec(1, False, "bfloat16", True, GPU_TILES[2], aligned=False, caps=(80,)))
    return out


def nn_norm_specs():
    from tkernels.backends.triton.ops_softmax import GPU_CHUNK, GPU_TILES

    out, k = [], 0
    for rms in (False, True):
        for f64 in (False, True):
            for one in (True, False):
                x = _rot(_NN_X[f64], k)
                st = "float64" if f64 else "float32"
                tile = _rot(GPU_TILES, k) if one else GPU_CHUNK
                out.append(spec(_NN + "norm:norm_fwd_kernel", {"x_ptr": x, "y_ptr": x, "w_ptr": st, "b_ptr": st,
                                "mean_ptr": st, "rstd_ptr": st}, {"eps": "i64" if k % 3 else "i32"},
                                caps=(_rot(CAPS, k),), RMS=rms, HAS_W=k % 2 == 0, HAS_B=k % 4 < 2, STATS=k % 3 != 1,
                                F64=f64, ONE_PASS=one, BLOCK_M=tile[0], BLOCK_N=tile[1]))
                out.append(spec(_NN + "norm:norm_bwd_kernel", {"x_ptr": x, "g_ptr": x, "mean_ptr": st,
                                "rstd_ptr": st, "w_ptr": st, "dx_ptr": x, "dwp_ptr": st, "dbp_ptr": st},
                                caps=(_rot(CAPS, k + 1),), RMS=rms, HAS_W=k % 2 == 1, HAS_DX=k % 4 != 3, HAS_DW=True,
                                HAS_DB=k % 3 != 2, F64=f64, ONE_PASS=one, BLOCK_M=tile[0], BLOCK_N=tile[1]))
                k += 1
    return out


def _ce_ptrs(z, t, f64, bwd):
    acc = "float64" if f64 else "float32"
    p = {"z_ptr": z, "t_ptr": t, "w_ptr": z}
    if bwd:
        return {**p, "lse_ptr": acc, "g_ptr": z, "den_ptr": acc, "d_ptr": z}
    return {**p, "loss_ptr": acc, "lse_ptr": acc, "rw_ptr": acc}


def nn_loss_specs():
    from tkernels.backends.triton.ops_softmax import GPU_CHUNK, GPU_TILES

    out, k = [], 0
    for prob, nll in ((False, False), (True, False), (False, True)):
        for f64 in (False, True):
            for tile in (_rot(GPU_TILES, k), GPU_CHUNK):
                z = _rot(_NN_X[f64], k)
                t = z if prob else ("int64", "int32")[k % 2]
                sc = {"ls_bits": "i64" if (k % 2 and not nll) else "i32"}
                out.append(spec(_NN + "loss:ce_fwd_kernel", _ce_ptrs(z, t, f64, False), sc, caps=(_rot(CAPS, k),),
                                PROB=prob, NLL=nll, HAS_W=k % 2 == 0, SMOOTH=sc["ls_bits"] == "i64",
                                STORE_LSE=not nll and k % 3 == 0, STORE_RW=not prob, F64=f64, ROW_ND=k % 2,
                                BLOCK_M=tile[0], BLOCK_C=tile[1]))
                sc["g_bits"] = "i64" if k % 3 == 0 else "i32"
                out.append(spec(_NN + "loss:ce_bwd_kernel", _ce_ptrs(z, t, f64, True), sc, caps=(_rot(CAPS, k + 1),),
                                PROB=prob, NLL=nll, HAS_W=k % 2 == 1, SMOOTH=sc["ls_bits"] == "i64",
                                HAS_LSE=k % 3 == 1 and not nll, G_MODE=k % 3, MEAN=k % 2 == 0, F64=f64, ROW_ND=k % 2,
                                BLOCK_M=tile[0], BLOCK_C=tile[1]))
                k += 1
    for j, (mean, has_w, f64) in enumerate((m, w, f) for m in (True, False) for w in (True, False)
                                           for f in (False, True)):
        acc = "float64" if f64 else "float32"
        y = acc if j % 4 == 0 else _rot(_NN_X[f64], j)
        out.append(spec(_NN + "loss:loss_sum_kernel", {"x_ptr": acc, "w_ptr": acc, "out_ptr": y},
                        caps=(_rot(CAPS, j),), MEAN=mean, HAS_W=has_w, F64=f64, BLOCK=1024))
    return out


def nn_embedding_specs():
    from tkernels.backends.triton.ops_embedding import GPU_BLOCK_D

    kernel = _NN + "embedding:embedding_kernel"
    tile = (4, GPU_BLOCK_D)
    out = [spec(kernel, {"idx_ptr": ("int64", "int32")[i % 2], "src_ptr": d, "dst_ptr": d, "cnt_ptr": d},
                caps=(_rot(CAPS, i),), MODE=0, SCALE=False, BLOCK_K=tile[0], BLOCK_D=tile[1])
           for i, d in enumerate(DTYPES)]  # gathers copy any dtype
    for i, (mode, scale, acc) in enumerate(((2, False, "float32"), (1, False, "float32"), (1, True, "float32"),
                                            (1, False, "float64"), (1, True, "float64"))):
        for j, g in enumerate(_NN_X[acc == "float64"][: 1 if mode == 2 else 3]):
            out.append(spec(kernel, {"idx_ptr": ("int64", "int32")[(i + j) % 2], "src_ptr": g, "dst_ptr": acc,
                                     "cnt_ptr": "int32" if scale or mode == 2 else acc},
                            caps=(_rot(CAPS, i + j),), MODE=mode, SCALE=scale, BLOCK_K=tile[0], BLOCK_D=tile[1]))
    return out


_NN_FLOATS = ["float32", "float16", "bfloat16", "float64"]


def _every_slot_dtype(specs, extra=None):
    """Add specs until every float dtype (and ``extra[slot]``) has been in every pointer slot of each kernel: the
    backends pass some Array as a pointer a constexpr switch leaves unread, and its dtype is part of the signature."""
    out = list(specs)
    for name in dict.fromkeys(s.name for s in specs):
        base = next(s for s in specs if s.name == name)
        have = {(a, d) for s in specs if s.name == name for a, d in s.pointers}
        todo = {a: [d for d in _NN_FLOATS + (extra or {}).get(a, []) if (a, d) not in have] for a, _ in base.pointers
                if a != "err_ptr"}  # the error buffer is always int64
        k = 0
        while any(todo.values()):
            ptrs = {**dict(base.pointers), **{a: ds.pop() for a, ds in todo.items() if ds}}
            out.append(Spec(base.kernel, tuple(sorted(ptrs.items())), base.scalars, base.constexprs, True,
                            (_rot(CAPS, k),)))
            k += 1
    return out


def _only(name, gen):
    return lambda: [s for s in _every_slot_dtype(gen(), {"t_ptr": ["int32", "int64"], "cnt_ptr": ["int32"]})
                    if s.name == name]


# batch/group norm (norm_channel.py): segment partials, their merge, and the normalizing / dx pass, every mode set
# (batch norm train and eval, group norm, their backward) with fp32 and fp64 compute; embedding renorm (norm.py): the
# claim launch and every norm type (split over fp32 and fp64). Dtypes rotate through the pointer slots (any float in
# any slot: outputs, parameters and running statistics have their own dtypes), GPU tiles, optional operands and
# scalar types in turn; one target each, the targets in turn.
def nn_channel_norm_specs():
    from tkernels.backends.triton.ops_norm import FINALIZE_TILE, GPU_CHANNEL_TILES

    def ptrs(names, k, acc_slots=(), acc="float32"):
        return {a: acc if a in acc_slots else _rot(_NN_FLOATS, k + i) for i, a in enumerate(names)}

    out, k = [], 0
    for f64 in (False, True):
        acc = "float64" if f64 else "float32"
        for grad, group, fv in ((False, False, False), (False, True, False), (True, False, False), (True, False, True),
                                (True, True, False)):
            tile = _rot(GPU_CHANNEL_TILES, k)
            out.append(spec(_NN + "norm_channel:channel_reduce_kernel", ptrs(
                ("x_ptr", "g_ptr", "mean_ptr", "rstd_ptr", "w_ptr", "p1_ptr", "p2_ptr"), k, ("p1_ptr", "p2_ptr"), acc),
                {"eps": "i64" if k % 2 else "i32", "L": "i64" if k == 3 else "i32"}, caps=(_rot(CAPS, k),), GRAD=grad,
                GROUP=group, FROM_VAR=fv, HAS_W=group and k % 2 == 0, F64=f64, BLOCK_R=tile[0], BLOCK=tile[1]))
            k += 1
        for bwd, train, group, fv in ((False, True, False, False), (False, True, False, True),
                                      (False, True, True, False), (True, True, False, False),
                                      (True, False, False, True), (True, True, True, False)):
            tile = _rot(GPU_CHANNEL_TILES, k)
            out.append(spec(_NN + "norm_channel:channel_apply_kernel", ptrs(
                ("x_ptr", "g_ptr", "y_ptr", "mean_ptr", "rstd_ptr", "w_ptr", "b_ptr", "s1_ptr", "s2_ptr"), k),
                {"eps": "i64" if k % 2 else "i32", "L": "i64" if k == 12 else "i32"}, caps=(_rot(CAPS, k),), BWD=bwd,
                TRAIN=train, GROUP=group, FROM_VAR=fv, HAS_W=k % 2 == 0, HAS_B=k % 4 < 2 and not bwd, F64=f64,
                BLOCK_R=tile[0], BLOCK=tile[1]))
            k += 1
        for j, grad in enumerate((False, True)):
            sc = {"eps": ("i64", "i32")[j], "momentum": ("i64", "i32")[j], "keep": "i64", "bessel": "i64"}
            if f64 and not grad:
                sc["keep"] = "i32"  # momentum 1: keep nothing
            out.append(spec(_NN + "norm_channel:channel_finalize_kernel", {
                **ptrs(("p1_ptr", "p2_ptr", "o1_ptr", "o2_ptr"), 0, ("p1_ptr", "p2_ptr", "o1_ptr", "o2_ptr"), acc),
                **ptrs(("sm_ptr", "si_ptr", "rm_ptr", "rv_ptr"), 2 * f64 + j)}, sc, caps=(_rot(CAPS, k),), GRAD=grad,
                STATS=not grad and k % 2 == 0, HAS_RM=not grad, HAS_RV=not grad and k % 3 != 0, F64=f64,
                BLOCK_R=FINALIZE_TILE[0], BLOCK_P=FINALIZE_TILE[1]))
            k += 1
        for norm in range(3 * f64, 3 * f64 + 3):  # the norm types split over the two accumulations
            out.append(spec(_NN + "norm:renorm_rows_kernel", {"idx_ptr": ("int64", "int32")[k % 2],
                            "w_ptr": _rot(_NN_X[f64], k), "claim_ptr": "int64"},
                            {"max_norm": "i32" if norm == 1 else "i64", "p": "i32" if norm == 5 else "i64"},
                            caps=(_rot(CAPS, k),), CLAIM=False, NORM=norm, F64=f64, BLOCK_K=4, BLOCK_D=256))
            k += 1
    for j, d in enumerate(("int64", "int32")):
        out.append(spec(_NN + "norm:renorm_rows_kernel", {"idx_ptr": d, "w_ptr": _rot(_NN_FLOATS, j),
                        "claim_ptr": "int64"}, {"max_norm": "i64", "p": "i64"}, caps=(_rot(CAPS, j),), CLAIM=True,
                        NORM=2, F64=False, BLOCK_K=4, BLOCK_D=256))
    out.append(spec(_NN + "norm_channel:channel_apply_kernel", ptrs(
        ("x_ptr", "g_ptr", "y_ptr", "mean_ptr", "rstd_ptr", "w_ptr", "b_ptr", "s1_ptr", "s2_ptr"), 1), {"eps": "i64"},
        aligned=False, caps=(80,), BWD=False, TRAIN=True, GROUP=False, FROM_VAR=False, HAS_W=True, HAS_B=True,
        F64=False, BLOCK_R=1, BLOCK=1024))
    return out


_CHANNEL_KERNELS = ("channel_reduce_kernel", "channel_apply_kernel", "channel_finalize_kernel", "renorm_rows_kernel")
GENERATORS.update({n: (lambda n=n: [s for s in nn_channel_norm_specs() if s.name == n]) for n in _CHANNEL_KERNELS})


def test_channel_norm_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    """batch_norm (training with and without running stats, eval) and group_norm, forward and backward, on every
    float dtype with float32 and same-dtype parameters, one-tile and chunked segments with the GPU tiling, strided
    inputs; embedding's max_norm with every norm type (launches are recorded, nothing runs)."""
    from tkernels.backends.triton import ops_embedding, ops_norm
    from tkernels.ops import normalization as nz
    from tkernels.ops import sparse

    monkeypatch.setattr(ops_norm, "INTERPRETED", False)
    monkeypatch.setattr(ops_embedding, "INTERPRETED", False)
    for d in _NN_FLOATS:
        for shape in ((4, 6), (2, 6, 50, 50)):  # channels of one tile; of several chunks (partials merged)
            x = tk.empty(shape, dtype=d, device="cuda")
            for xx in (x, tk.empty((6, 4), dtype=d, device="cuda").mT if x.ndim == 2 else x[:, :, ::2]):
                for pd in ("float32", d):
                    p = tk.empty((6,), dtype=pd, device="cuda")
                    _, sm, si = nz.batch_norm(xx, p, p, p, p, True, return_stats=True)
                    nz.batch_norm(xx, None, None, None, None, True, momentum=0.0, eps=0.0)
                    nz.batch_norm(xx, p, p, p, None, False)
                    nz.batch_norm_backward(xx, xx, p, p, p, sm, si, True)
                    nz.batch_norm_backward(xx, xx, None, p, p, sm, si, False, needs=(True, False, True))
                    nz.batch_norm_backward(xx, xx, p, p, p, sm, si, False, needs=(True, False, False))
                    _, m, r = nz.group_norm(xx, 3, p, p, return_stats=True)
                    nz.group_norm(xx, 2, eps=0.0)
                    nz.group_norm_backward(xx, xx, m, r, p, 3)
                    nz.group_norm_backward(xx, xx, m, r, None, 3, needs=(True, False, False))
        w = tk.empty((5, 40), dtype=d, device="cuda")
        for i, p in enumerate((2.0, 1.0, 3.0, math.inf, -math.inf, 0.0)):
            idx = tk.zeros((3,), dtype=("int64", "int32")[i % 2], device="cuda")
            sparse.embedding(w, idx, max_norm=1.0 if i % 2 else 0.0, norm_type=p)
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name in _CHANNEL_KERNELS]
    assert {s.name for s in observed} == set(_CHANNEL_KERNELS)
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])

GENERATORS.update(softmax_kernel=_only("softmax_kernel", nn_softmax_specs),
                  embedding_kernel=_only("embedding_kernel", nn_embedding_specs),
                  norm_fwd_kernel=_only("norm_fwd_kernel", nn_norm_specs),
                  norm_bwd_kernel=_only("norm_bwd_kernel", nn_norm_specs),
                  **{k: _only(k, nn_loss_specs) for k in ("ce_fwd_kernel", "ce_bwd_kernel", "loss_sum_kernel")})

# ------------------------------------------------------------------------------------------------------ matmul
# tkernels/kernels/matmul.py: one kernel, autotuned on a GPU over TC_CONFIGS (float16/bfloat16/float32),
# F64_CONFIGS and I64_CONFIGS. Compiled as the JIT specializes a row-major launch (unit inner strides are
# constants, sizes and leading strides divisible by 16: cp.async pipelining and wgmma need it), plus a transposed
# launch and a fully generic one (any strides, an i64 size). A representative table, not the product of
# configs x dtypes x epilogues (each specialization takes seconds, the largest tiles ~10 s): every TC config once
# on sm_90 in a half dtype (wgmma asserted), the half dtypes and TF32 on sm_80 (mma.sync asserted), IEEE float32,
# every float64 and integer config, the epilogue variants (ACT, bias, residual) spread over them, mixed operand
# dtypes (converted on load) and a float32 output of half operands (linear's out_dtype).
MATMUL = "tkernels.kernels.matmul:matmul_kernel"
_MM_ROW_MAJOR = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "stride_bias": 1, "stride_rn": 1, "M": 16, "N": 16,
                 "K": 16, "stride_am": 16, "stride_bk": 16, "stride_cm": 16, "stride_rm": 16, "stride_ab": 16,
                 "stride_bb": 16, "stride_cb": 16, "stride_rb": 16}
_MM_TRANSPOSED = {**_MM_ROW_MAJOR, "stride_ak": 16, "stride_am": 1, "stride_bn": 16, "stride_bk": 1}


def _mm(dot, a, b, c, config, cap, act=0, bias=None, res=None, ints=_MM_ROW_MAJOR, scalars=None):
    """A matmul_kernel specialization for one autotune ``config`` (a triton.Config) and one target."""
    import dataclasses

    s = spec(MATMUL, {"a_ptr": a, "b_ptr": b, "c_ptr": c, "bias_ptr": bias or c, "r_ptr": res or c}, scalars,
             caps=(cap,), DOT=dot, ACT=act, HAS_BIAS=bias is not None, HAS_RESIDUAL=res is not None,
             **config.kwargs)
    return dataclasses.replace(s, options=(("num_stages", config.num_stages), ("num_warps", config.num_warps)),
                               ints=tuple(sorted(ints.items())))


def matmul_specs():
    from tkernels.kernels import matmul as mk

    tc, f64, i64 = mk.TC_CONFIGS, mk.F64_CONFIGS, mk.I64_CONFIGS
    out = []
    for i, cfg in enumerate(tc):  # every TC config on sm_90, float16 / bfloat16 in turn, epilogues in turn
        d, dot = (("bfloat16", mk.DOT_BF16), ("float16", mk.DOT_F16))[i % 2]
        act = (0, 1, 0, 4, 0, 1, 3)[i]  # the erf/tanh epilogues (slow to compile) on the smallest tiles
        out.append(_mm(dot, d, d, d, cfg, 90, act, bias=d if i % 2 == 0 else None,
                       res=d if i % 3 == 0 else None))
    out += [
        _mm(mk.DOT_BF16, "bfloat16", "bfloat16", "float32", tc[5], 80, bias="float32", res="bfloat16"),
        _mm(mk.DOT_F16, "int8", "float16", "float16", tc[5], 80, ints=_MM_TRANSPOSED),  # mixed, transposed
        _mm(mk.DOT_F32, "float32", "float32", "float32", tc[6], 90, 4, bias="float32"),  # FMA: big code
        _mm(mk.DOT_TF32, "float32", "float32", "float32", tc[3], 90, res="float32"),
        _mm(mk.DOT_TF32, "float32", "float16", "float32", tc[5], 80, 1),
        _mm(mk.DOT_F64, "float64", "float64", "float64", f64[0], 90, 2, bias="float64", res="float64"),
        _mm(mk.DOT_F64, "float32", "float64", "float64", f64[1], 80),
        _mm(mk.DOT_F64, "float64", "float64", "float64", f64[2], 90, ints=_MM_TRANSPOSED),
        _mm(mk.DOT_I64, "int8", "int8", "int8", i64[0], 90),
        _mm(mk.DOT_I64, "int32", "uint8", "int32", i64[1], 80),
        _mm(mk.DOT_I64, "int64", "int16", "int64", i64[0], 80, ints={}),  # generic strides
        _mm(mk.DOT_BF16, "bfloat16", "bfloat16", "bfloat16", tc[6], 90, 2, ints={}, scalars={"M": "i64"}),
    ]
    return out


def check_matmul_ptx(s: Spec, cap: int, out: dict) -> None:
    """Tensor cores where promised: wgmma on sm_90 and mma.sync on sm_80 for float16/bfloat16/TF32; none for IEEE
    float32, float64 or integers' int64 path on sm_90."""
    from tkernels.kernels import matmul as mk

    dot = dict(s.constexprs)["DOT"]
    if dot in (mk.DOT_F16, mk.DOT_BF16, mk.DOT_TF32):
        assert out["wgmma" if cap == 90 else "mma_sync"], f"{s}: no {'wgmma' if cap == 90 else 'mma'} for sm_{cap}"
    elif dot in (mk.DOT_F32, mk.DOT_I64):
        assert not out["wgmma"] and not out["mma_sync"], f"{s}: tensor cores on the IEEE / integer path"


GENERATORS.update(matmul_kernel=matmul_specs)


# ------------------------------------------------------------------------------------- random numbers, dropout
# tkernels/kernels/random.py and dropout.py: every 64-bit scalar (seed, offset, float64 parameters, int64 bounds)
# travels as two int32 halves, so only the constexpr sets and dtypes vary: every constexpr set the backend launches,
# every dtype in every pointer slot, an i64 size, unaligned; each on one target, the targets in turn.
RANDOM = "tkernels.kernels.random:random_kernel"
PERMUTATION = "tkernels.kernels.random:permutation_kernel"
DROPOUT = "tkernels.kernels.dropout:dropout_kernel"


def _random(y, dist, words=1, p=None, p_contiguous=True, scalars=None, aligned=True, k=0):
    from tkernels.kernels import random as rk

    return spec(RANDOM, {"y_ptr": y, "p_ptr": p or y}, scalars, aligned, (_rot(CAPS, k),), DIST=dist, WORDS=words,
                F64=y == "float64" and dist in (rk.UNIFORM, rk.NORMAL), P_ARRAY=p is not None,
                P_CONTIGUOUS=p_contiguous, TO_BOOL=y == "bool", BLOCK=GPU_BLOCK)


def random_specs():
    """uniform/normal (float32 and halves: one word, float64: two); integers with one and two words, into an integer
    and into bool; bernoulli with a scalar p and with p arrays (contiguous or strided, each float dtype)."""
    from tkernels.kernels.random import BERNOULLI, INTEGERS, NORMAL, UNIFORM

    cases = [("float32", UNIFORM, 1), ("float64", UNIFORM, 2), ("bfloat16", NORMAL, 1), ("float64", NORMAL, 2),
             ("float16", UNIFORM, 1), ("int8", INTEGERS, 1), ("int64", INTEGERS, 2), ("int32", INTEGERS, 1),
             ("bool", INTEGERS, 1), ("bool", INTEGERS, 2), ("float16", BERNOULLI, 1), ("bool", BERNOULLI, 1),
             ("uint8", INTEGERS, 2), ("int16", BERNOULLI, 1), ("uint16", INTEGERS, 1), ("uint32", BERNOULLI, 1),
             ("uint64", INTEGERS, 2)]
    out = [_random(y, dist, w, k=k) for k, (y, dist, w) in enumerate(cases)]
    arrays = [("uint8", "float32", True), ("int16", "bfloat16", False), ("bool", "float64", True),
              ("bool", "float16", False), ("float32", "float32", False), ("uint16", "float16", False),
              ("uint32", "float32", False), ("uint64", "float64", False)]
    out += [_random(y, BERNOULLI, p=p, p_contiguous=c, k=k) for k, (y, p, c) in enumerate(arrays)]
    out += [_random("float32", UNIFORM, scalars={"n": "i64"}, k=1), _random("bfloat16", NORMAL, aligned=False)]
    return out


def permutation_specs():
    """The single-program sort (its block: the next power of two >= n, from 16 to the largest) and the Feistel
    bijection; int64 and int32 outputs."""
    from tkernels.backends.triton.random import PERMUTATION_SORT_MAX

    cases = (("int64", True, PERMUTATION_SORT_MAX), ("int64", False, GPU_BLOCK), ("int32", True, 16),
             ("int32", False, GPU_BLOCK))
    return [spec(PERMUTATION, {"y_ptr": y}, caps=(_rot(CAPS, k),), SORT=sort, BLOCK=block)
            for k, (y, sort, block) in enumerate(cases)]


def dropout_specs():
    """Contiguous and strided inputs, float32-computed (float32, halves) and float64, the mask from Philox or from a
    bool array; every float dtype; an i64 size; unaligned."""
    def drop(d, c, mask_array=False, scalars=None, aligned=True, k=0):
        return spec(DROPOUT, {"x_ptr": d, "m_ptr": "bool" if mask_array else d, "y_ptr": d},
                    {"p": "fp32", **(scalars or {})}, aligned, (_rot(CAPS, k),), X_CONTIGUOUS=c, MASK_ARRAY=mask_array,
                    F64=d == "float64", BLOCK=GPU_BLOCK)

    cases = [("float32", True), ("float16", False), ("bfloat16", True), ("float64", False), ("float64", True)]
    out = [drop(d, c, k=k) for k, (d, c) in enumerate(cases)]
    out += [drop(d, c, True, k=k) for k, (d, c) in enumerate((("float32", False), ("float64", True),
                                                               ("bfloat16", True), ("float64", False)))]
    return out + [drop("float32", True, scalars={"n": "i64"}, k=0), drop("bfloat16", False, aligned=False, k=1)]


GENERATORS.update(random_kernel=random_specs, permutation_kernel=permutation_specs, dropout_kernel=dropout_specs)


# ------------------------------------------------------------------------ indexing, movement, sorting
# tkernels/kernels/{gather,movement,creation,sort}.py: no contiguous paths (operands are collapsed strided
# views); each constexpr set that dispatch produces once, every dtype in every data pointer position, each
# specialization on one target, the targets in turn. The sort tiles (ROWS, BLOCK, LOG) are the GPU set.
_G = "tkernels.kernels.gather:"
_MV = "tkernels.kernels.movement:"
_CR = "tkernels.kernels.creation:"
_SO = "tkernels.kernels.sort:"
_IDX_KERNELS = {"axis_kernel", "base_kernel", "offsets_kernel", "check_kernel", "flag_kernel", "compact_kernel",
                "unravel_kernel", "range_kernel", "tri_kernel", "block_sort_kernel", "merge_kernel",
                "searchsorted_kernel", "unique_flag_kernel", "unique_scatter_kernel", "unique_count_kernel"}


def indexing_specs():
    out, k = [], 0

    def add(kernel, pointers, scalars=None, **constexprs):
        nonlocal k
        out.append(spec(kernel, pointers, scalars, caps=(_rot(CAPS, k),), BLOCK=constexprs.pop("BLOCK", GPU_BLOCK),
                        **constexprs))
        k += 1

    for i, d in enumerate(DTYPES):  # gathers of every dtype; the store modes on some
        ix = ("int64", "int32")[i % 2]
        add(_G + "axis_kernel", {"x_ptr": d, "idx_ptr": ix, "v_ptr": d}, MODE=0, VALUE=0, WRAP=bool(i % 2))
        add(_G + "offsets_kernel", {"x_ptr": d, "base_ptr": "int64", "v_ptr": d}, MODE=0, VALUE=0)
        if d in ("bool", "int64", "bfloat16", "float64", "float32"):  # stores of scalars: each value type
            vmode = 2 if d == "float64" else 1
            vt = {"float64": "i64", "float32": "fp32", "bfloat16": "fp32"}.get(d, "i32")
            add(_G + "axis_kernel", {"x_ptr": d, "idx_ptr": "int64", "v_ptr": d}, {"value": vt}, MODE=1,
                VALUE=vmode, WRAP=False)
            add(_G + "offsets_kernel", {"x_ptr": d, "base_ptr": "int64", "v_ptr": d}, {"value": vt}, MODE=1,
                VALUE=vmode)
            add(_G + "axis_kernel", {"x_ptr": d, "idx_ptr": "int64", "v_ptr": d}, MODE=1, VALUE=0, WRAP=False)
            add(_G + "offsets_kernel", {"x_ptr": d, "base_ptr": "int64", "v_ptr": d}, MODE=1, VALUE=0)
        add(_MV + "flag_kernel", {"x_ptr": d, "f_ptr": "int64"})
        add(_MV + "compact_kernel", {"x_ptr": d, "pos_ptr": "int64", "out_ptr": d}, MODE=0)
        add(_CR + "range_kernel", {"y_ptr": d}, {"start": ("i32", "i64")[i % 2], "step": "i64", "last": "i64"},
            INT=False, SET_LAST=bool(i % 2))  # float64 bit patterns (0.0 is an i32)
        add(_CR + "tri_kernel", {"x_ptr": d, "y_ptr": d}, UPPER=bool(i % 2))
        key = 2 if d == "float64" else 1 if d in ("float16", "bfloat16", "float32") else 0
        key = {"uint32": 3, "uint64": 4}.get(d, key)
        # the 1024-wide network (tens of seconds to compile) once packed and once unpacked
        for j, (rows, block) in enumerate(((64, 16), (8, 128), (1, 1024))):
            for desc in (False, True):
                unsigned_key = d in ("uint32", "uint64")  # (their own KEY modes: the small network, both orders)
                if (j == i % 2 and desc == bool((i + j) % 2) and not unsigned_key or unsigned_key and j == 0
                        or d in ("float64", "int64", "float32", "int32") and j == 0
                        or j == 2 and desc and d in ("float32", "float64")):
                    add(_SO + "block_sort_kernel", {"x_ptr": d, "key_ptr": "int64", "idx_ptr": "int64"}, KEY=key,
                        DESCENDING=desc, PACK=d not in ("int64", "float64", "uint64"), ROWS=rows, BLOCK=block,
                        LOG=block.bit_length() - 1)
        add(_SO + "unique_flag_kernel", {"key_ptr": "int64", "idx_ptr": "int64", "x_ptr": d, "f_ptr": "int64"},
            IS_FLOAT=d in ("float16", "bfloat16", "float32", "float64"))
        add(_SO + "unique_scatter_kernel", {"x_ptr": d, "idx_ptr": "int64", "pos_ptr": "int64", "val_ptr": d,
                                            "first_ptr": "int64", "start_ptr": "int64", "inv_ptr": "int64"},
            FIRST=bool(i % 2), INVERSE=not i % 3)
    for d in ("float32", "float64", "int32", "int64"):  # atomic adds: direct targets, and the accumulators
        add(_G + "axis_kernel", {"x_ptr": d, "idx_ptr": "int64", "v_ptr": d}, MODE=2, VALUE=0, WRAP=False)
        add(_G + "offsets_kernel", {"x_ptr": d, "base_ptr": "int64", "v_ptr": d}, MODE=2, VALUE=0)
    for d in ("int64", "int32", "int16", "int8", "uint8"):  # index and count dtypes
        add(_G + "check_kernel", {"idx_ptr": d, "flag_ptr": "int64"}, {"hi": "i64" if d == "int64" else "i32"})
        add(_G + "base_kernel", {"idx_ptr": d, "base_ptr": "int64"}, FIRST=d != "int32")
    add(_G + "base_kernel", {"idx_ptr": "int32", "base_ptr": "int64"}, FIRST=True)
    add(_G + "axis_kernel", {"x_ptr": "int64", "idx_ptr": "int16", "v_ptr": "int64"}, MODE=0, VALUE=0, WRAP=False)
    add(_MV + "compact_kernel", {"x_ptr": "bool", "pos_ptr": "int64", "out_ptr": "int64"}, MODE=1)
    add(_MV + "compact_kernel", {"x_ptr": "float32", "pos_ptr": "int64", "out_ptr": "int64"}, MODE=1)
    add(_MV + "unravel_kernel", {"lin_ptr": "int64", "out_ptr": "int64"})
    for d in ("int64", "int32", "int8", "uint8", "int16"):
        add(_CR + "range_kernel", {"y_ptr": d}, INT=True, SET_LAST=False)
    add(_CR + "range_kernel", {"y_ptr": "int64"}, {"start": "i64", "step": "i64"}, INT=True, SET_LAST=False)
    add(_SO + "merge_kernel", {"kin_ptr": "int64", "iin_ptr": "int64", "kout_ptr": "int64", "iout_ptr": "int64"})
    add(_SO + "unique_count_kernel", {"start_ptr": "int64", "c_ptr": "int64"})
    ct = {"float16": 1, "bfloat16": 1, "float32": 1, "float64": 2}
    for i, d in enumerate(DTYPES[1:]):  # search: every dtype on both sides, each compute type, both sides
        d2 = DTYPES[1:][(i + 3) % (len(DTYPES) - 1)]
        c = max(ct.get(d, 0), ct.get(d2, 0))
        sorter = (i % 3 == 0, ("int64", "int32")[i % 2])
        add(_SO + "searchsorted_kernel", {"a_ptr": d, "v_ptr": d2, "s_ptr": sorter[1] if sorter[0] else d,
                                          "out_ptr": "int64"}, RIGHT=bool(i % 2), SORTER=sorter[0], CT=c)
        add(_SO + "searchsorted_kernel", {"a_ptr": d, "v_ptr": d, "s_ptr": d, "out_ptr": "int64"},
            RIGHT=not i % 2, SORTER=False, CT=ct.get(d, 0))
    for c, d in enumerate(("int64", "float32", "float64")):
        for right in (False, True):
            add(_SO + "searchsorted_kernel", {"a_ptr": d, "v_ptr": d, "s_ptr": "int64", "out_ptr": "int64"},
                RIGHT=right, SORTER=True, CT=c)
    return out


GENERATORS.update(indexing=indexing_specs)
# the fused LSTM cell (tkernels/kernels/rnn.py): forward and backward (with and without each gradient), every
# float dtype, float64 computing in float64
_LSTM_PTRS = ("gi_ptr", "gh_ptr", "c_ptr", "cn_ptr", "h_ptr", "dh_ptr", "dc_ptr", "dg_ptr", "dcp_ptr")
GENERATORS.update(lstm_cell_kernel=lambda: [
    spec("tkernels.kernels.rnn:lstm_cell_kernel", {p: d for p in _LSTM_PTRS}, caps=(CAPS[k % 2],), BWD=bwd,
         HAS_DH=hdh, HAS_DC=hdc, F64=d == "float64", BLOCK=GPU_BLOCK)
    for k, (d, (bwd, hdh, hdc)) in enumerate(
        (d, m) for d in ("float32", "float16", "bfloat16", "float64")
        for m in ((False, False, False), (True, True, True), (True, False, True), (True, True, False)))])
# the Gamma rsample backward dz/da (tkernels/kernels/gamma_grad.py): float64 only, its GPU block; an i64 size, unaligned
_GAMMA_GRAD = ("tkernels.kernels.gamma_grad:standard_gamma_grad_kernel",
               {"a_ptr": "float64", "z_ptr": "float64", "out_ptr": "float64"})
GENERATORS.update(standard_gamma_grad_kernel=lambda: [
    *(spec(*_GAMMA_GRAD, caps=(c,), ITERS=120, BLOCK=256) for c in CAPS),
    spec(*_GAMMA_GRAD, {"n": "i64"}, caps=(90,), ITERS=120, BLOCK=256),
    spec(*_GAMMA_GRAD, aligned=False, caps=(80,), ITERS=120, BLOCK=256)])


def spmm_specs():
    """Sparse COO @ dense (tkernels/kernels/spmm.py): SCATTER into the fp32/fp64 accumulator and SDDMM, every float
    dtype in each mode at the widest tile, every GPU tile (BLOCK_K a power of two up to GPU_BLOCK_K, BLOCK_Z the
    rest of 1024) once, modes, dtypes and targets in turn; an i64 nnz, unaligned."""
    from tkernels.backends.triton.ops_spmm import GPU_BLOCK_K

    kernel = "tkernels.kernels.spmm:spmm_kernel"

    def one(mode, d, bk, cap, scalars=None, aligned=True):
        acc = ("float64" if d == "float64" else "float32") if mode == 0 else d
        ptrs = {"rows_ptr": "int64", "cols_ptr": "int64", "vals_ptr": d, "a_ptr": d, "b_ptr": d, "out_ptr": acc}
        return spec(kernel, ptrs, scalars, aligned, caps=(cap,), MODE=mode, F64=d == "float64",
                    BLOCK_Z=1024 // bk, BLOCK_K=bk)

    floats = ("float32", "float16", "bfloat16", "float64")
    out = [one(mode, d, GPU_BLOCK_K, CAPS[(i + mode) % 2]) for mode in (0, 1) for i, d in enumerate(floats)]
    bks = [1 << e for e in range(GPU_BLOCK_K.bit_length()) if 1 << e < GPU_BLOCK_K]
    out += [one(i % 2, floats[i % 4], bk, CAPS[i // 2 % 2]) for i, bk in enumerate(bks)]
    out += [one(0, "float32", GPU_BLOCK_K, 90, {"nnz": "i64"}), one(1, "float64", 8, 80, aligned=False)]
    return out


GENERATORS.update(spmm_kernel=spmm_specs)
# device_assert (tkernels/checks.py): a bool array; n, site and bound are plain ints
GENERATORS.update(assert_kernel=lambda: [spec("tkernels.kernels.errors:assert_kernel", {"ok_ptr": "bool"}, caps=(c,),
                                              BLOCK=GPU_BLOCK) for c in CAPS])


# ------------------------------------------------------------------------------------------- convolution
# tkernels/kernels/conv.py: the implicit-GEMM forward (autotuned: every config once, each DOT path once, the
# targets in turn), im2col (a copy: x and the columns share x's dtype) and col2im (float32 columns, float64 for
# float64, folded into any float output with an optional bias); every dtype in every pointer slot, each flag set, an
# i64 size and an unaligned variant per kernel. The gradients' GEMMs are matmul_kernel's (checked here too).
_CONV = "tkernels.kernels.conv:"


def conv_specs():
    import dataclasses

    from tkernels.kernels import conv as ck
    from tkernels.kernels import matmul as mk

    out = []
    tc, f64 = ck.CONV_TC_CONFIGS, ck.CONV_F64_CONFIGS
    gemm = [(mk.DOT_F16, "float16", tc[0], 90), (mk.DOT_BF16, "bfloat16", tc[1], 80),
            (mk.DOT_TF32, "float32", tc[1], 90), (mk.DOT_F32, "float32", tc[1], 80),
            (mk.DOT_F64, "float64", f64[0], 90)]
    for k, (dot, d, cfg, cap) in enumerate(gemm):
        s = spec(_CONV + "conv_gemm_kernel", {"x_ptr": d, "w_ptr": d, "b_ptr": d, "y_ptr": d},
                 {"M": "i64", "sxn": "i64", "syn": "i64"} if k == 1 else None, k != 3, (cap,), DOT=dot,
                 HAS_BIAS=k % 2 == 0, **cfg.kwargs)
        out.append(dataclasses.replace(s, options=(("num_stages", cfg.num_stages), ("num_warps", cfg.num_warps))))
    for i, d in enumerate(_NN_FLOATS):
        out.append(spec(_CONV + "im2col_kernel", {"x_ptr": d, "col_ptr": d}, {"total": "i64", "sxn": "i64",
                        "scn": "i64", "sck": "i64"} if i == 0 else None, d != "bfloat16", (_rot(CAPS, i),),
                        BLOCK=GPU_BLOCK))
    cases = [("float32", "float32", False), ("float16", "float16", True), ("bfloat16", "bfloat16", True),
             ("float64", "float64", True), ("float64", "float64", False)]
    for k, (y, b, has_b) in enumerate(cases):
        acc = "float64" if y == "float64" else "float32"
        out.append(spec(_CONV + "col2im_kernel", {"col_ptr": acc, "b_ptr": b, "y_ptr": y},
                        {"total": "i64", "syn": "i64"} if k == 1 else None, k != 2, (_rot(CAPS, k),),
                        HAS_BIAS=has_b, F64=acc == "float64", BLOCK=GPU_BLOCK))
    return out


GENERATORS.update({n: (lambda n=n: [s for s in conv_specs() if s.name == n])
                   for n in ("conv_gemm_kernel", "im2col_kernel", "col2im_kernel")})


def test_conv_table_covers_what_dispatch_launches(recorded_launches):
    """conv2d / conv_transpose2d forward and backward on every float dtype, with and without bias, contiguous and
    strided inputs (launches are recorded, nothing runs)."""
    from tkernels.ops import conv

    for d in _NN_FLOATS:
        x, w, w2, b = (tk.empty(s, dtype=d, device="cuda") for s in ((2, 4, 6, 5), (4, 4, 3, 3), (4, 2, 3, 3), (4,)))
        for xx in (x, x.mT):
            conv.conv2d(xx, w2, b, padding=1, groups=2)
            conv.conv2d(xx, w)
            conv.conv2d_backward(tk.empty(conv.conv2d(xx, w).shape, dtype=d, device="cuda"), xx, w)
            conv.conv_transpose2d(xx, w, b, stride=2)
            conv.conv_transpose2d(xx, w2, groups=2)
            conv.conv_transpose2d_backward(tk.empty(conv.conv_transpose2d(xx, w).shape, dtype=d, device="cuda"),
                                           xx, w)
    kernels = {"conv_gemm_kernel", "im2col_kernel", "col2im_kernel", "matmul_kernel"}  # other GEMMs' too
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name in kernels]
    assert {s.name for s in observed} == kernels
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])

# ------------------------------------------------------------------------------------------ singular values
# tkernels/kernels/svd.py: svd_kernel (linalg.svd / svdvals, matrix_norm's 'nuc', 2, -2), no contiguous path;
# every input dtype once (its U, S, Vh in that dtype, the fp32 or fp64 scratch), with and without vectors, both
# row blocks, the targets in turn.
def svd_vector_specs():
    from tkernels.kernels.svd import GPU_BLOCKS

    out = []
    for i, d in enumerate(("float32", "float64", "float16", "bfloat16")):
        w = "float64" if d == "float64" else "float32"
        out.append(spec("tkernels.kernels.svd:svd_kernel", {"x_ptr": d, "w_ptr": w, "v_ptr": w, "sv_ptr": w,
                                                            "s_ptr": d, "wv_ptr": d, "vv_ptr": d},
                        caps=(_rot(CAPS, i),), WANT_VECTORS=i < 2 or i == 3, F64=d == "float64",
                        BLOCK_R=_rot(GPU_BLOCKS, i)))
    return out


GENERATORS.update(svd_kernel=svd_vector_specs)


# tkernels/kernels/svd_complete.py: svd_complete_kernel after either SVD kernel when vectors are wanted; each
# (COMPLEX, F64) set once, every vector dtype (real fp32's in the complex64 spec), the row blocks and targets in turn
def svd_complete_specs():
    from tkernels.kernels.svd import GPU_BLOCKS

    sets = (("float16", False), ("bfloat16", False), ("float64", False), ("float32", True), ("float64", True))
    return [spec("tkernels.kernels.svd_complete:svd_complete_kernel",
                 {"u_ptr": d, "s_ptr": d, "w_ptr": "float64" if d == "float64" else "float32"},
                 caps=(_rot(CAPS, i),), COMPLEX=c, F64=d == "float64", BLOCK_R=_rot(GPU_BLOCKS, i))
            for i, (d, c) in enumerate(sets)]


GENERATORS.update(svd_complete_kernel=svd_complete_specs)


def test_svd_vector_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    """svd (full and reduced, tall and wide) and svdvals on every float dtype, both GPU row blocks."""
    from tkernels.backends.triton import linalg_svd as backend

    monkeypatch.setattr(backend, "INTERPRETED", False)
    # the entries' non-finite check (isfinite, any: generic kernels with their own coverage tests) off:
    # this table is about the decomposition kernels
    monkeypatch.setattr(tk.decompositions, "_check_finite", lambda *a, **k: None)
    for d in _NN_FLOATS:
        for x in (tk.empty((3, 5, 4), dtype=d, device="cuda"), tk.empty((700, 3), dtype=d, device="cuda").mT[:, ::2]):
            tk.linalg.svd(x)
            tk.linalg.svd(x, full_matrices=False)
            tk.linalg.svdvals(x)
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name in ("svd_kernel", "svd_complete_kernel")]
    assert {dict(s.constexprs)["BLOCK_R"] for s in observed} == {64, 512}
    assert {s.name for s in observed} == {"svd_kernel", "svd_complete_kernel"}
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


def test_svd_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    """matrix_norm's singular-value orders on every float dtype (svd_kernel without vectors, then a reduction):
    short and long columns, wide, batched and strided matrices, with the GPU row blocks (launches are recorded,
    nothing runs)."""
    from tkernels.backends.triton import linalg_svd, reduction
    from tkernels.kernels.svd import GPU_BLOCKS

    monkeypatch.setattr(linalg_svd, "INTERPRETED", False)
    # the entries' non-finite check (isfinite, any: generic kernels with their own coverage tests) off:
    # this table is about the decomposition kernels
    monkeypatch.setattr(tk.decompositions, "_check_finite", lambda *a, **k: None)
    monkeypatch.setattr(reduction, "INTERPRETED", False)
    for d in _NN_FLOATS:
        for x in (tk.empty((3, 5, 4), dtype=d, device="cuda"), tk.empty((700, 3), dtype=d, device="cuda").mT[:, ::2]):
            for o in ("nuc", 2, -2):
                tk.matrix_norm(x, ord=o)
    observed = list(dict.fromkeys(recorded_launches))
    assert {s.name for s in observed} == {"svd_kernel", "reduce_kernel"}
    assert {dict(s.constexprs)["BLOCK_R"] for s in observed if s.name == "svd_kernel"} == set(GPU_BLOCKS)
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


# ----------------------------------------------------------------------------------------------- fft
# tkernels/kernels/fft.py: fft_kernel (tkernels.fft's transforms), no contiguous path. The (INVERSE, PRE, POST,
# REAL_IN, REAL_OUT) sets the backend launches: one launch per power of two (c2c, r2c, c2r, each direction), the
# four-step pair (first launch: any pre-factor, the twiddle; second: any post-factor), Bluestein's three
# transforms; each (PRE, POST, REAL_IN, REAL_OUT) set once (INVERSE only flips the sign of the angles, F64 the
# compute type of code every set shares: both directions, float32 and float64, the lane blocks and the targets
# in turn).
def _fft_sets():
    from tkernels.kernels import fft as fk

    sets = set()
    for inv in (False, True):
        for ri, ro in ((False, False), (True, False), (False, True)):
            sets.add((inv, fk.PRE_NONE, fk.POST_NONE, ri, ro))  # a power of two, one launch
            sets.add((inv, fk.PRE_NONE, fk.POST_TWIDDLE, ri, False))  # four-step, first launch
            sets.add((inv, fk.PRE_NONE, fk.POST_NONE, False, ro))  # four-step, second launch
    for ri in (False, True):  # Bluestein's chirped input, in one launch or the first of four-step
        sets.add((False, fk.PRE_CHIRP, fk.POST_NONE, ri, False))
        sets.add((False, fk.PRE_CHIRP, fk.POST_TWIDDLE, ri, False))
    for ro in (False, True):  # Bluestein's chirped output, in one launch or the second of four-step
        sets.add((True, fk.PRE_MUL, fk.POST_CHIRP, False, ro))
        sets.add((True, fk.PRE_NONE, fk.POST_CHIRP, False, ro))
    sets |= {(True, fk.PRE_MUL, fk.POST_TWIDDLE, False, False), (False, fk.PRE_BLUESTEIN_B, fk.POST_NONE, False, False),
             (False, fk.PRE_BLUESTEIN_B, fk.POST_TWIDDLE, False, False)}
    return sorted(sets)


def _fft_compiled_sets():
    """One of each (PRE, POST, REAL_IN, REAL_OUT) set (INVERSE, a sign, free), alternating the directions."""
    first = {}
    for st in _fft_sets():
        first.setdefault(st[1:], []).append(st)
    return [v[k % len(v)] for k, v in enumerate(first.values())]


def fft_specs():
    from tkernels.kernels.fft import GPU_BLOCKS

    out = []
    for k, (inv, pre, post, ri, ro) in enumerate(_fft_compiled_sets()):
        d = _rot(("float32", "float64"), k)
        out.append(spec("tkernels.kernels.fft:fft_kernel", {"x_ptr": d, "y_ptr": d, "w_ptr": d, "m_ptr": d},
                        {"scale_bits": "i64"}, caps=(_rot(CAPS, k // 2),), INVERSE=inv, PRE=pre, POST=post,
                        REAL_IN=ri, REAL_OUT=ro, F64=d == "float64", BLOCK=_rot(GPU_BLOCKS, k // 4)))
    out.append(spec("tkernels.kernels.fft:fft_kernel", {"x_ptr": "float32", "y_ptr": "float32", "w_ptr": "float32",
                                                         "m_ptr": "float32"}, {"scale_bits": "i64"}, aligned=False,
                    caps=(90,), INVERSE=False, PRE=0, POST=0, REAL_IN=False, REAL_OUT=False, F64=False,
                    BLOCK=GPU_BLOCKS[0]))  # a view at an odd offset
    out.append(spec("tkernels.kernels.fft:fft_kernel", {"x_ptr": "float32", "y_ptr": "float32", "w_ptr": "float32",
                                                         "m_ptr": "float32"},
                    {"scale_bits": "i64", "stride_xn": "i64", "stride_yn": "i64", "xt0": "i64", "yt0": "i64"},
                    caps=(80,), INVERSE=False, PRE=0, POST=0, REAL_IN=False, REAL_OUT=False, F64=False,
                    BLOCK=GPU_BLOCKS[1]))  # strides past 2**31 elements
    return out


GENERATORS.update(fft_kernel=fft_specs)


def test_fft_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    """fft, ifft, rfft, ihfft, irfft, hfft (complex, real in, real out, both directions) at a power of two, a
    four-step power of two, and Bluestein lengths whose convolution is one launch or four-step, float32 and
    float64, strided and batched (launches are recorded, nothing runs)."""
    from tkernels.backends.triton import fft as backend
    from tkernels.kernels.fft import GPU_BLOCKS, MAX_SMALL

    monkeypatch.setattr(backend, "INTERPRETED", False)
    for d in (tk.complex64, tk.complex128):
        for n in (64, 2 * MAX_SMALL, 100, MAX_SMALL - 3):
            x = tk.empty((3, n, 2), dtype=d, device="cuda")
            r = tk.empty((n, 3), dtype=tk.dtypes.to_real(d), device="cuda")
            for f in (tk.fft.fft, tk.fft.ifft):
                f(x, axis=1)
            for f in (tk.fft.rfft, tk.fft.ihfft):
                f(r, axis=0)
            for f in (tk.fft.irfft, tk.fft.hfft):
                f(x[:, : n // 2 + 1], n=n, axis=1)
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name == "fft_kernel"]
    assert {(dict(s.constexprs)["INVERSE"], dict(s.constexprs)["PRE"], dict(s.constexprs)["POST"],
             dict(s.constexprs)["REAL_IN"], dict(s.constexprs)["REAL_OUT"]) for s in observed} == set(_fft_sets())
    table = [s for s in SPECS if s.name == "fft_kernel"]
    for key in ("INVERSE", "F64", "BLOCK"):
        assert len({dict(s.constexprs)[key] for s in table}) == 2, key
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])
    assert len(GPU_BLOCKS) == 2
# ------------------------------------------------------------------------------------------------ QR, eigh
# tkernels/kernels/qr.py: qr_kernel (linalg.qr), no contiguous path; every input dtype once (its Q and R in that
# dtype, or the fp32 scratch Q of halves), with and without Q, both row blocks, the targets in turn. eigh runs
# svd_kernel on the shifted matrix (its table above) and elementwise/reduction/copy kernels.
def qr_specs():
    from tkernels.kernels.qr import GPU_BLOCKS

    out = []
    for i, d in enumerate(("float32", "float64", "float16", "bfloat16")):
        w = "float64" if d == "float64" else "float32"
        for want in (True, False):
            q = (d if d in ("float32", "float64") else w) if want else w
            out.append(spec("tkernels.kernels.qr:qr_kernel", {"x_ptr": d, "w_ptr": w, "tau_ptr": w, "q_ptr": q,
                                                              "r_ptr": d},
                            caps=(_rot(CAPS, i),), WANT_Q=want, F64=d == "float64", BLOCK_R=_rot(GPU_BLOCKS, i)))
    return out


GENERATORS.update(qr_kernel=qr_specs)


def test_qr_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    """linalg.qr in every mode, tall and wide, batched and strided, on every float dtype, both GPU row blocks."""
    from tkernels.backends.triton import linalg_qr as backend

    monkeypatch.setattr(backend, "INTERPRETED", False)
    for d in _NN_FLOATS:
        for x in (tk.empty((3, 5, 4), dtype=d, device="cuda"), tk.empty((700, 3), dtype=d, device="cuda")[::2],
                  tk.empty((2, 3, 6), dtype=d, device="cuda").mT):
            for mode in ("reduced", "complete", "r"):
                tk.linalg.qr(x, mode=mode)
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name == "qr_kernel"]
    assert {dict(s.constexprs)["BLOCK_R"] for s in observed} == {64, 512}
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


def test_eigh_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    """linalg.eigh / eigvalsh (both triangles) on every float dtype: svd_kernel and the ops around it."""
    from tkernels.backends.triton import linalg_svd

    monkeypatch.setattr(linalg_svd, "INTERPRETED", False)
    # the entries' non-finite check (isfinite, any: generic kernels with their own coverage tests) off:
    # this table is about the decomposition kernels
    monkeypatch.setattr(tk.decompositions, "_check_finite", lambda *a, **k: None)
    for d in _NN_FLOATS:
        for x in (tk.empty((3, 5, 5), dtype=d, device="cuda"), tk.empty((4, 4), dtype=d, device="cuda").mT):
            for uplo in ("L", "U"):
                tk.linalg.eigh(x, UPLO=uplo)
                tk.linalg.eigvalsh(x, UPLO=uplo)
    observed = list(dict.fromkeys(recorded_launches))
    assert "svd_kernel" in {s.name for s in observed}
# ------------------------------------------------------------------------------------- complex QR, SVD, eigh
# tkernels/kernels/qr_complex.py: cqr_kernel and tkernels/kernels/svd_complex.py: csvd_kernel, on the real pair views
# of complex64/complex128 matrices (every pointer a float32 or float64 one); no contiguous path. cqr: both dtypes
# with and without Q; csvd: both dtypes with vectors and float32 without; the row blocks and targets in turn.
def complex_decomp_specs():
    from tkernels.kernels.qr import GPU_BLOCKS as QR_BLOCKS
    from tkernels.kernels.svd import GPU_BLOCKS as SVD_BLOCKS

    out = []
    for i, (d, want) in enumerate((("float32", True), ("float64", True), ("float64", False), ("float32", False))):
        out.append(spec("tkernels.kernels.qr_complex:cqr_kernel", {p: d for p in ("x_ptr", "w_ptr", "tau_ptr",
                                                                                  "q_ptr", "r_ptr")},
                        caps=(_rot(CAPS, i),), WANT_Q=want, F64=d == "float64", BLOCK_R=_rot(QR_BLOCKS, i)))
    for i, (d, want) in enumerate((("float32", True), ("float64", True), ("float32", False))):
        out.append(spec("tkernels.kernels.svd_complex:csvd_kernel",
                        {p: d for p in ("x_ptr", "w_ptr", "v_ptr", "sv_ptr", "s_ptr", "wv_ptr", "vv_ptr")},
                        caps=(_rot(CAPS, i + 1),), WANT_VECTORS=want, F64=d == "float64",
                        BLOCK_R=_rot(SVD_BLOCKS, i)))
    return out


GENERATORS.update({n: (lambda n=n: [s for s in complex_decomp_specs() if s.name == n])
                   for n in ("cqr_kernel", "csvd_kernel")})


def test_complex_decomp_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    """Complex qr (every mode), svd (full/reduced), svdvals, eigh/eigvalsh (both triangles), matrix_norm's singular
    value orders and householder_product on complex64/complex128: tall, wide, batched, transposed and strided
    matrices, both GPU row blocks (launches are recorded, nothing runs)."""
    from tkernels.backends.triton import linalg_qr, linalg_svd, reduction

    for mod in (linalg_qr, linalg_svd, reduction):
        monkeypatch.setattr(mod, "INTERPRETED", False)
        # the entries' non-finite check (isfinite, any: generic kernels with their own coverage tests) off:
        # this table is about the decomposition kernels
        monkeypatch.setattr(tk.decompositions, "_check_finite", lambda *a, **k: None)
    for d in (tk.complex64, tk.complex128):
        for x in (tk.empty((3, 5, 4), dtype=d, device="cuda"), tk.empty((700, 3), dtype=d, device="cuda")[::2],
                  tk.empty((2, 3, 6), dtype=d, device="cuda").mT, tk.empty((3, 700), dtype=d, device="cuda")):
            for mode in ("reduced", "complete", "r"):
                tk.linalg.qr(x, mode=mode)
            tk.linalg.svd(x)
            tk.linalg.svd(x, full_matrices=False)
            tk.linalg.svdvals(x)
            tk.linalg.matrix_norm(x, ord="nuc")
        for x in (tk.empty((3, 5, 5), dtype=d, device="cuda"), tk.empty((4, 4), dtype=d, device="cuda").mT):
            for uplo in ("L", "U"):
                tk.linalg.eigh(x, UPLO=uplo)
                tk.linalg.eigvalsh(x, UPLO=uplo)
        tk.linalg.householder_product(tk.empty((5, 3), dtype=d, device="cuda"), tk.empty((2,), dtype=d, device="cuda"))
    observed = list(dict.fromkeys(recorded_launches))
    for name in ("cqr_kernel", "csvd_kernel", "svd_complete_kernel"):
        assert {dict(s.constexprs)["BLOCK_R"] for s in observed if s.name == name} == {64, 512}, name
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


# --------------------------------------------------------------------------- Cholesky, LU, triangular solves
# tkernels/kernels/linalg_lu.py: one program per matrix, no contiguous path; every input dtype (fp32 or fp64
# compute), both GPU tiles; trsm_kernel every (LOWER, UNIT, PIVOT) set, the pivots int32 or (unused, PIVOT=0)
# the matrix's dtype; the targets in turn.
_LU_DTYPES = ("float32", "float64", "float16", "bfloat16")


def linalg_lu_specs():
    from tkernels.kernels.linalg_lu import GPU_BLOCKS

    mod = "tkernels.kernels.linalg_lu"
    out = []
    for i, d in enumerate(_LU_DTYPES):
        f64 = d == "float64"
        for b in GPU_BLOCKS:
            out.append(spec(f"{mod}:cholesky_kernel", {"x_ptr": d, "out_ptr": d, "info_ptr": "int32"},
                            caps=(_rot(CAPS, i),), F64=f64, BLOCK_N=b))
            for j, pivot in enumerate((True, False)):  # pivot=False: lu_factor(_ex) / lu without row exchanges
                out.append(spec(f"{mod}:lu_kernel", {"x_ptr": d, "lu_ptr": d, "piv_ptr": "int32",
                                                     "info_ptr": "int32"},
                                caps=(_rot(CAPS, i + 1 + j),), PIVOT=pivot, F64=f64, BLOCK_N=b))
        k = 0
        for lower in (True, False):
            for unit in (True, False):
                for pivot in (0, 1, 2):
                    piv = d if pivot == 0 else "int32"
                    blk = _rot(GPU_BLOCKS, k)
                    out.append(spec(f"{mod}:trsm_kernel", {"a_ptr": d, "b_ptr": d, "out_ptr": d, "piv_ptr": piv},
                                    caps=(_rot(CAPS, i + k),), LOWER=lower, UNIT=unit, PIVOT=pivot, F64=f64,
                                    BLOCK_N=blk, BLOCK_K=128 if blk == 16 else 32))
                    k += 1
    return out


# tkernels/kernels/linalg_blocked.py: the blocked LU's panel (the GPU's row chunk, the widest panel tile: narrower
# panels are masked) and row swaps (in order and reversed), every input dtype; the targets in turn.
def linalg_blocked_specs():
    from tkernels.kernels.linalg_blocked import GPU_PANEL_ROWS, GPU_SWAP_COLS
    from tkernels.kernels.linalg_lu import MAX_BLOCK

    mod = "tkernels.kernels.linalg_blocked"
    out = []
    for i, d in enumerate(_LU_DTYPES):
        for j, pivot in enumerate((True, False)):
            out.append(spec(f"{mod}:lu_panel_kernel", {"w_ptr": d, "piv_ptr": "int32", "info_ptr": "int32"},
                            caps=(_rot(CAPS, i + j),), PIVOT=pivot, F64=d == "float64", BLOCK_R=GPU_PANEL_ROWS,
                            BLOCK_C=MAX_BLOCK))
        for j, rev in enumerate((False, True)):
            out.append(spec(f"{mod}:lu_swap_kernel", {"x_ptr": d, "piv_ptr": "int32"}, caps=(_rot(CAPS, i + j),),
                            REVERSE=rev, BLOCK_C=GPU_SWAP_COLS))
    return out


GENERATORS.update({n: (lambda n=n: [s for s in linalg_lu_specs() if s.name == n])
                   for n in ("cholesky_kernel", "lu_kernel", "trsm_kernel")})
GENERATORS.update({n: (lambda n=n: [s for s in linalg_blocked_specs() if s.name == n])
                   for n in ("lu_panel_kernel", "lu_swap_kernel")})


def test_linalg_lu_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    """cholesky (lower, upper), lu_factor, lu, lu_solve (left/right, adjoint), solve, inv, det on every float
    dtype, small and larger tiles, batched and transposed inputs (launches are recorded, nothing runs)."""
    from tkernels.backends.triton import linalg_lu as backend

    monkeypatch.setattr(backend, "INTERPRETED", False)
    for d in _NN_FLOATS:
        for n in (5, 40):
            x = tk.empty((3, n, n), dtype=d, device="cuda")
            b = tk.empty((3, n, 2), dtype=d, device="cuda")
            for xx in (x, x.mT):
                tk.linalg.cholesky_ex(xx)
                tk.linalg.cholesky_ex(xx, upper=True)
                lu, piv, _ = tk.linalg.lu_factor_ex(xx)
                tk.linalg.lu(xx)
                tk.linalg.lu_factor_ex(xx, pivot=False)
                tk.linalg.lu(xx, pivot=False)
                for left in (True, False):
                    for adjoint in (False, True):
                        tk.linalg.lu_solve(lu, piv, b if left else b.mT, left=left, adjoint=adjoint)
                    for upper in (False, True):
                        for unit in (False, True):
                            tk.linalg.solve_triangular(xx, b if left else b.mT, upper=upper, left=left,
                                                       unitriangular=unit)
                tk.linalg.inv_ex(xx)
    names = {"cholesky_kernel", "lu_kernel", "trsm_kernel"}
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name in names]
    assert {s.name for s in observed} == names
    assert {dict(s.constexprs)["BLOCK_N"] for s in observed} == {16, 64}
    assert {dict(s.constexprs)["PIVOT"] for s in observed if s.name == "lu_kernel"} == {True, False}
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


# ------------------------------------------------------------------------- complex Cholesky, LU, solves
# tkernels/kernels/linalg_complex.py: the complex forms of the one-tile kernels and of the blocked LU's panel, on
# the operands' real pair views (float32 for complex64, float64 for complex128); every (F64, CONJ), (F64, PIVOT)
# and (LOWER, UNIT, PIVOT) set, both GPU tiles with their warp counts; the targets in turn. (The complex row swaps and
# triangles are the real lu_swap_kernel and tri_kernel on the part views.)
def linalg_complex_specs():
    import dataclasses

    from tkernels.backends.triton.linalg_complex import GPU_TRSM_TILE, warps
    from tkernels.kernels.linalg_blocked import GPU_PANEL_ROWS
    from tkernels.kernels.linalg_lu import GPU_BLOCKS, MAX_BLOCK

    mod = "tkernels.kernels.linalg_complex"

    def opt(s, block):
        return dataclasses.replace(s, options=(("num_warps", warps(block)),))

    out = []
    for i, d in enumerate(("float32", "float64")):
        f64 = d == "float64"
        for j, b in enumerate(GPU_BLOCKS):
            out.append(opt(spec(f"{mod}:cholesky_c_kernel", {"x_ptr": d, "out_ptr": d, "info_ptr": "int32"},
                                caps=(_rot(CAPS, i + j),), CONJ=(i + j) % 2 == 1, F64=f64, BLOCK_N=b), b))
            for pivot in (True, False):
                out.append(opt(spec(f"{mod}:lu_c_kernel", {"x_ptr": d, "lu_ptr": d, "piv_ptr": "int32",
                                                          "info_ptr": "int32"},
                                    caps=(_rot(CAPS, i + j + pivot),), PIVOT=pivot, F64=f64, BLOCK_N=b), b))
        k = 0
        for lower in (True, False):
            for unit in (True, False):
                for pivot in (0, 1, 2):
                    piv = d if pivot == 0 else "int32"
                    blk = _rot(GPU_BLOCKS, i + k)
                    out.append(opt(spec(f"{mod}:trsm_c_kernel", {"a_ptr": d, "b_ptr": d, "out_ptr": d,
                                                                 "piv_ptr": piv},
                                        caps=(_rot(CAPS, i + k),), LOWER=lower, UNIT=unit, PIVOT=pivot, F64=f64,
                                        BLOCK_N=blk, BLOCK_K=GPU_TRSM_TILE // blk), blk))
                    k += 1
        for pivot in (True, False):
            out.append(opt(spec(f"{mod}:lu_panel_c_kernel", {"w_ptr": d, "piv_ptr": "int32", "info_ptr": "int32"},
                                caps=(_rot(CAPS, i + pivot),), PIVOT=pivot, F64=f64, BLOCK_R=GPU_PANEL_ROWS,
                                BLOCK_C=MAX_BLOCK), MAX_BLOCK))
    return out


_LINALG_COMPLEX = ("cholesky_c_kernel", "lu_c_kernel", "trsm_c_kernel", "lu_panel_c_kernel")
GENERATORS.update({n: (lambda n=n: [s for s in linalg_complex_specs() if s.name == n]) for n in _LINALG_COMPLEX})


def test_linalg_complex_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    """cholesky (lower, upper), lu_factor, lu (with and without pivoting), lu_solve (left/right, adjoint),
    solve_triangular (every side, triangle and unit flag), inv on complex64 and complex128, both tiles and the
    blocked paths past them, batched and transposed inputs (launches are recorded, nothing runs)."""
    from tkernels.backends.triton import linalg_complex, linalg_lu

    monkeypatch.setattr(linalg_lu, "INTERPRETED", False)
    monkeypatch.setattr(linalg_complex, "INTERPRETED", False)
    for d in ("complex64", "complex128"):
        for n in (5, 40, 70):
            x = tk.empty((2, n, n), dtype=d, device="cuda")
            b = tk.empty((2, n, 3), dtype=d, device="cuda")
            for xx in (x, x.mT):
                tk.linalg.cholesky_ex(xx)
                tk.linalg.cholesky_ex(xx, upper=True)
                lu, piv, _ = tk.linalg.lu_factor_ex(xx)
                tk.linalg.lu(xx)
                tk.linalg.lu_factor_ex(xx, pivot=False)
                tk.linalg.lu(xx, pivot=False)
                for left in (True, False):
                    for adjoint in (False, True):
                        tk.linalg.lu_solve(lu, piv, b if left else b.mT, left=left, adjoint=adjoint)
                    for upper in (False, True):
                        for unit in (False, True):
                            tk.linalg.solve_triangular(xx, b if left else b.mT, upper=upper, left=left,
                                                       unitriangular=unit)
                tk.linalg.inv_ex(xx)
    every = list(dict.fromkeys(recorded_launches))  # also the real kernels on part views, copies, matmul...
    observed = [s for s in every if s.name in _LINALG_COMPLEX]
    assert {s.name for s in observed} == set(_LINALG_COMPLEX)
    assert {dict(s.constexprs)["BLOCK_N"] for s in observed if s.name != "lu_panel_c_kernel"} == {16, 64}
    for name in ("lu_c_kernel", "lu_panel_c_kernel"):
        assert {dict(s.constexprs)["PIVOT"] for s in observed if s.name == name} == {True, False}, name
    assert {"lu_swap_kernel", "tri_kernel", "matmul_kernel"} <= {s.name for s in every}
    missing = [f"{s}: {why}" for s in every if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


# ----------------------------------------------------------------------------------------------- eig, eigvals
# tkernels/kernels/eig.py: eig_kernel, one program per matrix, no contiguous path; every (F64, WANT_VECTORS) set
# (a complex input is its real pair view, float32/float64, and a runtime flag), the half inputs (fp32 compute), both
# GPU tiles with their warp counts (16 for the 64 tile), the targets in turn.
def eig_specs():
    import dataclasses

    from tkernels.backends.triton.linalg_eig import _warps

    sets = [(False, False, "float32", 16), (False, True, "float32", 64), (True, False, "float64", 16),
            (True, True, "float64", 64), (False, True, "float16", 16), (False, False, "bfloat16", 64)]
    out = []
    for i, (f64, want, d, block) in enumerate(sets):
        f = "float64" if f64 else "float32"
        s = spec("tkernels.kernels.eig:eig_kernel", {"x_ptr": d, "s_ptr": f, "w_ptr": f, "v_ptr": f,
                                                     "info_ptr": "int32"},
                 caps=(_rot(CAPS, i),), WANT_VECTORS=want, F64=f64, BLOCK_N=block)
        out.append(dataclasses.replace(s, options=(("num_warps", _warps(block)),)))
    return out


GENERATORS.update(eig_kernel=eig_specs)


# tkernels/kernels/eig_large.py: eig_large_kernel (matrices past eig_kernel's tile), one GPU block; every (F64,
# WANT_VECTORS) set, every input dtype somewhere (fp32 compute for halves), the targets in turn.
def eig_large_specs():
    import dataclasses

    from tkernels.kernels.eig_large import GPU_TILE, GPU_VEC, GPU_WARPS

    sets = [(False, False, "float32"), (True, False, "float64"), (True, True, "float64"), (False, True, "bfloat16"),
            (False, False, "float16")]  # (float32 input with vectors: its flags are bfloat16's, its dtype above)
    out = []
    for i, (f64, want, d) in enumerate(sets):
        f = "float64" if f64 else "float32"
        s = spec("tkernels.kernels.eig_large:eig_large_kernel", {"x_ptr": d, "s_ptr": f, "w_ptr": f, "v_ptr": f,
                                                                 "info_ptr": "int32"},
                 caps=(_rot(CAPS, i),), WANT_VECTORS=want, F64=f64, TILE=GPU_TILE, VEC=GPU_VEC)
        out.append(dataclasses.replace(s, options=(("num_warps", GPU_WARPS),)))
    return out


GENERATORS.update(eig_large_kernel=eig_large_specs)


def test_eig_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    """linalg.eig / eigvals on every float and complex dtype, batched and transposed, both GPU tiles."""
    from tkernels.backends.triton import linalg_eig as backend

    monkeypatch.setattr(backend, "INTERPRETED", False)
    from tkernels import linalg_eig

    monkeypatch.setattr(linalg_eig, "_raise_info", lambda *a: None)  # the info codes are never written here
    for d in _NN_FLOATS + ["complex64", "complex128"]:
        for n in (5, 40):
            for x in (tk.empty((3, n, n), dtype=d, device="cuda"), tk.empty((n, n), dtype=d, device="cuda").mT):
                tk.linalg.eig(x)
                tk.linalg.eigvals(x)
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name == "eig_kernel"]
    assert {dict(s.constexprs)["BLOCK_N"] for s in observed} == {16, 64}
    assert {(dict(s.constexprs)["F64"], dict(s.constexprs)["WANT_VECTORS"]) for s in observed} == {
        (False, False), (False, True), (True, False), (True, True)}
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


def test_eig_large_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    """linalg.eig / eigvals past eig_kernel's tile (65 x 65) on every float and complex dtype, batched and
    transposed."""
    from tkernels.backends.triton import linalg_eig as backend

    monkeypatch.setattr(backend, "INTERPRETED", False)
    from tkernels import linalg_eig

    monkeypatch.setattr(linalg_eig, "_raise_info", lambda *a: None)  # the info codes are never written here
    for d in _NN_FLOATS + ["complex64", "complex128"]:
        for x in (tk.empty((2, 65, 65), dtype=d, device="cuda"), tk.empty((65, 65), dtype=d, device="cuda").mT):
            tk.linalg.eig(x)
            tk.linalg.eigvals(x)
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name == "eig_large_kernel"]
    assert {(dict(s.constexprs)["F64"], dict(s.constexprs)["WANT_VECTORS"]) for s in observed} == {
        (False, False), (False, True), (True, False), (True, True)}
    assert not [s for s in recorded_launches if s.name == "eig_kernel"]
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


def test_linalg_blocked_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    """The blocked LU past the one-tile size: lu_factor (square, tall, wide, transposed), lu, lu_solve (left/right,
    adjoint), solve, inv on every float dtype (launches are recorded, nothing runs)."""
    from tkernels.backends.triton import linalg_lu as backend

    monkeypatch.setattr(backend, "INTERPRETED", False)
    for d in _NN_FLOATS:
        x = tk.empty((2, 70, 70), dtype=d, device="cuda")
        b = tk.empty((2, 70, 3), dtype=d, device="cuda")
        for xx in (x, x.mT, tk.empty((75, 66), dtype=d, device="cuda"), tk.empty((66, 75), dtype=d, device="cuda")):
            tk.linalg.lu_factor_ex(xx)
            tk.linalg.lu(xx)
            tk.linalg.lu_factor_ex(xx, pivot=False)
            tk.linalg.lu(xx, pivot=False)
        lu, piv, _ = tk.linalg.lu_factor_ex(x)
        for left in (True, False):
            for adjoint in (False, True):
                tk.linalg.lu_solve(lu, piv, b if left else b.mT, left=left, adjoint=adjoint)
        tk.linalg.inv_ex(x)
    names = {"lu_panel_kernel", "lu_swap_kernel"}
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name in names]
    assert {s.name for s in observed} == names
    assert {dict(s.constexprs)["PIVOT"] for s in observed if s.name == "lu_panel_kernel"} == {True, False}
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


# ------------------------------------------------------------------------------------------- pooling, resizing
# tkernels/kernels/pool.py: window pooling and its gather backward (every MODE / INDICES / DIV_MODE set with fp32
# and fp64 compute, the fp32 ones taking the input dtypes in turn) and the separable resample kernel (every MODE,
# forward and backward, fp32 and fp64: its operands are the op's arrays or the fp32/fp64 intermediate between the
# H and W passes); an i64 size and an unaligned view each; one target each, the targets in turn.
_POOL = "tkernels.kernels.pool:"


def pool_specs():
    from tkernels.backends.triton.ops_pooling import BLOCK

    gpu_block = 256 if BLOCK == 4096 else BLOCK  # the backend's GPU block (the interpreter's is larger)
    out, k = [], 0
    for f64 in (False, True):
        for mode, ind, div in ((0, False, 0), (0, True, 0), (1, False, 0), (1, False, 1), (1, False, 2)):
            x = "float64" if f64 else _rot(["float32", "float16", "bfloat16"], k)
            out.append(spec(_POOL + "pool2d_kernel", {"x_ptr": x, "y_ptr": x, "idx_ptr": "int64" if ind else x},
                            {"total": "i64"} if k == 0 else None, caps=(_rot(CAPS, k),), MODE=mode, INDICES=ind,
                            DIV_MODE=div, F64=f64, BLOCK=gpu_block))
            k += 1
        for mode, div in ((0, 0), (1, 0), (1, 1), (1, 2)):
            g = "float64" if f64 else _rot(["float32", "float16", "bfloat16"], k)
            out.append(spec(_POOL + "pool2d_bwd_kernel", {"g_ptr": g, "idx_ptr": "int64" if mode == 0 else g,
                                                           "dx_ptr": g}, {"total": "i64"} if k == 5 else None,
                            caps=(_rot(CAPS, k),), MODE=mode, DIV_MODE=div, F64=f64, BLOCK=gpu_block))
            k += 1
        for mode in range(5):
            for bwd in (False, True):
                acc = "float64" if f64 else "float32"
                x = acc if f64 else _rot(["float32", "float16", "bfloat16"], k)
                x, y = (x, acc) if k % 2 else (acc, x)  # the first pass into the intermediate, or the second
                out.append(spec(_POOL + "resample_kernel", {"x_ptr": x, "y_ptr": y},
                                {"sc_bits": "i64", "total": "i64" if k == 9 else "i32"}, caps=(_rot(CAPS, k),),
                                MODE=mode, BWD=bwd, F64=f64, BLOCK=gpu_block))
                k += 1
    out.append(spec(_POOL + "pool2d_kernel", {"x_ptr": "bfloat16", "y_ptr": "bfloat16", "idx_ptr": "int64"},
                    aligned=False, caps=(80,), MODE=0, INDICES=True, DIV_MODE=0, F64=False, BLOCK=gpu_block))
    out.append(spec(_POOL + "resample_kernel", {"x_ptr": "float16", "y_ptr": "float16"}, {"sc_bits": "i64"},
                    aligned=False, caps=(90,), MODE=2, BWD=False, F64=False, BLOCK=gpu_block))
    return out


_POOL_KERNELS = ("pool2d_kernel", "pool2d_bwd_kernel", "resample_kernel")
GENERATORS.update({n: (lambda n=n: [s for s in pool_specs() if s.name == n]) for n in _POOL_KERNELS})


def test_pool_table_covers_what_dispatch_launches(recorded_launches):
    """Every pooling and resizing entry and mode, forward and backward, on every float dtype, contiguous and strided
    inputs, one- and two-pass resizes (launches are recorded, nothing runs)."""
    from tkernels.ops import pooling as pool

    for d in _NN_FLOATS:
        x = tk.empty((2, 3, 6, 5), dtype=d, device="cuda")
        for xx in (x, x.mT):
            shape = xx.shape
            for kw in (dict(return_indices=True), {}):
                pool.max_pool2d(xx, 3, 2, 1, **kw)
            out, idx = pool.max_pool2d(xx, 2, return_indices=True)
            pool.max_pool2d_backward(tk.empty(out.shape, dtype=d, device="cuda"), shape, idx, 2)
            for kw in ({}, dict(count_include_pad=False), dict(divisor_override=2)):
                g = tk.empty(pool.avg_pool2d(xx, 3, 2, 1, **kw).shape, dtype=d, device="cuda")
                pool.avg_pool2d_backward(g, shape, 3, 2, 1, **kw)
            for size in ((3, 4), (6, 2), 1):
                g = tk.empty(pool.adaptive_avg_pool2d(xx, size).shape, dtype=d, device="cuda")
                pool.adaptive_avg_pool2d_backward(g, shape)
            for kw in (dict(scale_factor=2), dict(size=(7, 5)), dict(size=(4, 9), mode="nearest-exact"),
                       dict(size=(4, 9), mode="bilinear"), dict(size=(4, 9), mode="bilinear", align_corners=True),
                       dict(size=(3, 4), mode="area")):
                g = tk.empty(pool.interpolate(xx, **kw).shape, dtype=d, device="cuda")
                pool.interpolate_backward(g, shape, **kw)
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name in _POOL_KERNELS]
    assert {s.name for s in observed} == set(_POOL_KERNELS)
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


# ------------------------------------------------------------------------------------------------- attention
# tkernels/kernels/attention.py: the fused forward, the backward's delta pre-pass, dK/dV and dQ kernels. A lean
# table (a flash-attention specialization at the GPU tiles takes seconds to compile): the production path (float16,
# head dim 64, causal: forward and backward at the backend's GPU config, wgmma asserted on sm_90; bfloat16 head dim
# 128 forward on sm_80, mma asserted), and small tiles (16 x 16, head dim 16; tiles are free in the coverage check)
# for every other accumulation path (IEEE float32, float64), mask kind (bool, additive in float32 or q's dtype),
# dropout, and the dtypes the workload passes in every pointer slot (reduced float32 gradient buffers, dummies).
_ATTN = "tkernels.kernels.attention:"
_ATTN_KERNELS = ("attn_fwd_kernel", "attn_bwd_pre_kernel", "attn_bwd_dkdv_kernel", "attn_bwd_dq_kernel")
_ATTN_SMALL = {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 1}
# (dtype, head dim (None: the small tile), CAUSAL, MASK, DROPOUT, mask dtype, dq/dk/dv dtypes, HAS_DK, HAS_DV,
#  kernels, cap)
_FB = ("attn_fwd_kernel", "attn_bwd_dkdv_kernel", "attn_bwd_dq_kernel")
_ATTN_CASES = (("float16", 64, True, 0, False, "float16", ("float16",) * 3, True, True, _FB, 90),
               ("bfloat16", 128, False, 0, False, "bfloat16", (None,) * 3, True, True, _FB[:1], 80),
               ("bfloat16", None, False, 1, True, "bool", ("float32", "float32", "float32"), True, False, _FB, 90),
               ("float32", None, False, 2, False, "float32", ("float32", "float32", "float32"), False, True, _FB, 80),
               ("float64", None, False, 2, True, "float64", ("float64",) * 3, True, True, _FB, 90),
               ("bfloat16", None, True, 2, False, "bfloat16", ("bfloat16",) * 3, True, True, _FB[1:], 80),
               # the largest tiles of the wide dtypes (shared memory on sm_80)
               ("float32", 256, True, 0, False, "float32", ("float32",) * 3, True, True, _FB[1:2], 80),
               ("float64", 256, False, 0, False, "float64", ("float64",) * 3, True, True, _FB[2:], 80))


def _attn_config(e, d):
    from tkernels import dtypes
    from tkernels.backends.triton import ops_attention

    saved = ops_attention.INTERPRETED
    ops_attention.INTERPRETED = False
    try:
        return ops_attention.config(1, 1, e, dtypes.as_dtype(d))
    finally:
        ops_attention.INTERPRETED = saved


def attention_specs():
    import dataclasses

    out = []
    for d, e, causal, mask, drop, md, (gq, gk, gv), has_dk, has_dv, kernels, cap in _ATTN_CASES:
        acc = "float64" if d == "float64" else "float32"
        cfg = _attn_config(e, d) if e else _ATTN_SMALL
        flags = dict(CAUSAL=causal, MASK=mask, DROPOUT=drop, F64=d == "float64", HALF=d in HALF,
                     IEEE=d in ("float32", "float64"), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                     BLOCK_D=e or 16, BLOCK_DV=e or 16)
        opts = (("num_stages", cfg["num_stages"]), ("num_warps", cfg["num_warps"]))
        ptr = {"q_ptr": d, "k_ptr": d, "v_ptr": d, "m_ptr": md, "lse_ptr": acc}
        bwd = {**ptr, "g_ptr": d, "delta_ptr": acc}
        made = {"attn_fwd_kernel": ({**ptr, "o_ptr": d}, {}),
                "attn_bwd_dkdv_kernel": ({**bwd, "dk_ptr": gk if has_dk else acc, "dv_ptr": gv if has_dv else acc},
                                         {"HAS_DK": has_dk, "HAS_DV": has_dv}),
                "attn_bwd_dq_kernel": ({**bwd, "dq_ptr": gq}, {})}
        for k in kernels:
            s = spec(_ATTN + k, made[k][0], {"p_drop": "fp32"}, caps=(cap,), **made[k][1], **flags)
            out.append(dataclasses.replace(s, options=opts))
    for i, d in enumerate(_NN_FLOATS):  # float16 at its GPU config, the others small
        cfg = _attn_config(64, d) if d == "float16" else _ATTN_SMALL
        out.append(spec(_ATTN + "attn_bwd_pre_kernel", {"o_ptr": d, "g_ptr": d, "delta_ptr": "float64" if d ==
                        "float64" else "float32"}, caps=(_rot(CAPS, i),), F64=d == "float64", BLOCK_M=cfg["BLOCK_M"],
                        BLOCK_DV=64 if d == "float16" else 16))
    return out


GENERATORS.update({n: (lambda n=n: [s for s in attention_specs() if s.name == n]) for n in _ATTN_KERNELS})


def check_attention_ptx(s: Spec, cap: int, out: dict) -> None:
    """float16/bfloat16 products on tensor cores: wgmma on sm_90 (at the GPU tiles), mma.sync on sm_80."""
    c = dict(s.constexprs)
    if c.get("HALF") and (cap == 80 or c["BLOCK_M"] >= 64):
        assert out["wgmma" if cap == 90 else "mma_sync"], f"{s}: no {'wgmma' if cap == 90 else 'mma'} for sm_{cap}"


def test_attention_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    """scaled_dot_product_attention forward and backward with the GPU configs: every float dtype, head dims 64 and
    128, causal, bool / float32 / q-dtype masks, dropout, broadcast and GQA inputs (reduced gradients), with and
    without the forward's statistics, some gradients not needed (launches are recorded, nothing runs)."""
    from tkernels.backends.triton import ops_attention
    from tkernels.ops import attention

    monkeypatch.setattr(ops_attention, "INTERPRETED", False)
    for d in _NN_FLOATS:
        for e in (64, 128):
            q, k = (tk.empty((2, 3, n, e), dtype=d, device="cuda") for n in (5, 7))
            g = tk.empty((2, 3, 5, e), dtype=d, device="cuda")
            masks = [None, tk.empty((5, 7), dtype=tk.bool, device="cuda"), tk.empty((5, 7), dtype="float32",
                     device="cuda"), tk.empty((5, 7), dtype=d, device="cuda")]
            for causal, m, p in [(c, None, 0.0) for c in (False, True)] + [(False, m, 0.0) for m in masks[1:]] + \
                    [(False, masks[1], 0.2)]:
                out, lse, st = attention.scaled_dot_product_attention(q, k, k, m, p, causal, return_stats=True)
                attention.scaled_dot_product_attention(q, k, k, m, p, causal)
                attention.scaled_dot_product_attention_backward(g, q, k, k, out, lse, m, p, causal, rng_state=st)
                attention.scaled_dot_product_attention_backward(g, q, k, k, out, None, m, p, causal, rng_state=st,
                                                                needs=(False, True, False))
                attention.scaled_dot_product_attention_backward(g, q, k, k, out, lse, m, p, causal, rng_state=st,
                                                                needs=(True, False, True))
            kb = tk.empty((1, 3, 7, e), dtype=d, device="cuda")  # broadcast: reduced float32 gradient buffers
            attention.scaled_dot_product_attention_backward(g, q, kb, kb, out, lse)
            attention.scaled_dot_product_attention_backward(g, q.mT.mT, kb[:, :1], kb[:, :1], out, lse,
                                                            enable_gqa=True)
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name in _ATTN_KERNELS]
    assert {s.name for s in observed} == set(_ATTN_KERNELS)
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


# complex kernels (tkernels/kernels/complex.py): judged by regions like the elementwise ones (``_ew_features``):
# every OP once (the two compute types in turn, continuing from op to op), every flag value (CONTIGUOUS, the
# operand kinds) and scalar type with each CT, every dtype in every pointer slot; the product's tiles all compiled
_CX = "tkernels.kernels.complex:"
CX_KERNELS = ("complex_unary_kernel", "complex_binary_kernel")
_CX_FLOAT = {CT_F32: "float32", CT_F64: "float64"}
_CX_SCALARS = {CT_F32: ("fp32",), CT_F64: ("i64", "i32")}  # float64 parts as bit patterns (0.0's is an i32)
_EW_SCALARS.update(complex_unary_kernel=("n",), complex_binary_kernel=("a_re", "a_im", "b_re", "b_im", "n"))


def _cx_unary(op, ct, contiguous=True, scalars=None, aligned=True, caps=CAPS):
    from tkernels.kernels.complex import CUNARY_CODES, CUNARY_OUT, OUT_BOOL

    code = CUNARY_CODES[op]
    f = _CX_FLOAT[ct]
    return spec(_CX + "complex_unary_kernel", {"x_ptr": f, "y_ptr": "bool" if CUNARY_OUT[code] == OUT_BOOL else f},
                scalars, aligned, caps=caps, OP=code, CT=ct, CONTIGUOUS=contiguous, BLOCK=GPU_BLOCK)


def _cx_binary(op, ct, kinds=(0, 0), contiguous=True, scalar=None, aligned=True, caps=CAPS):
    """``kinds``: (A_KIND, B_KIND), 0 a complex pair view, 1 a real array (float32 or float64: the backend casts
    others first), 2 a scalar (its pointer slot holds the output); ``scalar``: the Triton type of its parts."""
    from tkernels.kernels.complex import CBINARY_CODES

    code = CBINARY_CODES[op]
    y = "bool" if code >= 5 else _CX_FLOAT[ct]
    ptr = {0: _CX_FLOAT[ct], 1: _rot(list(_CX_FLOAT.values()), code), 2: y}
    scal = scalar or _CX_SCALARS[ct][0]
    return spec(_CX + "complex_binary_kernel", {"a_ptr": ptr[kinds[0]], "b_ptr": ptr[kinds[1]], "y_ptr": y},
                {f"{s}_{p}": scal for s in "ab" for p in ("re", "im")}, aligned, caps=caps, OP=code, CT=ct,
                A_KIND=kinds[0], B_KIND=kinds[1], CONTIGUOUS=contiguous, BLOCK=GPU_BLOCK)


def complex_specs():
    from tkernels.backends.triton.complex_pairs import _PROD_TILES
    from tkernels.kernels.complex import CBINARY_CODES, CUNARY_CODES

    cts = list(_CX_FLOAT)
    out = [_cx_unary(op, _rot(cts, k), caps=(_rot(CAPS, k),)) for k, op in enumerate(CUNARY_CODES)]
    out += [_cx_binary(op, _rot(cts, k + 1), caps=(_rot(CAPS, k),)) for k, op in enumerate(CBINARY_CODES)]
    for k, ct in enumerate(cts):
        out.append(_cx_unary(_rot(["exp", "log"], k), ct, contiguous=False, caps=(_rot(CAPS, k),)))
        # every operand kind in both slots and the strided layout (the op specs: complex operands, contiguous), a
        # comparison so that a scalar's slot holds the bool output; the second scalar type of float64 (0.0's bits)
        out.append(_cx_binary("equal", ct, (1, 2), contiguous=False, caps=(_rot(CAPS, k),)))
        out.append(_cx_binary("not_equal", ct, (2, 1), scalar=_CX_SCALARS[ct][-1], caps=(_rot(CAPS, k + 1),)))
        for j, (bm, br) in enumerate(_PROD_TILES):
            out.append(spec(_CX + "complex_prod_kernel", {"x_ptr": _CX_FLOAT[ct], "y_ptr": _CX_FLOAT[ct]},
                            caps=(_rot(CAPS, j + k),), CT=ct, BLOCK_M=bm, BLOCK_R=br))
            for initial in (False, True):
                out.append(spec(_CX + "complex_cumprod_kernel", {"x_ptr": _CX_FLOAT[ct], "y_ptr": _CX_FLOAT[ct]},
                                caps=(_rot(CAPS, j + k + initial),), CT=ct, INITIAL=initial, BLOCK_M=bm,
                                BLOCK_R=br))
    out.append(_cx_unary("sqrt", CT_F32, scalars={"n": "i64"}, caps=(90,)))
    out.append(_cx_binary("divide", CT_F64, (0, 1), aligned=False, caps=(80,)))
    return out


GENERATORS.update({n: (lambda n=n: [s for s in complex_specs() if s.name == n])
                   for n in (*CX_KERNELS, "complex_prod_kernel", "complex_cumprod_kernel")})


SPECS = list(dict.fromkeys(s for gen in GENERATORS.values() for s in gen()))

# how coverage is judged per kernel (see the module docstring)
EXACT = {"fill_kernel": ("y_ptr", "value"), "copy_kernel": ("x_ptr", "y_ptr")}
CONTIGUOUS_FLAGS = {"fill_kernel": ("CONTIGUOUS",), "copy_kernel": ("X_CONTIGUOUS", "Y_CONTIGUOUS"),
                    "binary_kernel": ("CONTIGUOUS",)}
FREE_ON_STRIDED = {}
TYPED_SCALARS = {"fill_kernel": ("value", "n"), "copy_kernel": ("n",), "binary_kernel": ("a_scalar", "b_scalar", "n")}
TYPED_SCALARS.update(complex_prod_kernel=("M", "R", "stride_xm", "stride_xr"),  # the others: _EW_SCALARS
                     complex_cumprod_kernel=("M", "L", "stride_xm", "stride_xl"))
CONTIGUOUS_FLAGS.update(complex_prod_kernel=(), complex_cumprod_kernel=(), complex_unary_kernel=("CONTIGUOUS",),
                        complex_binary_kernel=("CONTIGUOUS",))
# the elementwise families are judged per code region instead (_ew_uncovered)
CONTIGUOUS_FLAGS.update(unary_kernel=("CONTIGUOUS",), ternary_kernel=("CONTIGUOUS",))
TYPED_SCALARS.update(_EW_SCALARS)
# reductions and scans have no contiguous path: op codes, tiles and offset modes vary freely (each is compiled
# by construction, see reduce_specs/scan_specs); accumulation, stage and every dtype position are checked
CONTIGUOUS_FLAGS.update(reduce_kernel=(), scan_kernel=())
FREE_ON_STRIDED.update(reduce_kernel=("OP", "ROW_ND", "RED_ND", "BLOCK_M", "BLOCK_R"),
                       scan_kernel=("OP", "ROW_ND", "BLOCK_M", "BLOCK_R"))
TYPED_SCALARS.update(reduce_kernel=("M", "R", "R_PER", "scal"), scan_kernel=("M", "L"))
# optimizer steps: no scalar arguments, no contiguous path; every constexpr set is compiled
CONTIGUOUS_FLAGS.update(adam_kernel=(), adam_count_kernel=(), sgd_kernel=())
TYPED_SCALARS.update(adam_kernel=(), adam_count_kernel=(), sgd_kernel=())
# nn row kernels: no contiguous path; tiles, offset modes and optional operands (weights, stats...) vary freely
# (compiled by construction, see nn_*_specs); ops/modes, accumulation, passes and every dtype position are checked
_NN_FREE = ("ROW_ND", "BLOCK_M", "BLOCK_N", "BLOCK_C", "BLOCK_K", "BLOCK_D", "BLOCK")
CONTIGUOUS_FLAGS.update(softmax_kernel=(), norm_fwd_kernel=(), norm_bwd_kernel=(), ce_fwd_kernel=(),
                        ce_bwd_kernel=(), loss_sum_kernel=(), embedding_kernel=())
FREE_ON_STRIDED.update(softmax_kernel=_NN_FREE, embedding_kernel=_NN_FREE, loss_sum_kernel=_NN_FREE,
                       norm_fwd_kernel=_NN_FREE + ("HAS_W", "HAS_B", "STATS"),
                       norm_bwd_kernel=_NN_FREE + ("HAS_W", "HAS_DX", "HAS_DW", "HAS_DB"),
                       ce_fwd_kernel=_NN_FREE + ("HAS_W", "SMOOTH", "STORE_LSE", "STORE_RW"),
                       ce_bwd_kernel=_NN_FREE + ("HAS_W", "SMOOTH", "HAS_LSE", "G_MODE", "MEAN"))
TYPED_SCALARS.update(softmax_kernel=("M", "N"), norm_fwd_kernel=("M", "N", "eps"), norm_bwd_kernel=("M", "N"),
                     ce_fwd_kernel=("M", "C", "ignore_index", "ls_bits"),
                     ce_bwd_kernel=("M", "C", "ignore_index", "ls_bits", "g_bits"), loss_sum_kernel=("M",),
                     embedding_kernel=("K", "D", "n", "pad"))
# batch/group norm, embedding renorm: the same; the optional operands (weights, saved and running stats) and the norm
# type (each compiled by construction) vary freely
CONTIGUOUS_FLAGS.update({n: () for n in _CHANNEL_KERNELS})
FREE_ON_STRIDED.update(channel_reduce_kernel=_NN_FREE + ("BLOCK_R", "HAS_W"),
                       channel_apply_kernel=_NN_FREE + ("BLOCK_R", "HAS_W", "HAS_B"),
                       channel_finalize_kernel=_NN_FREE + ("BLOCK_R", "BLOCK_P", "STATS", "HAS_RM", "HAS_RV"),
                       renorm_rows_kernel=_NN_FREE + ("NORM",))
TYPED_SCALARS.update(channel_reduce_kernel=("L", "eps"), channel_apply_kernel=("L", "eps"),
                     channel_finalize_kernel=("eps", "momentum", "keep", "bessel"),
                     renorm_rows_kernel=("max_norm", "p"))
# random numbers and dropout: no contiguous path (outputs are fresh); every constexpr set and dtype position checked
CONTIGUOUS_FLAGS.update(random_kernel=(), permutation_kernel=(), dropout_kernel=())
TYPED_SCALARS.update(random_kernel=("n",), permutation_kernel=("n",), dropout_kernel=("n", "p"))
# indexing, movement and sorting kernels: no contiguous path; the sort tiles vary freely (the GPU set is compiled)
CONTIGUOUS_FLAGS.update({n: () for n in _IDX_KERNELS})
TYPED_SCALARS.update({n: ("n",) for n in _IDX_KERNELS})
TYPED_SCALARS.update(axis_kernel=("value", "n"), offsets_kernel=("value", "n"), check_kernel=("n", "lo", "hi"),
                     range_kernel=("n", "start", "step", "last"))
FREE_ON_STRIDED.update(block_sort_kernel=("ROWS", "LOG"))
# device_assert: no contiguous path (its input is made contiguous); the size and bound types checked
CONTIGUOUS_FLAGS.update(assert_kernel=(), lstm_cell_kernel=(), standard_gamma_grad_kernel=(), spmm_kernel=())
TYPED_SCALARS.update(assert_kernel=("n", "bound"), lstm_cell_kernel=("n", "H"), standard_gamma_grad_kernel=("n",),
                     spmm_kernel=("nnz",))
FREE_ON_STRIDED.update(spmm_kernel=("BLOCK_Z", "BLOCK_K"))
# matmul: no contiguous path; DOT and every dtype position are checked, tiles (autotune configs) and the epilogue
# flags vary freely (spread over the table by construction, see matmul_specs)
CONTIGUOUS_FLAGS.update(matmul_kernel=())
TYPED_SCALARS.update(matmul_kernel=("M", "N", "K"))
FREE_ON_STRIDED.update(matmul_kernel=("ACT", "HAS_BIAS", "HAS_RESIDUAL", "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"))
# convolution: no contiguous path; DOT, F64 and every dtype position checked (the GEMM's tiles and bias vary freely)
CONTIGUOUS_FLAGS.update(conv_gemm_kernel=(), im2col_kernel=(), col2im_kernel=())
TYPED_SCALARS.update(conv_gemm_kernel=("M",), im2col_kernel=("total",), col2im_kernel=("total",))
FREE_ON_STRIDED.update(conv_gemm_kernel=("HAS_BIAS", "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"))
# singular values: no contiguous path; the norm and the row block vary freely (both blocks and every norm are compiled)
CONTIGUOUS_FLAGS.update(svd_kernel=())
FREE_ON_STRIDED.update(svd_kernel=("WANT_VECTORS", "BLOCK_R"))
TYPED_SCALARS.update(svd_kernel=("R", "C"))
CONTIGUOUS_FLAGS.update(svd_complete_kernel=())
FREE_ON_STRIDED.update(svd_complete_kernel=("BLOCK_R",))
TYPED_SCALARS.update(svd_complete_kernel=("R", "K"))
# fft: no contiguous path; every launched (PRE, POST, REAL_IN, REAL_OUT) set is compiled, the direction, compute
# type and lane block vary freely (both values of each are compiled); every dtype position, the scale's type
CONTIGUOUS_FLAGS.update(fft_kernel=())
FREE_ON_STRIDED.update(fft_kernel=("INVERSE", "F64", "BLOCK"))
TYPED_SCALARS.update(fft_kernel=("scale_bits",))
CONTIGUOUS_FLAGS.update(qr_kernel=())
FREE_ON_STRIDED.update(qr_kernel=("BLOCK_R",))
TYPED_SCALARS.update(qr_kernel=("M", "N", "K", "QC", "RR"))
CONTIGUOUS_FLAGS.update(cqr_kernel=(), csvd_kernel=())
FREE_ON_STRIDED.update(cqr_kernel=("BLOCK_R",), csvd_kernel=("WANT_VECTORS", "BLOCK_R"))
TYPED_SCALARS.update(cqr_kernel=("M", "N", "K", "QC", "RR"), csvd_kernel=("R", "C"))
CONTIGUOUS_FLAGS.update(cholesky_kernel=(), lu_kernel=(), trsm_kernel=(), lu_panel_kernel=(), lu_swap_kernel=())
FREE_ON_STRIDED.update(cholesky_kernel=("BLOCK_N",), lu_kernel=("BLOCK_N",), trsm_kernel=("BLOCK_N", "BLOCK_K"),
                       lu_panel_kernel=("BLOCK_R", "BLOCK_C"), lu_swap_kernel=("BLOCK_C",))
TYPED_SCALARS.update(cholesky_kernel=("N",), lu_kernel=("M", "N"), trsm_kernel=("N", "K"),
                     lu_panel_kernel=("M", "K0", "NB", "KP"), lu_swap_kernel=("P", "C", "OFF"))
CONTIGUOUS_FLAGS.update({n: () for n in _LINALG_COMPLEX})
FREE_ON_STRIDED.update(cholesky_c_kernel=("BLOCK_N", "num_warps"), lu_c_kernel=("BLOCK_N", "num_warps"),
                       trsm_c_kernel=("BLOCK_N", "BLOCK_K", "num_warps"),
                       lu_panel_c_kernel=("BLOCK_R", "BLOCK_C", "num_warps"))
TYPED_SCALARS.update(cholesky_c_kernel=("N",), lu_c_kernel=("M", "N"), trsm_c_kernel=("N", "K"),
                     lu_panel_c_kernel=("M", "K0", "NB", "KP"))
CONTIGUOUS_FLAGS.update(eig_kernel=())
FREE_ON_STRIDED.update(eig_kernel=("BLOCK_N", "num_warps"))
TYPED_SCALARS.update(eig_kernel=("N", "maxit"))
CONTIGUOUS_FLAGS.update(eig_large_kernel=())
FREE_ON_STRIDED.update(eig_large_kernel=("num_warps",))  # one value, the options of every table entry
TYPED_SCALARS.update(eig_large_kernel=("N", "maxit"))
# pooling and resizing: no contiguous path; every flag set and dtype position checked, the size's and scale's types
CONTIGUOUS_FLAGS.update(pool2d_kernel=(), pool2d_bwd_kernel=(), resample_kernel=())
TYPED_SCALARS.update(pool2d_kernel=("total",), pool2d_bwd_kernel=("total",), resample_kernel=("total", "sc_bits"))
# attention: no contiguous path; the accumulation path (F64, HALF, IEEE) and every dtype position are checked, the
# tiles, launch options and feature flags vary freely (each value is compiled somewhere, see attention_specs)
CONTIGUOUS_FLAGS.update({n: () for n in _ATTN_KERNELS})
FREE_ON_STRIDED.update({n: ("CAUSAL", "MASK", "DROPOUT", "HAS_DK", "HAS_DV", "BLOCK_M", "BLOCK_N", "BLOCK_D",
                            "BLOCK_DV", "num_warps", "num_stages") for n in _ATTN_KERNELS})
TYPED_SCALARS.update({n: ("L", "S", "p_drop") for n in _ATTN_KERNELS}, attn_bwd_pre_kernel=("L",))



def _is_contiguous(s: Spec) -> bool:
    consts = dict(s.constexprs)
    flags = CONTIGUOUS_FLAGS[s.name]
    return bool(flags) and all(consts[f] for f in flags)  # () : a kernel without a contiguous path


def _args(s: Spec) -> dict:
    """Pointer dtypes and typed scalars of ``s`` (unlisted scalars are "i32")."""
    typed = s.typed()
    return {**dict(s.pointers), **{a: typed.get(a, "i32") for a in TYPED_SCALARS[s.name]}}


def _flags(s: Spec, free=()) -> dict:
    return {k: v for k, v in s.constexprs if k != "BLOCK" and k not in free}


def uncovered(obs: Spec, table) -> str | None:
    """Why ``table`` does not cover the observed specialization ``obs`` (None when it does)."""
    if obs.name in EW_KERNELS or obs.name in CX_KERNELS:
        return _ew_uncovered(obs, table)
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
    from tkernels.checks import device_assert
    from tkernels.cuda import device_errors

    device_assert(tk.asarray([True, True], device="cuda"), "multinomial", device_errors.INVALID_DISTRIBUTION)
    from tkernels.ops.rnn import lstm_cell, lstm_cell_backward

    for d in (tk.float32, tk.bfloat16, tk.float64):
        g, c = tk.zeros((2, 8), dtype=d, device="cuda"), tk.zeros((2, 2), dtype=d, device="cuda")
        h, cn = lstm_cell(g, g, c)
        lstm_cell_backward(h, cn, g, g, c, cn)
        lstm_cell_backward(None, cn, g, g, c, cn)
    a = tk.ones((3, 5), dtype=tk.float64, device="cuda")
    tk.ops.standard_gamma_grad(a, a)
    tk.ops.standard_gamma_grad(a[:, 1:], a[:, :4])  # (views: made contiguous first)
    idx = tk.asarray([0, 2, 0], device="cuda")
    for d in (tk.float32, tk.float16, tk.bfloat16, tk.float64):
        x = tk.ones((3, 6), dtype=d, device="cuda")
        for k in (1, 3, 6):
            tk.ops.spmm(idx, idx, x[0, :3], x[:, :k], 3)
            tk.ops.sddmm(idx, idx, x[:, :k], x[:, ::2][:, :k] if k <= 3 else x[:, :k])
    vals = {"f": [0.0, 2.5, True, 3], "i": [0, -7, True], "u": [0, 200], "b": [True, False]}
    for d in REAL_DTYPES:
        for v in vals[d.kind] + ([-(2**40)] if d is tk.int64 else []):
            tk.full((3, 5), v, dtype=d, device="cuda")
            tk.empty((4, 6), dtype=d, device="cuda")[1:, ::2][...] = v
    arrays = {d: tk.empty((4, 6), dtype=d, device="cuda") for d in REAL_DTYPES}
    for d, x in arrays.items():
        for dd in REAL_DTYPES:
            x.astype(dd)
            x[:, ::2].astype(dd)
            x.mT.astype(dd)
        tk.empty((6, 4), dtype=d, device="cuda")[:, ::2][...] = x[::2].mT
    _elementwise_workload()


def _elementwise_workload():
    """Every elementwise op on every dtype it takes: contiguous, strided and broadcast operands, Python scalars of
    every kind on either side, parameters, mixed dtypes, 0-d operands of a wider dtype, out= of another dtype."""
    ew = _elementwise
    arrays = {d: tk.empty((4, 6), dtype=d, device="cuda") for d in REAL_DTYPES}
    for d, x in arrays.items():
        floating = d.kind == "f"
        for name, kind in ew.UNARY.items():
            if not (kind == "bits" and floating or d.kind == "b" and name in ew._NO_BOOL):
                f = (lambda a: tk.polygamma(2, a)) if name == "polygamma" else getattr(tk, name)
                f(x)
                f(x[:, ::2])
        tk.round(x, decimals=2)
        tk.round(x[::2], decimals=-1)
        if d.kind != "b":
            tk.leaky_relu(x, negative_slope=0.2)
            tk.nan_to_num(x[:, ::2], nan=1.0, posinf=2.0, neginf=-2.0)
        for f in (tk.gelu, tk.softplus, tk.elu, tk.logit):
            kw = {tk.gelu: {"approximate": "tanh"}, tk.softplus: {"beta": 2.0}, tk.elu: {"alpha": 0.5},
                  tk.logit: {"eps": 0.1}}[f]
            f(x, **kw)
            f(x.mT, **kw)
        tk.exp(x, out=tk.empty((4, 6), dtype=tk.float64, device="cuda"))
        tk.isnan(x, out=tk.empty((4, 6), dtype=tk.int32, device="cuda"))
        scal = {"f": [2.5, 0.0, 3, True], "i": [3, -7] + ([-(2**40)] if d is tk.int64 else []), "u": [3, 200],
                "b": [True, 1]}[d.kind]
        for name, kind in ew.BINARY.items():
            if kind == "bits" and floating or d.kind == "b" and name in ew._NO_BOOL:
                continue
            f = getattr(tk, name)
            f(x, x)
            f(x[:, ::2], x[:, 1::2])
            f(x, x[:1])  # broadcast
            for v in scal + ([] if kind == "bits" else [0.5]):
                if not (name == "pow" and not floating and v < 0):  # integers to negative powers raise
                    f(x, v)
                f(v, x)
        tk.where(arrays[tk.bool], x, x[:1])
        tk.where(arrays[tk.bool][:, ::2], x[:, 1::2], scal[0])
        tk.where(arrays[tk.bool][::2], scal[-1], x[::2])
        tk.where(arrays[tk.bool], scal[0], scal[-1])
        if d.kind != "b":
            tk.clip(x, -1, 2)
            tk.clip(x, None, 1)
            tk.clip(x[:, ::2], 0, None)
            tk.clip(x, x[:1], x[:, :1])
            tk.clip(x, x[0, 0], 3)
        if floating:
            tk.lerp(x, x.mT.mT, x[:1])
            tk.lerp(x, x.mT.mT, 0.25)
            tk.lerp(1.5, x, x)
            tk.lerp(x[::2], 2.0, 0.5)
        tk.add(x, 2.5)  # integers with a float scalar: float32
        for other in arrays.values():
            if tk.dtypes._PROMO.get((d, other.dtype)) is None:  # uint64 with a signed integer: TypeError
                continue
            tk.add(x, other)
            tk.less(x, other)
            tk.logical_xor(x, other[:1])
            tk.multiply(x[::2], other[1::2])
            tk.where(tk.astype(other, tk.bool), x, other)
            tk.maximum(x, other[0, 0])  # a 0-d operand of a wider integer dtype is narrowed first


def _complex_workload():
    """Every complex op the cuda backend serves, on both complex dtypes: contiguous, strided and broadcast
    operands, complex/real/integer arrays and Python scalars on either side, casts to and from every dtype,
    fills, where, the reductions and matmul (the real kernels they reach through the pair views included)."""
    ew = _elementwise
    b = tk.empty((4, 6), dtype=tk.bool, device="cuda")
    for d in (tk.complex64, tk.complex128):
        x = tk.empty((4, 6), dtype=d, device="cuda")
        for name in sorted(ew.COMPLEX_UNARY):
            getattr(tk, name)(x)
            getattr(tk, name)(x[:, ::2])
        tk.conj(x.mT)
        tk.exp(x, out=tk.empty((4, 6), dtype=tk.complex128, device="cuda"))
        tk.abs(x, out=tk.empty((4, 6), dtype=tk.float64, device="cuda"))
        for name in sorted(ew.COMPLEX_BINARY):
            f = getattr(tk, name)
            for other in (x, x[:1], 2.5, 1j, 3, True, *(tk.empty((4, 6), dtype=r, device="cuda")
                                                       for r in [*REAL_DTYPES, tk.complex64, tk.complex128])):
                f(x, other)
                f(other, x[:, ::2] if not isinstance(other, tk.Array) else x)
        for other in (0.5, 1j, x[:1], tk.empty((4, 6), dtype=tk.float32, device="cuda")):
            tk.where(b, x, other)
            tk.where(b, other, x.mT.mT)
        tk.where(b[:, ::2], 1j, x[:, 1::2])
        for r in [*REAL_DTYPES, tk.complex64, tk.complex128]:
            x.astype(r)
            x[:, ::2].astype(r)
            tk.empty((4, 6), dtype=r, device="cuda").astype(d)
        tk.full((3, 5), 1 - 2j, dtype=d, device="cuda")
        x[1:, ::2] = 2j
        for op in (tk.sum, tk.prod, tk.mean):
            for axis in (0, 1, None):
                op(x, axis=axis)
                op(x.mT, axis=axis)
        tk.sum(x, axis=0, dtype=tk.complex128)
        tk.cumulative_sum(x, axis=1)
        tk.cumulative_sum(x.mT, axis=0)
        tk.cumulative_prod(x, axis=1)
        tk.cumulative_prod(x.mT, axis=1, include_initial=True)
        tk.cumulative_prod(tk.empty((2, 300), dtype=d, device="cuda"), axis=1)
        tk.vecdot(x, x[:1])
        tk.vector_norm(x, axis=1)
        x @ x.mT
        x.mT @ tk.empty((4, 3), dtype=d, device="cuda")
        tk.empty((2, 3, 4), dtype=d, device="cuda") @ tk.empty((4, 5), dtype=d, device="cuda")


def test_complex_table_covers_what_dispatch_launches(recorded_launches):
    _complex_workload()
    observed = list(dict.fromkeys(recorded_launches))
    kernels = {s.name for s in observed}
    assert {"complex_unary_kernel", "complex_binary_kernel", "complex_prod_kernel", "complex_cumprod_kernel"} <= kernels
    assert kernels <= set(GENERATORS), f"kernels launched without an AOT generator: {kernels - set(GENERATORS)}"
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


def test_complex_table_compiles_every_op():
    from tkernels.kernels.complex import CBINARY_CODES, CUNARY_CODES

    seen = {(s.name, dict(s.constexprs)["OP"]) for s in SPECS if s.name in CX_KERNELS}
    want = {("complex_unary_kernel", c) for c in CUNARY_CODES.values()}
    want |= {("complex_binary_kernel", c) for c in CBINARY_CODES.values()}
    assert want <= seen, sorted(want - seen)


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


def test_elementwise_coverage_check_can_fail():
    f64_pow = _binary("pow", CT_F64, "float64", "float64", "float64", caps=(80,))
    assert uncovered(f64_pow, SPECS) is None
    no_pow = [s for s in SPECS if s.name != "binary_kernel" or dict(s.constexprs)["OP"] != BINARY_CODES["pow"]]
    assert f"('op', {BINARY_CODES['pow']})" in uncovered(f64_pow, no_pow)
    i8_into_f64 = _ternary("where", CT_F64, "bool", "int8", "float64", "float64", contiguous=False)
    assert uncovered(i8_into_f64, SPECS) is None
    no_i8 = [s for s in SPECS if s.name != "ternary_kernel" or dict(s.pointers)["b_ptr"] != "int8"]
    assert "b_ptr" in uncovered(i8_into_f64, no_i8)
    f64_strided = [s for s in SPECS if s.name != "unary_kernel" or dict(s.constexprs)["CT"] != CT_F64
                   or dict(s.constexprs)["CONTIGUOUS"]]
    assert "CONTIGUOUS" in uncovered(_unary("exp", CT_F64, "float64", "float64", contiguous=False), f64_strided)


def test_elementwise_table_compiles_every_op_and_every_compute_type():
    seen = {(s.name, dict(s.constexprs)["OP"]) for s in SPECS if s.name in EW_KERNELS}
    want = {("unary_kernel", UNARY_CODES[c]) for c, _, _ in _unary_cases()}
    want |= {("binary_kernel", BINARY_CODES[n]) for n, _, _ in _binary_cases()}
    want |= {("ternary_kernel", c) for c in TERNARY_CODES.values()}
    assert want <= seen, sorted(want - seen)
    assert {c for k, c in want if k == "unary_kernel"} >= set(UNARY_CODES.values()) - {UNARY_CODES["positive"]}
    assert {c for k, c in want if k == "binary_kernel"} == set(BINARY_CODES.values())
    for kernel in EW_KERNELS:  # every compute type with several ops (the math helpers in float32 and float64)
        for ct in _CLASS:
            ops = {dict(s.constexprs)["OP"] for s in SPECS if s.name == kernel and dict(s.constexprs)["CT"] == ct}
            assert len(ops) >= 2, (kernel, ct, ops)


def _reduction_workload(monkeypatch):
    """Every reduction and scan entry on every dtype, short rows and split rows, strided views, with the
    backend's GPU tiling and splitting (launches are recorded, nothing runs)."""
    from tkernels.backends.triton import reduction as backend

    for name, value in (("INTERPRETED", False), ("TILE", 2048), ("TARGET_PROGRAMS", 528), ("SPLIT_MIN_CHUNKS", 8)):
        monkeypatch.setattr(backend, name, value)
    inf = float("inf")
    for d in REAL_DTYPES:
        short, long = tk.empty((4, 6), dtype=d, device="cuda"), tk.empty((2, 20000), dtype=d, device="cuda")
        cube = tk.empty((3, 4, 5, 6), dtype=d, device="cuda")
        for x in (short, long, short[:, ::2], short.mT, tk.permute_dims(cube, (1, 3, 0, 2))[:, ::2]):
            last = x.ndim - 1
            for op in ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all", "count_nonzero", "logsumexp"):
                getattr(tk, op)(x, axis=last)
            tk.sum(x, axis=(0, last))
            tk.argmax(x)
            for dd in REAL_DTYPES:
                tk.sum(x, axis=last, dtype=dd)
                tk.cumulative_sum(x, axis=last, dtype=dd, include_initial=True)
            tk.cumulative_prod(x, axis=0)
            tk.cumulative_prod(x, axis=last, include_initial=True)
            if d.kind == "f":
                for op in ("mean", "var", "std"):
                    getattr(tk, op)(x, axis=last)
                tk.var(x[:, :1], axis=last, correction=1)  # N - correction = 0
                tk.mean(x[:, :0], axis=last)  # N = 0
                for o in (2, 1, inf, -inf, 0, 3.5):
                    tk.vector_norm(x, axis=last, ord=o)
                for o in ("fro", 1, -1, inf, -inf):
                    tk.matrix_norm(x, ord=o)


def test_reduction_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    _reduction_workload(monkeypatch)
    observed = list(dict.fromkeys(recorded_launches))
    # (+ binary_kernel: uint64 max/min/argmax/argmin flip the top bit of their input, see the triton backend)
    assert {s.name for s in observed} == {"reduce_kernel", "scan_kernel", "binary_kernel"}
    assert {dict(s.constexprs)["STAGE"] for s in observed if s.name == "reduce_kernel"} == {0, 1, 2}
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


def test_reduction_table_compiles_every_op_tile_and_offset_mode():
    red = [dict(s.constexprs) for s in SPECS if s.name == "reduce_kernel"]
    for op, code in RED_CODES.items():  # every op whole (STAGE 0); split (STAGE 1 + 2) for each kind of state
        want = {0, 1, 2} if op in _SPLIT_OPS else {0}
        assert want <= {c["STAGE"] for c in red if c["OP"] == code}, op
    scans = [dict(s.constexprs) for s in SPECS if s.name == "scan_kernel"]
    for table in (red, scans):
        assert {(c["BLOCK_M"], c["BLOCK_R"]) for c in table} == {*GPU_ROW_TILES, GPU_COLUMN_TILE}
    assert {c["ROW_ND"] for c in red} == {c["RED_ND"] for c in red} == {c["ROW_ND"] for c in scans} == {0, 1, 2}


def test_optim_table_covers_what_dispatch_launches(recorded_launches):
    """adam_step (host-counted and capturable) / sgd_step with and without amsgrad / momentum, aligned and at an
    odd offset."""
    from tkernels import ops

    for d in (tk.float32, tk.bfloat16):
        whole = [tk.empty((5, 3), dtype=d, device="cuda") for _ in range(5)]
        odd = [tk.empty((9,), dtype=d, device="cuda")[1:] for _ in range(5)]
        for a in (whole, odd):
            for amsgrad in (False, True):
                for step in (1, [tk.zeros((), device="cuda")]):  # host-counted, capturable
                    ops.adam_step([a[0]], [a[1]], [a[2]], [a[3]], [a[4]] if amsgrad else None, step=step, lr=0.1,
                                  beta1=0.9, beta2=0.99, eps=1e-8, amsgrad=amsgrad)
            ops.sgd_step([a[0]], [a[1]], None, lr=0.1)
            ops.sgd_step([a[0]], [a[1]], [a[2]], lr=0.1, momentum=0.9, first_step=True)
    names = {"adam_kernel", "adam_count_kernel", "sgd_kernel"}
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name in names]  # (not the counts' zero fill)
    assert len(observed) == 13 and {s.name for s in observed} == names
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing)


def _nn_workload(monkeypatch):
    """softmax, norms, losses and embedding (forward and backward) with the GPU tiling: one-pass and chunked rows,
    every float dtype, strided axes, optional operands on and off (launches are recorded, nothing runs)."""
    from tkernels.backends.triton import ops_embedding, ops_loss, ops_softmax
    from tkernels.ops import activation as act
    from tkernels.ops import loss, normalization, sparse

    for mod, name, value in ((ops_softmax, "INTERPRETED", False), (ops_softmax, "TILE", 4096),
                             (ops_softmax, "MAX_ONE_PASS", 4096), (ops_embedding, "INTERPRETED", False),
                             (ops_loss, "SUM_BLOCK", 1024)):
        monkeypatch.setattr(mod, name, value)
    for d in ("float32", "float16", "bfloat16", "float64"):
        for n in (7, 300, 5000):
            x = tk.empty((3, n), dtype=d, device="cuda")
            for f in (act.softmax, act.log_softmax):
                f(x)
                f(x.mT, 0)
            act.softmax_backward(x, x, 1)
            act.log_softmax_backward(x, x, 1)
            w = tk.empty((n,), dtype="float32", device="cuda")
            y, m, r = normalization.layer_norm(x, n, w, w, return_stats=True)
            normalization.layer_norm(x, n)
            normalization.layer_norm_backward(x, x, m, r, w, n)
            normalization.layer_norm_backward(x, x, m, r, None, n, needs=(True, False, True))
            y, r = normalization.rms_norm(x, n, w, return_stats=True)
            normalization.rms_norm_backward(x, x, r, w, n)
            for t in (tk.zeros((3,), dtype="int64", device="cuda"), tk.zeros((3,), dtype="int32", device="cuda")):
                for kw in ({}, dict(weight=w.astype(d), label_smoothing=0.1, reduction="sum"),
                           dict(reduction="none")):
                    wt = kw.pop("weight", None)
                    loss.cross_entropy(x, t, wt, **kw)
                    loss.nll_loss(x, t, wt, reduction=kw.get("reduction", "mean"))
                    g = tk.empty((3,), dtype=d, device="cuda") if kw.get("reduction") == "none" else 1.0
                    loss.cross_entropy_backward(g, x, t, wt, **kw)
                    loss.nll_loss_backward(g, x, t, wt, reduction=kw.get("reduction", "mean"))
            _, lse = loss.cross_entropy(x, t, return_lse=True)
            loss.cross_entropy_backward(tk.empty((), dtype=d, device="cuda"), x, t, lse=lse)
            loss.cross_entropy(x, x, label_smoothing=0.2)
            loss.cross_entropy_backward(1.0, x, x, w.astype(d), reduction="sum")
        idx = tk.zeros((4, 3), dtype="int64", device="cuda")
        sparse.embedding(tk.empty((5, 40), dtype=d, device="cuda"), idx)
        sparse.embedding_backward(tk.empty((4, 3, 40), dtype=d, device="cuda"), idx.astype("int32"), 5,
                                  padding_idx=0, scale_grad_by_freq=True)
        sparse.embedding_backward(tk.empty((4, 3, 40), dtype=d, device="cuda"), idx, 5)
    for d in DTYPES:
        sparse.embedding(tk.empty((5, 40), dtype=d, device="cuda"), tk.zeros((3,), dtype="int64", device="cuda"))


_NN_KERNELS = {"softmax_kernel", "norm_fwd_kernel", "norm_bwd_kernel", "ce_fwd_kernel", "ce_bwd_kernel",
               "loss_sum_kernel", "embedding_kernel"}


def test_nn_table_covers_what_dispatch_launches(recorded_launches, monkeypatch):
    _nn_workload(monkeypatch)
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name in _NN_KERNELS]
    assert {s.name for s in observed} == _NN_KERNELS
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


def test_random_table_covers_what_dispatch_launches(recorded_launches):
    """Every random entry on every dtype it takes, bernoulli with scalar and array probabilities (contiguous,
    strided, broadcast), both permutation methods, dropout forward and backward on contiguous and strided arrays."""
    from tkernels.dispatch import lookup

    cuda = tk.device.as_device("cuda")
    floats = [d for d in REAL_DTYPES if d.kind == "f"]
    for d in floats:
        tk.random.rand((5,), dtype=d, device="cuda")
        tk.random.normal(1.0, 2.0, (5,), dtype=d, device="cuda")
        tk.random.uniform(-1.0, 2.0, (5,), dtype=d, device="cuda")
        p = tk.empty((4, 6), dtype=d, device="cuda")
        for pp in (p, p[:, ::2], p.mT, p[:1]):
            for out in REAL_DTYPES:
                lookup("random_bernoulli", cuda)(tk.empty((4, 6) if pp is p[:1] else pp.shape, dtype=out,
                                                          device="cuda"), tk.random.default_generator, p=pp)
        x = tk.empty((4, 6), dtype=d, device="cuda")
        for xx in (x, x[:, ::2], x.mT):
            y, mask = tk.ops.dropout(xx, 0.3, return_mask=True)
            tk.ops.dropout_backward(xx, mask, 0.3)
            tk.ops.dropout_backward(xx, tk.empty(xx.shape, dtype=tk.bool, device="cuda"), 0.3)
            tk.ops.dropout_backward(xx, tk.empty(xx.shape[::-1], dtype=tk.bool, device="cuda").mT, 0.3)
    for d in REAL_DTYPES:
        for lo, hi in ((0, 2), (3, 100)) + (((0, 2**40), (-(2**63), 2**63)) if d is tk.int64 else ()):
            tk.random.randint(lo, hi, (5,), dtype=d, device="cuda")
        tk.random.bernoulli(0.25, (5,), dtype=d, device="cuda")
    for n in (10, 5000):
        for d in (tk.int64, tk.int32):
            tk.random.permutation(n, dtype=d, device="cuda")
    kernels = {"random_kernel", "permutation_kernel", "dropout_kernel"}
    observed = [s for s in dict.fromkeys(recorded_launches) if s.name in kernels]
    assert {s.name for s in observed} == kernels
    missing = [f"{s}: {why}" for s in observed if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


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
            ints = req.get("ints") or {}
            for i, arg in enumerate(fn.arg_names):
                if arg in consts or ints.get(arg) == 1:  # the JIT makes a 1-valued integer a constant
                    sig[arg] = "constexpr"
                elif arg in pointers:
                    sig[arg] = mangle_type(Meta(pointers[arg]))
                    if req["aligned"]:
                        aligned.append(i)
                else:
                    sig[arg] = scalars.get(arg, "i32")
                    if ints.get(arg) == 16:
                        aligned.append(i)
            attrs = {(i,): [["tt.divisibility", 16]] for i in aligned}
            consts = {**consts, **{a: 1 for a, v in ints.items() if v == 1}}
            ck = triton.compile(ASTSource(fn, sig, consts, attrs), target=GPUTarget("cuda", req["cap"], 32),
                                options=req.get("options") or None)
            ptx = ck.asm["ptx"]
            out = {"ok": True, "targets": [ln for ln in ptx.splitlines() if ln.startswith(".target")],
                   "cubin_bytes": len(ck.asm.get("cubin") or b""), "num_warps": ck.metadata.num_warps,
                   "shared": ck.metadata.shared,
                   "signature": sig, "wgmma": "wgmma.mma_async" in ptx, "mma_sync": "mma.sync" in ptx}
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
               "constexprs": dict(s.constexprs), "aligned": s.aligned, "cap": cap, "options": dict(s.options),
               "ints": dict(s.ints)}
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


def test_indexing_table_covers_what_dispatch_launches(monkeypatch):
    """Every indexing, movement, creation and sorting entry (the kernels run: counts and index checks are read
    back), on a sample of dtypes, strided and broadcast operands, scalar and array values."""
    from tkernels.backends.triton._launch import launch as real

    seen = []

    def record(kernel, grid, *args, **meta):
        fn = getattr(kernel, "fn", kernel)
        if fn.__name__ in _IDX_KERNELS:
            values = dict(zip(kernel.arg_names, args))
            pointers = {a: str(v.dtype) for a, v in values.items() if isinstance(v, tk.Array)}
            scalars = {a: _triton_type(v) for a, v in values.items()
                       if not isinstance(v, tk.Array) and a in TYPED_SCALARS[fn.__name__]}
            seen.append(spec(f"{fn.__module__}:{fn.__name__}", pointers, scalars, **{**meta, "BLOCK": GPU_BLOCK}))
        return real(kernel, grid, *args, **meta)

    for m in ("indexing", "manipulation", "creation", "searching"):
        monkeypatch.setattr(f"tkernels.backends.triton.{m}.launch", record)
    i64 = tk.asarray([0, -1, 1], device="cuda")
    pos = tk.asarray([0, 2, 1], device="cuda")
    for d in REAL_DTYPES:
        x = tk.zeros((3, 4), dtype=d, device="cuda")
        tk.take(x.mT, i64, axis=1)
        tk.scatter(x, 0, tk.zeros((1, 4), dtype=tk.int32, device="cuda"), 1)
        tk.scatter_add(x, 1, pos[None, 1:].broadcast_to((3, 2)), x[:, :2])
        tk.index_put(x, (i64,), x[:3], accumulate=True)
        x[i64, 1:] = 0
        tk.masked_select(x, x > 0)
        tk.argwhere(x)
        tk.tril(x.mT, k=1)
        tk.sort(x, descending=True)
        tk.unique_all(x)
        tk.arange(0, 4, dtype=d, device="cuda")
        tk.linspace(0, 1, 3, dtype=d, device="cuda")
        if d.kind != "b":
            tk.searchsorted(x[0], x[1:], sorter=tk.argsort(x[0]))
    tk.repeat(tk.zeros((3,), device="cuda"), tk.asarray([1, 0, 2], dtype=tk.int8, device="cuda"))
    tk.one_hot(pos)
    tk.argsort(tk.zeros((1, 1100), device="cuda"))
    missing = [f"{s}: {why}" for s in dict.fromkeys(seen) if (why := uncovered(s, SPECS))]
    assert not missing, "specializations dispatch launches that the AOT table misses:\n" + "\n".join(missing[:30])


@pytest.fixture(scope="module")
def compiler(tmp_path_factory):
    c = Compiler(tmp_path_factory.mktemp("aot"))
    yield c
    print(f"\nAOT: {c.seconds:.1f} s of compiling in this worker")
    c.close()


@pytest.mark.parametrize("s,cap", [(s, cap) for s in SPECS for cap in s.caps],
                         ids=[f"{s}-{cap}" for s in SPECS for cap in s.caps])
def test_compiles(compiler, s, cap):
    out = compiler.compile(s, cap)
    assert out["ok"], f"{s} for sm_{cap}: {out['error']}"
    assert out["targets"] == [PTX_TARGET[cap]]
    assert out["cubin_bytes"] > 0  # ptxas assembled it
    assert out["shared"] <= SHARED_LIMIT[cap], f"{s}: {out['shared']} B of shared memory (sm_{cap} allows fewer)"
    if s.name == "matmul_kernel":
        check_matmul_ptx(s, cap, out)
    if s.name in _ATTN_KERNELS:
        check_attention_ptx(s, cap, out)
