"""tkernels.fft (the array API FFT extension) against numpy.fft: the 1-D and n-d transforms on cpu (numpy.fft) and
cuda (the Stockham / four-step / Bluestein kernels of tkernels/kernels/fft.py) at odd sizes, batched along any
axis, on strided views, with n / s cutting and padding, every norm, complex64/complex128 and float32/float64
inputs; the frequency helpers.

Errors are measured relative to the largest output (what an FFT promises: ~eps log2(n) of the norm). The
interpreter runs one program per transform, so the cuda cases are few and small; the four-step path is
exercised at small sizes by lowering ``MAX_SMALL``.
"""

from __future__ import annotations

import numpy as np
import pytest

import tkernels as tk
import tkernels.cuda as tkc

DEVICES = ["cpu"] + (["cuda"] if tkc.is_available() else [])
TOL = {"float64": 1e-13, "complex128": 1e-13, "float32": 3e-6, "complex64": 3e-6}
NORMS = ("backward", "ortho", "forward")
SIZES = (1, 2, 3, 5, 7, 12, 17, 64, 100, 127, 1000)
REAL = {"complex64": "float32", "complex128": "float64", "float32": "float32", "float64": "float64"}


def _close(got: tk.Array, want: np.ndarray, dtype: str):
    """``got`` (dtype ``dtype``, its complex or real counterpart) equals ``want`` to the FFT tolerance."""
    assert got.dtype.name == dtype, (got.dtype, dtype)
    g = got.numpy().astype(np.complex128 if got.dtype.kind == "c" else np.float64)
    assert g.shape == want.shape, (g.shape, want.shape)
    scale = max(np.abs(want).max(initial=0.0), 1e-300)
    err = np.abs(g - want).max(initial=0.0) / scale
    assert err <= TOL[dtype], f"{dtype} {want.shape}: relative error {err:.2e}"


def _input(rng, shape, dtype, device):
    """A random array of ``shape`` and ``dtype`` as a strided view on ``device`` (every other entry of the first
    axis of a buffer whose last two axes are swapped), and its values."""
    base = rng.standard_normal((2 * shape[0], *shape[1:-2], shape[-1], shape[-2]))
    if tk.dtypes.as_dtype(dtype).kind == "c":
        base = base + 1j * rng.standard_normal(base.shape)
    x = tk.asarray(base.astype(dtype)).to(device)[::2]
    x = tk.matrix_transpose(x)
    return x, np.swapaxes(base[::2], -1, -2).astype(dtype).astype(np.complex128)


def _c(dtype: str) -> str:
    return {"float32": "complex64", "float64": "complex128"}.get(dtype, dtype)


def test_namespace_holds_only_the_extension():
    names = {"fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
             "rfftfreq", "fftshift", "ifftshift"}
    assert set(tk.fft.__all__) == names
    assert {n for n in dir(tk.fft) if not n.startswith("_")} == names  # no helper (lookup, Array, math) as API


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("i,n", list(enumerate(SIZES)))
def test_fft_ifft_match_numpy(device, i, n):
    """fft/ifft of every size along a middle axis of a strided batch (direction, norm, dtype in turn; a real
    input every fourth)."""
    rng = np.random.default_rng(n)
    dtype = ("complex128", "complex64", "complex128", "float32")[i % 4]
    norm = NORMS[i % 3]
    x, xv = _input(rng, (2, n, 3), dtype, device)
    ours, theirs = (tk.fft.ifft, np.fft.ifft) if i % 2 else (tk.fft.fft, np.fft.fft)
    got = ours(x, axis=1, norm=norm)
    assert got.device == x.device and got.shape == (2, n, 3)
    _close(got, theirs(xv, axis=1, norm=norm), _c(dtype))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("i,n", list(enumerate((1, 5, 12, 64, 127))))
def test_rfft_irfft_hfft_ihfft_match_numpy(device, i, n):
    """rfft or ihfft, irfft or hfft (in turn), n cutting, keeping or padding the input, along the first axis."""
    rng = np.random.default_rng(100 + n)
    dtype = ("float64", "float32")[i % 2]
    norm = NORMS[i % 3]
    m = n + (i % 3) - 1 if n > 1 else n
    r, rv = _input(rng, (n, 2, 3), dtype, device)
    ours, theirs = (tk.fft.ihfft, np.fft.ihfft) if i % 2 else (tk.fft.rfft, np.fft.rfft)
    _close(ours(r, n=m, axis=0, norm=norm), theirs(rv.real, m, axis=0, norm=norm), _c(dtype))
    h, hv = _input(rng, (n // 2 + 2, 2, 3), _c(dtype), device)
    ours, theirs = (tk.fft.hfft, np.fft.hfft) if i % 2 else (tk.fft.irfft, np.fft.irfft)
    _close(ours(h, n=m, axis=0, norm=norm), theirs(hv, m, axis=0, norm=norm), dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_nd_transforms_match_numpy(device):
    """fftn/ifftn/rfftn/irfftn over all axes, some axes (s cutting, padding, -1), a 2-D batch of 3-D arrays."""
    rng = np.random.default_rng(7)
    x, xv = _input(rng, (2, 4, 3), "complex128", device)
    _close(tk.fft.fftn(x), np.fft.fftn(xv), "complex128")
    _close(tk.fft.ifftn(x, s=(3, -1), axes=(0, 2), norm="ortho"), np.fft.ifftn(xv, s=(3, 3), axes=(0, 2),
                                                                              norm="ortho"), "complex128")
    r, rv = _input(rng, (2, 4, 4), "float32", device)
    _close(tk.fft.rfftn(r, axes=(1, 2)), np.fft.rfftn(rv.real, axes=(1, 2)), "complex64")
    want = np.fft.irfftn(xv, s=(5, 4), axes=(1, 2), norm="forward")
    _close(tk.fft.irfftn(x, s=(5, 4), norm="forward"), want, "float64")
    _close(tk.fft.fftn(r, s=(2,)), np.fft.fftn(rv, s=(2,), axes=(-1,)), "complex64")


@pytest.mark.skipif(not tkc.is_available(), reason="needs cuda (real or interpreted)")
@pytest.mark.parametrize("n,op", [(32, "fft"), (64, "irfft"), (5, "ifft"), (6, "rfft")])
def test_four_step_and_bluestein_over_it(monkeypatch, n, op):
    """Powers of two above MAX_SMALL (lowered to 8) take the four-step pair; Bluestein lengths whose
    convolution does (5 -> 16, 6 -> 16) too: against numpy.fft in float64, n padding the input."""
    from tkernels.kernels import fft as fk

    monkeypatch.setattr(fk, "MAX_SMALL", 8)
    rng = np.random.default_rng(n)
    m = n // 2 + 1 if op == "irfft" else n - 1
    x = rng.standard_normal((2, m)) + (0 if op == "rfft" else 1j * rng.standard_normal((2, m)))
    got = getattr(tk.fft, op)(tk.asarray(x).to("cuda"), n=n, norm="ortho")
    _close(got, getattr(np.fft, op)(x, n, norm="ortho"), "float64" if op == "irfft" else "complex128")


@pytest.mark.skipif(not tkc.is_available(), reason="needs cuda (real or interpreted)")
def test_longest_lengths_are_refused_with_a_hint(monkeypatch):
    from tkernels.kernels import fft as fk

    monkeypatch.setattr(fk, "MAX_SMALL", 4)
    with pytest.raises(ValueError, match=r"fft: transforms longer than 16 points \(here 32.*split the axis"):
        tk.fft.fft(tk.zeros((32,), device="cuda"))


@pytest.mark.parametrize("device", DEVICES)
def test_empty_batches_and_inputs(device):
    """An empty batch gives an empty result (no launch); an empty axis with an explicit n is all zeros."""
    assert tk.fft.fft(tk.zeros((0, 5), device=device)).shape == (0, 5)
    assert tk.fft.rfft(tk.zeros((3, 0), device=device), axis=0).shape == (2, 0)
    z = tk.fft.fft(tk.zeros((0,), dtype="float64", device=device), n=4)
    assert z.shape == (4,) and z.dtype == tk.complex128 and not np.any(z.numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_bad_input_is_refused_with_the_op_and_a_hint(device):
    x = tk.zeros((4,), device=device)
    with pytest.raises(ValueError, match=r"fft: norm must be one of \('backward', 'ortho', 'forward'\), got 'half'"):
        tk.fft.fft(x, norm="half")
    with pytest.raises(ValueError, match=r"ifft: invalid number of data points \(0\).*explicit n"):
        tk.fft.ifft(x, n=0)
    with pytest.raises(ValueError, match=r"irfft: invalid number of data points \(0\)"):
        tk.fft.irfft(tk.fft.rfft(tk.zeros((1,), device=device)))
    with pytest.raises(TypeError, match=r"fft: expected a floating-point array .*got Array\(shape=\(4,\), "
                                        r"dtype=int64.*astype"):
        tk.fft.fft(tk.zeros((4,), dtype="int64", device=device))
    with pytest.raises(TypeError, match=r"rfft: expected a real floating-point array.*complex64.*tkernels.real"):
        tk.fft.rfft(tk.fft.fft(x))
    with pytest.raises(TypeError, match=r"irfft: expected a complex array"):
        tk.fft.irfft(x)
    with pytest.raises(ValueError, match=r"hfft: expected an array of at least one dimension"):
        tk.fft.hfft(tk.fft.fft(x)[0])
    with pytest.raises(IndexError, match=r"fft: axis 1 is out of range"):
        tk.fft.fft(x, axis=1)
    with pytest.raises(ValueError, match=r"fftn: s \(2, 2\) and axes \(0,\) must have the same length"):
        tk.fft.fftn(x, s=(2, 2), axes=(0,))
    with pytest.raises(ValueError, match=r"rfftn: repeated axes \(0, 0\)"):
        tk.fft.rfftn(x, axes=(0, 0))


# ---- fftfreq, rfftfreq, fftshift, ifftshift (no complex dtype needed)

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n,d", [(1, 1.0), (2, 0.5), (7, 0.1), (8, 3.0), (127, 1e-3)])
def test_fftfreq_and_rfftfreq_match_numpy(device, n, d):
    for dtype in (None, tk.float64, tk.float32):
        f = tk.fft.fftfreq(n, d=d, dtype=dtype, device=device)
        r = tk.fft.rfftfreq(n, d=d, dtype=dtype, device=device)
        want_dtype = dtype or tk.get_default_dtype()
        assert f.dtype == want_dtype and r.dtype == want_dtype and f.device.type == device
        np.testing.assert_array_equal(f.numpy(), np.fft.fftfreq(n, d).astype(want_dtype.numpy))
        np.testing.assert_array_equal(r.numpy(), np.fft.rfftfreq(n, d).astype(want_dtype.numpy))


def test_fftfreq_bad_arguments():
    with pytest.raises(ValueError, match="fftfreq: n must be a positive integer, got 0"):
        tk.fft.fftfreq(0)
    with pytest.raises(TypeError, match="rfftfreq: n must be an integer, got float 2.5"):
        tk.fft.rfftfreq(2.5)
    with pytest.raises(TypeError, match="fftfreq: dtype must be a real floating-point dtype, got int32"):
        tk.fft.fftfreq(4, dtype=tk.int32)
    with pytest.raises(TypeError, match="fftfreq: d .* must be a Python float"):
        tk.fft.fftfreq(4, d="1")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("axes", [None, 0, -1, (0, 2), [2, 1]])
def test_fftshift_ifftshift_match_numpy(device, axes):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 4, 7))
    x = tk.asarray(a, device=device)[:, ::-1]  # a reversed (strided) view
    v = a[:, ::-1]
    for ours, theirs in ((tk.fft.fftshift, np.fft.fftshift), (tk.fft.ifftshift, np.fft.ifftshift)):
        got = ours(x, axes=axes)
        assert got.device == x.device and got.dtype == x.dtype
        np.testing.assert_array_equal(got.numpy(), theirs(v, axes=axes))
    np.testing.assert_array_equal(tk.fft.ifftshift(tk.fft.fftshift(x, axes=axes), axes=axes).numpy(), v)
    s = tk.asarray(3.0, device=device)
    assert tk.fft.fftshift(s).numpy() == 3.0
    with pytest.raises(TypeError, match="fftshift: expected an Array, got list"):
        tk.fft.fftshift([1, 2])
    with pytest.raises(IndexError, match="ifftshift: axes 3 is out of range"):
        tk.fft.ifftshift(x, axes=3)


@pytest.mark.gpu
@pytest.mark.parametrize("shape,axes,dtype", [((2**20,), (-1,), "complex64"), ((2**24,), (-1,), "complex64"),
                                              ((3, 1000003), (-1,), "complex128"), ((8, 512, 512), (-2, -1),
                                                                                     "complex64")])
def test_large_transforms_on_a_gpu(shape, axes, dtype):
    """What the interpreter is too slow for: four-step at full size (2^20, 2^24), Bluestein over four-step
    (a prime length), a batch of 2-D transforms; against numpy.fft, forward and back."""
    rng = np.random.default_rng(0)
    h = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    x = tk.asarray(h, device="cuda")
    want = np.fft.fftn(h.astype(np.complex128), axes=axes)
    got = tk.fft.fftn(x, axes=axes).numpy().astype(np.complex128)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= (1e-12 if dtype == "complex128" else 1e-5), err
    back = tk.fft.ifftn(tk.fft.fftn(x, axes=axes), axes=axes).numpy()
    assert np.abs(back - h).max() <= (1e-12 if dtype == "complex128" else 1e-5) * np.abs(h).max()
