"""The programs of tests/programs/programs.py on our library (cpu and interpreted cuda) and, when torch is
importable, on PyTorch from the same initial weights: the losses agree step by step."""

from types import SimpleNamespace

import numpy as np
import pytest

import autograd as ag
import nn

from .programs import PROGRAMS

OURS = SimpleNamespace(torch=ag, nn=nn, F=nn.functional, optim=nn.optim, D=ag.distributions)


def _fixed_actions(probs):
    """Actions by inverse CDF at fixed uniforms: the same for both libraries given the same probabilities."""
    u = np.linspace(0.05, 0.95, probs.shape[0])[:, None]
    return (np.cumsum(probs, axis=1) < u).sum(axis=1).clip(0, probs.shape[1] - 1)


def _kw(name):
    return {"sample": _fixed_actions} if name == "policy_gradient" else {}


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_trains(name, device):
    """On cpu with the program's own sampling; on cuda with fixed draws, against cpu from the same weights."""
    losses, init = PROGRAMS[name](OURS, device=device, **(_kw(name) if device == "cuda" else {}))
    assert all(np.isfinite(losses)), losses
    assert init  # a state dict came back
    if device == "cuda":  # the same losses to float32 rounding
        cpu, _ = PROGRAMS[name](OURS, device="cpu", state=init, **_kw(name))
        np.testing.assert_allclose(losses, cpu, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_pytorch_from_the_same_weights(name):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    ref_ns = SimpleNamespace(torch=torch, nn=torch.nn, F=torch.nn.functional, optim=torch.optim,
                             D=torch.distributions)
    ours, init = PROGRAMS[name](OURS, **_kw(name))
    ref, _ = PROGRAMS[name](ref_ns, state=init, **_kw(name))
    assert ours[0] == pytest.approx(ref[0], rel=1e-5, abs=1e-6), (ours, ref)
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-5)
