"""``autograd.fft``: PyTorch's ``torch.fft`` names (``dim``, ``s``, ``norm``) over ``tkernels.fft``, differentiable.

Every transform along one dim is a linear map of the form (``_Map``)::

    y = resize_c( Re?( w_post * scale * DFT_n^(+-)( w_pre * resize_n(x) ) ) )

``resize`` cuts or zero-pads along ``dim``, ``w_pre``/``w_post`` are real weights over the ``n`` frequencies (the
doubling of a half spectrum's interior, zero past its ``n // 2 + 1`` terms), ``Re?`` takes the real part of a
real result. fft/ifft (c2c), rfft/ihfft (r2c: the first ``n // 2 + 1`` outputs) and irfft/hfft (c2r: ``w_pre``
doubles the half spectrum, the real part out) are such maps. The adjoint of one is another (the opposite
sign, the same scale, the roles of pre and post swapped): PyTorch's ``fft_c2c_backward``, ``fft_r2c_backward``
and ``fft_c2r_backward``. Backward applies the adjoint map as a recorded op, so gradients of gradients follow
(the adjoint of the adjoint is the map). The n-d forms chain 1-D transforms. Forward runs the tkernels entries
(one kernel per axis on cuda); a backward map runs the ``fft`` primitive plus weights and resizes on the
interleaved real views (real kernels only, so cuda needs no complex elementwise kernel).
"""


from dataclasses import dataclass as _dataclass

import tkernels as _tk
from tkernels import fft as _tfft
from tkernels.array import Array as _Array
from tkernels.dispatch import lookup as _lookup

from .ops._base import Node as _Node
from .ops._base import needs_grad as _needs_grad
from .ops._base import wrap as _wrap
from .tensor import Tensor as _Tensor

__all__ = ["fft", "ifft", "fftn", "ifftn", "fft2", "ifft2", "rfft", "irfft", "rfftn", "irfftn", "rfft2", "irfft2",
           "hfft", "ihfft", "hfftn", "ihfftn", "hfft2", "ihfft2", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


@_dataclass(frozen=True)
class _Map:
    axis: int
    n: int
    inverse: bool
    scale: float
    in_len: int
    real_in: bool
    pre_half: int  # > 0: w_pre is the half-spectrum weight of that many terms (c2r)
    post_half: int  # > 0: w_post likewise (the adjoint of c2r)
    real_out: bool
    out_len: int

    def adjoint(self) -> "_Map":
        return _Map(self.axis, self.n, not self.inverse, self.scale, self.out_len, self.real_out, self.post_half,
                    self.pre_half, self.real_in, self.in_len)


def _resize(a: _Array, axis: int, m: int) -> _Array:
    """``a`` cut or zero-padded to ``m`` along ``axis`` (a real array)."""
    L = a.shape[axis]
    if L >= m:
        return a[(slice(None),) * axis + (slice(0, m),)]
    pad = [0, 0] * (a.ndim - axis - 1) + [0, m - L]
    return _tk.pad(a, pad)


def _half_weight(n: int, h: int, axis: int, ndim: int, like: _Array) -> _Array:
    """(1, 2, ..., 2, 1 or 2, 0, ...) over n terms: the interior of an h-term half spectrum doubled, zero past
    it; shaped to broadcast along ``axis`` of an ``ndim``-d array."""
    k = _tk.arange(n, dtype=_tk.float64, device=like.device)
    w = _tk.where(k >= h, 0.0, _tk.where((k >= 1) & (k <= n - h), 2.0, 1.0)).astype(like.dtype)
    return _tk.reshape(w, (n,) + (1,) * (ndim - axis - 1))


def _run(m: _Map, x: _Array) -> _Array:
    """The map ``m`` on the Array ``x`` (module docstring)."""
    cplx = x.dtype.kind == "c"
    if m.pre_half:
        xf = _tk.view_as_real(x) if cplx else x
        xf = _resize(xf, m.axis, m.n)
        xf = xf * _half_weight(m.n, m.pre_half, m.axis, xf.ndim, xf)
        xf = xf.contiguous()
        x = _tk.view_as_complex(xf) if cplx else xf
    cdt = _tfft._C[x.dtype]
    shape = x.shape[:m.axis] + (m.n,) + x.shape[m.axis + 1:]
    y = _lookup("empty", x.device)(shape, cdt, x.device)
    if y.size:
        _lookup("fft", x.device)(y, x, m.axis, m.n, m.inverse, m.scale, False)
    yf = _tk.view_as_real(y)
    if m.post_half:
        yf = yf * _half_weight(m.n, m.post_half, m.axis, yf.ndim, yf)
    if m.real_out:
        yf = yf[..., 0]
    yf = _resize(yf, m.axis, m.out_len).contiguous()
    return yf if m.real_out else _tk.view_as_complex(yf)


class _FftBackward(_Node):
    """The adjoint of a 1-D transform (``_Map``), itself applied as a recorded op. The adjoint is already the
    conjugate Wirtinger formula (PyTorch's), for complex and real gradients alike: not the engine's
    conj(backward(conj(g))) of holomorphic nodes (real-linear maps such as irfft are not holomorphic)."""

    _holomorphic = False

    def name(self) -> str:
        return "FftBackward"

    def __init__(self, x, m: _Map):
        super().__init__((x,))
        self.map = m

    def backward(self, g):
        return (_apply(self.map.adjoint(), g),)


def _apply(m: _Map, x: _Tensor) -> _Tensor:
    out = _run(m, x._data)
    if not _needs_grad(x):
        return _wrap(out)
    return _FftBackward(x, m).output(out, 0)


def _norm(norm):
    return "backward" if norm is None else norm


def _one(op: str, x: _Tensor, n, dim: int, norm, kind: str) -> _Tensor:
    """A 1-D transform: the tkernels entry forward, the map recorded for backward."""
    f = getattr(_tfft, op)
    out = f(x._data, n=n, axis=dim, norm=_norm(norm))
    if not _needs_grad(x):
        return _wrap(out)
    a = x._data
    axis = dim % a.ndim
    L = a.shape[axis]
    nn = out.shape[axis] if kind != "r2c" else (n if n is not None else L)
    inverse = op in ("ifft", "irfft", "ihfft")
    scale = _tfft._scale(op, _norm(norm), nn, inverse)
    h = nn // 2 + 1
    m = _Map(axis, nn, inverse, scale, L, a.dtype.kind != "c", h if kind == "c2r" else 0, 0, kind == "c2r",
             out.shape[axis])
    return _FftBackward(x, m).output(out, 0)


def fft(input, n=None, dim=-1, norm=None) -> _Tensor:
    """``torch.fft.fft``: the 1-D DFT along ``dim`` (a real input is read as complex)."""
    return _one("fft", input, n, dim, norm, "c2c")


def ifft(input, n=None, dim=-1, norm=None) -> _Tensor:
    """``torch.fft.ifft``."""
    return _one("ifft", input, n, dim, norm, "c2c")


def rfft(input, n=None, dim=-1, norm=None) -> _Tensor:
    """``torch.fft.rfft``: the n // 2 + 1 non-negative frequencies of a real input."""
    return _one("rfft", input, n, dim, norm, "r2c")


def ihfft(input, n=None, dim=-1, norm=None) -> _Tensor:
    """``torch.fft.ihfft``."""
    return _one("ihfft", input, n, dim, norm, "r2c")


def irfft(input, n=None, dim=-1, norm=None) -> _Tensor:
    """``torch.fft.irfft``: the real signal of a half spectrum (imaginary parts of the zero and Nyquist terms
    are ignored, and get no gradient, as in PyTorch)."""
    return _one("irfft", input, n, dim, norm, "c2r")


def hfft(input, n=None, dim=-1, norm=None) -> _Tensor:
    """``torch.fft.hfft``."""
    return _one("hfft", input, n, dim, norm, "c2r")


def _dims(input, s, dim, default_last=None):
    nd = input.ndim
    if dim is None:
        if s is not None:
            dim = list(range(nd - len(s), nd))
        else:
            dim = list(range(nd)) if default_last is None else list(range(nd - default_last, nd))
    elif isinstance(dim, int):
        dim = [dim]
    dim = [d % nd for d in dim]
    s = [None] * len(dim) if s is None else [None if v == -1 else v for v in s]
    if len(s) != len(dim):
        raise RuntimeError(f"fftn: When given, dim and shape arguments must have the same length (s={s}, "
                           f"dim={dim})")
    return list(s), dim


def _nd(op1: str, input, s, dim, norm, last: str, default_last=None) -> _Tensor:
    s, dim = _dims(input, s, dim, default_last)
    x = input
    if last == "c2r":  # the complex dims first, then the half-spectrum dim
        c2c = "fft" if op1 == "hfft" else "ifft"
        for n, d in zip(s[:-1], dim[:-1]):
            x = _one(c2c, x, n, d, norm, "c2c")
        return _one(op1, x, s[-1], dim[-1], norm, "c2r")
    x = _one(op1, x, s[-1], dim[-1], norm, last)
    c2c = "ifft" if op1 in ("ifft", "ihfft") else "fft"
    for n, d in zip(s[-2::-1], dim[-2::-1]):
        x = _one(c2c, x, n, d, norm, "c2c")
    return x


def fftn(input, s=None, dim=None, norm=None) -> _Tensor:
    """``torch.fft.fftn``: over ``dim`` (all by default; the last ``len(s)`` when only ``s`` is given)."""
    return _nd("fft", input, s, dim, norm, "c2c")


def ifftn(input, s=None, dim=None, norm=None) -> _Tensor:
    return _nd("ifft", input, s, dim, norm, "c2c")


def rfftn(input, s=None, dim=None, norm=None) -> _Tensor:
    return _nd("rfft", input, s, dim, norm, "r2c")


def irfftn(input, s=None, dim=None, norm=None) -> _Tensor:
    return _nd("irfft", input, s, dim, norm, "c2r")


def fft2(input, s=None, dim=(-2, -1), norm=None) -> _Tensor:
    return _nd("fft", input, s, dim, norm, "c2c")


def ifft2(input, s=None, dim=(-2, -1), norm=None) -> _Tensor:
    return _nd("ifft", input, s, dim, norm, "c2c")


def rfft2(input, s=None, dim=(-2, -1), norm=None) -> _Tensor:
    return _nd("rfft", input, s, dim, norm, "r2c")


def irfft2(input, s=None, dim=(-2, -1), norm=None) -> _Tensor:
    return _nd("irfft", input, s, dim, norm, "c2r")


def hfftn(input, s=None, dim=None, norm=None) -> _Tensor:
    """``torch.fft.hfftn``: the real n-d transform of a signal Hermitian in its last dim (a half spectrum there)."""
    return _nd("hfft", input, s, dim, norm, "c2r")


def ihfftn(input, s=None, dim=None, norm=None) -> _Tensor:
    """``torch.fft.ihfftn``: the inverse of ``hfftn`` (a real input, the last dim halved)."""
    return _nd("ihfft", input, s, dim, norm, "r2c")


def hfft2(input, s=None, dim=(-2, -1), norm=None) -> _Tensor:
    return _nd("hfft", input, s, dim, norm, "c2r")


def ihfft2(input, s=None, dim=(-2, -1), norm=None) -> _Tensor:
    return _nd("ihfft", input, s, dim, norm, "r2c")


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False) -> _Tensor:
    """``torch.fft.fftfreq``."""
    t = _wrap(_tk.fft.fftfreq(n, d=float(d), dtype=dtype, device=device))
    return t.requires_grad_(requires_grad) if requires_grad else t


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False) -> _Tensor:
    """``torch.fft.rfftfreq``."""
    t = _wrap(_tk.fft.rfftfreq(n, d=float(d), dtype=dtype, device=device))
    return t.requires_grad_(requires_grad) if requires_grad else t


def fftshift(input, dim=None) -> _Tensor:
    """``torch.fft.fftshift``: a roll by half of each of ``dim`` (all by default); differentiable."""
    from .ops.shape import roll

    dims = list(range(input.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    return roll(input, [input.shape[d] // 2 for d in dims], dims)


def ifftshift(input, dim=None) -> _Tensor:
    """``torch.fft.ifftshift``."""
    from .ops.shape import roll

    dims = list(range(input.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    return roll(input, [-(input.shape[d] // 2) for d in dims], dims)
