"""autograd.linalg qr / eigh / eigvalsh / pinv / lstsq / cross / vander / householder_product: values vs NumPy,
gradcheck and gradgradcheck in float64."""

import numpy as np
import pytest

import autograd as ag
import autograd.linalg as LA  # noqa: N812

rng = np.random.default_rng(7)


def T(a, grad=True):  # noqa: N802
    return ag.tensor(a, requires_grad=grad)


def _np(t):
    return np.asarray(t.detach()._data)


@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (2, 3, 5)])
def test_qr_values_and_gradients(shape):
    a = rng.standard_normal(shape)
    Q, R = LA.qr(T(a, False))  # noqa: N806
    np.testing.assert_allclose(_np(Q) @ _np(R), a, atol=1e-12)
    np.testing.assert_allclose(np.abs(_np(R)), np.abs(np.linalg.qr(a)[1]), atol=1e-12)
    f = lambda x: tuple(LA.qr(x))  # noqa: E731
    assert ag.gradcheck(f, (T(a),))
    assert ag.gradgradcheck(f, (T(a),))


def test_eigh_values_and_gradients():
    a = rng.standard_normal((2, 4, 4))
    s = a + a.transpose(0, 2, 1)
    w, v = LA.eigh(T(s, False))
    np.testing.assert_allclose(_np(w), np.linalg.eigvalsh(s), atol=1e-12)
    np.testing.assert_allclose(_np(v) @ np.apply_along_axis(np.diag, -1, _np(w)) @ _np(v).transpose(0, 2, 1), s,
                               atol=1e-12)
    np.testing.assert_allclose(_np(LA.eigvalsh(T(np.triu(s), False), UPLO="U")), np.linalg.eigvalsh(s), atol=1e-12)

    def f(x):  # sign-invariant use of the eigenvectors, on a symmetrized input (eigh reads one triangle)
        w, v = LA.eigh(x + x.mT)
        return w, v * v
    assert ag.gradcheck(f, (T(a),))
    assert ag.gradgradcheck(f, (T(a),))
    assert ag.gradcheck(lambda x: LA.eigvalsh(x + x.mT), (T(a),))


def test_eigh_degenerate_eigenvalues_as_pytorch():
    x = T(np.eye(3))
    w, v = LA.eigh(x)
    (g,) = ag.grad(w.sum(), x)  # eigenvalues only: finite
    np.testing.assert_allclose(_np(g), np.eye(3), atol=1e-12)
    (g,) = ag.grad(LA.eigh(x).eigenvectors[0, 0], x)  # through the vectors: not finite (PyTorch's caveat)
    assert not np.isfinite(_np(g)).all()


def test_pinv_lstsq_and_composed():
    a = rng.standard_normal((2, 5, 3))
    b = rng.standard_normal((2, 5, 2))
    np.testing.assert_allclose(_np(LA.pinv(T(a, False))), np.linalg.pinv(a), atol=1e-12)
    assert ag.gradcheck(lambda x: LA.pinv(x), (T(a),))
    r = LA.lstsq(T(a), T(b))
    np.testing.assert_allclose(_np(r.solution)[1], np.linalg.lstsq(a[1], b[1], rcond=None)[0], atol=1e-12)
    np.testing.assert_allclose(_np(r.residuals)[0], np.linalg.lstsq(a[0], b[0], rcond=None)[1], atol=1e-12)
    assert ag.gradcheck(lambda x, y: LA.lstsq(x, y).solution, (T(a), T(b)))
    assert int(_np(LA.matrix_rank(T(a[..., :1] * np.ones(3), False)))[0]) == 1
    u, w = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    np.testing.assert_allclose(_np(LA.cross(T(u, False), T(w, False))), np.cross(u, w), atol=1e-12)
    assert ag.gradcheck(lambda x, y: LA.cross(x, y), (T(u), T(w)))
    x = rng.standard_normal(4)
    np.testing.assert_allclose(_np(LA.vander(T(x, False), N=5)), np.vander(x, 5, increasing=True), atol=1e-12)
    assert ag.gradcheck(lambda t: LA.vander(t), (T(x),))
    h = rng.standard_normal((5, 3))
    tau = rng.standard_normal(2)
    q = np.eye(5)
    for i in range(2):
        vi = np.tril(h, -1)[:, i] + np.eye(5, 3)[:, i]
        q = q @ (np.eye(5) - tau[i] * np.outer(vi, vi))
    np.testing.assert_allclose(_np(LA.householder_product(T(h, False), T(tau, False))), q[:, :3], atol=1e-12)
    assert ag.gradcheck(lambda p, t: LA.householder_product(p, t), (T(h), T(tau)))
    assert set(dir(LA)) == set(LA.__all__)


def test_same_gradients_on_interpreted_cuda():
    a = rng.standard_normal((2, 4, 3))
    s = rng.standard_normal((3, 3))

    def grads(device):
        x = ag.tensor(a, requires_grad=True, device=device)
        y = ag.tensor(s, requires_grad=True, device=device)
        Q, R = LA.qr(x)  # noqa: N806
        w, v = LA.eigh(y + y.mT)
        loss = (Q * Q.detach().sign()).sum() + R.abs().sum() + w.sum() + (v * v)[0].sum() + LA.pinv(x).sum()
        return [np.asarray(g._data.to("cpu").numpy()) for g in ag.grad(loss, (x, y))]
    for c, g in zip(grads("cpu"), grads("cuda")):
        np.testing.assert_allclose(g, c, atol=1e-9)


def test_gradients_match_torch_when_importable():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((3, 5, 3))
    s = rng.standard_normal((4, 4))
    x, y = T(a), T(s)
    Q, R = LA.qr(x)  # noqa: N806
    w, v = LA.eigh(y + y.mT)
    gx, gy = ag.grad(Q.sum() + R.sum() + w.sum() + v[..., 0].pow(2).sum() + (v * v)[:, 1].sum(), (x, y))
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(s, requires_grad=True)
    tq, tr = torch.linalg.qr(tx)
    tw, tv = torch.linalg.eigh(ty + ty.mT)
    (tq.sum() + tr.sum() + tw.sum() + tv[..., 0].pow(2).sum() + (tv * tv)[:, 1].sum()).backward()
    np.testing.assert_allclose(_np(gx), tx.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(_np(gy), ty.grad.numpy(), atol=1e-10)
