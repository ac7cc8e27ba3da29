"""NumPy references for the nn layer and loss tests (float64, written from PyTorch's documented formulas), and
the helpers that compare a module's forward and gradients with them."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erf

import autograd as ag

RNG = np.random.default_rng(0)


def rand(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape)


def T(a, requires_grad=False, dtype=None):
    """A tensor from a NumPy array (float64 unless ``dtype``)."""
    a = np.asarray(a)
    t = ag.tensor(a) if dtype is None else ag.tensor(a, dtype=dtype)
    return t.requires_grad_() if requires_grad else t


def N(t):
    return None if t is None else np.asarray(t.detach().numpy())


def fd_grads(f, arrays, g, eps=1e-6):
    """d sum(f(*arrays) * g) / d arrays[i] by central differences of the NumPy reference ``f``."""
    out = []
    for i, a in enumerate(arrays):
        if a is None:
            out.append(None)
            continue
        a = np.array(a, dtype=np.float64)
        grad = np.zeros_like(a)
        for idx in np.ndindex(*a.shape):
            args = list(arrays)
            ap = a.copy()
            ap[idx] += eps
            args[i] = ap
            plus = np.sum(f(*args) * g)
            ap[idx] -= 2 * eps
            minus = np.sum(f(*args) * g)
            grad[idx] = (plus - minus) / (2 * eps)
        out.append(grad)
    return out


def check_module(mod, ref, x, rtol=1e-6, atol=1e-7, grad_atol=1e-6, param_names=None):
    """Forward of ``mod`` (made float64) on ``x`` vs ``ref(x, *params)``; the gradients of ``x`` and of each
    parameter vs finite differences of ``ref`` for a random output gradient."""
    mod.double()
    names = param_names if param_names is not None else [n for n, _ in mod.named_parameters()]
    params = dict(mod.named_parameters())
    pnp = [N(params[n]) for n in names]
    xt = T(x, requires_grad=True)
    out = mod(xt)
    expect = ref(x, *pnp)
    np.testing.assert_allclose(N(out), expect, rtol=rtol, atol=atol)
    g = rand(*expect.shape)
    mod.zero_grad()
    out.backward(T(g))
    grads = fd_grads(ref, [x] + pnp, g)
    np.testing.assert_allclose(N(xt.grad), grads[0], rtol=1e-5, atol=grad_atol)
    for n, gr in zip(names, grads[1:]):
        np.testing.assert_allclose(N(params[n].grad), gr, rtol=1e-5, atol=grad_atol, err_msg=n)
    return out


def gradcheck_module(mod, *xs, fast_mode=False):
    """gradcheck in float64 through ``mod``'s forward, with its parameters as inputs (perturbed in place)."""
    mod.double()
    xs = tuple(T(x, requires_grad=True) for x in xs)
    ps = tuple(mod.parameters())
    k = len(xs)
    assert ag.gradcheck(lambda *a: mod(*a[:k]), xs + ps, fast_mode=fast_mode)


# ------------------------------------------------------------------------------------------- activations
def gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def softmax(x, dim):
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def log_softmax(x, dim):
    m = x.max(dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(dim, keepdims=True))


# --------------------------------------------------------------------------------------- conv and pooling
def _pair(v):
    return tuple(v) if isinstance(v, tuple | list) else (v, v)


def conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """PyTorch's conv2d (cross-correlation) by loops over the kernel taps; padding 'same' pads the extra
    element at the end."""
    sh, sw = _pair(stride)
    dh, dw = _pair(dilation)
    kh, kw = w.shape[2:]
    if padding == "same":
        th, tw = dh * (kh - 1), dw * (kw - 1)
        pads = ((th // 2, th - th // 2), (tw // 2, tw - tw // 2))
    elif padding == "valid":
        pads = ((0, 0), (0, 0))
    else:
        ph, pw = _pair(padding)
        pads = ((ph, ph), (pw, pw))
    x = np.pad(x, ((0, 0), (0, 0)) + pads)
    n, c, h, wd = x.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (wd - dw * (kw - 1) - 1) // sw + 1
    co = w.shape[0]
    cg, og = c // groups, co // groups
    out = np.zeros((n, co, oh, ow))
    for gi in range(groups):
        xs = x[:, gi * cg:(gi + 1) * cg]
        ws = w[gi * og:(gi + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, gi * og:(gi + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def conv1d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    p = padding if isinstance(padding, str) else (0, padding)
    return conv2d(x[:, :, None], w[:, :, None], b, (1, stride), p, (1, dilation), groups)[:, :, 0]


def conv_transpose2d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Scatter of each input pixel times the kernel, then cropped by ``padding`` (output_padding adds at the
    end): out size (H-1)*s - 2p + d(k-1) + op + 1."""
    sh, sw = _pair(stride)
    ph, pw = _pair(padding)
    oph, opw = _pair(output_padding)
    dh, dw = _pair(dilation)
    n, c, h, wd = x.shape
    kh, kw = w.shape[2:]
    og = w.shape[1]
    cg = c // groups
    full = np.zeros((n, og * groups, (h - 1) * sh + dh * (kh - 1) + 1 + oph, (wd - 1) * sw + dw * (kw - 1) + 1 + opw))
    for gi in range(groups):
        xs = x[:, gi * cg:(gi + 1) * cg]
        ws = w[gi * cg:(gi + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum("nchw,co->nohw", xs, ws[:, :, i, j])
                full[:, gi * og:(gi + 1) * og, i * dh:i * dh + sh * (h - 1) + 1:sh,
                     j * dw:j * dw + sw * (wd - 1) + 1:sw] += contrib
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    out = full[:, :, ph:ph + oh, pw:pw + ow]
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out


def _windows(x, k, s, p, fill):
    kh, kw = _pair(k)
    sh, sw = _pair(s)
    ph, pw = _pair(p)
    x = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    oh = (x.shape[2] - kh) // sh + 1
    ow = (x.shape[3] - kw) // sw + 1
    return np.stack([np.stack([x[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw] for j in range(ow)], -1)
                     for i in range(oh)], -2)  # (N, C, kh, kw, oh, ow)


def max_pool2d(x, k, s=None, p=0):
    return _windows(x, k, s or k, p, -np.inf).max((2, 3))


def avg_pool2d(x, k, s=None, p=0, count_include_pad=True):
    win = _windows(x, k, s or k, p, 0.0).sum((2, 3))
    if count_include_pad:
        return win / np.prod(_pair(k))
    return win / _windows(np.ones_like(x), k, s or k, p, 0.0).sum((2, 3))


def adaptive_avg_pool2d(x, out):
    oh, ow = _pair(out)
    h, w = x.shape[2:]
    res = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
            w0, w1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            res[:, :, i, j] = x[:, :, h0:h1, w0:w1].mean((2, 3))
    return res


def upsample_nearest(x, size):
    h, w = x.shape[2:]
    oh, ow = size
    ri = np.floor(np.arange(oh) * (h / oh)).astype(int)
    ci = np.floor(np.arange(ow) * (w / ow)).astype(int)
    return x[:, :, ri][:, :, :, ci]


def _lin_idx(n_in, n_out, align_corners):
    if align_corners:
        src = np.arange(n_out) * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        src = np.maximum((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(int), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return i0, i1, src - i0


def upsample_bilinear(x, size, align_corners=False):
    h, w = x.shape[2:]
    r0, r1, fr = _lin_idx(h, size[0], align_corners)
    c0, c1, fc = _lin_idx(w, size[1], align_corners)
    rows = x[:, :, r0] * (1 - fr)[:, None] + x[:, :, r1] * fr[:, None]
    return rows[:, :, :, c0] * (1 - fc) + rows[:, :, :, c1] * fc


# -------------------------------------------------------------------------------------------------- norms
def layer_norm(x, shape, w=None, b=None, eps=1e-5):
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    y = (x - x.mean(dims, keepdims=True)) / np.sqrt(x.var(dims, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def rms_norm(x, shape, w=None, eps=None):
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    eps = np.finfo(x.dtype).eps if eps is None else eps
    y = x / np.sqrt((x * x).mean(dims, keepdims=True) + eps)
    return y if w is None else y * w


def _chan(p, ndim):
    return p.reshape((1, -1) + (1,) * (ndim - 2))


def group_norm(x, groups, w=None, b=None, eps=1e-5):
    n = x.shape[0]
    xg = x.reshape(n, groups, -1)
    y = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + eps)).reshape(x.shape)
    if w is not None:
        y = y * _chan(w, x.ndim)
    if b is not None:
        y = y + _chan(b, x.ndim)
    return y


def batch_norm_train(x, w=None, b=None, eps=1e-5):
    dims = tuple(i for i in range(x.ndim) if i != 1)
    y = (x - x.mean(dims, keepdims=True)) / np.sqrt(x.var(dims, keepdims=True) + eps)
    if w is not None:
        y = y * _chan(w, x.ndim)
    if b is not None:
        y = y + _chan(b, x.ndim)
    return y


def batch_norm_eval(x, rm, rv, w=None, b=None, eps=1e-5):
    y = (x - _chan(rm, x.ndim)) / np.sqrt(_chan(rv, x.ndim) + eps)
    if w is not None:
        y = y * _chan(w, x.ndim)
    if b is not None:
        y = y + _chan(b, x.ndim)
    return y
