"""Building TensorBoard summary protos (the ``tensorboard`` package's own protobuf classes) from numbers,
NumPy arrays and our Tensors: scalars, histograms, images, text, hyperparameters and graphs."""

from __future__ import annotations

import math
import numbers
import time

import numpy as np

from ._png import encode_png

__all__ = ["to_numpy", "scalar", "histogram", "histogram_raw", "image", "text", "hparams", "graph"]


def to_numpy(value, who: str) -> np.ndarray:
    """A NumPy array from a number, a NumPy array, an ``autograd.Tensor`` (any device) or a tkernels Array."""
    if hasattr(value, "detach") and hasattr(value, "grad_fn"):  # an autograd.Tensor
        value = value.detach().cpu().numpy()
    elif hasattr(value, "numpy") and hasattr(value, "device") and not isinstance(value, np.ndarray):
        value = value.numpy()  # a tkernels Array
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{who}: expected a number, a NumPy array or a Tensor, got {type(value).__name__} "
                        f"({e})") from None
    if arr.dtype.kind not in "biuf" and arr.dtype.name != "bfloat16":
        raise TypeError(f"{who}: expected numeric values, got dtype {arr.dtype}")
    if arr.dtype.name in ("bfloat16", "float16"):
        arr = arr.astype(np.float32)
    return arr


def scalar(tag, value, new_style=False):
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, types_pb2
    from tensorboard.plugins.scalar import metadata

    arr = to_numpy(value, "SummaryWriter.add_scalar")
    if arr.size != 1:
        raise ValueError(f"SummaryWriter.add_scalar: {tag!r}: the value must hold one number, got shape "
                         f"{list(arr.shape)}; hint: add_histogram for many values, or .mean()")
    v = float(arr.reshape(()))
    if new_style:
        tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[v])
        return summary_pb2.Summary(value=[summary_pb2.Summary.Value(
            tag=tag, tensor=tensor, metadata=metadata.create_summary_metadata(display_name=tag, description=""))])
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=v)])


def _tf_bucket_edges() -> np.ndarray:
    """TensorFlow's default histogram buckets: ±1e-12 · 1.1^k up to 1e20, mirrored around 0."""
    pos = []
    v = 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    pos = np.array(pos)
    return np.concatenate([-pos[::-1], [0.0], pos, [np.inf]])


_TF_EDGES = None


def histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):  # noqa: A002 - PyTorch's names
    from tensorboard.compat.proto import summary_pb2

    if len(bucket_limits) != len(bucket_counts):
        raise ValueError(f"SummaryWriter.add_histogram_raw: {tag!r}: {len(bucket_limits)} bucket limits but "
                         f"{len(bucket_counts)} counts; they must be as many")
    h = summary_pb2.HistogramProto(min=float(min), max=float(max), num=float(num), sum=float(sum),
                                   sum_squares=float(sum_squares), bucket_limit=[float(x) for x in bucket_limits],
                                   bucket=[float(x) for x in bucket_counts])
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, histo=h)])


def histogram(tag, values, bins="tensorflow", max_bins=None):
    """Counts of ``values`` in ``bins`` ("tensorflow": TF's exponential buckets, trimmed to the occupied
    range; anything ``np.histogram`` takes otherwise); ``bucket_limit[i]`` is bucket i's right edge."""
    global _TF_EDGES
    arr = to_numpy(values, "SummaryWriter.add_histogram").astype(np.float64).reshape(-1)
    if arr.size == 0:
        raise ValueError(f"SummaryWriter.add_histogram: {tag!r}: the values are empty")
    if not np.isfinite(arr).all():
        raise ValueError(f"SummaryWriter.add_histogram: {tag!r}: the values hold NaN or infinity "
                         f"({int(np.isnan(arr).sum())} NaN, {int(np.isinf(arr).sum())} inf)")
    if isinstance(bins, str) and bins == "tensorflow":
        if _TF_EDGES is None:
            _TF_EDGES = _tf_bucket_edges()
        edges = np.concatenate([[-np.inf], _TF_EDGES])
        counts = np.histogram(arr, bins=edges)[0]
        nz = np.nonzero(counts)[0]
        lo, hi = max(nz[0] - 1, 0), min(nz[-1] + 2, len(counts))  # one empty bucket either side, as TF does
        counts, limits = counts[lo:hi], edges[1:][lo:hi]
        limits = np.where(np.isinf(limits), np.finfo(np.float64).max, limits)
    else:
        try:
            counts, edges = np.histogram(arr, bins=bins)
        except (ValueError, TypeError) as e:
            raise ValueError(f"SummaryWriter.add_histogram: {tag!r}: bad bins {bins!r} ({e})") from None
        limits = edges[1:]
    if max_bins is not None and len(counts) > max_bins:  # merge neighbours until it fits
        k = math.ceil(len(counts) / max_bins)
        pad = -len(counts) % k
        counts = np.concatenate([counts, np.zeros(pad, counts.dtype)]).reshape(-1, k).sum(1)
        limits = np.concatenate([limits, np.full(pad, limits[-1])]).reshape(-1, k)[:, -1]
    return histogram_raw(tag, arr.min(), arr.max(), arr.size, arr.sum(), float(np.dot(arr, arr)), limits, counts)


def _hwc(arr, dataformats, who):
    fmt = dataformats.upper()
    if len(fmt) != arr.ndim or sorted(fmt) not in (sorted("HW"), sorted("CHW")):
        raise ValueError(f"SummaryWriter.{who}: dataformats {dataformats!r} does not describe an image of shape "
                         f"{list(arr.shape)}; hint: 'CHW', 'HWC' or 'HW'")
    if fmt == "HW" or fmt == "WH":
        arr = arr[:, :, None] if fmt == "HW" else arr.T[:, :, None]
    else:
        arr = arr.transpose([fmt.index(c) for c in "HWC"])
    if arr.shape[2] not in (1, 3, 4):
        raise ValueError(f"SummaryWriter.{who}: an image has 1 (grey), 3 (RGB) or 4 (RGBA) channels, got "
                         f"{arr.shape[2]} (shape {list(arr.shape)} as HWC)")
    return arr


def _uint8(arr):
    if arr.dtype == np.uint8:
        return arr
    if arr.dtype.kind == "f":  # floats are in [0, 1], as PyTorch assumes
        return (np.clip(np.nan_to_num(arr), 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    return np.clip(arr, 0, 255).astype(np.uint8)


def image_proto(arr_hwc):
    from tensorboard.compat.proto import summary_pb2

    h, w, c = arr_hwc.shape
    return summary_pb2.Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=encode_png(arr_hwc))


def image(tag, img, dataformats="CHW", who="add_image"):
    from tensorboard.compat.proto import summary_pb2

    arr = _uint8(_hwc(to_numpy(img, f"SummaryWriter.{who}"), dataformats, who))
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, image=image_proto(arr))])


def image_grid(imgs, dataformats="NCHW"):
    """``(N, ...)`` images -> one HWC grid of ``min(N, 8)`` columns."""
    arr = to_numpy(imgs, "SummaryWriter.add_images")
    fmt = dataformats.upper()
    if "N" not in fmt or len(fmt) != arr.ndim:
        raise ValueError(f"SummaryWriter.add_images: dataformats {dataformats!r} does not describe a batch of "
                         f"images of shape {list(arr.shape)}; hint: 'NCHW', 'NHWC' or 'NHW'")
    n_axis = fmt.index("N")
    arr = np.moveaxis(arr, n_axis, 0)
    rest = fmt.replace("N", "")
    tiles = [_hwc(a, rest, "add_images") for a in arr]
    if not tiles:
        raise ValueError("SummaryWriter.add_images: no images (N = 0)")
    h, w, c = tiles[0].shape
    cols = min(len(tiles), 8)
    rows = math.ceil(len(tiles) / cols)
    grid = np.zeros((rows * h, cols * w, c), tiles[0].dtype)
    for k, t in enumerate(tiles):
        r, q = divmod(k, cols)
        grid[r * h:(r + 1) * h, q * w:(q + 1) * w] = t
    return _uint8(grid)


def figure_to_image(figure) -> np.ndarray:
    """A matplotlib figure rendered through its Agg canvas: uint8 (H, W, 4)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba()).copy()


def text(tag, text_string):
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
    from tensorboard.plugins.text import metadata

    if not isinstance(text_string, str):
        raise TypeError(f"SummaryWriter.add_text: {tag!r}: text_string must be a str, got "
                        f"{type(text_string).__name__}")
    tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, string_val=[text_string.encode("utf-8")],
                                    tensor_shape=tensor_shape_pb2.TensorShapeProto(
                                        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=1)]))
    meta = metadata.create_summary_metadata(display_name=tag, description="")
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag + "/text_summary", metadata=meta,
                                                                tensor=tensor)])


def _hparam_value(k, v):
    from google.protobuf import struct_pb2

    if hasattr(v, "detach") or isinstance(v, np.ndarray | np.generic):
        a = to_numpy(v, "SummaryWriter.add_hparams")
        if a.size != 1:
            raise ValueError(f"SummaryWriter.add_hparams: hparam {k!r} must be one value, got shape {list(a.shape)}")
        v = a.reshape(()).item()
    if isinstance(v, bool):
        return struct_pb2.Value(bool_value=v), "DATA_TYPE_BOOL"
    if isinstance(v, numbers.Real):
        return struct_pb2.Value(number_value=float(v)), "DATA_TYPE_FLOAT64"
    if isinstance(v, str):
        return struct_pb2.Value(string_value=v), "DATA_TYPE_STRING"
    raise ValueError(f"SummaryWriter.add_hparams: hparam {k!r} has type {type(v).__name__}; values must be bool, "
                     f"int, float, str or a one-element tensor")


def hparams(hparam_dict, metric_dict, hparam_domain_discrete=None):
    """The hparams plugin's three summaries (experiment, session start, session end)."""
    from google.protobuf import struct_pb2
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2
    from tensorboard.plugins.hparams import metadata as hp

    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError("SummaryWriter.add_hparams: hparam_dict and metric_dict must be dicts")
    domains = hparam_domain_discrete or {}
    infos, start = [], plugin_data_pb2.SessionStartInfo(start_time_secs=time.time())
    for k, v in hparam_dict.items():
        value, kind = _hparam_value(k, v)
        start.hparams[k].CopyFrom(value)
        info = api_pb2.HParamInfo(name=k, type=getattr(api_pb2, kind))
        if k in domains:
            vals = [_hparam_value(k, d)[0] for d in domains[k]]
            info.domain_discrete.CopyFrom(struct_pb2.ListValue(values=vals))
        infos.append(info)
    metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=m)) for m in metric_dict]
    experiment = api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics)

    def summary(tag, **data):
        content = plugin_data_pb2.HParamsPluginData(version=hp.PLUGIN_DATA_VERSION, **data)
        return summary_pb2.Summary(value=[summary_pb2.Summary.Value(
            tag=tag, tensor=hp.NULL_TENSOR, metadata=hp.create_summary_metadata(content))])

    return (summary(hp.EXPERIMENT_TAG, experiment=experiment),
            summary(hp.SESSION_START_INFO_TAG, session_start_info=start),
            summary(hp.SESSION_END_INFO_TAG, session_end_info=plugin_data_pb2.SessionEndInfo(
                status=api_pb2.STATUS_SUCCESS, end_time_secs=time.time())))


def _op_name(node) -> str:
    name = type(node).__name__ if not hasattr(node, "name") else node.name()
    for suffix in ("Backward0", "Backward1", "Backward"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _shape_attr(shape, dtype):
    from tensorboard.compat.proto import attr_value_pb2, tensor_shape_pb2

    shp = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(s)) for s in shape])
    return {"_output_shapes": attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(shape=[shp])),
            "dtype": attr_value_pb2.AttrValue(s=str(dtype).encode())}


def graph(outputs, named_inputs, named_params):
    """A GraphDef of the autograd graph behind ``outputs`` (Tensors): nodes for inputs (``input/...``),
    parameters (``parameters/<dotted path as scopes>``), every recorded op (its forward name) and the
    outputs (``output/...``), with edges from each op to the values it consumed."""
    from tensorboard.compat.proto import graph_pb2, node_def_pb2, versions_pb2

    leaves = {id(t): name for name, t in named_inputs}
    leaves.update({id(p): "parameters/" + name.replace(".", "/") for name, p in named_params})
    nodes, names, emitted, counter = [], {}, set(), [0]

    def leaf_name(var):
        name = leaves.get(id(var))
        if name is None:
            counter[0] += 1
            name = leaves[id(var)] = f"constant/{counter[0]}"
        if name not in emitted:
            emitted.add(name)
            nodes.append(node_def_pb2.NodeDef(name=name, op="IO Node" if name.startswith("input/") else "Parameter",
                                              attr=_shape_attr(var.shape, var.dtype)))
        return name

    def visit(root) -> str:  # post-order without recursion: graphs of long sequences are deep
        stack = [(root, False)]
        while stack:
            node, children_done = stack.pop()
            if id(node) in names:
                continue
            var = getattr(node, "variable", None)
            if var is not None:  # AccumulateGrad: a leaf
                names[id(node)] = leaf_name(var)
                continue
            children = [fn for fn, _ in getattr(node, "next_functions", ()) if fn is not None]
            if not children_done:
                stack.append((node, True))
                stack.extend((c, False) for c in children if id(c) not in names)
                continue
            counter[0] += 1
            op = _op_name(node)
            names[id(node)] = f"{op}_{counter[0]}"
            nodes.append(node_def_pb2.NodeDef(name=names[id(node)], op=op, input=[names[id(c)] for c in children]))
        return names[id(root)]

    for k, out in enumerate(outputs):
        fn = getattr(out, "grad_fn", None)
        src = [visit(fn)] if fn is not None else []
        nodes.append(node_def_pb2.NodeDef(name=f"output/output.{k}", op="IO Node", input=src,
                                          attr=_shape_attr(out.shape, out.dtype)))
    return graph_pb2.GraphDef(node=nodes, versions=versions_pb2.VersionDef(producer=22))
