"""Gradient rows for the complex ops, on the float64 leaves of the shared harness: each row builds its complex
input from real leaves (``complex``, ``polar``, ``view_as_complex``) and ends in a real or complex output, so
the real-leaf gradcheck goes through the complex nodes. The complex128-leaf checks of every op are in
tests/autograd/test_complex.py. The rows also compare gradients on interpreted cuda with cpu's (the complex
cuda kernels: tests/tkernels/cuda/test_complex_kernels.py)."""

import autograd as ag

from ..harness import GradInfo, Sample, rand


def _pair(rng):
    return [Sample((rand(rng, 3, 4), rand(rng, 3, 4))), Sample((rand(rng, 5), rand(rng, 1)))]


def _one(rng):
    return [Sample((rand(rng, 3, 2),))]


def _z(x, y):
    return ag.complex(x, y)


GRAD_INFOS = [
    GradInfo("complex", lambda x, y: _z(x, y) * (1 - 2j), _pair),
    GradInfo("polar", lambda x, y: ag.polar(x * x + 0.5, y), _pair),
    GradInfo("view_as_complex", lambda x: ag.view_as_complex(x).exp(), _one, noncontig=False),
    GradInfo("view_as_real", lambda x, y: ag.view_as_real(_z(x, y) * _z(y, x)), _pair),
    GradInfo("imag", lambda x, y: ag.imag(ag.sqrt(_z(x, y) + 3.0)), _pair),
    GradInfo("real", lambda x, y: ag.real(ag.log(_z(x * x + 0.5, y))), _pair),
    GradInfo("conj", lambda x, y: ag.conj(_z(x, y)) * _z(y, x), _pair),
    GradInfo("conj_physical", lambda x, y: ag.conj_physical(_z(x, y)).abs(), _pair),
    GradInfo("angle", lambda x, y: ag.angle(_z(x, y) + 4.0), _pair),
    GradInfo("vdot", lambda x, y: ag.vdot(_z(x, y).reshape(-1), _z(y, x).reshape(-1)), _pair),
]
