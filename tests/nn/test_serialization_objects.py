"""Whole objects in checkpoints (issue 15, item 7): ``nn.save(model, path)`` pickles the object around its
tensors (their bytes in safetensors entries); ``nn.load`` refuses classes that are not allow-listed unless
``weights_only=False``, and never runs code from a file it refuses."""

import base64
import json
import os
import pickle
import struct

import numpy as np
import pytest

import autograd as ag
import nn
from nn.serialization import CheckpointError, WeightsOnlyError

MODEL_CLASSES = [nn.Sequential, nn.Linear, nn.ReLU, nn.BatchNorm1d]


class TiedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(5, 3)
        self.head = nn.Linear(3, 5, bias=False)
        self.head.weight = self.embed.weight  # tied
        self.register_buffer("scale", ag.tensor(2.0))
        self.note = {"classes": ("a", "b"), "arr": np.arange(3)}

    def forward(self, idx):
        return self.head(self.embed(idx)) * self.scale


def _model(dev="cpu"):
    ag.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.BatchNorm1d(4)).to(dev)


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_whole_module_round_trip(dev, tmp_path):
    m = _model(dev)
    m(ag.randn(6, 3, device=dev))  # batch norm statistics move
    nn.save(m, tmp_path / "m.safetensors")
    back = nn.load(tmp_path / "m.safetensors", weights_only=False)
    assert type(back) is nn.Sequential and type(back[2]) is nn.BatchNorm1d
    for (n1, a), (n2, b) in zip(m.state_dict().items(), back.state_dict().items()):
        assert n1 == n2 and b.device == a.device
        np.testing.assert_array_equal(b.cpu().numpy(), a.cpu().numpy())
    assert isinstance(back[0].weight, nn.Parameter) and back[0].weight.requires_grad
    x = ag.randn(5, 3, device=dev)
    m.eval(), back.eval()
    np.testing.assert_array_equal(back(x).detach().cpu().numpy(), m(x).detach().cpu().numpy())
    on_cpu = nn.load(tmp_path / "m.safetensors", map_location="cpu", weights_only=False)
    assert on_cpu[0].weight.device.type == "cpu"


def test_tied_weights_buffers_and_attributes(tmp_path):
    m = TiedNet()
    nn.save({"model": m, "epoch": 3}, tmp_path / "t.safetensors")
    with nn.serialization.safe_globals([TiedNet, nn.Embedding, nn.Linear]):
        back = nn.load(tmp_path / "t.safetensors")
    net = back["model"]
    assert back["epoch"] == 3
    assert net.head.weight is net.embed.weight  # tying survives
    assert float(net.scale) == 2.0 and not net.scale.requires_grad
    assert net.note["classes"] == ("a", "b") and isinstance(net.note["arr"], np.ndarray)
    idx = ag.tensor([0, 3, 4])
    np.testing.assert_array_equal(net(idx).detach().numpy(), m(idx).detach().numpy())
    with pytest.raises(WeightsOnlyError, match="TiedNet"):  # the block ended: not allowed any more
        nn.load(tmp_path / "t.safetensors")


def test_weights_only_refuses_and_allow_lists(tmp_path):
    nn.save(_model(), tmp_path / "m.safetensors")
    with pytest.raises(WeightsOnlyError, match="refuses to load the global nn.modules.container.Sequential.*"
                       "weights_only=False.*add_safe_globals"):
        nn.load(tmp_path / "m.safetensors")
    assert isinstance(WeightsOnlyError("x"), pickle.UnpicklingError)
    try:
        nn.serialization.add_safe_globals(MODEL_CLASSES)
        assert "nn.modules.linear.Linear" in nn.serialization.get_safe_globals()
        assert type(nn.load(tmp_path / "m.safetensors")) is nn.Sequential
    finally:
        nn.serialization.clear_safe_globals()
    with pytest.raises(WeightsOnlyError):
        nn.load(tmp_path / "m.safetensors")
    # a plain state dict never needs the allow-list
    nn.save(_model().state_dict(), tmp_path / "sd.safetensors")
    assert set(nn.load(tmp_path / "sd.safetensors")) == set(_model().state_dict())


def test_tensor_data_stays_in_safetensors_layout(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    m = _model()
    nn.save(m, tmp_path / "m.safetensors")
    flat = safetensors_numpy.load_file(str(tmp_path / "m.safetensors"))
    values = sorted(v.tobytes() for v in flat.values())
    expect = sorted(t.numpy().tobytes() for t in m.state_dict().values())
    assert values == expect


def _rewrite_pickle(path, payload: bytes, out):
    """A copy of the checkpoint at ``path`` whose pickled object is ``payload`` (a hostile file)."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    structure = json.loads(header["__metadata__"]["nn.structure"])
    structure["root"]["pickle"] = base64.b64encode(payload).decode()
    header["__metadata__"]["nn.structure"] = json.dumps(structure)
    new = json.dumps(header).encode()
    new += b" " * (-len(new) % 8)
    open(out, "wb").write(struct.pack("<Q", len(new)) + new + raw[8 + n:])


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_a_hostile_pickle_is_refused_without_running(tmp_path):
    nn.save(_model(), tmp_path / "m.safetensors")
    marker = str(tmp_path / "pwned")
    _rewrite_pickle(tmp_path / "m.safetensors", pickle.dumps(_Evil(marker), protocol=4), tmp_path / "evil.st")
    with pytest.raises(WeightsOnlyError, match="mkdir"):
        nn.load(tmp_path / "evil.st")
    assert not os.path.exists(marker)
    with nn.serialization.safe_globals(MODEL_CLASSES):  # allowing the model's classes does not allow mkdir
        with pytest.raises(WeightsOnlyError):
            nn.load(tmp_path / "evil.st")
    assert not os.path.exists(marker)


def test_corrupt_pickles_and_unpicklable_objects(tmp_path):
    nn.save(_model(), tmp_path / "m.safetensors")
    _rewrite_pickle(tmp_path / "m.safetensors", b"\x80\x04garbage", tmp_path / "bad.st")
    with pytest.raises(CheckpointError, match="corrupt"):
        nn.load(tmp_path / "bad.st", weights_only=False)
    import io

    class BadRef(pickle.Pickler):
        def persistent_id(self, v):
            return ("t", 999, "tensor", False) if v == "here" else None

    buf = io.BytesIO()
    BadRef(buf, protocol=4).dump(["here"])
    _rewrite_pickle(tmp_path / "m.safetensors", buf.getvalue(), tmp_path / "odd.st")
    with pytest.raises(CheckpointError, match="bad tensor reference"):
        nn.load(tmp_path / "odd.st")
    with pytest.raises(TypeError, match="nn.save.*cannot be saved.*state_dict"):
        nn.save({"f": lambda x: x}, tmp_path / "l.safetensors")
    assert not os.path.exists(tmp_path / "l.safetensors")
