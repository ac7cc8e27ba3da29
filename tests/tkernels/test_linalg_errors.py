"""Bad input to the linear algebra family: each error names the op and the offending shapes/dtypes/devices."""

import numpy as np
import pytest

import tkernels as tk


def _cuda():
    try:
        import tkernels.cuda as tkc

        return tkc.is_available()
    except ImportError:
        return False


needs_cuda = pytest.mark.skipif(not _cuda(), reason="needs a cuda device (interpreted is enough)")


def f32(*shape):
    return tk.ones(shape, dtype=tk.float32)


# --------------------------------------------------------------------------------------------------- matmul
def test_matmul_inner_dimensions_differ():
    with pytest.raises(ValueError, match=r"matmul: \(3, 4\) @ \(5, 6\): inner dimensions 4 and 5 differ"):
        tk.matmul(f32(3, 4), f32(5, 6))
    with pytest.raises(ValueError, match=r"matmul: \(3, 4\) @ \(5, 6\): inner dimensions 4 and 5 differ"):
        f32(3, 4) @ f32(5, 6)


@pytest.mark.parametrize("s1,s2,k1,k2", [((3,), (4,), 3, 4), ((3,), (4, 2), 3, 4), ((2, 3), (4,), 3, 4),
                                         ((2, 2, 3), (5, 2), 3, 5)])
def test_matmul_inner_dimensions_differ_any_rank(s1, s2, k1, k2):
    with pytest.raises(ValueError, match=rf"matmul: {tuple(s1)!r} @ {tuple(s2)!r}: inner dimensions {k1} and {k2} "
                                         rf"differ".replace("(", r"\(").replace(")", r"\)")):
        tk.matmul(f32(*s1), f32(*s2))


def test_matmul_batch_not_broadcastable():
    with pytest.raises(ValueError, match=r"matmul: \(2, 3, 4\) @ \(5, 4, 6\): the batch dimensions \(2,\) and \(5,\) "
                                         r"cannot be broadcast"):
        tk.matmul(f32(2, 3, 4), f32(5, 4, 6))


def test_matmul_refuses_0d():
    with pytest.raises(ValueError, match=r"matmul: 0-d operands .*shape=\(\)"):
        tk.matmul(f32(), f32(3))
    with pytest.raises(ValueError, match=r"matmul: 0-d operands .*shape=\(\)"):
        tk.matmul(f32(3, 3), f32())


def test_matmul_refuses_bool():
    b = tk.ones((2, 2), dtype=tk.bool)
    with pytest.raises(TypeError, match=r"matmul: bool arrays are not supported .*dtype=bool"):
        tk.matmul(b, b)
    with pytest.raises(TypeError, match=r"matmul: bool arrays .*dtype=bool"):
        tk.matmul(f32(2, 2), b)


def test_matmul_refuses_non_arrays():
    with pytest.raises(TypeError, match=r"matmul: expected two Arrays, got .*ndarray"):
        tk.matmul(f32(2, 2), np.ones((2, 2), np.float32))
    with pytest.raises(TypeError, match=r"matmul: expected two Arrays, got .*list"):
        tk.matmul([[1.0]], f32(1, 1))


def test_matmul_out_checks():
    with pytest.raises(ValueError, match=r"matmul: out has shape \(3, 3\) but the result has shape \(3, 2\)"):
        tk.matmul(f32(3, 4), f32(4, 2), out=f32(3, 3))
    with pytest.raises(TypeError, match=r"matmul: the result dtype float32 cannot be cast to the dtype of out "
                                        r"\(int32\)"):
        tk.matmul(f32(3, 4), f32(4, 2), out=tk.zeros((3, 2), dtype=tk.int32))
    with pytest.raises(TypeError, match=r"matmul: out must be an Array"):
        tk.matmul(f32(3, 4), f32(4, 2), out=np.zeros((3, 2), np.float32))


def test_matmul_into_an_expanded_out_is_refused():
    x = tk.zeros(2)
    with pytest.raises(RuntimeError, match=r"matmul: out \(Array\(shape=\(2, 2\).*\) is an expanded view"):
        tk.matmul(f32(2, 3), f32(3, 2), out=x.broadcast_to((2, 2)))
    assert x.tolist() == [0.0, 0.0]


def test_imatmul_wrong_shape_leaves_target_unchanged():
    a = tk.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    before = a.numpy().copy()
    with pytest.raises(ValueError, match=r"matmul: out has shape \(2, 3\) but the result has shape \(2, 4\)"):
        a @= f32(3, 4)
    np.testing.assert_array_equal(a.numpy(), before)


@needs_cuda
def test_matmul_device_mismatch():
    with pytest.raises(RuntimeError, match=r"matmul: expected both arrays on the same device, but found cpu and "
                                           r"cuda:0"):
        tk.matmul(f32(2, 2), f32(2, 2).to("cuda"))


# --------------------------------------------------------------------------------------------------- vecdot
def test_vecdot_axis_must_be_negative_and_in_range():
    with pytest.raises(IndexError, match=r"vecdot: axis 0 is out of range: it must be negative, in \[-2, -1\]"):
        tk.vecdot(f32(3, 4), f32(3, 4), axis=0)
    with pytest.raises(IndexError, match=r"vecdot: axis -3 is out of range.*shape=\(3, 4\)"):
        tk.vecdot(f32(2, 3, 4), f32(3, 4), axis=-3)
    with pytest.raises(IndexError, match=r"vecdot: axis -1 is out of range: .*\[-0, -1\]"):
        tk.vecdot(f32(), f32(3))


def test_vecdot_sizes():
    with pytest.raises(ValueError, match=r"vecdot: the contracted axis -1 has size 4 in x1 and 1 in x2"):
        tk.vecdot(f32(3, 4), f32(3, 1))
    with pytest.raises(ValueError, match=r"vecdot: the non-contracted dimensions of Array\(shape=\(2, 4\).* and "
                                         r"Array\(shape=\(3, 4\)"):
        tk.vecdot(f32(2, 4), f32(3, 4))


def test_vecdot_refuses_bool():
    with pytest.raises(TypeError, match=r"vecdot: bool arrays are not supported"):
        tk.vecdot(tk.ones(3, dtype=tk.bool), f32(3))


# ------------------------------------------------------------------------------------------------ tensordot
def test_tensordot_errors():
    with pytest.raises(ValueError, match=r"tensordot: axis 1 of x1 has size 4 but axis 0 of x2 has size 5"):
        tk.tensordot(f32(3, 4), f32(5, 6), axes=1)
    with pytest.raises(ValueError, match=r"tensordot: axes=3 must be in \[0, 2\]"):
        tk.tensordot(f32(3, 4), f32(4, 5), axes=3)
    with pytest.raises(ValueError, match=r"tensordot: axes=-1 must be in"):
        tk.tensordot(f32(3, 4), f32(4, 5), axes=-1)
    with pytest.raises(ValueError, match=r"tensordot: axes \(0, 1\) and \(0,\) have different lengths"):
        tk.tensordot(f32(3, 4), f32(3, 4), axes=([0, 1], [0]))
    with pytest.raises(ValueError, match=r"tensordot: repeated axis"):
        tk.tensordot(f32(3, 3), f32(3, 3), axes=([0, 0], [0, 1]))
    with pytest.raises(IndexError, match=r"tensordot: axis 2 in axes\[0\] is out of range for an array of 2"):
        tk.tensordot(f32(3, 4), f32(3, 4), axes=([2], [0]))
    with pytest.raises(TypeError, match=r"tensordot: axes must be an int or a pair of sequences"):
        tk.tensordot(f32(3, 4), f32(4, 5), axes="1")


# ---------------------------------------------------------------------------------------------------- outer
def test_outer_needs_1d():
    with pytest.raises(ValueError, match=r"outer: expected two 1-D arrays, got Array\(shape=\(2, 2\)"):
        tk.outer(f32(2, 2), f32(3))
    with pytest.raises(ValueError, match=r"outer: expected two 1-D arrays, .*Array\(shape=\(\)"):
        tk.outer(f32(3), f32())


# --------------------------------------------------------------------------------------------------- einsum
@pytest.mark.parametrize("eq,shapes,exc,pattern", [
    ("ij,jk->ik", [(2, 3)], ValueError, r"einsum: 'ij,jk->ik' has 2 operand term\(s\) but 1 operand"),
    ("ij->i", [(2, 3), (3,)], ValueError, r"einsum: 'ij->i' has 1 operand term\(s\) but 2 operand"),
    ("i1->i", [(2, 3)], ValueError, r"einsum: invalid subscript '1'"),
    ("ij->i2", [(2, 3)], ValueError, r"einsum: invalid output subscript '2'"),
    ("ijk->i", [(2, 3)], ValueError, r"einsum: operand 0 has 2 dimension\(s\) but its subscripts 'ijk' name 3"),
    ("i...jk->i", [(2, 3)], ValueError, r"einsum: operand 0 has 2 dimension\(s\) but its subscripts"),
    ("ij->ii", [(2, 3)], ValueError, r"einsum: output subscript 'i' appears more than once"),
    ("ij->k", [(2, 3)], ValueError, r"einsum: output subscript 'k' does not appear in the operands"),
    ("ij,jk->ik", [(2, 3), (4, 5)], ValueError, r"einsum: subscript 'j' has size 4 in operand 1 but 3 in another "
                                                r"operand .*shape=\(2, 3\).*shape=\(4, 5\)"),
    ("ii->i", [(2, 3)], ValueError, r"einsum: subscript 'i' is repeated in operand 0 of 'ii->i' for dimensions of "
                                    r"sizes 2 and 3"),
    ("...i,...i->...", [(2, 3), (4, 3)], ValueError, r"einsum: subscript '...' has size 4 in operand 1 but 2"),
])
def test_einsum_bad_subscripts(eq, shapes, exc, pattern):
    with pytest.raises(exc, match=pattern):
        tk.einsum(eq, *(f32(*s) for s in shapes))


def test_einsum_bad_operands():
    with pytest.raises(TypeError, match=r"einsum: subscripts must be a string"):
        tk.einsum(f32(2), f32(2))
    with pytest.raises(ValueError, match=r"einsum: at least one operand"):
        tk.einsum("i->i")
    with pytest.raises(TypeError, match=r"einsum: operand 1 must be an Array, got .*ndarray"):
        tk.einsum("i,i", f32(2), np.ones(2))
    with pytest.raises(TypeError, match=r"einsum: bool arrays are not supported \(operand 0: .*dtype=bool"):
        tk.einsum("i->", tk.ones(2, dtype=tk.bool))


@needs_cuda
def test_einsum_and_friends_device_mismatch():
    g = f32(3).to("cuda")
    with pytest.raises(RuntimeError, match=r"einsum: expected all operands on the same device, but found cpu and "
                                           r"cuda:0"):
        tk.einsum("i,i", f32(3), g)
    for fn in (tk.vecdot, tk.outer, lambda a, b: tk.tensordot(a, b, axes=1)):
        with pytest.raises(RuntimeError, match=r"expected both arrays on the same device, but found cpu and cuda:0"):
            fn(f32(3), g)


# ------------------------------------------------------------------------------------------------------ svd
@pytest.mark.parametrize("op", ["svd", "svdvals"])
def test_svd_bad_inputs(op):
    fn = getattr(tk.linalg, op)
    with pytest.raises(ValueError, match=rf"{op}: expected an array of at least 2 dimensions.*shape=\(3,\)"):
        fn(f32(3))
    with pytest.raises(TypeError, match=rf"{op}: expected a floating-point array.*int64"):
        fn(tk.ones((2, 2), dtype=tk.int64))
    with pytest.raises(TypeError, match=rf"{op}: expected an Array, got .*list"):
        fn([[1.0, 2.0]])


def test_svd_full_matrices_must_be_bool():
    with pytest.raises(TypeError, match=r"svd: full_matrices must be a bool, got 1 .*float32"):
        tk.linalg.svd(f32(2, 2), full_matrices=1)


# non-finite input: PyTorch's LinAlgError from the svd/eigh entries on every device (torch's cpu raises it for NaN;
# for +-inf its MKL LAPACK returns NaN singular values, rank 0 and a zero pinv, which we refuse as well)
_NONFINITE = r"The algorithm failed to converge because the input matrix contained non-finite values\."


def _lstsq(x):
    return tk.linalg.lstsq(x, tk.ones(x.shape[:-1] + (1,), dtype=x.dtype, device=x.device))


_RAISING = [("svd", "svd", lambda x: tk.linalg.svd(x)), ("svdvals", "svd", tk.linalg.svdvals),
            ("pinv", "svd", tk.linalg.pinv), ("matrix_rank", "svd", tk.linalg.matrix_rank),
            ("cond", "svd", tk.linalg.cond), ("lstsq", "svd", _lstsq),
            ("matrix_norm2", "svd", lambda x: tk.linalg.matrix_norm(x, ord=2)),
            ("matrix_norm-2", "svd", lambda x: tk.linalg.matrix_norm(x, ord=-2)),
            ("matrix_norm_nuc", "svd", lambda x: tk.linalg.matrix_norm(x, ord="nuc")),
            ("eigh", "eigh", tk.linalg.eigh), ("eigvalsh", "eigh", tk.linalg.eigvalsh),
            ("pinv_hermitian", "eigh", lambda x: tk.linalg.pinv(x, hermitian=True)),
            ("matrix_rank_hermitian", "eigh", lambda x: tk.linalg.matrix_rank(x, hermitian=True))]
_DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]
_DTYPES = ["float32", "float64", "complex64", "complex128"]


def _nonfinite(dtype, value, batch, device, shape=(2, 2), at=(1, 0)):
    a = np.broadcast_to(np.array([[2.0, 0.5], [0.5, 1.0], [0.3, 0.2]])[:shape[0]], batch + shape).astype(dtype)
    a = a.copy()
    a[(1,) * len(batch) + at] = value
    return tk.asarray(a, device=device)


@pytest.mark.parametrize("device", _DEVICES)
@pytest.mark.parametrize("name,decomp,fn", _RAISING, ids=[r[0] for r in _RAISING])
def test_non_finite_input_raises_linalg_error(name, decomp, fn, device):
    """NaN, +inf and -inf, single and batched (the batch element named), each dtype: the same LinAlgError (a
    RuntimeError, as torch.linalg.LinAlgError) on cpu and cuda, the op's name, the input and a hint."""
    for i, dtype in enumerate(_DTYPES):
        value = (np.nan, np.inf, -np.inf)[i % 3]
        for batch in ((), (3,)):
            x = _nonfinite(dtype, value, batch, device)
            where = r"\(Batch element 1\): " if batch else ""
            with pytest.raises(tk.linalg.LinAlgError, match=rf"^linalg\.{decomp}: {where}{_NONFINITE} Got .*"
                                                            rf"{dtype}.*{device}.*hint: .*isfinite"):
                fn(x)
    assert issubclass(tk.linalg.LinAlgError, RuntimeError)


@pytest.mark.parametrize("device", _DEVICES)
def test_non_finite_where_torch_returns_values(device):
    """eigh reads one triangle (a NaN in the other is fine); matrix_norm 'fro' and cond 'fro'/1 (through inv)
    return non-finite values instead of raising, as PyTorch's."""
    x = _nonfinite("float64", np.nan, (), device, at=(0, 1))  # the upper triangle: eigh reads the lower
    np.testing.assert_allclose(tk.linalg.eigvalsh(x).numpy(), np.linalg.eigvalsh(np.array([[2, 0.5], [0.5, 1]])))
    with pytest.raises(tk.linalg.LinAlgError, match=r"linalg\.eigh: "):
        tk.linalg.eigvalsh(x, UPLO="U")
    for value in (np.nan, np.inf):
        x = _nonfinite("float32", value, (3,), device)
        for r in (tk.linalg.matrix_norm(x), tk.linalg.cond(x, "fro"), tk.linalg.cond(x, 1)):
            r = r.numpy()
            assert np.isfinite(r[[0, 2]]).all() and not np.isfinite(r[1])


def test_non_finite_message_matches_torch():
    torch = pytest.importorskip("torch")
    a = np.array([[[1.0, 2.0], [3.0, 4.0]], [[np.nan, 1.0], [1.0, 1.0]]])
    with pytest.raises(torch.linalg.LinAlgError) as ref:
        torch.linalg.svdvals(torch.from_numpy(a))
    with pytest.raises(tk.linalg.LinAlgError) as ours:
        tk.linalg.svdvals(tk.asarray(a))
    assert str(ours.value).startswith(str(ref.value))


# --------------------------------------------------------------------------------- lstsq residuals (PyTorch's rule)
@pytest.mark.parametrize("device", _DEVICES)
def test_lstsq_residuals_only_for_full_rank_tall(device):
    rng = np.random.default_rng(0)
    tall = rng.standard_normal((3, 2))
    b = rng.standard_normal((3, 1))
    r = tk.linalg.lstsq(tk.asarray(tall, device=device), tk.asarray(b, device=device)).residuals.numpy()
    np.testing.assert_allclose(r, np.linalg.lstsq(tall, b, rcond=None)[1], rtol=1e-10)
    deficient = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    batched = np.stack([tall, deficient])
    for a, rhs in ((deficient, b), (tall.T, b[:2]), (tall[:2], b[:2]), (batched, np.stack([b, b]))):
        res = tk.linalg.lstsq(tk.asarray(a, device=device), tk.asarray(rhs, device=device))
        assert res.residuals.shape == (0,), (a.shape, res.residuals.shape)
    assert tk.linalg.lstsq(tk.asarray(batched, device=device),
                           tk.asarray(np.stack([b, b]), device=device)).rank.numpy().tolist() == [2, 1]


@pytest.mark.parametrize("name, call", [
    ("svd", lambda x: tk.linalg.svd(x)), ("svd", lambda x: tk.linalg.svdvals(x)),
    ("svd", lambda x: tk.linalg.pinv(x)), ("matrix_norm", lambda x: tk.linalg.matrix_norm(x, ord=2)),
    ("eigh", lambda x: tk.linalg.eigh(x)), ("eigh", lambda x: tk.linalg.eigvalsh(x))])
def test_lapack_non_convergence_is_torchs_linalg_error(monkeypatch, name, call):
    """LAPACK failing to converge on finite input (made to fail here) raises PyTorch's LinAlgError naming the op,
    on cpu, not NumPy's exception; autograd's linalg.LinAlgError is the same class."""
    import autograd as ag

    def fail(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge" if "svd" in name or "norm" in name else
                                    "Eigenvalues did not converge")

    for fn in ("svd", "eigh", "eigvalsh"):
        monkeypatch.setattr(np.linalg, fn, fail)
    x = tk.asarray(np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32))
    with pytest.raises(ag.linalg.LinAlgError, match=rf"linalg\.{name}: The algorithm failed to converge") as ei:
        call(x)
    assert not isinstance(ei.value, np.linalg.LinAlgError) and isinstance(ei.value, RuntimeError)
    assert ag.linalg.LinAlgError is tk.linalg.LinAlgError
