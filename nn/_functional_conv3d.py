"""``conv3d`` and ``conv_transpose3d`` as composites over the 2-d convolution kernels.

conv3d folds the kernel's depth taps into channels (a depth im2col: the kD depth-strided slices of the input,
stacked per group) and runs one conv2d over ``(N * D_out, groups * kD * C_in/groups, H, W)``: one launch and one
big GEMM instead of kD small ones. conv_transpose3d runs one conv_transpose2d whose output channels hold every
depth tap, then adds each tap's slab at its output depths (``d * stride + tap * dilation - padding``). Both are
differentiable through the ops they are built from and run on cuda through the existing Triton kernels."""

from __future__ import annotations

import autograd as ag
from autograd import amp
from tkernels.validation import OpValueError, names_op

from ._nd import batched, describe, ints

__all__ = ["conv3d", "conv_transpose3d"]


def _check(op, input, weight, bias, groups, transposed):
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise OpValueError(f"{op}: groups must be a positive integer, got {groups!r}")
    if weight.dim() != 5:
        layout = "C_in, C_out/groups" if transposed else "C_out, C_in/groups"
        raise RuntimeError(f"{op}: expected a 5-D weight ({layout}, kD, kH, kW), got one {describe(weight)}")
    x, unbatched = batched(op, input, 3, "D, H, W")
    c = x.shape[1]
    c_in = weight.shape[0] if transposed else weight.shape[1] * groups
    if c != c_in:
        raise RuntimeError(f"{op}: input {describe(input)} has {c} channels but weight {describe(weight)} with "
                           f"groups={groups} expects {c_in}")
    if c % groups or (not transposed and weight.shape[0] % groups):
        raise RuntimeError(f"{op}: groups={groups} must divide the input channels ({c}) and output channels")
    c_out = weight.shape[1] * groups if transposed else weight.shape[0]
    if bias is not None and tuple(bias.shape) != (c_out,):
        raise RuntimeError(f"{op}: bias {describe(bias)} should have shape [{c_out}] (the output channels)")
    return x, unbatched, c_out


def conv_pads(op, padding, kernel, stride, dilation):
    """``(front, back)`` per spatial dim for int/tuple padding or PyTorch's 'valid'/'same'."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * n
        if padding != "same":
            raise OpValueError(f"{op}: padding must be 'valid', 'same', an int or a tuple of ints, got {padding!r}")
        if any(s != 1 for s in stride):
            raise OpValueError(f"{op}: padding='same' is not supported for strided convolutions (stride={stride})")
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return [(t // 2, t - t // 2) for t in total]
    return [(p, p) for p in ints(op, "padding", padding, n)]


@names_op("conv3d")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D cross-correlation of (N, C_in, D, H, W) or (C_in, D, H, W) ``input`` with (C_out, C_in/groups, kD, kH,
    kW) ``weight`` plus ``bias`` (C_out,); PyTorch's ``conv3d`` (``padding`` may be 'valid' or 'same')."""
    op = "conv3d"
    input, weight, bias = amp.lower(input, weight, bias)
    x, unbatched, c_out = _check(op, input, weight, bias, groups, False)
    s, d = ints(op, "stride", stride, 3, 1), ints(op, "dilation", dilation, 3, 1)
    k = tuple(weight.shape[2:])
    pads = conv_pads(op, padding, k, s, d)
    padded = [n + a + b for n, (a, b) in zip(x.shape[2:], pads)]
    if any(p < di * (ki - 1) + 1 for p, di, ki in zip(padded, d, k)):
        raise RuntimeError(f"{op}: the padded input size per channel {padded} is smaller than the dilated kernel "
                           f"size {[di * (ki - 1) + 1 for di, ki in zip(d, k)]} (input {describe(input)}, weight "
                           f"{describe(weight)}, padding={padding!r}, dilation={dilation!r}); hint: pad more or use "
                           f"a smaller kernel")
    if pads[1][0] == pads[1][1] and pads[2][0] == pads[2][1]:
        hw_pad = (pads[1][0], pads[2][0])  # symmetric: conv2d pads H and W itself
        if pads[0] != (0, 0):
            x = ag.pad(x, (0, 0, 0, 0) + pads[0])
    else:
        hw_pad = (0, 0)
        x = ag.pad(x, pads[2] + pads[1] + pads[0])
    n, c, dp, h, w = x.shape
    kd = k[0]
    do = (dp - d[0] * (kd - 1) - 1) // s[0] + 1
    last = (do - 1) * s[0] + 1
    taps = [x[:, :, t * d[0]:t * d[0] + last:s[0]] for t in range(kd)]  # kD x (N, C, Do, H, W)
    cols = ag.stack(taps, 2).reshape(n, groups, c // groups, kd, do, h, w).permute(0, 4, 1, 3, 2, 5, 6)
    cols = cols.reshape(n * do, c * kd, h, w)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(c_out, kd * weight.shape[1], k[1], k[2])
    y = ag.conv2d(cols, w2, None, s[1:], hw_pad, d[1:], groups)  # (N * Do, C_out, Ho, Wo)
    y = y.reshape(n, do, c_out, y.shape[2], y.shape[3]).transpose(1, 2)
    if bias is not None:
        y = y + bias.reshape(1, c_out, 1, 1, 1)
    return y.squeeze(0) if unbatched else y


@names_op("conv_transpose3d")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution of (N, C_in, D, H, W) or (C_in, D, H, W) ``input`` with (C_in, C_out/groups,
    kD, kH, kW) ``weight``; PyTorch's ``conv_transpose3d``. Output depth: ``(D - 1) * stride - 2 * padding +
    dilation * (kD - 1) + output_padding + 1`` (the same for H and W)."""
    op = "conv_transpose3d"
    input, weight, bias = amp.lower(input, weight, bias)
    if isinstance(padding, str):
        raise OpValueError(f"{op}: padding must be an int or a tuple of ints (no 'same'/'valid'), got {padding!r}")
    x, unbatched, c_out = _check(op, input, weight, bias, groups, True)
    s, d = ints(op, "stride", stride, 3, 1), ints(op, "dilation", dilation, 3, 1)
    p, op_ = ints(op, "padding", padding, 3), ints(op, "output_padding", output_padding, 3)
    if any(o >= si and o >= di for o, si, di in zip(op_, s, d)):
        raise OpValueError(f"{op}: output_padding must be smaller than either stride or dilation, got "
                           f"output_padding={output_padding!r}, stride={stride!r}, dilation={dilation!r}")
    n, c, dd, h, w = x.shape
    kd, cog = weight.shape[2], weight.shape[1]
    full = (dd - 1) * s[0] + d[0] * (kd - 1) + 1 + op_[0]
    out_sp = [(n - 1) * si - 2 * pi + di * (ki - 1) + oi + 1
              for n, si, pi, di, ki, oi in zip(x.shape[2:], s, p, d, weight.shape[2:], op_)]
    if min(out_sp) < 1:
        raise RuntimeError(f"{op}: the output size {out_sp} is too small (input {describe(input)}, weight "
                           f"{describe(weight)}, stride={stride!r}, padding={padding!r}); hint: reduce the padding")
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(c, kd * cog, weight.shape[3], weight.shape[4])
    x2 = x.transpose(1, 2).reshape(n * dd, c, h, w)
    y = ag.conv_transpose2d(x2, w2, None, s[1:], p[1:], op_[1:], groups, d[1:])  # (N * D, g * kD * Cog, Ho, Wo)
    ho, wo = y.shape[2], y.shape[3]
    y = y.reshape(n, dd, groups, kd, cog, ho, wo).transpose(2, 3).reshape(n, dd, kd, c_out, ho, wo)
    if s[0] > 1:  # input depth d lands at d * stride: interleave stride - 1 zero slabs
        y = ag.cat([y.unsqueeze(2), ag.zeros(n, dd, s[0] - 1, kd, c_out, ho, wo, dtype=y.dtype, device=y.device)], 2)
        y = y.reshape(n, dd * s[0], kd, c_out, ho, wo)[:, :(dd - 1) * s[0] + 1]
    span = y.shape[1]
    out = None
    for t in range(kd):  # tap t is shifted by t * dilation
        slab = ag.pad(y[:, :, t], (0, 0, 0, 0, 0, 0, t * d[0], full - span - t * d[0]))
        out = slab if out is None else out + slab
    out = out[:, p[0]:full - p[0]].transpose(1, 2)
    if bias is not None:
        out = out + bias.reshape(1, c_out, 1, 1, 1)
    return out.squeeze(0) if unbatched else out
