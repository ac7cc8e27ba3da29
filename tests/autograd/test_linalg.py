"""Products and linear algebra (autograd/ops/linalg.py, autograd/linalg.py): values against NumPy,
PyTorch's argument rules and errors. Gradient checks: gradinfos/linalg.py."""

import importlib
import math

import numpy as np
import pytest

import autograd as ag

LA = importlib.import_module("autograd.linalg")
RNG = np.random.default_rng(2)


def A(*shape):
    return RNG.standard_normal(shape)


def T(a, **kw):
    return ag.tensor(a, **kw)


def close(t, ref):
    assert tuple(t.shape) == np.shape(ref), (tuple(t.shape), np.shape(ref))
    np.testing.assert_allclose(t.detach().numpy(), ref, rtol=1e-7, atol=1e-12)


def test_outer_inner_tensordot():
    a, b = A(3), A(4)
    close(ag.outer(T(a), T(b)), np.outer(a, b))
    close(T(a).ger(T(b)), np.outer(a, b))
    with pytest.raises(RuntimeError, match="1D"):
        ag.outer(T(A(2, 2)), T(b))
    m, n = A(2, 4), A(3, 5, 4)
    close(ag.inner(T(m), T(n)), np.inner(m, n))
    close(T(a).inner(T(a)), np.inner(a, a))
    close(ag.inner(T(2.0), T(m)), 2.0 * m)
    with pytest.raises(RuntimeError, match="last dimension must match"):
        ag.inner(T(m), T(A(3)))
    x, y = A(2, 3, 4), A(3, 4, 5)
    close(ag.tensordot(T(x), T(y)), np.tensordot(x, y))
    close(ag.tensordot(T(x), T(y), dims=([1, 2], [0, 1])), np.tensordot(x, y, ([1, 2], [0, 1])))
    w = A(4, 2)
    close(ag.tensordot(T(x), T(w), dims=([-1], [0])), np.tensordot(x, w, ([-1], [0])))
    close(ag.tensordot(T(x), T(y), 0), np.tensordot(x, y, 0))
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        ag.tensordot(T(x), T(y), ([0], [0]))


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ii->i", [(4, 4)]), ("ii", [(3, 3)]), ("ij->ji", [(2, 3)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 3)]), ("ij,kj", [(3, 4), (5, 4)]), ("i,j->ij", [(3,), (2,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("bii->b", [(2, 3, 3)]), ("ijk->", [(2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("i,i,i->", [(4,), (4,), (4,)]), ("Ab,bC->CA", [(2, 3), (3, 4)]),
    ("i...,i...->...", [(3, 2, 2), (3, 2, 2)]), ("iij,jk->ik", [(3, 3, 2), (2, 4)]), ("ij,ij->", [(1, 3), (4, 3)]),
])
def test_einsum_matches_numpy(eq, shapes):
    ops = [A(*s) for s in shapes]
    ref = np.einsum(eq, *[np.broadcast_to(o, np.broadcast_shapes(*shapes)) if eq == "ij,ij->" else o
                          for o in ops])
    close(ag.einsum(eq, *[T(o) for o in ops]), ref)
    close(ag.einsum(eq, [T(o) for o in ops]), ref)  # operands as one list


def test_einsum_errors():
    with pytest.raises(ValueError, match="2 operand"):
        ag.einsum("ij,jk->ik", T(A(2, 2)))
    with pytest.raises(ValueError, match="does not match an operand"):
        ag.einsum("ijk->i", T(A(2, 2)))
    with pytest.raises(ValueError, match="does not appear in an input"):
        ag.einsum("ij->iz", T(A(2, 2)))
    with pytest.raises(RuntimeError, match="subscript 'j' has size"):
        ag.einsum("ij,jk->ik", T(A(2, 3)), T(A(4, 2)))


def test_add_products():
    i, m1, m2 = A(3, 5), A(3, 4), A(4, 5)
    close(ag.addmm(T(i), T(m1), T(m2)), i + m1 @ m2)
    close(ag.addmm(T(i), T(m1), T(m2), beta=0.5, alpha=2), 0.5 * i + 2 * m1 @ m2)
    row = A(5)
    close(T(row).addmm(T(m1), T(m2)), row + m1 @ m2)  # the input broadcasts
    nan_in = np.full((3, 5), np.nan)
    close(ag.addmm(T(nan_in), T(m1), T(m2), beta=0), m1 @ m2)  # beta=0 ignores the input (NaN too)
    v = A(4)
    close(ag.addmv(T(A(3) * 0 + 1), T(m1), T(v), alpha=-1), 1 - m1 @ v)
    b1, b2, c = A(2, 3, 4), A(2, 4, 5), A(2, 3, 5)
    close(ag.baddbmm(T(c), T(b1), T(b2), beta=2), 2 * c + b1 @ b2)
    close(ag.addbmm(T(i), T(b1), T(b2)), i + (b1 @ b2).sum(0))
    with pytest.raises(RuntimeError, match="mat2 must be a 2D tensor"):
        ag.addmm(T(i), T(m1), T(v))
    with pytest.raises(RuntimeError, match="batch1 and batch2 must have the same batch size"):
        ag.baddbmm(T(c), T(b1), T(A(3, 4, 5)))


def test_vecdot_kron_trace_diag():
    x, y = A(3, 4), A(4)
    close(ag.vecdot(T(x), T(y)), x @ y)
    z = A(3, 1)
    close(LA.vecdot(T(x), T(z), dim=0), (x * z).sum(0))
    with pytest.raises(RuntimeError, match="same size in dimension"):
        ag.vecdot(T(x), T(A(3)))
    a, b = A(2, 3), A(3, 2)
    close(ag.kron(T(a), T(b)), np.kron(a, b))
    close(T(a[0]).kron(T(b)), np.kron(a[0], b))
    close(ag.trace(T(x)), np.trace(x))
    assert ag.trace(T(np.arange(9).reshape(3, 3))).item() == 12
    with pytest.raises(RuntimeError, match="2D"):
        ag.trace(T(y))
    v = A(3)
    for k in (0, 1, -2):
        close(ag.diag(T(v), k), np.diag(v, k))
        close(T(x).diag(k), np.diag(x, k))
    d = ag.diag(T(x))
    assert d.is_contiguous()
    with pytest.raises(RuntimeError, match="1D or 2D"):
        ag.diag(T(A(2, 2, 2)))


def test_linalg_namespace():
    a = A(3, 4)
    close(LA.vector_norm(T(a)), np.linalg.norm(a.reshape(-1)))
    close(LA.vector_norm(T(a), ord=math.inf, dim=1), np.abs(a).max(1))
    for o in ("fro", 1, -1, math.inf, -math.inf):
        close(LA.matrix_norm(T(a), o), np.linalg.norm(a, o))
        close(LA.norm(T(a), o), np.linalg.norm(a, o))
    b = A(2, 3, 4)
    close(LA.matrix_norm(T(b), 1, dim=(0, 2), keepdim=True),
          np.linalg.norm(b.transpose(1, 0, 2), 1, axis=(1, 2))[None, :, None])
    close(LA.norm(T(b)), np.linalg.norm(b.reshape(-1)))
    close(LA.norm(T(b), 3, dim=-1), np.linalg.norm(b, 3, axis=-1))
    close(LA.norm(T(a[0]), 0.5), np.linalg.norm(a[0], 0.5))
    close(LA.matmul(T(a), T(a.T)), a @ a.T)
    for o in ("nuc", 2, -2):
        close(LA.matrix_norm(T(a), o), np.linalg.norm(a, o))
        close(LA.norm(T(a), o), np.linalg.norm(a, o))
    close(LA.matrix_norm(T(b), "nuc", dim=(2, 0), keepdim=True),
          np.linalg.norm(b.transpose(1, 2, 0), "nuc", axis=(1, 2))[None, :, None])
    with pytest.raises(RuntimeError, match="must be 1D or 2D"):
        LA.norm(T(b), 1)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        LA.matrix_norm(T(a[0]))
    assert set(LA.__all__) >= {"vector_norm", "matrix_norm", "norm", "vecdot", "matmul"}


def test_svd_and_svdvals():
    a = A(2, 5, 3)
    for full in (True, False):
        r = LA.svd(T(a), full_matrices=full)
        assert type(r).__name__ == "linalg_svd" and r._fields == ("U", "S", "Vh") and r.S is r[1]
        U, S, Vh = (np.linalg.svd(a, full_matrices=full))  # noqa: N806
        close(r.S, S)
        assert tuple(r.U.shape) == U.shape and tuple(r.Vh.shape) == Vh.shape
        np.testing.assert_allclose(np.abs(r.U.numpy()[..., :3]), np.abs(U[..., :3]), atol=1e-12)  # up to sign
        close(ag.matmul(r.U[..., :3] * r.S.unsqueeze(-2), r.Vh[..., :3, :]), a)
        assert r.U.grad_fn is None
    close(LA.svdvals(T(a.transpose(0, 2, 1))), np.linalg.svd(a, compute_uv=False))
    x = T(a, requires_grad=True)
    r = LA.svd(x, full_matrices=False, driver="gesvd")  # (the driver is ignored)
    assert type(r.U.grad_fn).__name__ == "LinalgSvdBackward0" and r.U.grad_fn is r.Vh.grad_fn
    # d(sum of S)/dA = U Vh (the nuclear norm's gradient), d s_1 / dA = u_1 v_1^T
    U, _, Vh = np.linalg.svd(a, full_matrices=False)  # noqa: N806
    (g,) = ag.grad(LA.svdvals(x).sum(), x)
    np.testing.assert_allclose(g.numpy(), U @ Vh, atol=1e-12)
    (g,) = ag.grad(LA.matrix_norm(x, 2).sum(), x)
    np.testing.assert_allclose(g.numpy(), U[..., :, :1] * Vh[..., :1, :], atol=1e-12)
    (g,) = ag.grad(LA.matrix_norm(x, -2).sum(), x)
    np.testing.assert_allclose(g.numpy(), U[..., :, -1:] * Vh[..., -1:, :], atol=1e-12)
    (g,) = ag.grad(LA.svd(x).U.sum() * 0 + LA.svd(x).S.sum(), x)  # an unused factor adds nothing
    np.testing.assert_allclose(g.numpy(), U @ Vh, atol=1e-12)
    assert LA.svdvals(T(np.zeros((2, 0, 3)))).shape == (2, 0)
    with pytest.raises(RuntimeError, match=r"linalg.svd: .*at least 2 dimensions.*\[3\]"):
        LA.svd(T(A(3)))
    with pytest.raises(RuntimeError, match=r"linalg.svdvals: .*floating point.*int64"):
        LA.svdvals(T([[1, 2], [3, 4]]))
    with pytest.raises(RuntimeError, match=r"non-empty matrix for ord=2"):
        LA.matrix_norm(T(np.zeros((0, 3))), 2)
    close(LA.matrix_norm(T(np.zeros((0, 3))), "nuc"), 0.0)
