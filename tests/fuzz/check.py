"""Run one fuzz case on our side and on the references, and say what came out.

``run_autograd(case, ...)`` and ``run_tkernels(case, ...)`` return an ``Outcome``: ``ok``; ``mismatch`` (values,
dtype or shape differ, or only one side raised); ``unclean`` (our exception is of another class, or its message
does not name the op); ``deviation`` (an entry of ``deviations.DEVIATIONS`` explains the difference); ``skip``
(the reference cannot say: PyTorch lacks a cpu kernel for that dtype, NumPy has no such function).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import ml_dtypes
import numpy as np

from .cases import FLOATS, LAYOUTS, np_dtype, values
from .deviations import find_deviation, find_open_bug
from .gens import Spec

CLEAN = (TypeError, ValueError, IndexError, RuntimeError)  # NotImplementedError is a RuntimeError
TOLS = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}
BF16 = np.dtype(ml_dtypes.bfloat16)


@dataclasses.dataclass
class Case:
    op: object
    specs: list
    params: dict
    seed: int
    p_special: float
    layout: str

    def __repr__(self):
        def s(x):
            if isinstance(x, Spec):
                return f"{x.dtype}{list(x.shape)}" + (f"<{x.kind}>" if x.kind != "any" else "")
            if isinstance(x, list):
                return "[" + ", ".join(s(e) for e in x) + "]"
            return repr(x)
        return (f"{self.op.name}({', '.join(s(x) for x in self.specs)}, {self.params}) seed={self.seed} "
                f"p_special={self.p_special} layout={self.layout}")


@dataclasses.dataclass
class Outcome:
    kind: str  # ok | mismatch | unclean | deviation | skip | open (a known bug: deviations.OPEN_BUGS)
    detail: str = ""
    case: Case | None = None

    def __repr__(self):
        return f"{self.kind}: {self.case!r}: {self.detail}"


def draw_case(draw, ops, *, cuda=False) -> Case:
    op = draw.sample(ops)
    specs, params = op.gen(draw, op.dtypes)
    return Case(op, specs, params, draw.int(0, 2**31 - 1), draw.sample((0.0, 0.0, 0.1, 0.4)), draw.sample(LAYOUTS))


def fill(case: Case, *, cuda=False) -> list:
    """The NumPy inputs of a case. On cuda, index values stay in range: an out-of-range index there is reported
    at the next sync by the device-side error buffer (issue 14 Deliver 2), not by the op."""
    rng = np.random.default_rng(case.seed)

    def one(s):
        if isinstance(s, list):
            return [one(e) for e in s]
        if not isinstance(s, Spec):
            return s
        if s.kind == "index":
            n = math.prod(s.shape)
            v = rng.integers(0, max(s.hi, 1), s.shape)
            if (s.hi == 0 or rng.random() < 0.05) and n and not cuda:
                v.flat[rng.integers(n)] = rng.choice([s.hi, -s.hi - 1])
            if cuda:
                v = np.minimum(v, max(s.hi - 1, 0))
            return np.asarray(v, dtype=np.int64)
        if s.kind == "mask":
            return np.asarray(rng.random(s.shape) < 0.5)
        return values(rng, s.shape, s.dtype, case.p_special, s.kind)

    return [one(s) for s in case.specs]


# ------------------------------------------------------------------------------------------------ conversion
def _layout(x, layout, t):
    """``t(numpy) -> tensor``; the same values in the case's layout: contiguous, every other element of a wider
    array, or the transpose of a transposed copy."""
    if layout == "noncontig" and x.ndim:
        big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
        big[..., ::2] = x
        return t(big)[..., ::2]
    if layout == "transposed" and x.ndim >= 2:
        return t(np.array(np.swapaxes(x, -1, -2), order="C")).mT
    return t(np.array(x, order="C"))


def convert(inputs, layout, t):
    out = []
    for x in inputs:
        if isinstance(x, list):
            out.append([_layout(e, layout, t) for e in x])
        elif isinstance(x, np.ndarray):
            out.append(_layout(x, layout, t))
        else:
            out.append(x)
    return out


def torch_from_numpy(torch):
    def t(a):
        a = np.array(a, order="C")  # (not ascontiguousarray: it makes 0-d arrays 1-d)
        if a.dtype == BF16:
            return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
        return torch.from_numpy(a.copy())
    return t


def ag_from_numpy(ag, device):
    def t(a):
        r = ag.from_numpy(np.array(a, order="C"))
        return r if device == "cpu" else r.to(device)
    return t


def normalize(r, tensor_type, to_numpy):
    """A result as nested lists of ``(dtype name, NumPy array)``."""
    if isinstance(r, tuple | list):
        return [normalize(e, tensor_type, to_numpy) for e in r]
    if isinstance(r, tensor_type):
        return to_numpy(r)
    if isinstance(r, bool | int | float):
        return (f"py{type(r).__name__}", np.asarray(r))
    raise TypeError(f"unexpected result {type(r).__name__}")


def ag_numpy(t):
    name = str(t.dtype)
    return name, np.asarray(t.detach().to("cpu").numpy())


def torch_numpy(t):
    name = str(t.dtype).removeprefix("torch.")
    t = t.detach()
    return name, (t.float().numpy() if name == "bfloat16" else t.numpy())


def tk_numpy(a):
    return str(a.dtype), np.asarray(a.to("cpu").numpy())


def np_result(r):
    if isinstance(r, tuple | list):
        return [np_result(e) for e in r]
    a = np.asarray(r)
    return str(a.dtype), a


# ------------------------------------------------------------------------------------------------ comparing
def _kind(name):
    return "f" if name in FLOATS else ("b" if name in ("bool", "pybool") else "i")


def compare(ours, ref, *, exact_dtype: bool, tol: float, cast_ref=False) -> str:
    """'' when they agree, else what differs."""
    if isinstance(ref, list) or isinstance(ours, list):
        if not (isinstance(ref, list) and isinstance(ours, list)):
            return f"structure: ours {type(ours).__name__}, reference {type(ref).__name__}"
        if len(ours) != len(ref):
            return f"{len(ours)} results, reference {len(ref)}"
        for i, (a, b) in enumerate(zip(ours, ref)):
            d = compare(a, b, exact_dtype=exact_dtype, tol=tol, cast_ref=cast_ref)
            if d:
                return f"[{i}] {d}"
        return ""
    (dn, a), (rn, e) = ours, ref
    if dn.startswith("py") != rn.startswith("py"):
        return f"result kind: ours {dn}, reference {rn}"
    if exact_dtype and dn != rn:
        return f"dtype: ours {dn}, reference {rn}"
    if not exact_dtype and _kind(dn) != _kind(rn):
        return f"dtype kind: ours {dn}, reference {rn}"
    if a.shape != e.shape:
        return f"shape: ours {a.shape}, reference {e.shape}"
    if _kind(dn) != "f" and _kind(rn) != "f":
        if not np.array_equal(a.astype(np.int64), e.astype(np.int64)):
            return f"values: ours {_show(a)}, reference {_show(e)}"
        return ""
    if cast_ref and dn in FLOATS:  # a reference computed in float32 for a half dtype rounds like ours would
        with np.errstate(all="ignore"):
            e = e.astype(np_dtype(dn))
    with np.errstate(all="ignore"):
        a64, e64 = a.astype(np.float64), e.astype(np.float64)
    rtol, atol = TOLS.get(dn, (0.0, 0.0))
    rtol, atol = rtol * tol, atol * tol
    with np.errstate(all="ignore"):
        bad = ~((np.isnan(a64) & np.isnan(e64)) | (a64 == e64) | (np.abs(a64 - e64) <= atol + rtol * np.abs(e64)))
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        return (f"values differ at {int(bad.sum())}/{bad.size}: first at flat {i}: ours {a64.ravel()[i]!r}, reference "
                f"{e64.ravel()[i]!r} (rtol {rtol:.2g}, atol {atol:.2g}); ours {_show(a)}, reference {_show(e)}")
    return ""


def _show(a):
    s = np.array2string(np.asarray(a, dtype=np.float64) if a.dtype == BF16 else a, threshold=8, edgeitems=2)
    return " ".join(s.split())[:160]


def clean(op, e: BaseException) -> str:
    """'' when ``e`` is an exception of ours that a caller can handle: a TypeError/ValueError/IndexError/
    RuntimeError whose message names the op."""
    if not isinstance(e, CLEAN):
        return f"{type(e).__name__} (not a TypeError/ValueError/IndexError/RuntimeError): {str(e)[:200]}"
    msg = str(e).lower()
    if not any(n.lower() in msg for n in op.error_names):
        return f"{type(e).__name__} does not name {op.error_names[0]!r}: {str(e)[:200]}"
    return ""


def _call(f):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return f(), None
        except Exception as e:  # noqa: BLE001 - what the op raised is the subject of the test
            return None, e


def _torch_gap(e) -> bool:
    return e is not None and ("not implemented for" in str(e) or isinstance(e, NotImplementedError))


def _versus(case, ours, our_exc, ref, ref_exc, *, who, exact_dtype, tol, cast_ref=False, values_only=False):
    """Classify ours against one reference."""
    op = case.op
    if our_exc is not None:
        d = clean(op, our_exc)
        if d:
            bug = find_open_bug(case, who, d)
            return Outcome("open", f"{bug.name}: {d}", case) if bug else Outcome("unclean", d, case)
        if ref_exc is not None:
            return Outcome("ok", "both raise", case)
        if values_only:
            return Outcome("ok", "ours raises; NumPy computes", case)
        return _deviation(case, f"ours raises, {who} returns: {type(our_exc).__name__}: {str(our_exc)[:300]}",
                          who, our_exc, None)
    if ref_exc is not None:
        if values_only:
            return Outcome("ok", "NumPy raises", case)
        return _deviation(case, f"{who} raises, ours returns: {type(ref_exc).__name__}: {str(ref_exc)[:300]}",
                          who, None, ref_exc)
    if op.compare == "values":
        ours, ref = ours[0], ref[0]
    elif op.compare == "topk":
        ours, ref = ours[0], ref[0]
    d = compare(ours, ref, exact_dtype=exact_dtype, tol=op.tol * tol, cast_ref=cast_ref)
    if d:
        return _deviation(case, f"vs {who}: {d}", who, None, None)
    return Outcome("ok", "", case)


def _deviation(case, detail, who, our_exc, ref_exc):
    if who == "ours on cpu" and "integer division by zero" in detail:
        # cuda reports it at the next sync: the device-side error buffer (issue 14 Deliver 2), not this fuzzer's
        return Outcome("skip", "device-side error buffer (issue 14 Deliver 2)", case)
    dev = find_deviation(case, who, detail)
    if dev is not None:
        return Outcome("deviation", f"{dev.name}: {detail}", case)
    bug = find_open_bug(case, who, detail)
    if bug is not None:
        return Outcome("open", f"{bug.name}: {detail}", case)
    return Outcome("mismatch", detail, case)


def _float_rerun(case, ours, ref, ref_exc, nin, f):
    """Integer and bool operands of a function with a floating result enter it cast to that dtype (PyTorch's
    promotion: ``sin(int32)`` is float32 of the int rounded to float32, ``xlogy(float16, int32)`` rounds the
    int32 to float16, maybe to inf), where NumPy takes the smallest float that holds the int or stays in ints:
    then the reference computes from the operands cast as ours casts them (index and mask inputs stay)."""
    if (ours is None or ref is None or isinstance(ours, list) or isinstance(ref, list) or ours[0] not in FLOATS
            or str(ref[1].dtype) == ours[0]):
        return ref, ref_exc
    od = np_dtype(ours[0])
    cd = np.float32 if od in (BF16, np.float16) else od
    kinds = [s.kind if isinstance(s, Spec) else None for s in case.specs]
    fin, changed = [], False
    with np.errstate(all="ignore"):
        for x, k in zip(nin, kinds):
            if isinstance(x, np.ndarray) and x.dtype.kind in "biu" and k not in ("index", "mask"):
                x, changed = x.astype(od).astype(cd), True
            fin.append(x)
    if not changed:
        return ref, ref_exc
    return _call(lambda: f(*fin))


def run_autograd(case: Case, ag, F, torch=None, device="cpu") -> list[Outcome]:
    """Ours (on ``device``) against PyTorch on the cpu (when given) and the row's NumPy reference; on cuda,
    against our cpu result."""
    from types import SimpleNamespace

    inputs = fill(case, cuda=device != "cpu")
    L = SimpleNamespace(t=ag, F=F)
    ours, our_exc = _call(lambda: normalize(case.op.fn(L, *convert(inputs, case.layout, ag_from_numpy(ag, device)),
                                                       **case.params), ag.Tensor, ag_numpy))
    out = []
    if device != "cpu":
        cpu, cpu_exc = _call(lambda: normalize(case.op.fn(L, *convert(inputs, case.layout, ag_from_numpy(ag, "cpu")),
                                                          **case.params), ag.Tensor, ag_numpy))
        return [_versus(case, ours, our_exc, cpu, cpu_exc, who="ours on cpu", exact_dtype=True, tol=2.0)]
    if torch is not None:
        Lt = SimpleNamespace(t=torch, F=torch.nn.functional)
        ref, ref_exc = _call(lambda: normalize(case.op.fn(Lt, *convert(inputs, case.layout, torch_from_numpy(torch)),
                                                          **case.params), torch.Tensor, torch_numpy))
        if our_exc is None and _torch_gap(ref_exc):
            out.append(Outcome("skip", f"torch lacks it: {str(ref_exc)[:120]}", case))
        else:
            out.append(_versus(case, ours, our_exc, ref, ref_exc, who="torch", exact_dtype=True, tol=1.0))
    if case.op.ref is not None and our_exc is None and not case.params:
        nin = [x.astype(np.float32) if isinstance(x, np.ndarray) and x.dtype in (BF16, np.float16) else x
               for x in inputs]
        ref, ref_exc = _call(lambda: np_result(case.op.ref(*nin)))
        ref, ref_exc = _float_rerun(case, ours, ref, ref_exc, nin, lambda *a: np_result(case.op.ref(*a)))
        out.append(_versus(case, ours, None, ref, ref_exc, who="numpy", exact_dtype=False, tol=1.0, cast_ref=True,
                           values_only=True))
    elif our_exc is not None and torch is None:
        out.append(_versus(case, None, our_exc, None, our_exc, who="nothing", exact_dtype=True, tol=1.0))
    return out


def run_tkernels(case: Case, tk, device="cpu") -> list[Outcome]:
    """Ours (on ``device``) against NumPy (cpu) or against our cpu result (cuda)."""
    inputs = fill(case, cuda=device != "cpu")

    def t(a):
        return tk.asarray(np.array(a, order="C"), device=device)

    ours, our_exc = _call(lambda: normalize(case.op.fn(tk, *convert(inputs, case.layout, t), **case.params),
                                            tk.Array, tk_numpy))
    if device != "cpu":
        cpu, cpu_exc = _call(lambda: normalize(case.op.fn(tk, *convert(inputs, case.layout, lambda a: tk.asarray(
            np.array(a, order="C"))), **case.params), tk.Array, tk_numpy))
        return [_versus(case, ours, our_exc, cpu, cpu_exc, who="ours on cpu", exact_dtype=True, tol=2.0)]
    nin = [x.astype(np.float32) if isinstance(x, np.ndarray) and x.dtype in (BF16, np.float16) else
           [e.astype(np.float32) if e.dtype in (BF16, np.float16) else e for e in x] if isinstance(x, list) else x
           for x in inputs]
    f = case.op.ref or (lambda *a, **k: case.op.fn(np, *a, **k))
    ref, ref_exc = _call(lambda: np_result(f(*nin, **case.params)))
    ref, ref_exc = _float_rerun(case, ours, ref, ref_exc, nin, lambda *a: np_result(f(*a, **case.params)))
    return [_versus(case, ours, our_exc, ref, ref_exc, who="numpy", exact_dtype=False, tol=1.0, cast_ref=True)]
