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


def _base(case):
    return case.op.name.split("[")[0].removeprefix("F.")


DEVIATIONS: list[Deviation] = [
    Deviation("python-number-operands", "ours takes a Python number wherever a tensor operand is expected; "
              "some torch functions (atan2, logaddexp, lerp's end, hypot...) insist on a Tensor",
              lambda c, w, d: w == "torch" and _has_number(c)
              and ("must be Tensor, not" in d or "invalid combination of arguments" in d or "with a bool tensor" in d)),
    Deviation("wider-dtype-support", "ours computes where torch's cpu refuses the dtype combination (integer "
              "kl_div, mixed-dtype dot/matmul, expand() of a 0-d tensor to ())",
              lambda c, w, d: w == "torch" and d.startswith("torch raises") and any(
                  k in d for k in ("Integral inputs not supported", "same dtype", "expected dtype",
                                   'missing 1 required positional arguments: "size"'))),
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
    Deviation("bool-arithmetic-refused", "square and nan_to_num of bool arrays raise with a hint (array API: not "
              "defined for bool); torch computes", lambda c, w, d: "not supported for bool arrays" in d),
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
    Deviation("half-correctly-rounded", "float16/bfloat16 logit and log_softmax compute in float32 and round once "
              "(correctly rounded on 20,000 random bf16 logit inputs: 100%; torch's cpu: 63.9%; log_softmax float16: "
              "3 of 14,400 values over 1 ulp, torch's 3,866): a few ulps from torch",
              lambda c, w, d: _base(c) in ("logit", "log_softmax") and w == "torch" and "values differ" in d
              and any(isinstance(s, Spec) and s.dtype in ("float16", "bfloat16") for s in c.specs)),
    Deviation("remainder-tiny-divisor", "remainder by a divisor so small that a / b overflows (a subnormal): ours is "
              "exact, as NumPy's fmod-based remainder (5 % 5e-324 = 0); torch computes a - b floor(a / b) = nan",
              lambda c, w, d: _base(c) == "remainder" and w == "torch" and "reference np.float64(nan)" in d),
    Deviation("matmul-fp32-overflow", "bfloat16/float32 matmul whose products or partial sums pass float32's max "
              "overflow to ±inf in the fp32 accumulator, then inf - inf is nan: whether they do depends on fused "
              "multiply-adds and the summation order (the cpu's BLAS fuses, the interpreted tl.dot does not); "
              "with exact arithmetic the sum is finite or one infinity",
              lambda c, w, d: _base(c) == "matmul" and w == "ours on cpu" and ("inf" in d or "nan" in d)
              and any(isinstance(s, Spec) and s.dtype in ("bfloat16", "float32") for s in c.specs)),
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
