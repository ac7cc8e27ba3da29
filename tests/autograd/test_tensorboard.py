"""autograd.utils.tensorboard.SummaryWriter (issue 20): the event files are read back with the tensorboard
package's own readers (EventAccumulator; the multiplexer and data provider TensorBoard's server uses), and
every kind of summary holds what was written: scalars, histograms against NumPy, images decoded pixel for pixel,
grids, figures, text, hyperparameters and graphs; values from Tensors on cpu and interpreted cuda."""

import os
import struct
import sys
import zlib

import numpy as np
import pytest

pytest.importorskip("tensorboard")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

import autograd as ag  # noqa: E402
import tkernels as tk  # noqa: E402
from autograd.utils.tensorboard import SummaryWriter  # noqa: E402


def _read(path):
    acc = EventAccumulator(str(path), size_guidance={k: 0 for k in ("scalars", "histograms", "images", "tensors",
                                                                      "graph", "compressedHistograms")})
    acc.Reload()
    return acc


def _decode_png(data: bytes) -> np.ndarray:
    """Our encoder's PNGs: 8-bit, filter 0 rows (the test decodes them itself)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        crc = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, color = ihdr[:4]
    c = {0: 1, 2: 3, 6: 4}[color]
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * c)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(h, w, c)


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_scalars(dev, tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(5):
            w.add_scalar("loss", ag.tensor(1.0 / (step + 1), device=dev), step, walltime=1000.0 + step)
        w.add_scalar("py", 3, 7)
        w.add_scalar("np", np.float64(0.1), 8)
        w.add_scalar("arr", tk.asarray([2.5]), 9)
        w.add_scalar("new", 4.25, 1, new_style=True)
    acc = _read(tmp_path)
    ev = acc.Scalars("loss")
    assert [e.step for e in ev] == list(range(5))
    assert [e.wall_time for e in ev] == [1000.0 + s for s in range(5)]
    assert [e.value for e in ev] == [float(np.float32(1.0 / (s + 1))) for s in range(5)]
    assert acc.Scalars("py")[0].value == 3.0 and acc.Scalars("arr")[0].value == 2.5
    assert acc.Scalars("np")[0].value == pytest.approx(0.1)
    new = acc.Tensors("new")[0]
    assert new.step == 1 and new.tensor_proto.float_val[0] == 4.25


def test_add_scalars_writes_one_run_per_curve(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalars("run/loss", {"train": step * 1.0, "test": step * 2.0}, step)
    for tag, mult in (("train", 1.0), ("test", 2.0)):
        acc = _read(tmp_path / f"run_loss_{tag}")
        assert [(e.step, e.value) for e in acc.Scalars("run/loss")] == [(s, s * mult) for s in range(3)]


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_histograms_match_numpy(dev, tmp_path):
    rng = np.random.default_rng(0)
    vals = rng.standard_normal(1000).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("tf", ag.tensor(vals, device=dev), 3)
        w.add_histogram("ten", vals, 4, bins=10)
        w.add_histogram("edges", vals, 5, bins=[-3, -1, 0, 1, 3])
        w.add_histogram("merged", vals, 6, bins=40, max_bins=10)
        w.add_histogram_raw("raw", 0, 4, 5, 10, 30, [1, 2, 4], [1, 2, 2], 7)
    acc = _read(tmp_path)
    v64 = vals.astype(np.float64)
    for tag in ("tf", "ten", "edges", "merged"):
        h = acc.Histograms(tag)[0].histogram_value
        assert h.num == 1000 and h.min == pytest.approx(v64.min()) and h.max == pytest.approx(v64.max())
        assert h.sum == pytest.approx(v64.sum(), rel=1e-9) and h.sum_squares == pytest.approx((v64 ** 2).sum())
        assert sum(h.bucket) == (1000 if tag != "edges" else ((v64 >= -3) & (v64 <= 3)).sum())
    counts, edges = np.histogram(v64, bins=10)
    ten = acc.Histograms("ten")[0].histogram_value
    np.testing.assert_allclose(ten.bucket_limit, edges[1:])
    np.testing.assert_array_equal(ten.bucket, counts)
    tf = acc.Histograms("tf")[0].histogram_value
    limits = np.array(tf.bucket_limit)
    assert np.all(np.diff(limits) > 0) and limits[0] < v64.min() and limits[-1] >= v64.max()
    ratios = limits[1:-1][limits[1:-1] > 1e-9] / limits[:-2][limits[1:-1] > 1e-9]
    np.testing.assert_allclose(ratios[ratios < 1.5], 1.1, rtol=1e-9)  # TensorFlow's 10% buckets
    assert len(acc.Histograms("merged")[0].histogram_value.bucket) == 10
    raw = acc.Histograms("raw")[0].histogram_value
    assert list(raw.bucket_limit) == [1, 2, 4] and list(raw.bucket) == [1, 2, 2] and raw.num == 5


def test_images_are_decoded_pixel_for_pixel(tmp_path):
    rng = np.random.default_rng(1)
    chw = rng.integers(0, 256, (3, 5, 7), dtype=np.uint8)
    gray = rng.random((4, 6)).astype(np.float32)
    rgba = rng.integers(0, 256, (5, 4, 4), dtype=np.uint8)
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", chw, 1)
        w.add_image("hw", ag.tensor(gray), 2, dataformats="HW")
        w.add_image("hwc", rgba, 3, dataformats="HWC")
        w.add_images("grid", rng.integers(0, 256, (10, 1, 3, 2), dtype=np.uint8), 4)
    acc = _read(tmp_path)
    img = acc.Images("chw")[0]
    assert (img.width, img.height) == (7, 5)
    np.testing.assert_array_equal(_decode_png(img.encoded_image_string), chw.transpose(1, 2, 0))
    g = _decode_png(acc.Images("hw")[0].encoded_image_string)
    np.testing.assert_array_equal(g[:, :, 0], (np.clip(gray, 0, 1) * 255 + 0.5).astype(np.uint8))
    np.testing.assert_array_equal(_decode_png(acc.Images("hwc")[0].encoded_image_string), rgba)
    grid = acc.Images("grid")[0]
    assert (grid.width, grid.height) == (8 * 2, 2 * 3)  # 10 images: 8 per row, 2 rows


def test_figure(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    fig = plt.figure(figsize=(2, 1.5), dpi=50)
    plt.plot([0, 1], [1, 0])
    with SummaryWriter(tmp_path) as w:
        w.add_figure("fig", fig, 0)
    img = _read(tmp_path).Images("fig")[0]
    assert (img.width, img.height) == (100, 75)
    assert not plt.fignum_exists(fig.number)  # closed


def test_text_and_hparams(tmp_path):
    from tensorboard.plugins.hparams import metadata as hp

    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "**hello** world", 2)
        w.add_hparams({"lr": 0.01, "opt": "adamw", "bn": True}, {"hparam/acc": 0.9}, run_name="trial1",
                      hparam_domain_discrete={"opt": ["sgd", "adamw"]})
    t = _read(tmp_path).Tensors("notes/text_summary")[0]
    assert t.step == 2 and t.tensor_proto.string_val[0] == b"**hello** world"
    acc = _read(tmp_path / "trial1")
    content = acc.PluginTagToContent("hparams")
    exp = hp.parse_experiment_plugin_data(content[hp.EXPERIMENT_TAG])
    assert [i.name for i in exp.hparam_infos] == ["lr", "opt", "bn"]
    assert [v.string_value for v in exp.hparam_infos[1].domain_discrete.values] == ["sgd", "adamw"]
    start = hp.parse_session_start_info_plugin_data(content[hp.SESSION_START_INFO_TAG])
    assert start.hparams["lr"].number_value == 0.01 and start.hparams["opt"].string_value == "adamw"
    assert start.hparams["bn"].bool_value is True
    hp.parse_session_end_info_plugin_data(content[hp.SESSION_END_INFO_TAG])
    assert acc.Scalars("hparam/acc")[0].value == pytest.approx(0.9)


def test_graph_of_a_small_mlp(tmp_path):
    import nn

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, ag.randn(3, 4))
    g = _read(tmp_path).Graph()
    nodes = {n.name: n for n in g.node}
    assert {"input/input.0", "parameters/0/weight", "parameters/0/bias", "parameters/2/weight",
            "output/output.0"} <= set(nodes)
    ops = [n for n in g.node if n.op not in ("IO Node", "Parameter")]
    assert any("Relu" in n.op or "relu" in n.op.lower() for n in ops)
    out = nodes["output/output.0"]
    assert len(out.input) == 1 and out.input[0] in nodes
    for n in g.node:  # every edge points at a node of the graph
        assert all(i in nodes for i in n.input)
    reach, todo = set(), [out.input[0]]  # the input and every parameter feed the output
    while todo:
        name = todo.pop()
        if name not in reach:
            reach.add(name)
            todo.extend(nodes[name].input)
    assert {"input/input.0", "parameters/0/weight", "parameters/2/bias"} <= reach
    shape = nodes["parameters/0/weight"].attr["_output_shapes"].list.shape[0]
    assert [d.size for d in shape.dim] == [8, 4]


def test_tensorboards_own_data_loading(tmp_path):
    from tensorboard import context
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer

    with SummaryWriter(tmp_path / "a") as w:
        for s in range(4):
            w.add_scalar("m/loss", 10.0 - s, s)
    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(tmp_path))
    mux.Reload()
    provider = data_provider.MultiplexerDataProvider(mux, str(tmp_path))
    ctx = context.RequestContext()
    listed = provider.list_scalars(ctx, experiment_id="x", plugin_name="scalars")
    assert "a" in listed and "m/loss" in listed["a"]
    data = provider.read_scalars(ctx, experiment_id="x", plugin_name="scalars", downsample=100)
    assert [(d.step, d.value) for d in data["a"]["m/loss"]] == [(s, 10.0 - s) for s in range(4)]


def test_bad_input_and_closed_writer(tmp_path):
    w = SummaryWriter(tmp_path)
    with pytest.raises(ValueError, match="add_scalar: 'x': the value must hold one number, got shape \\[3\\]"):
        w.add_scalar("x", np.ones(3))
    with pytest.raises(ValueError, match="add_image: an image has 1 .*3 .*or 4 .* channels, got 2"):
        w.add_image("i", np.zeros((2, 4, 4), np.uint8))
    with pytest.raises(ValueError, match="dataformats 'NCHW' does not describe an image of shape \\[3, 4, 4\\]"):
        w.add_image("i", np.zeros((3, 4, 4), np.uint8), dataformats="NCHW")
    with pytest.raises(ValueError, match="add_histogram: 'h': the values hold NaN"):
        w.add_histogram("h", np.array([1.0, np.nan]))
    with pytest.raises(TypeError, match="add_text"):
        w.add_text("t", 3)
    with pytest.raises(ValueError, match="add_hparams: hparam 'f' has type list"):
        w.add_hparams({"f": [1]}, {"m": 1.0})
    w.close()
    with pytest.raises(RuntimeError, match="add_scalar: the writer for .* is closed"):
        w.add_scalar("x", 1.0)
    w.close()  # twice is fine


def test_writing_imports_no_torch(tmp_path):
    import subprocess

    code = ("import sys; from autograd.utils.tensorboard import SummaryWriter; import autograd as ag; "
            f"w = SummaryWriter({str(tmp_path)!r}); w.add_scalar('x', ag.ones(1), 0); w.add_histogram('h', "
            "ag.randn(10), 0); w.add_image('i', ag.rand(3, 4, 4), 0); w.close(); "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(tmp_path.parent),
                   env={**os.environ, "PYTHONPATH": root})


def test_default_log_dir_and_purge_step(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_exp") as w:
        assert w.get_logdir().startswith("runs") and w.get_logdir().endswith("_exp")
        w.add_scalar("x", 1.0, 0)
    with SummaryWriter(tmp_path / "p", purge_step=5) as w:
        w.add_scalar("x", 1.0, 5)
    assert _read(tmp_path / "p").Scalars("x")[0].step == 5
