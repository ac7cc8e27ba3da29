"""Complex autograd with PyTorch's convention (the conjugate Wirtinger derivative: for a real loss L of
z = x + iy, ``z.grad = dL/dx + i dL/dy``): gradcheck and gradgradcheck in complex128 of every differentiable op
PyTorch supports complex for (one table), real losses of complex intermediates against torch 2.13, real->complex
ops that give real gradients, and the errors (a complex loss, requires_grad on integers)."""

from __future__ import annotations

import numpy as np
import pytest

import autograd as ag


def crand(rng, shape, low=0.4, high=1.6):
    """Complex values away from branch cuts and zeros (|re|, |im| in [low, high], random signs)."""
    re = rng.uniform(low, high, shape) * rng.choice([-1, 1], shape)
    im = rng.uniform(low, high, shape) * rng.choice([-1, 1], shape)
    return re + 1j * im


def rrand(rng, shape, low=0.4, high=1.6):
    return rng.uniform(low, high, shape)


C, R = "c", "r"  # a complex128 leaf, a float64 leaf
# name -> (function of the leaves, kinds and shapes of the leaves, gradgradcheck?)
TABLE = {
    "add": (lambda a, b: a + b, [(C, (2, 3)), (C, (1, 3))]),
    "sub_real": (lambda a, b: a - b, [(C, (2, 3)), (R, (3,))]),
    "mul": (lambda a, b: a * b, [(C, (2, 3)), (C, (2, 3))]),
    "mul_real": (lambda a, b: a * b, [(R, (2, 3)), (C, (2, 1))]),
    "mul_scalar": (lambda a: (2 - 1j) * a * 0.5, [(C, (3,))]),
    "div": (lambda a, b: a / b, [(C, (2, 3)), (C, (2, 3))]),
    "rdiv_scalar": (lambda a: 1j / a, [(C, (3,))]),
    "pow": (lambda a, b: a ** b, [(C, (2, 2)), (C, (2, 2))]),
    "pow_scalar": (lambda a: a ** 2.5 + a ** (1 + 1j), [(C, (3,))]),
    "rpow": (lambda a: (1.5 - 0.5j) ** a, [(C, (3,))]),
    "neg": (lambda a: -a, [(C, (3,))]),
    "square": (ag.square, [(C, (3,))]),
    "exp": (ag.exp, [(C, (3,))]),
    "expm1": (ag.expm1, [(C, (3,))]),
    "log": (ag.log, [(C, (3,))]),
    "log1p": (ag.log1p, [(C, (3,))]),
    "log2": (ag.log2, [(C, (3,))]),
    "log10": (ag.log10, [(C, (3,))]),
    "sqrt": (ag.sqrt, [(C, (3,))]),
    "rsqrt": (ag.rsqrt, [(C, (3,))]),
    "reciprocal": (ag.reciprocal, [(C, (3,))]),
    "sin": (ag.sin, [(C, (3,))]),
    "cos": (ag.cos, [(C, (3,))]),
    "tan": (ag.tan, [(C, (3,))]),
    "sinh": (ag.sinh, [(C, (3,))]),
    "cosh": (ag.cosh, [(C, (3,))]),
    "tanh": (ag.tanh, [(C, (3,))]),
    "asin": (ag.asin, [(C, (3,))]),
    "acos": (ag.acos, [(C, (3,))]),
    "atan": (ag.atan, [(C, (3,))]),
    "asinh": (ag.asinh, [(C, (3,))]),
    "acosh": (ag.acosh, [(C, (3,))]),
    "atanh": (ag.atanh, [(C, (3,))]),
    "sigmoid": (ag.sigmoid, [(C, (3,))]),
    "abs": (ag.abs, [(C, (2, 3))]),
    "sgn": (ag.sgn, [(C, (2, 3))]),
    "angle": (ag.angle, [(C, (2, 3))]),
    "real": (lambda a: a.real, [(C, (2, 3))]),
    "imag": (lambda a: a.imag, [(C, (2, 3))]),
    "conj": (ag.conj, [(C, (2, 3))]),
    "view_as_real": (ag.view_as_real, [(C, (2, 3))]),
    "view_as_complex": (lambda a: ag.view_as_complex(a), [(R, (3, 2))]),
    "complex": (ag.complex, [(R, (2, 3)), (R, (3,))]),
    "polar": (ag.polar, [(R, (2, 3)), (R, (2, 3))]),
    "to_real": (lambda a: a.to(ag.float64), [(C, (3,))]),
    "to_complex": (lambda a: a.to(ag.complex128) * 1j, [(R, (3,))]),
    "sum": (lambda a: a.sum(dim=1), [(C, (2, 3))]),
    "mean": (lambda a: a.mean(), [(C, (2, 3))]),
    "prod": (lambda a: a.prod(dim=0), [(C, (3, 2))]),
    "cumsum": (lambda a: ag.cumsum(a, 1), [(C, (2, 3))]),
    "cumprod": (lambda a: ag.cumprod(a, 1), [(C, (2, 3))]),
    "vector_norm": (lambda a: ag.linalg.vector_norm(a, dim=1), [(C, (2, 3))]),
    "vector_norm_1": (lambda a: ag.linalg.vector_norm(a, ord=1), [(C, (2, 3))]),
    "vector_norm_3": (lambda a: ag.linalg.vector_norm(a, ord=3), [(C, (2, 3))]),
    "matmul": (lambda a, b: a @ b, [(C, (2, 3)), (C, (3, 2))]),
    "matmul_real": (lambda a, b: a @ b, [(C, (2, 3)), (R, (3, 2))]),
    "matmul_batched": (lambda a, b: a @ b, [(C, (2, 2, 3)), (C, (3,))]),
    "mH": (lambda a: a.mH @ a, [(C, (3, 2))]),
    "views": (lambda a: a.reshape(3, 2).t()[1:, ::2].unsqueeze(0).expand(2, 1, 2), [(C, (2, 3))]),
    "index": (lambda a: a[ag.tensor([1, 0, 1])][:, 1:], [(C, (2, 3))]),
    "setitem": (lambda a, b: _setitem(a, b), [(C, (2, 3)), (C, (3,))]),
    "inplace_real_imag_views": (lambda a, b: _inplace_parts(a, b), [(C, (3, 2)), (R, (2,))]),
    "cat_stack": (lambda a, b: ag.cat([ag.stack([a, b]), a.unsqueeze(0)]), [(C, (2, 2)), (C, (2, 2))]),
    "where": (lambda a, b: ag.where(ag.tensor([True, False, True]), a, b), [(C, (3,)), (C, (2, 3))]),
    "mix": (lambda a: (a.exp() * a.conj()).abs() + ag.angle(a.sqrt()), [(C, (2, 2))]),
    "gather_index_select": (lambda a: ag.gather(a, 1, ag.tensor([[2, 0], [1, 1]]))
                            * ag.index_select(a, 1, ag.tensor([0, 2])), [(C, (2, 3))]),
    "flip_roll_permute": (lambda a: ag.flip(a, [0]) + ag.roll(a, 1, 1) * a.permute(1, 0, 2).permute(1, 0, 2),
                          [(C, (2, 3, 1))]),
    "diagonal_tril_trace": (lambda a: ag.tril(a) @ a + a.diagonal() + ag.trace(a), [(C, (3, 3))]),
    "einsum_outer": (lambda a, b: ag.einsum("ij,j->i", a, b) + ag.outer(b, b)[:2, 0], [(C, (2, 3)), (C, (3,))]),
    "addmm_kron": (lambda a, b: ag.addmm(a[:, :2], a, b) + ag.kron(a[:1, :1], a[:, :2]), [(C, (2, 3)), (C, (3, 2))]),
    "split_narrow_repeat": (lambda a: ag.split(a, 1, 1)[1] * a.narrow(1, 0, 1) + a.repeat(1, 2)[:, 1:2],
                            [(C, (2, 3))]),
    "masked_fill": (lambda a: a.masked_fill(ag.tensor([[True, False, False], [False, True, False]]), 2 - 1j),
                    [(C, (2, 3))]),
}


def _inplace_parts(a, b):
    c = a * 1
    c.imag.mul_(3)  # in-place writes through the real and imaginary views
    c.real[1:].add_(b)
    return c


def _setitem(a, b):
    c = a.clone()
    c[1] = b * 2
    return c


def _leaves(rng, spec):
    return [ag.tensor(crand(rng, s) if k == C else rrand(rng, s), dtype=ag.complex128 if k == C else ag.float64,
                      requires_grad=True) for k, s in spec]


@pytest.mark.parametrize("name", sorted(TABLE))
def test_gradcheck_complex128(name):
    fn, spec = TABLE[name]
    leaves = _leaves(np.random.default_rng(abs(hash(name)) % 2**32), spec)
    assert ag.gradcheck(fn, leaves, eps=1e-6, atol=1e-6, rtol=1e-4)
    assert ag.gradcheck(fn, leaves, fast_mode=True)
    assert ag.gradgradcheck(fn, leaves, atol=1e-5, rtol=1e-3)


def test_gradcheck_fails_on_a_wrong_complex_gradient():
    class NotConjugated(ag.autograd.Function if hasattr(ag, "autograd") else ag.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return g * 2 * z  # PyTorch's convention needs g * conj(2 z)

    z = ag.tensor(crand(np.random.default_rng(0), (3,)), requires_grad=True)
    with pytest.raises(ag.GradcheckError, match="Jacobian mismatch"):
        ag.gradcheck(NotConjugated.apply, (z,))
    with pytest.raises(ag.GradcheckError, match="Jacobian mismatch"):
        ag.gradcheck(NotConjugated.apply, (z,), fast_mode=True)


# real losses of complex intermediates against torch
LOSSES = {
    "abs_matmul": lambda L, a, b: (a @ b).abs().sum(),
    "exp_parts": lambda L, a, b: L.exp(a).real.sum() + (a * a).imag.sum(),
    "angle_sgn": lambda L, a, b: L.angle(a * 2).sum() + L.sgn(a).real.sum(),
    "norm_conj": lambda L, a, b: L.linalg.vector_norm(a) + (a.conj() * b[0, 0]).real.sum(),
    "pow": lambda L, a, b: (a ** b[0, 0]).real.sum() + (1.5 ** a).imag.sum(),
    "div_view": lambda L, a, b: (1 / a).real.sum() + L.view_as_real(a * a).sum() + a.prod().abs(),
    "mean_trig": lambda L, a, b: a.mean().abs() + L.sqrt(a).imag.sum() + L.log(a).real.sum() + L.tanh(a).real.mean(),
    "polar_complex": lambda L, a, b: L.polar(a.abs(), a.real).imag.sum() + L.complex(a.real, a.imag * 2).abs().sum(),
    "cat_index": lambda L, a, b: L.cat([a, a[:1] * 1j]).abs().sum() + L.stack([a, a]).sum(0)[1:, ::2].imag.sum(),
    "real_times_complex": lambda L, a, b: (a.real * b[0, 0]).abs().sum()
    + L.view_as_complex(L.view_as_real(a) * 2).imag.sum(),
    "vecdot_mH": lambda L, a, b: L.linalg.vecdot(a, a).real.sum() + (b.mH @ b).real.trace(),
    "inplace_views": lambda L, a, b: _inplace_parts(a, a.real[1:, :1]).abs().sum(),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_real_loss_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    z, w = crand(rng, (3, 4)), crand(rng, (4, 2))
    f = LOSSES[name]

    def run(lib):
        a = lib.tensor(z, requires_grad=True)
        b = lib.tensor(w, requires_grad=True)
        loss = f(lib, a, b)
        loss.backward()
        grads = [None if t.grad is None else np.asarray(t.grad.detach().cpu().numpy() if lib is torch else
                                                          t.grad._data.numpy()) for t in (a, b)]
        return float(loss.item()), grads

    (lo, go), (lt, gt) = run(ag), run(torch)
    assert lo == pytest.approx(lt, rel=1e-12)
    for x, y in zip(go, gt):
        assert (x is None) == (y is None)
        if x is not None:
            assert x.dtype == np.complex128
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


def test_leaf_grads_dtypes_and_real_reduction():
    rng = np.random.default_rng(3)
    z = ag.tensor(crand(rng, (2, 3)), dtype=ag.complex64, requires_grad=True)
    x = ag.tensor(rrand(rng, (3,)), dtype=ag.float32, requires_grad=True)
    loss = (z * x).abs().sum() + (x * 1j).imag.sum()
    loss.backward()
    assert z.grad.dtype is ag.complex64 and x.grad.dtype is ag.float32  # real->complex: the real part
    zz, xx = z.detach()._data.numpy(), x.detach()._data.numpy()
    np.testing.assert_allclose(z.grad._data.numpy(), xx * (zz * xx) / np.abs(zz * xx), rtol=1e-5)
    np.testing.assert_allclose(x.grad._data.numpy(), (np.abs(zz * xx) / xx).sum(0) + 1, rtol=1e-5)
    assert z.is_complex() and not z.is_floating_point() and z.real.dtype is ag.float32


def test_errors():
    z = ag.tensor([1 + 1j, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar outputs"):
        (z * z).sum().backward()
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require"):
        ag.tensor([1, 2]).requires_grad_(True)
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        _ = ag.ones(2).imag
    with pytest.raises(TypeError, match="less: complex arrays are not supported"):
        _ = z < z
    (z * z).sum().backward(gradient=ag.tensor(1 - 1j))  # an explicit complex gradient is fine
    np.testing.assert_allclose(z.grad._data.numpy(), (1 - 1j) * np.conj(2 * np.array([1 + 1j, 2])))


@pytest.mark.parametrize("values", [[1 + 1j, 2.5 - 3j], [[1j, 2], [3 - 0.5j, -4]], 1 - 2j, [0.001 + 1000j, 1],
                                    [-1 - 1j, 1e-5j]])
def test_printing_matches_torch(values):
    torch = pytest.importorskip("torch")
    assert repr(ag.tensor(values)) == repr(torch.tensor(values))
    assert repr(ag.tensor(values, dtype=ag.complex128)) == repr(torch.tensor(values, dtype=torch.complex128)).replace(
        "torch.", "autograd.")


def test_printing_without_torch():  # (strings printed by torch 2.13)
    assert repr(ag.tensor([1 + 1j, 2.5 - 3j])) == "tensor([1.0000+1.j, 2.5000-3.j])"
    assert repr(ag.tensor(1 - 2j)) == "tensor(1.-2.j)"
    assert repr(ag.tensor([[1j, 2], [3 - 0.5j, -4]])) == ("tensor([[ 0.+1.0000j,  2.+0.0000j],\n"
                                                          "        [ 3.-0.5000j, -4.+0.0000j]])")
    assert repr(ag.tensor([1 + 1j], dtype=ag.complex128)) == "tensor([1.+1.j], dtype=autograd.complex128)"
