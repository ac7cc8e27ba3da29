"""ONNX mappings of the nn ops: linear, convolutions, pooling, normalizations, activations, softmax, attention,
embedding, dropout, padding, resizing."""

from __future__ import annotations

import math

import numpy as np

from ..jit.graph import Ref
from .builder import register
from .ops_tensor import _dim, _in, _odt, _out


def _tuple(v, n):
    return list(v) if isinstance(v, tuple | list) else [int(v)] * n


@register("linear")
def _linear(b, node, a):
    x, w, bias = _in(a), a["weight"], a.get("bias")
    if b.rank(x) == 2:
        return b.op("Gemm", b.t(x), b.t(w), b.t(bias), transB=1)
    y = b.op("MatMul", b.t(x), b.op("Transpose", b.t(w), perm=[1, 0]))
    return b.op("Add", y, b.t(bias)) if bias is not None else y


def _conv_pads(b, node, a, nd):
    pad = a.get("padding", 0)
    w = b.shape(a["weight"])[2:]
    dil = _tuple(a.get("dilation", 1), nd)
    if pad == "valid":
        return [0] * (2 * nd)
    if pad == "same":  # PyTorch puts the odd pixel at the end
        total = [d * (k - 1) for d, k in zip(dil, w)]
        return [t // 2 for t in total] + [t - t // 2 for t in total]
    if isinstance(pad, str):
        b.unsupported(node, f"with padding={pad!r} has no mapping")
    p = _tuple(pad, nd)
    return p + p


@register("conv1d", "conv2d", "conv3d")
def _conv(b, node, a):
    nd = int(node.op[4])
    if a.get("padding_mode", "zeros") not in ("zeros", None):
        b.unsupported(node, "with a non-zero padding_mode has no mapping")
    return b.op("Conv", b.t(_in(a)), b.t(a["weight"]), b.t(a.get("bias")), strides=_tuple(a.get("stride", 1), nd),
                pads=_conv_pads(b, node, a, nd), dilations=_tuple(a.get("dilation", 1), nd),
                group=int(a.get("groups", 1)), kernel_shape=list(b.shape(a["weight"])[2:]))


@register("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
def _conv_t(b, node, a):
    nd = int(node.op[-2])
    p = _tuple(a.get("padding", 0), nd)
    return b.op("ConvTranspose", b.t(_in(a)), b.t(a["weight"]), b.t(a.get("bias")),
                strides=_tuple(a.get("stride", 1), nd), pads=p + p, dilations=_tuple(a.get("dilation", 1), nd),
                output_padding=_tuple(a.get("output_padding", 0), nd), group=int(a.get("groups", 1)),
                kernel_shape=list(b.shape(a["weight"])[2:]))


def _pool_args(a, nd):
    k = _tuple(a["kernel_size"], nd)
    s = a.get("stride")
    s = k if s is None or s == [] or s == () else _tuple(s, nd)
    p = _tuple(a.get("padding", 0), nd)
    return k, s, p + p


@register("max_pool1d", "max_pool2d", "max_pool3d")
def _max_pool(b, node, a):
    nd = int(node.op[-2])
    if a.get("return_indices"):
        b.unsupported(node, "with return_indices=True has no mapping")
    k, s, p = _pool_args(a, nd)
    return b.op("MaxPool", b.t(_in(a)), kernel_shape=k, strides=s, pads=p, dilations=_tuple(a.get("dilation", 1), nd),
                ceil_mode=int(bool(a.get("ceil_mode"))))


@register("avg_pool1d", "avg_pool2d", "avg_pool3d")
def _avg_pool(b, node, a):
    nd = int(node.op[-2])
    if a.get("divisor_override"):
        b.unsupported(node, "with divisor_override has no mapping")
    k, s, p = _pool_args(a, nd)
    return b.op("AveragePool", b.t(_in(a)), kernel_shape=k, strides=s, pads=p, ceil_mode=int(bool(a.get("ceil_mode"))),
                count_include_pad=int(bool(a.get("count_include_pad", True))))


@register("adaptive_avg_pool1d", "adaptive_avg_pool2d")
def _adaptive_avg(b, node, a):
    x = _in(a)
    nd = b.rank(x) - 2
    out = _tuple(a["output_size"], nd)
    size = b.shape(x)[2:]
    out = [s if o is None else o for o, s in zip(out, size)]
    if all(o == 1 for o in out):
        return b.op("GlobalAveragePool", b.t(x))
    if any(s % o for s, o in zip(size, out)):
        b.unsupported(node, f"from size {list(size)} to {out} (not a divisor: windows of varying size) has no mapping")
    k = [s // o for s, o in zip(size, out)]
    return b.op("AveragePool", b.t(x), kernel_shape=k, strides=k)


# ---------------------------------------------------------------------------------------- normalization
def _affine(b, x, w, bias, shape, dt):
    """``x * w + bias`` with ``w``/``bias`` broadcast as ``shape`` (None: absent)."""
    shp = b.const(np.array(shape, np.int64))
    if w is not None:
        x = b.op("Mul", x, b.op("Reshape", b.t(w, dt), shp))
    if bias is not None:
        x = b.op("Add", x, b.op("Reshape", b.t(bias, dt), shp))
    return x


@register("layer_norm")
def _layer_norm(b, node, a):
    x, dt = _in(a), _odt(b, node)
    ns = _tuple(a["normalized_shape"], 1)
    w = b.t(a["weight"], dt) if a.get("weight") is not None else b.const(np.ones(ns, np.float32), dt)
    bias = b.t(a.get("bias"), dt) if a.get("bias") is not None else None
    return b.op("LayerNormalization", b.t(x, dt), w, bias, axis=-len(ns), epsilon=float(a.get("eps", 1e-5)))


@register("rms_norm")
def _rms_norm(b, node, a):
    x, dt = _in(a), _odt(b, node)
    ns = _tuple(a["normalized_shape"], 1)
    eps = a.get("eps")
    eps = float(np.finfo(np.dtype(dt)).eps) if eps is None else float(eps)
    xs = b.t(x, dt)
    axes = list(range(b.rank(x) - len(ns), b.rank(x)))
    ms = b.reduce("Mean", b.op("Mul", xs, xs), axes, True)
    y = b.op("Mul", xs, b.op("Reciprocal", b.op("Sqrt", b.op("Add", ms, b.const(eps, dt)))))
    return b.op("Mul", y, b.t(a["weight"], dt)) if a.get("weight") is not None else y


@register("batch_norm")
def _batch_norm(b, node, a):
    x, dt = _in(a), _odt(b, node)
    if a.get("training") or a.get("running_mean") is None:
        b.unsupported(node, "in training mode (batch statistics) has no mapping; export after model.eval()")
    c = b.shape(x)[1]
    w = b.t(a["weight"], dt) if a.get("weight") is not None else b.const(np.ones(c, np.float32), dt)
    bias = b.t(a["bias"], dt) if a.get("bias") is not None else b.const(np.zeros(c, np.float32), dt)
    return b.op("BatchNormalization", b.t(x, dt), w, bias, b.t(a["running_mean"], dt), b.t(a["running_var"], dt),
                epsilon=float(a.get("eps", 1e-5)))


@register("group_norm")
def _group_norm(b, node, a):
    # InstanceNormalization over (N, G, C/G * spatial), then the per-channel affine: the same on every opset
    # (GroupNormalization-18 scales per group, -21 per channel)
    x, dt = _in(a), _odt(b, node)
    g = int(a["num_groups"])
    r = b.rank(x)
    xs = b.t(x, dt)
    grouped = b.op("Reshape", xs, b.const(np.array([0, g, -1], np.int64)))
    y = b.op("InstanceNormalization", grouped, b.const(np.ones(g, np.float32), dt),
             b.const(np.zeros(g, np.float32), dt), epsilon=float(a.get("eps", 1e-5)))
    y = b.op("Reshape", y, b.dims(x))
    return _affine(b, y, a.get("weight"), a.get("bias"), [-1] + [1] * (r - 2), dt)


@register("instance_norm")
def _instance_norm(b, node, a):
    x, dt = _in(a), _odt(b, node)
    if not a.get("use_input_stats", True):
        b.unsupported(node, "with use_input_stats=False has no mapping")
    c = b.shape(x)[1]
    w = b.t(a["weight"], dt) if a.get("weight") is not None else b.const(np.ones(c, np.float32), dt)
    bias = b.t(a["bias"], dt) if a.get("bias") is not None else b.const(np.zeros(c, np.float32), dt)
    return b.op("InstanceNormalization", b.t(x, dt), w, bias, epsilon=float(a.get("eps", 1e-5)))


# ------------------------------------------------------------------------------------------ activations
@register("gelu")
def _gelu(b, node, a):
    x, dt = b.t(_in(a)), _odt(b, node)
    approx = a.get("approximate", "none")
    if b.opset >= 20:
        return b.op("Gelu", x, approximate=approx)
    half = b.op("Mul", x, b.const(0.5, dt))
    if approx == "tanh":
        inner = b.op("Mul", b.op("Add", x, b.op("Mul", b.op("Mul", b.op("Mul", x, x), x), b.const(0.044715, dt))),
                     b.const(math.sqrt(2 / math.pi), dt))
        return b.op("Mul", half, b.op("Add", b.op("Tanh", inner), b.const(1.0, dt)))
    return b.op("Mul", half, b.op("Add", b.op("Erf", b.op("Div", x, b.const(math.sqrt(2.0), dt))), b.const(1.0, dt)))


@register("silu", "silu_")
def _silu(b, node, a):
    x = b.t(_in(a))
    return b.op("Mul", x, b.op("Sigmoid", x))


@register("mish", "mish_")
def _mish(b, node, a):
    x = b.t(_in(a))
    return b.op("Mul", x, b.op("Tanh", b.op("Softplus", x)))


@register("leaky_relu", "leaky_relu_")
def _leaky_relu(b, node, a):
    return b.op("LeakyRelu", b.t(_in(a)), alpha=float(a.get("negative_slope", 0.01)))


@register("elu", "elu_")
def _elu(b, node, a):
    return b.op("Elu", b.t(_in(a)), alpha=float(a.get("alpha", 1.0)))


@register("softplus")
def _softplus(b, node, a):
    x, dt = b.t(_in(a)), _odt(b, node)
    beta, threshold = float(a.get("beta", 1.0)), float(a.get("threshold", 20.0))
    bx = b.op("Mul", x, b.const(beta, dt)) if beta != 1.0 else x
    sp = b.op("Softplus", bx)
    sp = b.op("Div", sp, b.const(beta, dt)) if beta != 1.0 else sp
    return b.op("Where", b.op("Greater", bx, b.const(threshold, dt)), x, sp)  # PyTorch's linear regime


@register("softmax", "log_softmax")
def _softmax(b, node, a):
    x, dt = _in(a), _odt(b, node)
    dim = a.get("dim")
    dim = -1 if dim is None else dim
    return b.op("Softmax" if node.op == "softmax" else "LogSoftmax", b.t(x, dt), axis=_dim(dim, b.rank(x)))


@register("dropout", "dropout_", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
def _dropout(b, node, a):
    if a.get("training", True) and float(a.get("p", 0.5)) > 0:
        b.unsupported(node, "in training mode (random) has no mapping; export after model.eval()")
    return b.op("Identity", b.t(_in(a)))


# ------------------------------------------------------------------------------------------- attention
@register("scaled_dot_product_attention")
def _sdpa(b, node, a):
    """softmax(q kᵀ · scale + mask) v: the Attention op from opset 23 (4-D inputs), else decomposed (MatMul,
    Softmax, Trilu/Where)."""
    q, k, v = a["query"], a["key"], a["value"]
    dt = _odt(b, node)
    if a.get("dropout_p", 0.0):
        b.unsupported(node, "with dropout_p > 0 has no mapping; export after model.eval()")
    if a.get("enable_gqa"):
        b.unsupported(node, "with enable_gqa=True has no mapping")
    e = b.shape(q)[-1]
    scale = a.get("scale")
    scale = 1.0 / math.sqrt(e) if scale is None else float(scale)
    mask = a.get("attn_mask")
    if b.opset >= 23 and b.rank(q) == 4 and b.rank(k) == 4:  # the opset's own Attention op
        m = b.t(mask) if not isinstance(mask, Ref) or b.dtype(mask) == "bool" else b.t(mask, dt)
        return b.op("Attention", b.t(q, dt), b.t(k, dt), b.t(v, dt), m if isinstance(mask, Ref) else None,
                    is_causal=int(bool(a.get("is_causal"))), scale=scale)
    rk = b.rank(k)
    kt = b.op("Transpose", b.t(k, dt), perm=list(range(rk - 2)) + [rk - 1, rk - 2])
    s = b.op("Mul", b.op("MatMul", b.t(q, dt), kt), b.const(scale, dt))
    if a.get("is_causal"):
        ls = b.op("Concat", b.dims(q, -2, -1), b.dims(k, -2, -1), axis=0)
        ones = b.op("ConstantOfShape", ls, value=b.onnx.numpy_helper.from_array(np.array([1], np.bool_)))
        keep = b.op("Cast", b.op("Trilu", b.op("Cast", ones, to=b.tensor_type("int32")), upper=0),
                    to=b.tensor_type("bool"))
        s = b.op("Where", keep, s, b.const(-np.inf, dt))
    if isinstance(mask, Ref):
        if b.dtype(mask) == "bool":
            s = b.op("Where", b.t(mask), s, b.const(-np.inf, dt))
        else:
            s = b.op("Add", s, b.t(mask, dt))
    return b.op("MatMul", b.op("Softmax", s, axis=-1), b.t(v, dt))


# ---------------------------------------------------------------------------------- embedding, pad, resize
@register("embedding")
def _embedding(b, node, a):
    if a.get("max_norm") is not None:
        b.unsupported(node, "with max_norm (renormalizes the weight in place) has no mapping")
    return b.op("Gather", b.t(a["weight"]), b.t(_in(a), "int64"), axis=0)


@register("one_hot")
def _one_hot(b, node, a):
    n = int(a.get("num_classes", -1))
    if n < 0:
        n = b.shape(_out(node))[-1]
    return b.op("OneHot", b.t(a["tensor"], "int64"), b.const(np.array(n, np.int64)),
                b.const(np.array([0, 1], np.int64)), axis=-1)


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@register("pad")
def _pad(b, node, a):
    x, dt = _in(a), _odt(b, node)
    mode = a.get("mode", "constant")
    if mode not in _PAD_MODES or (mode == "circular" and b.opset < 19):
        b.unsupported(node, f"with mode={mode!r} has no mapping")
    p = list(a["pad"])
    r = b.rank(x)
    begins, ends = [0] * r, [0] * r
    for i in range(len(p) // 2):  # PyTorch lists (left, right) pairs from the last dim backwards
        begins[r - 1 - i], ends[r - 1 - i] = p[2 * i], p[2 * i + 1]
    value = a.get("value")
    cv = b.const(0.0 if value is None else value, dt) if mode == "constant" else None
    return b.op("Pad", b.t(x, dt), b.const(np.array(begins + ends, np.int64)), cv, mode=_PAD_MODES[mode])


@register("interpolate")
def _interpolate(b, node, a):
    x = _in(a)
    mode = a.get("mode", "nearest")
    if mode not in ("nearest", "bilinear", "linear"):
        b.unsupported(node, f"with mode={mode!r} has no mapping")
    size = list(b.shape(x)[:2]) + list(b.shape(_out(node))[2:])
    attrs = {"mode": "nearest" if mode == "nearest" else "linear"}
    if mode == "nearest":
        attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    else:
        attrs["coordinate_transformation_mode"] = "align_corners" if a.get("align_corners") else "half_pixel"
    sizes = b.op("Concat", b.dims(x, 0, 2), b.const(np.array(size[2:], np.int64)), axis=0)
    return b.op("Resize", b.t(x), None, None, sizes, **attrs)


# ------------------------------------------------------------------------------------------------ losses
@register("cross_entropy", "nll_loss")
def _class_loss(b, node, a):
    """SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss over class indices (classes on dim 1)."""
    x, t, dt = _in(a), a["target"], _odt(b, node)
    if b.rank(x) < 2:
        b.unsupported(node, "on an unbatched (C,) input has no mapping")
    if b.dtype(t).startswith("float"):
        b.unsupported(node, "with class-probability targets has no mapping")
    if float(a.get("label_smoothing", 0.0) or 0.0):
        b.unsupported(node, "with label_smoothing has no mapping")
    op = "SoftmaxCrossEntropyLoss" if node.op == "cross_entropy" else "NegativeLogLikelihoodLoss"
    w = b.t(a["weight"], dt) if a.get("weight") is not None else None
    return b.op(op, b.t(x, dt), b.t(t, "int64"), w, reduction=a.get("reduction", "mean"),
                ignore_index=int(a.get("ignore_index", -100)))
