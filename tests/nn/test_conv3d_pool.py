"""conv3d, conv_transpose3d and the 1-d/3-d, adaptive, LP and unpooling layers vs NumPy references written from
PyTorch's documented formulas (float32 and float64), gradcheck in float64, interpreted cuda vs cpu, and errors."""

import itertools
import math

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812

from .nnref import N, T

R = np.random.default_rng(3)
DTYPES = [(ag.float64, 1e-10), (ag.float32, 1e-4)]


def r(*shape):
    return R.standard_normal(shape)


def _t(a, dtype=ag.float64, requires_grad=False):
    return T(a, requires_grad=requires_grad, dtype=dtype)


# ------------------------------------------------------------------------------------------ NumPy references
def conv3d_ref(x, w, b, stride, pads, dil, groups):
    """Direct 3-D cross-correlation; ``pads``: (front, back) per dim."""
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    n, c = x.shape[:2]
    co, cg, *k = w.shape
    out_sp = [(xp.shape[2 + i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(3)]
    out = np.zeros((n, co, *out_sp))
    wg = w.reshape(groups, co // groups, cg, *k)
    for a, bb, cc in itertools.product(*(range(v) for v in k)):
        sl = tuple(slice(t * dil[i], t * dil[i] + (out_sp[i] - 1) * stride[i] + 1, stride[i])
                   for i, t in enumerate((a, bb, cc)))
        xs = xp[(slice(None), slice(None)) + sl].reshape(n, groups, cg, *out_sp)
        out += np.einsum("ngcdhw,goc->ngodhw", xs, wg[..., a, bb, cc]).reshape(out.shape)
    return out + (0 if b is None else b.reshape(1, -1, 1, 1, 1))


def conv_transpose3d_ref(x, w, b, stride, pad, out_pad, groups, dil):
    n, c, *sp = x.shape
    _, cog, *k = w.shape
    full = [(sp[i] - 1) * stride[i] + dil[i] * (k[i] - 1) + 1 + out_pad[i] for i in range(3)]
    out = np.zeros((n, cog * groups, *full))
    xg = x.reshape(n, groups, c // groups, *sp)
    wg = w.reshape(groups, c // groups, cog, *k)
    for a, bb, cc in itertools.product(*(range(v) for v in k)):
        sl = tuple(slice(t * dil[i], t * dil[i] + (sp[i] - 1) * stride[i] + 1, stride[i])
                   for i, t in enumerate((a, bb, cc)))
        contrib = np.einsum("ngcdhw,gco->ngodhw", xg, wg[..., a, bb, cc]).reshape(n, -1, *sp)
        out[(slice(None), slice(None)) + sl] += contrib
    out = out[(slice(None), slice(None)) + tuple(slice(pad[i], full[i] - pad[i]) for i in range(3))]
    return out + (0 if b is None else b.reshape(1, -1, 1, 1, 1))


def _out(size, k, s, p, d, ceil):
    o = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    return o - 1 if ceil and (o - 1) * s >= size + p else o


def pool_ref(x, k, s, p, d=None, ceil=False, kind="max", count_include_pad=True, divisor=None):
    """(values, flat indices) of PyTorch's n-d max or average pooling, window by window."""
    nd = len(k)
    d = d or (1,) * nd
    sizes = x.shape[2:]
    outs = [_out(sizes[i], k[i], s[i], p[i], d[i], ceil) for i in range(nd)]
    vals = np.zeros(x.shape[:2] + tuple(outs))
    idx = np.zeros(vals.shape, np.int64)
    for o in np.ndindex(*outs):
        starts = [o[i] * s[i] - p[i] for i in range(nd)]
        if kind == "max":
            pos = [[st + j * d[i] for j in range(k[i]) if 0 <= st + j * d[i] < sizes[i]] for i, st in enumerate(starts)]
            cells = list(itertools.product(*pos))
            flat = np.array([np.ravel_multi_index(cell, sizes) for cell in cells])
            win = x.reshape(x.shape[:2] + (-1,))[:, :, flat]
            j = win.argmax(-1)
            vals[(slice(None), slice(None)) + o] = np.take_along_axis(win, j[..., None], -1)[..., 0]
            idx[(slice(None), slice(None)) + o] = flat[j]
        else:
            ends = [min(st + k[i], sizes[i] + p[i]) for i, st in enumerate(starts)]
            pool_size = math.prod(e - b for b, e in zip(starts, ends))
            lo = [max(b, 0) for b in starts]
            hi = [min(e, sizes[i]) for i, e in enumerate(ends)]
            win = x[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in zip(lo, hi))]
            div = divisor or (pool_size if count_include_pad else math.prod(b - a for a, b in zip(lo, hi)))
            vals[(slice(None), slice(None)) + o] = win.sum(tuple(range(2, 2 + nd))) / div
    return vals, idx


def adaptive_ref(x, outs, kind):
    sizes = x.shape[2:]
    nd = len(outs)
    vals = np.zeros(x.shape[:2] + tuple(outs))
    idx = np.zeros(vals.shape, np.int64)
    for o in np.ndindex(*outs):
        lo = [(o[i] * sizes[i]) // outs[i] for i in range(nd)]
        hi = [-(-(o[i] + 1) * sizes[i] // outs[i]) for i in range(nd)]
        win = x[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in zip(lo, hi))]
        flatwin = win.reshape(win.shape[:2] + (-1,))
        if kind == "avg":
            vals[(slice(None), slice(None)) + o] = flatwin.mean(-1)
            continue
        j = flatwin.argmax(-1)
        vals[(slice(None), slice(None)) + o] = flatwin.max(-1)
        local = np.stack(np.unravel_index(j, win.shape[2:]), -1) + np.array(lo)
        idx[(slice(None), slice(None)) + o] = np.ravel_multi_index(tuple(np.moveaxis(local, -1, 0)), sizes)
    return vals, idx


# ------------------------------------------------------------------------------------------ convolutions
CONV3D = [  # (input shape, weight shape, stride, padding, dilation, groups)
    ((2, 4, 5, 6, 7), (6, 2, 3, 2, 3), (1, 2, 1), (1, 0, 2), (2, 1, 1), 2),
    ((1, 3, 7, 5, 6), (2, 3, 2, 3, 1), 2, 1, 1, 1),
    ((3, 5, 4, 6), (4, 3, 2, 2, 3), 1, "same", (1, 2, 1), 1),  # unbatched, asymmetric 'same'
    ((1, 2, 4, 5, 5), (2, 1, 3, 3, 3), 1, "valid", 1, 2),
    ((1, 3, 4, 5, 6), (2, 3, 3, 2, 2), 1, "same", 1, 1),  # 'same' asymmetric in H and W: padded up front
]


def _pads(padding, k, dil):
    if padding == "valid":
        return [(0, 0)] * 3
    if padding == "same":
        return [((d * (kk - 1)) // 2, d * (kk - 1) - (d * (kk - 1)) // 2) for kk, d in zip(k, dil)]
    p = (padding,) * 3 if isinstance(padding, int) else padding
    return [(v, v) for v in p]


def _three(v):
    return (v,) * 3 if isinstance(v, int) else v


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("case", range(len(CONV3D)))
def test_conv3d_vs_numpy(case, dtype, tol):
    xs, ws, s, p, d, g = CONV3D[case]
    x, w, b = r(*xs), r(*ws), r(ws[0])
    x5 = x if len(xs) == 5 else x[None]
    ref = conv3d_ref(x5, w, b, _three(s), _pads(p, ws[2:], _three(d)), _three(d), g)
    got = F.conv3d(_t(x, dtype), _t(w, dtype), _t(b, dtype), s, p, d, g)
    assert got.dtype == dtype
    np.testing.assert_allclose(N(got), ref if len(xs) == 5 else ref[0], rtol=tol, atol=tol)


CONVT3D = [  # (input, weight, stride, padding, output_padding, groups, dilation)
    ((2, 4, 3, 4, 3), (4, 3, 2, 3, 2), (2, 1, 3), (1, 1, 0), (1, 0, 2), 2, (1, 2, 1)),
    ((1, 2, 4, 3, 5), (2, 2, 3, 2, 2), 1, 0, 0, 1, 1),
    ((3, 2, 3, 4), (3, 1, 2, 2, 3), 3, (0, 1, 1), (2, 1, 0), 1, (2, 1, 1)),  # unbatched
]


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("case", range(len(CONVT3D)))
def test_conv_transpose3d_vs_numpy(case, dtype, tol):
    xs, ws, s, p, op, g, d = CONVT3D[case]
    x, w, b = r(*xs), r(*ws), r(ws[1] * g)
    x5 = x if len(xs) == 5 else x[None]
    ref = conv_transpose3d_ref(x5, w, b, _three(s), _three(p), _three(op), g, _three(d))
    got = F.conv_transpose3d(_t(x, dtype), _t(w, dtype), _t(b, dtype), s, p, op, g, d)
    np.testing.assert_allclose(N(got), ref if len(xs) == 5 else ref[0], rtol=tol, atol=tol)


def test_conv3d_modules_padding_modes_and_gradcheck():
    for mode, np_mode in (("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")):
        m = nn.Conv3d(2, 3, (3, 2, 3), padding=(1, 1, 2), padding_mode=mode).double()
        x = r(1, 2, 4, 5, 5)
        xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1), (2, 2)], mode=np_mode)
        ref = conv3d_ref(xp, N(m.weight), N(m.bias), (1, 1, 1), [(0, 0)] * 3, (1, 1, 1), 1)
        np.testing.assert_allclose(N(m(_t(x))), ref, rtol=1e-10, atol=1e-10, err_msg=mode)
    m = nn.Conv3d(4, 2, 2, stride=(2, 1, 1), padding=1, groups=2).double()
    assert tuple(m.weight.shape) == (2, 2, 2, 2, 2) and "parametrizations" not in m.state_dict()
    x = _t(r(1, 4, 3, 2, 3), requires_grad=True)
    assert ag.gradcheck(lambda a, w, b: F.conv3d(a, w, b, (2, 1, 1), 1, 1, 2), (x, m.weight, m.bias))
    mt = nn.ConvTranspose3d(4, 2, (2, 1, 2), stride=2, padding=(1, 0, 0), output_padding=1, groups=2).double()
    assert tuple(mt.weight.shape) == (4, 1, 2, 1, 2)
    x = _t(r(1, 4, 2, 2, 3), requires_grad=True)
    assert ag.gradcheck(lambda a, w, b: F.conv_transpose3d(a, w, b, 2, (1, 0, 0), 1, 2), (x, mt.weight, mt.bias))
    assert tuple(mt(x).shape) == (1, 2, 3, 4, 7)
    assert isinstance(nn.modules.conv.Conv3d(1, 1, 1), nn.Conv3d)


def test_conv3d_errors():
    w = _t(r(2, 3, 2, 2, 2))
    with pytest.raises(RuntimeError, match=r"conv3d: expected a 4-D .* or 5-D"):
        F.conv3d(_t(r(3, 4, 4)), w)
    with pytest.raises(RuntimeError, match="conv3d: input .* has 4 channels"):
        F.conv3d(_t(r(1, 4, 3, 3, 3)), w)
    with pytest.raises(RuntimeError, match=r"conv3d: the padded input size per channel \[1, 3, 3\]"):
        F.conv3d(_t(r(1, 3, 1, 3, 3)), w)
    with pytest.raises(RuntimeError, match=r"conv3d: the padded input size per channel \[3, 3, 1\]"):
        F.conv3d(_t(r(1, 3, 3, 3, 1)), w)
    with pytest.raises(RuntimeError, match=r"conv_transpose3d: the output size \[1, 1, -1\] is too small"):
        F.conv_transpose3d(_t(r(1, 2, 1, 1, 1)), _t(r(2, 1, 1, 1, 1)), padding=(0, 0, 1))
    with pytest.raises(ValueError, match="conv3d: padding='same' is not supported for strided"):
        F.conv3d(_t(r(1, 3, 3, 3, 3)), w, stride=2, padding="same")
    with pytest.raises(ValueError, match="conv_transpose3d: output_padding must be smaller"):
        F.conv_transpose3d(_t(r(1, 2, 3, 3, 3)), _t(r(2, 1, 2, 2, 2)), output_padding=1)
    with pytest.raises(ValueError, match="padding_mode must be one of .* but got padding_mode='reflected'"):
        nn.Conv2d(1, 1, 1, padding_mode="reflected")


# ------------------------------------------------------------------------------------------ pooling
MAXPOOL = [  # (op, input shape, kernel, stride, padding, dilation, ceil_mode)
    ("max_pool1d", (2, 3, 11), 3, 2, 1, 2, True),
    ("max_pool1d", (3, 8), 2, None, 0, 1, False),
    ("max_pool3d", (2, 2, 7, 6, 9), (3, 2, 3), (2, 1, 2), (1, 1, 0), (1, 2, 1), True),
    ("max_pool3d", (2, 5, 4, 5), 2, None, 1, 1, False),
]


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("case", range(len(MAXPOOL)))
def test_max_pool_vs_numpy(case, dtype, tol):
    op, shape, k, s, p, d, ceil = MAXPOOL[case]
    nd = 1 if op.endswith("1d") else 3
    x = r(*shape)
    xb = x if len(shape) == nd + 2 else x[None]
    tup = lambda v: (v,) * nd if isinstance(v, int) else v
    ev, ei = pool_ref(xb, tup(k), tup(s if s is not None else k), tup(p), tup(d), ceil)
    v, i = getattr(F, op)(_t(x, dtype), k, s, p, d, ceil_mode=ceil, return_indices=True)
    if len(shape) != nd + 2:
        ev, ei = ev[0], ei[0]
    np.testing.assert_allclose(N(v), ev, rtol=tol, atol=tol)
    np.testing.assert_array_equal(N(i), ei)
    assert i.dtype == ag.int64
    assert N(getattr(F, op)(_t(x, dtype), k, s, p, d, ceil_mode=ceil)).shape == ev.shape


AVGPOOL = [  # (op, shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    ("avg_pool1d", (2, 3, 10), 3, 2, 1, True, False, None),
    ("avg_pool1d", (3, 7), 4, 1, 2, False, True, None),
    ("avg_pool3d", (2, 2, 7, 6, 9), (3, 2, 3), (2, 1, 2), (1, 1, 0), True, False, None),
    ("avg_pool3d", (1, 2, 5, 5, 6), 3, 2, 1, True, True, None),
    ("avg_pool3d", (2, 4, 5, 6), (2, 3, 2), 2, (1, 1, 0), False, True, 7),
]


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("case", range(len(AVGPOOL)))
def test_avg_pool_vs_numpy(case, dtype, tol):
    op, shape, k, s, p, ceil, cip, div = AVGPOOL[case]
    nd = 1 if op.endswith("1d") else 3
    x = r(*shape)
    xb = x if len(shape) == nd + 2 else x[None]
    tup = lambda v: (v,) * nd if isinstance(v, int) else v
    ev, _ = pool_ref(xb, tup(k), tup(s), tup(p), None, ceil, "avg", cip, div)
    args = (k, s, p, ceil, cip) + ((div,) if nd == 3 else ())
    got = getattr(F, op)(_t(x, dtype), *args)
    np.testing.assert_allclose(N(got), ev if len(shape) == nd + 2 else ev[0], rtol=tol, atol=tol)


ADAPTIVE = [  # (nd, shape, output_size)
    (1, (2, 3, 11), 4),
    (2, (2, 2, 7, 9), (3, 5)),
    (2, (3, 5, 4), (None, 3)),
    (3, (1, 2, 7, 5, 9), (3, 2, 4)),
    (3, (2, 5, 6, 3), 2),
]


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("case", range(len(ADAPTIVE)))
def test_adaptive_pools_vs_numpy(case, dtype, tol):
    nd, shape, out = ADAPTIVE[case]
    x = r(*shape)
    xb = x if len(shape) == nd + 2 else x[None]
    outs = (out,) * nd if isinstance(out, int) else tuple(xb.shape[2 + i] if v is None else v
                                                          for i, v in enumerate(out))
    unb = (lambda a: a) if len(shape) == nd + 2 else (lambda a: a[0])
    mv, mi = adaptive_ref(xb, outs, "max")
    v, i = getattr(F, f"adaptive_max_pool{nd}d")(_t(x, dtype), out, return_indices=True)
    np.testing.assert_allclose(N(v), unb(mv), rtol=tol, atol=tol)
    np.testing.assert_array_equal(N(i), unb(mi))
    if nd != 2:  # adaptive_avg_pool2d is tested with the 2-d layers
        av, _ = adaptive_ref(xb, outs, "avg")
        got = getattr(F, f"adaptive_avg_pool{nd}d")(_t(x, dtype), out)
        np.testing.assert_allclose(N(got), unb(av), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_lp_pool_vs_numpy(dtype, tol):
    x = np.abs(r(2, 3, 10)) + 0.1
    ref = pool_ref(x ** 3, (3,), (2,), (0,), None, True, "avg")[0] * 3
    np.testing.assert_allclose(N(F.lp_pool1d(_t(x, dtype), 3, 3, 2, ceil_mode=True)), ref ** (1 / 3), rtol=tol,
                               atol=tol)
    x = r(2, 2, 7, 8)
    ref = pool_ref(x ** 2, (2, 3), (2, 3), (0, 0), None, False, "avg")[0] * 6
    np.testing.assert_allclose(N(nn.LPPool2d(2, (2, 3))(_t(x, dtype))), np.sqrt(ref), rtol=tol, atol=tol)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_inverts_max_pool(nd):
    shape = {1: (2, 3, 9), 2: (2, 3, 7, 8), 3: (1, 2, 5, 6, 7)}[nd]
    x = r(*shape)
    v, i = getattr(F, f"max_pool{nd}d")(_t(x), 2, 2, return_indices=True)
    out = getattr(nn, f"MaxUnpool{nd}d")(2, 2)(v, i, output_size=shape)
    ref = np.zeros((shape[0], shape[1], math.prod(shape[2:])))
    np.put_along_axis(ref, N(i).reshape(shape[0], shape[1], -1), N(v).reshape(shape[0], shape[1], -1), -1)
    np.testing.assert_array_equal(N(out), ref.reshape(shape))
    even = tuple(2 * (n // 2) for n in shape[2:])
    ve, ie = getattr(F, f"max_pool{nd}d")(_t(x[(slice(None),) * 2 + tuple(slice(0, n) for n in even)]), 2,
                                          return_indices=True)
    assert tuple(getattr(F, f"max_unpool{nd}d")(ve, ie, 2).shape[2:]) == even  # (in - 1) * stride + kernel
    unb = getattr(F, f"max_unpool{nd}d")(v[0], i[0], 2, output_size=shape[2:])
    np.testing.assert_array_equal(N(unb), ref.reshape(shape)[0])


def test_pool_gradcheck_float64():
    x3 = _t(r(1, 2, 4, 3, 5), requires_grad=True)
    assert ag.gradcheck(lambda a: F.max_pool3d(a, (2, 2, 3), (1, 2, 2), (1, 0, 1), ceil_mode=True), (x3,))
    assert ag.gradcheck(lambda a: F.avg_pool3d(a, (3, 2, 2), 2, 1, True, False), (x3,))
    assert ag.gradcheck(lambda a: F.adaptive_max_pool3d(a, (3, 2, 2)), (x3,))
    assert ag.gradcheck(lambda a: F.adaptive_avg_pool3d(a, (3, 2, 4)), (x3,))
    x1 = _t(np.abs(r(2, 2, 9)) + 0.5, requires_grad=True)
    assert ag.gradcheck(lambda a: F.max_pool1d(a, 3, 2, 1, 2), (x1,))
    assert ag.gradcheck(lambda a: F.avg_pool1d(a, 3, 2, 1, True, False), (x1,))
    assert ag.gradcheck(lambda a: F.adaptive_max_pool1d(a, 4), (x1,))
    assert ag.gradcheck(lambda a: F.adaptive_avg_pool1d(a, 4), (x1,))
    assert ag.gradcheck(lambda a: F.lp_pool1d(a, 2.5, 3, 2), (x1,))
    x2 = _t(r(1, 2, 5, 6), requires_grad=True)
    assert ag.gradcheck(lambda a: F.adaptive_max_pool2d(a, (3, 4)), (x2,))
    assert ag.gradcheck(lambda a: F.lp_pool2d(a, 2, 2), (x2,))
    v, i = F.max_pool2d(x2.detach(), 2, return_indices=True)
    assert ag.gradcheck(lambda a: F.max_unpool2d(a, i, 2, output_size=(5, 6)), (v.requires_grad_(),))


def test_pool_errors_name_the_op():
    with pytest.raises(RuntimeError, match=r"max_pool3d: expected a 4-D \(C, D, H, W\) or 5-D"):
        F.max_pool3d(_t(r(2, 3, 4)), 2)
    with pytest.raises(RuntimeError, match="avg_pool1d: expected a 2-D"):
        F.avg_pool1d(_t(r(1, 2, 3, 4)), 2)
    with pytest.raises(ValueError, match="max_pool1d: pad should be at most half"):
        F.max_pool1d(_t(r(1, 2, 8)), 2, padding=2)
    with pytest.raises(RuntimeError, match="avg_pool3d: the output size"):
        F.avg_pool3d(_t(r(1, 1, 2, 5, 5)), 3)
    with pytest.raises(ValueError, match="adaptive_max_pool2d: output_size must be"):
        F.adaptive_max_pool2d(_t(r(1, 1, 4, 4)), (2, 2, 2))
    with pytest.raises(TypeError, match="adaptive_avg_pool3d: expected a floating-point"):
        F.adaptive_avg_pool3d(ag.zeros(1, 1, 2, 2, 2, dtype=ag.int64), 1)
    v, i = F.max_pool2d(_t(r(1, 1, 4, 4)), 2, return_indices=True)
    with pytest.raises(RuntimeError, match="max_unpool2d: indices must be an int64"):
        F.max_unpool2d(v, i.float(), 2)
    with pytest.raises(ValueError, match="max_unpool2d: invalid output_size"):
        F.max_unpool2d(v, i, 2, output_size=(9, 9))
    with pytest.raises(IndexError, match=r"max_unpool2d\(\): scatter: index [0-9]+ is out of bounds"):
        F.max_unpool2d(v, i + 20, 2)


def test_module_paths_and_reprs():
    from nn.modules.pooling import AdaptiveMaxPool3d, LPPool1d, MaxPool1d, MaxUnpool3d

    assert MaxPool1d is nn.MaxPool1d and LPPool1d is nn.LPPool1d
    assert repr(nn.MaxPool3d(2)) == "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    m = AdaptiveMaxPool3d(2, return_indices=True)
    v, i = m(_t(r(1, 1, 4, 4, 4)))
    assert tuple(v.shape) == (1, 1, 2, 2, 2) and tuple(i.shape) == (1, 1, 2, 2, 2)
    assert repr(MaxUnpool3d(2)) == "MaxUnpool3d(kernel_size=2, stride=2, padding=0)"


# ------------------------------------------------------------------------------------------ interpreted cuda
CUDA = {
    "Conv3d": (lambda: nn.Conv3d(4, 2, (2, 3, 2), stride=(2, 1, 1), padding=(1, 1, 0), groups=2), (1, 4, 3, 4, 3)),
    "ConvTranspose3d": (lambda: nn.ConvTranspose3d(2, 2, 2, stride=2, padding=(1, 0, 0), output_padding=1),
                        (1, 2, 2, 2, 3)),
    "MaxPool3d": (lambda: nn.MaxPool3d((2, 2, 3), (1, 2, 2), (1, 0, 1), ceil_mode=True), (1, 2, 3, 4, 5)),
    "AvgPool3d": (lambda: nn.AvgPool3d(2, 2, 1, count_include_pad=False), (1, 2, 3, 4, 5)),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d((2, 3)), (1, 2, 5, 7)),
    "AdaptiveAvgPool3d": (lambda: nn.AdaptiveAvgPool3d((2, 2, 3)), (1, 2, 3, 4, 5)),
    "LPPool1d+MaxPool1d": (lambda: nn.Sequential(nn.MaxPool1d(2, 1, 1), nn.LPPool1d(2, 3, 2)), (2, 2, 9)),
}


@pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")
@pytest.mark.parametrize("name", list(CUDA))
def test_cuda_matches_cpu(name):
    from .test_cuda_modules import check

    make, shape = CUDA[name]
    check(make, [R.uniform(0.1, 1.0, shape).astype(np.float32)])


@pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")
def test_cuda_indices_and_unpool():
    x = r(1, 2, 4, 4, 5).astype(np.float32)
    v, i = F.max_pool3d(ag.tensor(x, device="cuda"), 2, return_indices=True)
    ev, ei = pool_ref(x, (2, 2, 2), (2, 2, 2), (0, 0, 0))
    np.testing.assert_allclose(v.cpu().numpy(), ev, rtol=1e-6)
    np.testing.assert_array_equal(i.cpu().numpy(), ei)
    out = F.max_unpool3d(v, i, 2, output_size=(4, 4, 5))
    assert out.device.type == "cuda"
    ref = np.zeros((1, 2, 80), np.float32)
    np.put_along_axis(ref, ei.reshape(1, 2, -1), ev.reshape(1, 2, -1).astype(np.float32), -1)
    np.testing.assert_array_equal(out.cpu().numpy(), ref.reshape(1, 2, 4, 4, 5))
    av, ai = F.adaptive_max_pool1d(ag.tensor(x[0, :, 0], device="cuda"), 3, return_indices=True)
    mv, mi = adaptive_ref(x[0, :, 0], (3,), "max")
    np.testing.assert_allclose(av.cpu().numpy(), mv, rtol=1e-6)
    np.testing.assert_array_equal(ai.cpu().numpy(), mi)


def test_matches_pytorch_when_installed():
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional  # noqa: N806
    x3, x1, x2 = r(2, 4, 5, 6, 7), r(2, 3, 11), r(2, 3, 7, 9)
    cases = [
        ("conv3d", x3, (torch.from_numpy(r(6, 2, 3, 2, 3)), torch.from_numpy(r(6)), (2, 1, 2), (1, 0, 1), 1, 2)),
        ("conv_transpose3d", x3, (torch.from_numpy(r(4, 2, 2, 3, 2)), None, 2, (1, 0, 1), (1, 0, 1), 2, (1, 2, 1))),
        ("max_pool1d", x1, (3, 2, 1, 2, True)),
        ("avg_pool3d", x3, ((3, 2, 3), (2, 1, 2), 1, True, False)),
        ("adaptive_max_pool3d", x3, ((2, 4, 3),)),
        ("adaptive_avg_pool1d", x1, (5,)),
        ("lp_pool2d", np.abs(x2), (1.5, (2, 3), 2, True)),
    ]
    for name, x, args in cases:
        expect = getattr(TF, name)(torch.from_numpy(x), *args).numpy()
        ours = tuple(ag.tensor(a.numpy()) if isinstance(a, torch.Tensor) else a for a in args)
        np.testing.assert_allclose(N(getattr(F, name)(_t(x), *ours)), expect, rtol=1e-10, atol=1e-10, err_msg=name)
    v, i = TF.max_pool3d(torch.from_numpy(x3), 2, 2, 1, return_indices=True)
    ov, oi = F.max_pool3d(_t(x3), 2, 2, 1, return_indices=True)
    np.testing.assert_array_equal(N(oi), i.numpy())
    np.testing.assert_array_equal(N(F.max_unpool3d(ov, oi, 2, 2, 1, output_size=x3.shape[2:])),
                                  TF.max_unpool3d(v, i, 2, 2, 1, output_size=x3.shape[2:]).numpy())
