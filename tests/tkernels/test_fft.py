"""tkernels.fft: the frequency helpers, and the transforms on the interleaved layout (the ``fft`` backend
primitive: numpy.fft on cpu, the Stockham / four-step / Bluestein kernels of tkernels/kernels/fft.py on cuda)
against numpy.fft at odd sizes, batched along any axis, on strided views, with n cut/padded, every norm.

Errors are measured relative to the largest output (what an FFT promises: ~eps log2(n) of the norm). The
interpreter runs one program per transform, so the cuda cases are few and small; the four-step path is
exercised at small sizes by lowering ``MAX_SMALL``.
"""

from __future__ import annotations

import numpy as np
import pytest

import tkernels as tk
import tkernels.cuda as tkc
from tkernels import fft as tfft

DEVICES = ["cpu"] + (["cuda"] if tkc.is_available() else [])
TOL = {"float64": 1e-13, "float32": 3e-6}
NORMS = ("backward", "ortho", "forward")
SIZES = (1, 2, 3, 5, 7, 12, 17, 64, 100, 127, 1000)


def _c(a: np.ndarray) -> np.ndarray:
    return a[..., 0] + 1j * a[..., 1]


def _close(got: tk.Array, want: np.ndarray, dtype: str, interleaved: bool = True):
    g = got.numpy().astype(np.float64)
    g = _c(g) if interleaved else g
    assert g.shape == want.shape, (g.shape, want.shape)
    scale = max(np.abs(want).max(initial=0.0), 1e-300)
    err = np.abs(g - want).max(initial=0.0) / scale
    assert err <= TOL[dtype], f"{dtype} {want.shape}: relative error {err:.2e}"


def _strided(rng, shape, dtype, device):
    """A random array of ``shape`` as a non-contiguous view (every other element of the first axis, the last
    two axes of a transposed buffer), and its values."""
    base = rng.standard_normal((2 * shape[0], *shape[1:-2], shape[-1], shape[-2]))
    x = tk.asarray(base, device=device).astype(dtype)[::2]
    x = tk.matrix_transpose(x) if len(shape) >= 2 else x
    return x, x.to("cpu").numpy().astype(np.float64)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("i,n", list(enumerate(SIZES)))
def test_c2c_matches_numpy(device, i, n):
    """fft/ifft of every size, along a middle axis of a strided batch (direction, norm, dtype in turn)."""
    rng = np.random.default_rng(n)
    dtype = ("float64", "float32")[i % 2]
    inv = i % 3 == 1
    norm = NORMS[i % 3]
    x, xv = _strided(rng, (2, n, 2, 3), dtype, device)  # complex shape (2, n, 3): a (..., 3, 2) transposed
    x = x.mT
    xv = np.swapaxes(xv, -1, -2)
    got = tfft._c2c(x, axis=1, norm=norm, inverse=inv)
    assert got.device == x.device and got.dtype == x.dtype and got.shape == (2, n, 3, 2)
    want = (np.fft.ifft if inv else np.fft.fft)(_c(xv), axis=1, norm=norm)
    _close(got, want, dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("i,n", list(enumerate((1, 5, 12, 64, 127))))
def test_r2c_c2r_match_numpy(device, i, n):
    """rfft (and ihfft's direction), irfft (and hfft's) with n cut or padded, along the first axis."""
    rng = np.random.default_rng(100 + n)
    dtype = ("float64", "float32")[i % 2]
    norm = NORMS[i % 3]
    r, rv = _strided(rng, (n, 3, 2), dtype, device)  # real (n, 2, 3)
    m = n + (i % 3) - 1 if n > 1 else n  # cut, keep, pad
    inv = i % 2 == 1
    got = tfft._r2c(r, n=m, axis=0, norm=norm, inverse=inv, op="ihfft" if inv else "rfft")
    want = np.fft.ihfft(rv, m, axis=0, norm=norm) if inv else np.fft.rfft(rv, m, axis=0, norm=norm)
    _close(got, want, dtype)
    h, hv = _strided(rng, (n // 2 + 2, 3, 2, 2), dtype, device)  # complex (n//2 + 2, 2, 3)
    got = tfft._c2r(h, n=m, axis=0, norm=norm, inverse=not inv, op="hfft" if inv else "irfft")
    want = np.fft.hfft(_c(hv), m, axis=0, norm=norm) if inv else np.fft.irfft(_c(hv), m, axis=0, norm=norm)
    _close(got, want, dtype, interleaved=False)


@pytest.mark.skipif(not tkc.is_available(), reason="needs cuda (real or interpreted)")
@pytest.mark.parametrize("n,kind", [(32, "c2c"), (64, "c2r"), (5, "c2c"), (6, "r2c")])
def test_four_step_and_bluestein_over_it(monkeypatch, n, kind):
    """Powers of two above MAX_SMALL (lowered to 8) take the four-step pair; Bluestein lengths whose
    convolution does (5 -> 16, 6 -> 16) too: against numpy.fft in float64, with n padding the input."""
    from tkernels.kernels import fft as fk

    monkeypatch.setattr(fk, "MAX_SMALL", 8)
    rng = np.random.default_rng(n)
    if kind == "r2c":
        r = rng.standard_normal((2, n - 1))
        _close(tfft._r2c(tk.asarray(r, device="cuda"), n=n, norm="ortho"), np.fft.rfft(r, n, norm="ortho"), "float64")
        return
    x = rng.standard_normal((n // 2 + 1 if kind == "c2r" else n - 1, 2))
    if kind == "c2r":
        got = tfft._c2r(tk.asarray(x, device="cuda"), n=n, axis=0)
        _close(got, np.fft.irfft(_c(x), n, axis=0), "float64", interleaved=False)
    else:
        got = tfft._c2c(tk.asarray(x, device="cuda"), n=n, axis=0, inverse=True)
        _close(got, np.fft.ifft(_c(x), n, axis=0), "float64")


@pytest.mark.skipif(not tkc.is_available(), reason="needs cuda (real or interpreted)")
def test_longest_lengths_are_refused_with_a_hint(monkeypatch):
    from tkernels.kernels import fft as fk

    monkeypatch.setattr(fk, "MAX_SMALL", 4)
    with pytest.raises(ValueError, match=r"fft: transforms longer than 16 points \(here 32.*split the axis"):
        tfft._c2c(tk.zeros((32, 2), device="cuda"), axis=0)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_batches_and_inputs(device):
    """An empty batch gives an empty result (no launch); an empty axis with an explicit n is all zeros."""
    x = tk.zeros((0, 5, 2), dtype="float64", device=device)
    assert tfft._c2c(x, axis=1).shape == (0, 5, 2)
    assert tfft._r2c(tk.zeros((3, 0), device=device), axis=0).shape == (2, 0, 2)
    z = tfft._c2c(tk.zeros((0, 2), device=device), n=4, axis=0)
    assert z.shape == (4, 2) and not np.any(z.numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_bad_input_is_refused_with_the_op_and_a_hint(device):
    x = tk.zeros((4, 2), device=device)
    with pytest.raises(ValueError, match=r"fft: norm must be one of \('backward', 'ortho', 'forward'\), got 'half'"):
        tfft._c2c(x, axis=0, norm="half")
    with pytest.raises(ValueError, match=r"fft: invalid number of data points \(0\).*explicit n"):
        tfft._c2c(x, n=0, axis=0)
    with pytest.raises(ValueError, match=r"irfft: invalid number of data points \(0\)"):
        tfft._c2r(tk.zeros((1, 2), device=device), axis=0)
    with pytest.raises(TypeError, match=r"fft: expected float32 or float64 data, got Array\(shape=\(4, 2\), "
                                        r"dtype=int64.*astype"):
        tfft._c2c(tk.zeros((4, 2), dtype="int64", device=device), axis=0)
    with pytest.raises(ValueError, match=r"fft: expected interleaved complex data of shape \(\.\.\., 2\)"):
        tfft._c2c(tk.zeros((4, 3), device=device), axis=0)
    with pytest.raises(IndexError, match=r"fft: axis 1 is out of range"):
        tfft._c2c(x, axis=1)


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
