"""Differential fuzzing of every public op (issue 14): hypothesis draws an op of the tables in
``ops_autograd.py`` / ``ops_tkernels.py``, shapes (0-d, empty, size 1, odd, broadcast pairs), layouts
(contiguous, strided, transposed), dtypes and values (NaN, ±inf, ±0, extremes), and the result must match
PyTorch (when importable) and NumPy within the dtype's tolerance, or both must raise, our exception being a
TypeError/ValueError/IndexError/RuntimeError that names the op. Intended differences: ``deviations.DEVIATIONS``
(and the README's table). On interpreted cuda the result must match our cpu result.

CI runs a fixed, derandomized set of cases; ``TKERNELS_FUZZ_EXAMPLES=5000`` runs more (per table on cpu; a tenth
of it on cuda). ``python -m tests.fuzz --examples 5000`` counts every outcome instead of stopping at the first.
"""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import check
from .cases import HypothesisDraw
from .ops_autograd import AUTOGRAD_OPS
from .ops_tkernels import TK_OPS
from .run import torch_or_none

EXAMPLES = int(os.environ.get("TKERNELS_FUZZ_EXAMPLES", "0"))
CPU_EXAMPLES = EXAMPLES or 1500
CUDA_EXAMPLES = EXAMPLES // 10 or 150
ACCEPTED = ("ok", "deviation", "skip", "open")
TORCH = torch_or_none()


def _settings(n):
    return settings(max_examples=n, deadline=None, derandomize=not EXAMPLES, database=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


def _cuda_or_skip():
    import tkernels.cuda as tkc

    if not tkc.is_available():
        pytest.skip("no cuda device (real or interpreted)")


def _assert_accepted(outcomes):
    bad = [o for o in outcomes if o.kind not in ACCEPTED]
    assert not bad, "\n".join(repr(o) for o in bad)


@_settings(CPU_EXAMPLES)
@given(st.data())
def test_fuzz_autograd_cpu(data):
    import autograd as ag
    from nn import functional as F

    case = check.draw_case(HypothesisDraw(data), AUTOGRAD_OPS)
    _assert_accepted(check.run_autograd(case, ag, F, TORCH, "cpu"))


@_settings(CPU_EXAMPLES)
@given(st.data())
def test_fuzz_tkernels_cpu(data):
    import tkernels as tk

    case = check.draw_case(HypothesisDraw(data), TK_OPS)
    _assert_accepted(check.run_tkernels(case, tk, "cpu"))


@_settings(CUDA_EXAMPLES)
@given(st.data())
def test_fuzz_autograd_cuda(data):
    _cuda_or_skip()
    import autograd as ag
    from nn import functional as F

    case = check.draw_case(HypothesisDraw(data), AUTOGRAD_OPS, cuda=True)
    _assert_accepted(check.run_autograd(case, ag, F, None, "cuda"))


@_settings(CUDA_EXAMPLES)
@given(st.data())
def test_fuzz_tkernels_cuda(data):
    _cuda_or_skip()
    import tkernels as tk

    case = check.draw_case(HypothesisDraw(data), TK_OPS, cuda=True)
    _assert_accepted(check.run_tkernels(case, tk, "cuda"))
