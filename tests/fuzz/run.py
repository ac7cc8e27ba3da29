"""Drive the fuzzer: draw cases and run them against the references."""

from __future__ import annotations

from . import check
from .cases import HypothesisDraw, RngDraw  # noqa: F401
from .ops_autograd import AUTOGRAD_OPS
from .ops_tkernels import TK_OPS


def torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def run_one(table, device, draw, torch=None):
    if table == "autograd":
        import autograd as ag
        from nn import functional as F

        case = check.draw_case(draw, AUTOGRAD_OPS, cuda=device != "cpu")
        return check.run_autograd(case, ag, F, torch, device)
    import tkernels as tk

    case = check.draw_case(draw, TK_OPS, cuda=device != "cpu")
    return check.run_tkernels(case, tk, device)


def run_many(table, device, n, rng, use_torch=True):
    torch = torch_or_none() if use_torch and device == "cpu" else None
    out = []
    for _ in range(n):
        out.extend(run_one(table, device, RngDraw(rng), torch))
    return out
