"""autograd.linalg's factorizations and solves: gradcheck and gradgradcheck in float64 on cpu, the same gradients
on interpreted cuda, PyTorch's errors and return types."""

import numpy as np
import pytest

import autograd as ag
from autograd import linalg as LA  # noqa: N812

rng = np.random.default_rng(7)
A0 = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
B0 = rng.standard_normal((2, 3, 2))
W0 = rng.standard_normal((2, 3, 5))  # wide and (transposed) tall: the rectangular LU gradients
S0 = A0 @ A0.transpose(0, 2, 1) + np.eye(3)


def _cases():
    piv = LA.lu_factor(ag.tensor(A0)).pivots
    lu0 = LA.lu_factor(ag.tensor(A0)).LU.numpy()
    sym = lambda x: (x + x.mT) / 2  # noqa: E731
    return {
        "cholesky": (lambda a: LA.cholesky(sym(a)), (S0,)),
        "cholesky_upper": (lambda a: LA.cholesky(sym(a), upper=True), (S0,)),
        "solve_triangular": (lambda a, b: LA.solve_triangular(a, b, upper=True), (np.triu(A0), B0)),
        "solve_triangular_right_unit": (lambda a, b: LA.solve_triangular(a, b.mT, upper=False, left=False,
                                                                         unitriangular=True), (np.tril(A0), B0)),
        "solve": (lambda a, b: LA.solve(a, b), (A0, B0)),
        "solve_vector": (lambda a, b: LA.solve(a, b[..., 0]), (A0, B0)),
        "solve_right": (lambda a, b: LA.solve(a, b.mT, left=False), (A0, B0)),
        "inv": (LA.inv, (A0,)),
        "det": (LA.det, (A0,)),
        "slogdet": (lambda a: LA.slogdet(a).logabsdet, (A0,)),
        "lu_factor": (lambda a: LA.lu_factor(a).LU, (A0,)),
        "lu": (lambda a: LA.lu(a)[1:], (A0,)),
        "lu_factor_wide": (lambda a: LA.lu_factor(a).LU, (W0,)),
        "lu_factor_tall": (lambda a: LA.lu_factor(a.mT).LU, (W0,)),
        "lu_wide_L_U": (lambda a: (LA.lu(a).L, LA.lu(a.mT).U), (W0,)),
        "lu_tall_L_wide_U": (lambda a: (LA.lu(a.mT).L, LA.lu(a).U), (W0,)),
        "lu_factor_no_pivot": (lambda a: LA.lu_factor(a, pivot=False).LU, (A0,)),  # P = I in the backward
        "lu_no_pivot_wide_L_tall_U": (lambda a: (LA.lu(a, pivot=False).L, LA.lu(a.mT, pivot=False).U), (W0,)),
        "matrix_power": (lambda a: LA.matrix_power(a, -2), (A0,)),
        "multi_dot": (lambda a, b: LA.multi_dot([a, a, b]), (A0, B0)),
        "cond": (lambda a: (LA.cond(a), LA.cond(a, "fro")), (A0,)),
        "lu_solve": (lambda lu, b: LA.lu_solve(lu, piv.to(lu.device), b), (lu0, B0)),
        "lu_solve_adjoint_right": (lambda lu, b: LA.lu_solve(lu, piv.to(lu.device), b.mT, left=False,
                                                             adjoint=True), (lu0, B0)),
    }


CASES = sorted(_cases())


@pytest.mark.parametrize("name", CASES)
def test_gradcheck_cpu(name):
    f, arrays = _cases()[name]
    # one matrix (batches: test_same_gradients_on_cuda); the pivots of lu_solve's cases broadcast
    args = tuple(ag.tensor(a[0], requires_grad=True) for a in arrays)
    assert ag.gradcheck(f, args)
    assert ag.gradgradcheck(f, args)


@pytest.mark.parametrize("name", ["cholesky", "solve_triangular", "solve", "lu_factor", "lu_solve", "slogdet",
                                  "lu_factor_wide", "lu_factor_tall", "lu_factor_no_pivot",
                                  "lu_no_pivot_wide_L_tall_U"])
def test_same_gradients_on_cuda(name):
    f, arrays = _cases()[name]
    grads = []
    for dev in ("cpu", "cuda"):
        args = tuple(ag.tensor(a, device=dev, requires_grad=True) for a in arrays)
        out = f(*args)
        outs = out if isinstance(out, tuple) else (out,)
        loss = sum((o * o).sum() for o in outs)
        grads.append([g.cpu().numpy() for g in ag.grad(loss, args)])
    for gc, gg in zip(*grads):
        np.testing.assert_allclose(gg, gc, rtol=1e-9, atol=1e-9)


def test_errors_and_return_types():
    r = LA.cholesky_ex(ag.tensor(-np.eye(2)))
    assert type(r).__name__ == "linalg_cholesky_ex" and r.info.item() == 1
    with pytest.raises(RuntimeError, match=r"linalg.cholesky: The factorization could not be completed because the "
                                           r"input is not positive-definite \(the leading minor of order 1"):
        LA.cholesky(ag.tensor(-np.eye(2)))
    with pytest.raises(LA.LinAlgError, match="linalg.inv: The diagonal element 2 is zero"):
        LA.inv(ag.tensor(np.ones((2, 2))))
    r = LA.inv_ex(ag.tensor(np.ones((2, 2))))
    assert type(r).__name__ == "linalg_inv_ex" and r.info.item() == 2
    assert LA.det(ag.tensor(np.ones((2, 2)))).item() == 0
    s = LA.slogdet(ag.tensor(A0))
    assert type(s).__name__ == "linalg_slogdet"
    np.testing.assert_allclose(s.logabsdet.numpy(), np.linalg.slogdet(A0)[1])
    x = LA.solve(ag.tensor(A0), ag.tensor(B0[..., 0]))  # PyTorch's rule: B of A's shape without the last dim
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(A0, B0[..., :1])[..., 0])


def test_against_torch():
    torch = pytest.importorskip("torch")
    a = torch.tensor(A0, requires_grad=True)
    b = torch.tensor(B0, requires_grad=True)
    loss = (torch.linalg.solve(a, b) ** 2).sum() + torch.linalg.slogdet(a)[1].sum() + torch.linalg.lu_factor(a)[0].sum()
    ga, gb = torch.autograd.grad(loss, (a, b))
    x, y = ag.tensor(A0, requires_grad=True), ag.tensor(B0, requires_grad=True)
    mine = (LA.solve(x, y) ** 2).sum() + LA.slogdet(x)[1].sum() + LA.lu_factor(x)[0].sum()
    gx, gy = ag.grad(mine, (x, y))
    np.testing.assert_allclose(gx.numpy(), ga.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gy.numpy(), gb.numpy(), rtol=1e-10, atol=1e-10)
    # rectangular LU (wide and tall), packed and as (P, L, U)
    g = rng.standard_normal(W0.shape)
    for tr in (False, True):
        w, x = torch.tensor(W0, requires_grad=True), ag.tensor(W0, requires_grad=True)
        ref = torch.autograd.grad((torch.linalg.lu_factor(w.mT if tr else w)[0] * torch.tensor(g).mT.mT.reshape(
            (w.mT if tr else w).shape)).sum() + torch.linalg.lu(w.mT if tr else w)[1].sum() ** 2, w)[0]
        xx = x.mT if tr else x
        mine = ag.grad((LA.lu_factor(xx)[0] * ag.tensor(g.reshape(tuple(xx.shape)))).sum()
                       + LA.lu(xx)[1].sum() ** 2, x)[0]
        np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_det_gradient_at_a_singular_matrix(dev):
    """PyTorch's SVD branch: the gradient of det at a rank-deficient matrix is its adjugate's transpose."""
    m = np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]])
    A = ag.tensor(np.stack([m, A0[0]]), device=dev, requires_grad=True)  # noqa: N806
    (g,) = ag.grad(LA.det(A).sum(), A)
    cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(m, i, 0), j, 1)) for j in range(3)]
                    for i in range(3)])
    np.testing.assert_allclose(g.cpu().numpy()[0], cof, atol=1e-10)
    np.testing.assert_allclose(g.cpu().numpy()[1], np.linalg.det(A0[0]) * np.linalg.inv(A0[0]).T, rtol=1e-10)
