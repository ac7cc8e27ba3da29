"""The intended deviations from PyTorch and NumPy that the fuzzer accepts. README.md, section "Intended
deviations from PyTorch / NumPy", lists the same classes for users (keep the two in step). Each entry says
which difference it explains; a difference that no entry explains is a mismatch."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from .gens import Spec


@dataclasses.dataclass(frozen=True)
class Deviation:
    name: str
    why: str
    # applies(case, who, detail) -> bool; who is "torch", "numpy" or "ours on cpu"
    applies: Callable


def _has_number(case):
    return any(not isinstance(s, Spec | list) for s in case.specs)


def _zero_d_mixed(case):
    specs = [s for s in case.specs if isinstance(s, Spec)]
    return any(s.shape == () for s in specs) and len({s.dtype for s in specs}) > 1 or _has_number(case)


def _huge(case) -> bool:
    """Whether an input of the case holds a finite value within a factor of 100 of its dtype's max."""
    import ml_dtypes
    import numpy as np

    from .check import fill  # (check imports this module)

    for x in fill(case):
        for a in x if isinstance(x, list) else [x]:
            if isinstance(a, np.ndarray) and a.dtype.kind in "fV" and a.size:
                v = np.abs(a.astype(np.float64))
                if (np.isfinite(v) & (v > float(ml_dtypes.finfo(a.dtype).max) / 100)).any():
                    return True
    return False


def _base(case):
    return case.op.name.split("[")[0].removeprefix("F.")


DEVIATIONS: list[Deviation] = [
    Deviation("python-number-operands", "ours takes a Python number wherever a tensor operand is expected; "
              "some torch functions (atan2, logaddexp, lerp's end, hypot...) insist on a Tensor",
              lambda c, w, d: w == "torch" and _has_number(c)
              and ("must be Tensor, not" in d or "invalid combination of arguments" in d or "with a bool tensor" in d)),
    Deviation("wider-dtype-support", "ours computes where torch's cpu refuses the dtype combination (integer "
              "kl_div, mixed-dtype dot/matmul, expand() of a 0-d tensor to (), argmax/argmin of bool: False < True "
              "as in NumPy)",
              lambda c, w, d: w == "torch" and d.startswith("torch raises") and any(
                  k in d for k in ("Integral inputs not supported", "same dtype", "expected dtype",
                                   'missing 1 required positional arguments: "size"', "does not support bool input",
                                   "expected scalar type"))),
    Deviation("round-bool", "round/floor/ceil/trunc of a bool array return it unchanged (bool); torch has no bool "
              "kernel, NumPy returns float16", lambda c, w, d: w == "numpy" and _base(c) in ("round", "floor", "ceil",
                                                                                           "trunc")
              and "ours bool, reference float16" in d),
    Deviation("float-only-statistics", "tkernels.mean/std/var take floating arrays only (array API); NumPy computes "
              "ints in float64", lambda c, w, d: w == "numpy" and "expected a floating-point array" in d),
    Deviation("empty-dim-check", "a dim out of range raises even on an empty tensor; torch's cummax skips the check "
              "when there are no elements", lambda c, w, d: w == "torch" and "Dimension out of range" in d
              and any(isinstance(s, Spec) and 0 in s.shape for s in c.specs)),
    Deviation("int-division-by-zero-raises", "integer division/remainder by zero raises tkernels.ZeroDivisionError "
              "(a RuntimeError, as PyTorch's); NumPy returns 0 with a warning",
              lambda c, w, d: w == "numpy" and "integer division by zero" in d),
    Deviation("int-negative-power-raises", "integers to negative integer powers raise (NegativeIntegerPowerError, "
              "as NumPy); torch returns 0/1/garbage", lambda c, w, d: "negative integer powers" in d),
    Deviation("python-int-wraps", "a Python int outside an integer array's range wraps into its dtype (PyTorch); "
              "NumPy 2 raises OverflowError", lambda c, w, d: w == "numpy" and "OverflowError: Python integer" in d),
    Deviation("zero-d-dim-0", "a 0-d array takes axis 0 and -1 (PyTorch's rule, also in tkernels); NumPy refuses",
              lambda c, w, d: w == "numpy" and "AxisError" in d and "dimension 0" in d),
    Deviation("zero-d-promotion", "a 0-d array ranks below dimensioned ones in promotion (PyTorch); NumPy treats it "
              "like any array", lambda c, w, d: w == "numpy" and _zero_d_mixed(c)),
    Deviation("bool-arithmetic-refused", "square, nan_to_num, matmul and shifts of bool arrays raise with a hint "
              "(array API: not defined for bool); torch and NumPy compute",
              lambda c, w, d: "not supported for bool arrays" in d or "bool arrays are not supported" in d
              or "only integer arrays are supported" in d and "dtype=bool" in d),
    Deviation("half-comparison", "comparing an integer with a float16/bfloat16 tensor rounds the integer to the "
              "half dtype first (PyTorch's promotion: int64 2049 > float16 2048.0 is False); NumPy compares exactly",
              lambda c, w, d: w == "numpy" and _base(c) in ("eq", "ne", "lt", "le", "gt", "ge")
              and any(isinstance(s, Spec) and s.dtype in ("float16", "bfloat16") for s in c.specs)),
    Deviation("any-all-bool", "any/all return bool for every input dtype (array API); torch returns uint8 for uint8",
              lambda c, w, d: _base(c) in ("any", "all") and "ours bool, reference uint8" in d),
    Deviation("no-value-checks-in-losses", "binary_cross_entropy does not check that inputs lie in [0, 1]: that "
              "would cost a host sync per call on cuda; torch raises",
              lambda c, w, d: "should be between 0 and 1" in d),
    Deviation("fill-value-overflow-raises", "masked_fill with a value that the dtype cannot hold raises (torch "
              "wraps it)", lambda c, w, d: "without overflow" in d),
    Deviation("sign-nan", "autograd's sign/sgn(nan) is 0 (PyTorch); NumPy and tkernels.sign give nan (array API)",
              lambda c, w, d: w == "numpy" and _base(c) in ("sign", "sgn") and "reference np.float64(nan)" in d),
    Deviation("gelu-inf", "gelu(±inf) is ±inf / -0 (the limit); torch's cpu kernel gives nan",
              lambda c, w, d: w == "torch" and _base(c) == "gelu" and "reference np.float64(nan)" in d),
    Deviation("nextafter-half", "nextafter steps in the half dtype's own spacing; torch's cpu steps in float32 and "
              "rounds back", lambda c, w, d: w == "torch" and _base(c) == "nextafter"
              and any(isinstance(s, Spec) and s.dtype in ("float16", "bfloat16") for s in c.specs)),
    Deviation("median-empty-int", "median of an empty integer tensor raises (the answer would be NaN); torch "
              "returns an arbitrary value", lambda c, w, d: w == "torch" and "median of an empty" in d),
    Deviation("half-correctly-rounded", "float16/bfloat16 logit, log_softmax, logsumexp and cross_entropy compute in "
              "float32 "
              "and round once (correctly rounded on 20,000 random bf16 logit inputs: 100%; torch's cpu: 63.9%; "
              "log_softmax float16: 3 of 14,400 values over 1 ulp, torch's 3,866; cross_entropy of float16 logits "
              "[10, 2, 1, 0] with target 0: ours 0.000504 as in float64, torch 0.000976): a few ulps from torch, "
              "more where torch's half sum absorbs small terms",
              lambda c, w, d: _base(c) in ("logit", "log_softmax", "cross_entropy", "nll_loss", "logsumexp")
              and w == "torch"
              and "values differ" in d
              and any(isinstance(s, Spec) and s.dtype in ("float16", "bfloat16") for s in c.specs)),
    Deviation("exact-fmod", "fmod and remainder where a / b overflows (a subnormal divisor, or a dividend near the "
              "max): ours is exact, as C's fmod and NumPy (5 % 5e-324 = 0; fmod(-1.8e308, -0.987) = -0.3726); torch "
              "computes through a / b and gives nan",
              lambda c, w, d: _base(c) in ("remainder", "fmod") and w == "torch" and "reference np.float64(nan)" in d),
    Deviation("take-along-dim-bounds", "take_along_dim checks its indices (IndexError, as gather); torch's cpu "
              "does not and reads out of bounds", lambda c, w, d: w == "torch" and _base(c) == "take_along_dim"
              and "out of bounds" in d and d.startswith("ours raises")),
    Deviation("normalize-no-overflow", "normalize of float32/bfloat16 values near the max: the norm accumulates "
              "in float64 and stays finite (x / |x| = 1); torch's float32 norm overflows to inf (x / inf = 0)",
              lambda c, w, d: w == "torch" and _base(c) == "normalize" and any(
                  f"ours np.float64({a}), reference np.float64({b})" in d
                  for a, b in (("1.0", "0.0"), ("-1.0", "-0.0")))),
    Deviation("prod-underflow-order", "a product of a subnormal, other factors and an infinity: ours is ±inf "
              "(tiny * inf), torch's partial product underflows to 0 first and gives 0 * inf = nan",
              lambda c, w, d: w == "torch" and _base(c) in ("prod", "cumprod") and "reference np.float64(nan)" in d
              and any(f"ours np.float64({v})" in d for v in ("inf", "-inf"))),
    Deviation("matmul-fp32-overflow", "bfloat16/float32 matmul whose products or partial sums pass float32's max "
              "overflow to ±inf in the fp32 accumulator, then inf - inf is nan: whether they do depends on fused "
              "multiply-adds and the summation order (the cpu's BLAS fuses, the interpreted tl.dot does not); "
              "with exact arithmetic the sum is finite or one infinity",
              lambda c, w, d: _base(c) == "matmul" and w in ("ours on cpu", "torch") and ("inf" in d or "nan" in d)
              and any(isinstance(s, Spec) and s.dtype in ("bfloat16", "float32") for s in c.specs)),
    Deviation("half-division-rounding", "div(rounding_mode='trunc'/'floor') and floor_divide with a float16/bfloat16 "
              "result round the float32 quotient once (int64 -215 / bfloat16 8.0 = -26.875 -> -26; float16 -160 // "
              "0.2186 = floor(-731.86) = -732); torch's cpu rounds the quotient, or the steps of its fmod-based "
              "floor division, to the half dtype first (-27, -733)",
              lambda c, w, d: c.op.name in ("div[trunc]", "div[floor]", "floor_divide") and w == "torch"
              and "values differ" in d
              and any(isinstance(s, Spec) and s.dtype in ("float16", "bfloat16") for s in c.specs)),
    Deviation("empty-dtype-check", "an op that refuses a dtype refuses it on an empty tensor too; torch returns "
              "early when there are no elements (log_softmax of an empty int16 tensor)",
              lambda c, w, d: w == "torch" and d.startswith("ours raises") and "expected a floating" in d
              and any(isinstance(s, Spec) and 0 in s.shape for s in c.specs)),
    Deviation("variance-overflow", "var/std whose squared deviations pass the dtype's max are inf (the two-pass sum "
              "overflows, as the exact value does); torch's Welford update computes inf - inf = nan",
              lambda c, w, d: w == "torch" and _base(c) in ("var", "std", "var_mean", "std_mean")
              and "ours np.float64(inf), reference np.float64(nan)" in d),
    Deviation("float64-norm-overflow", "a float64 2-norm (or p-norm) whose squares pass float64's max (|x| > 1.3e154) "
              "is inf: float64 accumulates in float64 (float32 and half norms accumulate in float64 and do not "
              "overflow); torch's cpu rescales (normalize then divides by inf: -0 for -1)",
              lambda c, w, d: w == "torch" and (_base(c) in ("norm", "vector_norm") and "ours np.float64(inf)" in d
                                                or _base(c) == "normalize" and "ours np.float64(-0.0)" in d
                                                or _base(c) == "normalize" and "ours np.float64(0.0)" in d)
              and any(isinstance(s, Spec) and s.dtype == "float64" for s in c.specs)),
    Deviation("sum-overflow-order", "a sum or product over values within a factor of ~100 of the dtype's max (or "
              "with infinities of both signs) is ±inf, nan or finite, and loses the small terms to the huge ones, "
              "depending on the order and width of accumulation (pairwise in float32 here; torch's cpu cascades, "
              "accumulates float32 products in float64, and sums strided inputs in another order)",
              lambda c, w, d: w in ("torch", "ours on cpu") and _base(c) in ("sum", "nansum", "mean", "nanmean",
                                                                             "cumsum", "prod",
                                                            "cumprod", "nll_loss", "cross_entropy")
              and "values differ" in d and _huge(c)),
    Deviation("cross-entropy-nonfinite-probs", "cross_entropy with probability targets that hold ±inf or values "
              "near the max: the overflowing terms sum to inf, -inf or nan depending on the order",
              lambda c, w, d: w in ("torch", "ours on cpu") and c.op.name == "F.cross_entropy[probs]"
              and any(f"np.float64({v})" in d for v in ("inf", "-inf", "nan"))),
    Deviation("empty-index-dims", "gather/scatter check the index's number of dimensions and sizes even when it is "
              "empty; "
              "torch returns early", lambda c, w, d: w == "torch" and d.startswith("ours raises")
              and ("number of dimensions" in d or "exceeds x.shape" in d)
              and any(isinstance(s, Spec) and 0 in s.shape for s in c.specs)),
    Deviation("empty-mixed-matmul", "matmul of mixed dtypes with an empty operand promotes (float64 @ int64 is "
              "float64); torch returns the second operand's dtype when there is nothing to multiply, and refuses "
              "the mix otherwise", lambda c, w, d: w == "torch" and _base(c) == "matmul" and "dtype: ours" in d
              and any(isinstance(s, Spec) and 0 in s.shape for s in c.specs)),
    Deviation("topk-0d", "topk of a 0-d tensor with k=0 is empty, shape (0,); torch returns a 0-d tensor",
              lambda c, w, d: _base(c) in ("topk", "kthvalue") and c.specs[0].shape == () and "shape" in d),
]


def find_deviation(case, who: str, detail: str) -> Deviation | None:
    for d in DEVIATIONS:
        if d.applies(case, who, detail):
            return d
    return None


# Real bugs the fuzzer found that are not fixed yet (each is in the closing note with a reproducer).
# They are not deviations: the fuzzer reports them as "open", and a fix removes its entry here.
OPEN_BUGS: list[Deviation] = [
]


def find_open_bug(case, who: str, detail: str) -> Deviation | None:
    for d in OPEN_BUGS:
        if d.applies(case, who, detail):
            return d
    return None
