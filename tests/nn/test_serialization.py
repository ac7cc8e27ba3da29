"""Checkpoints (nn.save / nn.load): round trips of every dtype and layout, cuda and map_location, nested
state dicts rebuilt exactly, shared tensors, interop both ways with the ``safetensors`` package (byte for
byte), every corruption case refused with a clear error, atomic writes (and the temporaries of killed saves removed
by the next save, never a live writer's), and no pickle anywhere."""

import ast
import builtins
import io
import json
import math
import os
import pickle
import signal
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import autograd as ag
import nn
import nn.serialization as ser
import tkernels as tk
from nn.serialization import CheckpointError, load, save

safetensors_numpy = pytest.importorskip("safetensors.numpy")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "uint16", "uint32", "uint64"]


def _sample(dtype: str, shape=(3, 5), seed=0) -> np.ndarray:
    """Values that exercise the dtype: extremes for ints, nan/inf/-0/subnormals for floats."""
    rng = np.random.default_rng(seed)
    n = math.prod(shape)
    if dtype == "bool":
        return (rng.random(n) > 0.5).reshape(shape)
    npd = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    if npd.kind in "iu":
        info = np.iinfo(npd)
        vals = rng.integers(info.min, info.max, n, dtype=npd, endpoint=True)
        vals[:2] = info.min, info.max
        return vals.reshape(shape)
    vals = (rng.standard_normal(n) * 100).astype(npd)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-40 if npd.itemsize > 2 else 1e-7], np.float64)
    vals[: len(special)] = special[:n].astype(npd)
    return vals.reshape(shape)


def _bits(nd) -> bytes:
    return np.ascontiguousarray(nd).tobytes()


def _np(t) -> np.ndarray:
    return t if isinstance(t, np.ndarray) else t.detach().cpu().numpy()


def _raw(text: bytes, buffer: bytes = b"", *, n=None) -> bytes:
    """A file from header text: padded with spaces to a multiple of 8, length prefix ``n`` (default: right)."""
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text) if n is None else n) + text + buffer


def _hand_file(header: dict, buffer: bytes = b"", *, n=None) -> bytes:
    return _raw(json.dumps(header, separators=(",", ":")).encode(), buffer, n=n)


# ------------------------------------------------------------------------------------------ round trips
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips_bit_exact(tmp_path, dtype):
    nd = _sample(dtype)
    t = ag.from_numpy(nd)
    save({"x": t, "row": t[1]}, tmp_path / "a.safetensors")
    out = load(tmp_path / "a.safetensors")
    for key, ref in (("x", nd), ("row", nd[1])):
        assert isinstance(out[key], ag.Tensor) and str(out[key].dtype) == dtype
        assert out[key].shape == ref.shape and not out[key].requires_grad
        assert _bits(_np(out[key])) == _bits(ref)


def test_bfloat16_every_bit_pattern_survives(tmp_path):
    bits = np.arange(1 << 16, dtype=np.uint16)  # all of them: nan payloads, subnormals, both zeros
    t = ag.from_numpy(bits.view(ml_dtypes.bfloat16))
    save({"all": t}, tmp_path / "b.safetensors")
    assert np.array_equal(_np(load(tmp_path / "b.safetensors")["all"]).view(np.uint16), bits)


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1,), (7, 1, 3)])
def test_zero_d_and_empty_shapes(tmp_path, shape):
    nd = np.arange(math.prod(shape), dtype=np.float32).reshape(shape) + np.float32(1.5)
    nd = np.asarray(nd)  # (a 0-d result is a NumPy scalar)
    save({"t": ag.from_numpy(nd), "e": ag.zeros(0), "s": ag.tensor(2.5)}, tmp_path / "c.safetensors")
    out = load(tmp_path / "c.safetensors")
    assert out["t"].shape == shape and _bits(_np(out["t"])) == _bits(nd)
    assert out["e"].shape == (0,) and out["s"].shape == () and out["s"].item() == 2.5


def test_large_tensor(tmp_path):
    nd = np.random.default_rng(1).standard_normal(1_000_003).astype(np.float32)
    save({"big": ag.from_numpy(nd), "small": ag.ones(3, dtype=ag.float64)}, tmp_path / "big.safetensors")
    assert os.path.getsize(tmp_path / "big.safetensors") > 4_000_000
    out = load(tmp_path / "big.safetensors")
    assert np.array_equal(_np(out["big"]), nd)


def test_non_contiguous_values_are_written_contiguous(tmp_path):
    base = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    t = ag.from_numpy(base.copy())
    values = {
        "transposed": t.permute(2, 0, 1),
        "strided": t[:, ::2, 1::2],
        "np_transposed": base.transpose(1, 0, 2),
        "array_view": t.detach()._data.T,
        "big_endian": base.astype(">f8")[::2],
    }
    assert not values["transposed"].is_contiguous() and not values["strided"].is_contiguous()
    save(values, tmp_path / "nc.safetensors")
    out = load(tmp_path / "nc.safetensors")
    refs = {"transposed": base.transpose(2, 0, 1), "strided": base[:, ::2, 1::2],
            "np_transposed": base.transpose(1, 0, 2), "array_view": base.T, "big_endian": base[::2]}
    kinds = {"np_transposed": np.ndarray, "array_view": tk.Array, "big_endian": np.ndarray}
    for k, ref in refs.items():
        assert type(out[k]) is kinds.get(k, ag.Tensor), k  # load gives back the kind that was saved
        got = out[k] if isinstance(out[k], np.ndarray) else out[k].numpy() if isinstance(out[k], tk.Array) \
            else _np(out[k])
        assert got.flags.c_contiguous and np.array_equal(got, ref), k


def test_tensors_that_require_grad_and_parameters_save_their_values(tmp_path):
    w = ag.randn(2, 3, requires_grad=True)
    y = w * 2  # a non-leaf with a grad_fn
    save({"w": w, "y": y}, tmp_path / "g.safetensors")
    out = load(tmp_path / "g.safetensors")
    assert not out["w"].requires_grad and out["w"].grad_fn is None
    assert np.array_equal(_np(out["y"]), _np(w) * 2)


def test_file_objects_work_too():
    buf = io.BytesIO(b"prefix")
    buf.seek(6)
    save({"a": ag.arange(4.0), "n": 3}, buf)
    buf.seek(6)  # reads from the current position, like torch.load
    out = load(buf)
    assert out["n"] == 3 and _np(out["a"]).tolist() == [0.0, 1.0, 2.0, 3.0]


# --------------------------------------------------------------------------------------- cuda, devices
def _cuda_ckpt(tmp_path):
    c = ag.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4), device="cuda")
    obj = {"c": c, "ct": c.t(), "h": ag.ones(2, dtype=ag.bfloat16, device="cuda"), "p": ag.arange(3.0)}
    save(obj, tmp_path / "cuda.safetensors")
    return tmp_path / "cuda.safetensors"


def test_cuda_tensors_come_back_on_cuda_by_default(tmp_path):
    out = load(_cuda_ckpt(tmp_path))
    assert str(out["c"].device) == "cuda:0" and str(out["h"].device) == "cuda:0" and str(out["p"].device) == "cpu"
    assert np.array_equal(_np(out["ct"]), np.arange(12.0, dtype=np.float32).reshape(3, 4).T)
    assert str(out["h"].dtype) == "bfloat16" and _np(out["h"]).astype(np.float32).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("map_location, expect", [
    ("cpu", {"c": "cpu", "p": "cpu"}),
    (ag.device("cpu"), {"c": "cpu", "p": "cpu"}),
    ("cuda", {"c": "cuda:0", "p": "cuda:0"}),
    ("cuda:0", {"c": "cuda:0", "p": "cuda:0"}),
    ({"cuda:0": "cpu"}, {"c": "cpu", "p": "cpu"}),
    ({"cuda": "cpu"}, {"c": "cpu", "p": "cpu"}),
    ({"cpu": "cuda:0"}, {"c": "cuda:0", "p": "cuda:0"}),
    (lambda t, loc: None, {"c": "cuda:0", "p": "cpu"}),
    (lambda t, loc: t, {"c": "cpu", "p": "cpu"}),
    (lambda t, loc: t.to("cuda"), {"c": "cuda:0", "p": "cuda:0"}),
])
def test_map_location(tmp_path, map_location, expect):
    out = load(_cuda_ckpt(tmp_path), map_location=map_location)
    for k, dev in expect.items():
        assert str(out[k].device) == dev, k
    assert np.array_equal(_np(out["c"]), np.arange(12.0, dtype=np.float32).reshape(3, 4))


def test_map_location_callable_sees_saved_locations(tmp_path):
    seen = []
    load(_cuda_ckpt(tmp_path), map_location=lambda t, loc: seen.append((str(t.device), loc)))
    assert sorted(seen) == [("cpu", "cpu"), ("cpu", "cuda:0"), ("cpu", "cuda:0"), ("cpu", "cuda:0")]


def test_bad_map_location_is_refused_before_reading(tmp_path):
    path = _cuda_ckpt(tmp_path)
    with pytest.raises(TypeError, match="map_location must be"):
        load(path, map_location=3.5)
    with pytest.raises(ValueError, match="map_location 'tpu'"):
        load(path, map_location="tpu")
    with pytest.raises(RuntimeError, match="cuda:7, which this machine does not have; pass map_location='cpu'"):
        load(path, map_location={"cuda:0": "cuda:7"})
    with pytest.raises(TypeError, match="map_location returned int"):
        load(path, map_location=lambda t, loc: 1)


# --------------------------------------------------------------------------------- structure and types
def _optimizer_like():
    return {
        "model": {"layer.weight": ag.randn(4, 3), "layer.bias": ag.zeros(4), "bn.num_batches_tracked":
                  ag.tensor(7, dtype=ag.int64)},
        "optim": {
            "state": {0: {"step": 3, "exp_avg": ag.randn(4, 3), "exp_avg_sq": ag.rand(4, 3)},
                      1: {"step": ag.tensor(3.0), "exp_avg": ag.randn(4)}},
            "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0,
                              "amsgrad": False, "maximize": False, "foreach": None, "params": [0, 1]}],
        },
        "epoch": 12, "best": float("inf"), "worst": float("-inf"), "nan": float("nan"), "name": "run é 🚀",
        "history": [0.5, 0.25, (1, "x", None), []], "empty": {}, "nested_tuple": ((),),
        "keys": {None: 1, True: 2, 2.5: 3, -1: 4, "-1": 5},
        "np_scalar": np.float32(0.5), "np_int": np.int64(9), "big_int": 2**80,
    }


def _same(a, b, path="obj"):
    """Exact equality of structure, types and values (tensors bit for bit, with dtype and shape)."""
    assert type(a) is type(b), (path, type(a), type(b))
    if isinstance(a, ag.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and _bits(_np(a)) == _bits(_np(b)), path
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys()), path
        for (ka, va), (kb, vb) in zip(a.items(), b.items()):
            assert type(ka) is type(kb), (path, ka, kb)
            _same(va, vb, f"{path}[{ka!r}]")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), path
    else:
        assert a == b, path


def test_nested_state_dicts_are_rebuilt_exactly(tmp_path):
    obj = _optimizer_like()
    save(obj, tmp_path / "opt.safetensors")
    out = load(tmp_path / "opt.safetensors")
    expected = dict(obj, np_scalar=0.5, np_int=9)  # NumPy scalars come back as Python scalars
    _same(expected, out)
    assert isinstance(out["optim"]["state"][1]["step"], ag.Tensor) and out["optim"]["state"][1]["step"].shape == ()
    assert isinstance(out["optim"]["state"][0]["step"], int)
    names = safetensors_numpy.load_file(tmp_path / "opt.safetensors").keys()
    assert {"model.layer.weight", "optim.state.0.exp_avg", "optim.state.1.step"} <= set(names)


@pytest.mark.parametrize("obj", [
    [ag.ones(2), 3, "a"],
    (ag.ones(2), {"k": ag.zeros(1)}),
    ag.arange(5.0),
    3.5,
    None,
    {},
])
def test_any_top_level_value(tmp_path, obj):
    save(obj, tmp_path / "top.safetensors")
    _same(obj, load(tmp_path / "top.safetensors"))


def test_colliding_dotted_names_are_made_unique(tmp_path):
    obj = {"a.b": ag.tensor([1.0]), "a": {"b": ag.tensor([2.0])}, 0: ag.tensor([3.0]), "0": ag.tensor([4.0]),
           "__metadata__": ag.tensor([5.0])}
    save(obj, tmp_path / "col.safetensors")
    _same(obj, load(tmp_path / "col.safetensors"))
    names = set(safetensors_numpy.load_file(tmp_path / "col.safetensors"))
    assert names == {"a.b", "a.b#1", "0", "0#1", "__metadata__#1"}


def test_identical_views_are_written_once_and_load_as_one_tensor(tmp_path):
    w = ag.randn(4, 3)
    obj = {"embed.weight": w, "head.weight": w, "again": w.detach(), "row": w[0], "np": np.zeros(3, np.int8)}
    obj["np_again"] = obj["np"]
    save(obj, tmp_path / "tied.safetensors")
    names = set(safetensors_numpy.load_file(tmp_path / "tied.safetensors"))
    assert names == {"embed.weight", "row", "np"}  # a partial view is its own copy
    out = load(tmp_path / "tied.safetensors")
    assert out["embed.weight"] is out["head.weight"] is out["again"] and out["np"] is out["np_again"]
    assert out["row"] is not out["embed.weight"] and np.array_equal(_np(out["row"]), _np(w)[0])


def test_unsupported_values_are_refused_before_any_file_is_made(tmp_path):
    path = tmp_path / "no.safetensors"
    cases = [({"f": lambda x: x}, TypeError, "cannot be saved"),
             ({"g": (i for i in range(2))}, TypeError, "cannot be saved"),
             ({"u": np.zeros(2, np.longdouble)}, TypeError, f"dtype {np.dtype(np.longdouble)}"),
             ({"c": np.zeros(2, np.clongdouble)}, TypeError, "dtype complex"),
             ({"x": "\ud800"}, ValueError, "lone surrogate")]
    for obj, exc, match in cases:
        with pytest.raises(exc, match=match):
            save(obj, path)
    assert os.listdir(tmp_path) == []


def test_other_python_values_are_pickled_around_the_tensors(tmp_path):
    """Values outside the plain tree (sets, bytes, tuple keys, functions) are saved as torch.save saves them;
    built-in types load with weights_only=True, a function needs weights_only=False."""
    path = tmp_path / "o.safetensors"
    obj = {"s": {1, 2}, (1, 2): 3, "b": b"bytes", "t": ag.ones(2)}
    save(obj, path)
    back = load(path)
    assert back["s"] == {1, 2} and back[(1, 2)] == 3 and back["b"] == b"bytes"
    np.testing.assert_array_equal(_np(back["t"]), [1.0, 1.0])
    save({"f": print}, path)
    with pytest.raises(ser.WeightsOnlyError, match="builtins.print"):
        load(path)
    assert load(path, weights_only=False)["f"] is print


def test_refusals_of_the_plain_tree(tmp_path):
    path = tmp_path / "no.safetensors"
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        save({"l": loop}, path)
    deep = ag.ones(1)
    for _ in range(ser.MAX_DEPTH + 1):
        deep = {"k": deep} if _ % 2 else [deep]
    with pytest.raises(ValueError, match="nested more than 100 containers deep"):
        save(deep, path)
    assert os.listdir(tmp_path) == []
    save(deep[0], path)  # the deepest allowed nesting loads back
    _same(deep[0], load(path))
    os.unlink(path)
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------------------------------- interop
def test_files_we_write_are_read_by_safetensors(tmp_path):
    arrays = {f"t.{d}": _sample(d, (2, 3), seed=i) for i, d in enumerate(DTYPES)}
    arrays["zero_d"] = np.array(1.5, np.float32)
    arrays["empty"] = np.zeros((0, 4), np.int32)
    save({k: ag.from_numpy(v) for k, v in arrays.items()}, tmp_path / "ours.safetensors")
    theirs = safetensors_numpy.load_file(tmp_path / "ours.safetensors")
    assert set(theirs) == set(arrays)
    for k, ref in arrays.items():
        assert theirs[k].dtype == ref.dtype and theirs[k].shape == ref.shape and _bits(theirs[k]) == _bits(ref), k


def test_our_bytes_equal_the_reference_writer(tmp_path):
    """Same tensor order, offsets, header JSON and padding as safetensors.numpy.save."""
    arrays = {f"{name}": _sample(d, (3,), seed=i) for i, (name, d) in
              enumerate(zip("kjihgfedcba", DTYPES + ["float32"]))}
    save(arrays, tmp_path / "ours.safetensors")
    ours = (tmp_path / "ours.safetensors").read_bytes()
    from safetensors import safe_open

    with safe_open(tmp_path / "ours.safetensors", framework="np") as f:
        metadata = f.metadata()
    assert set(metadata) == {"nn.structure"}
    assert safetensors_numpy.save(arrays, metadata=metadata) == ours


def test_files_safetensors_writes_are_read_by_us(tmp_path):
    arrays = {f"w.{d}": _sample(d, (4, 2), seed=i) for i, d in enumerate(DTYPES)}
    arrays["scalar"] = np.array(-3, np.int64)
    arrays["empty"] = np.zeros((3, 0), ml_dtypes.bfloat16)
    safetensors_numpy.save_file(arrays, tmp_path / "theirs.safetensors", metadata={"format": "pt"})
    out = load(tmp_path / "theirs.safetensors")
    assert set(out) == set(arrays)  # no structure of ours: a flat dict of tensors
    for k, ref in arrays.items():
        assert str(out[k].dtype) == (ref.dtype.name if ref.dtype != np.bool_ else "bool")
        assert out[k].shape == ref.shape and _bits(_np(out[k])) == _bits(ref), k
    on_cuda = load(tmp_path / "theirs.safetensors", map_location="cuda")
    assert all(str(t.device) == "cuda:0" for t in on_cuda.values())


def test_safetensors_files_with_unsupported_dtypes_are_refused_by_name(tmp_path):
    header = {"ok": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
              "u": {"dtype": "F8_E5M2", "shape": [2], "data_offsets": [8, 10]}}
    (tmp_path / "f8.safetensors").write_bytes(_hand_file(header, bytes(10)))
    with pytest.raises(CheckpointError, match="tensor 'u': dtype F8_E5M2 is valid safetensors but tkernels has no"):
        load(tmp_path / "f8.safetensors")


def test_unsigned_dtypes_load_from_the_reference_writer(tmp_path):
    ref = {"u16": np.array([0, 65535], np.uint16), "u32": np.array([7, 2**32 - 1], np.uint32),
           "u64": np.array([1, 2**64 - 1], np.uint64)}
    safetensors_numpy.save_file(ref, tmp_path / "u.safetensors")
    out = load(tmp_path / "u.safetensors")
    for k, v in ref.items():
        assert str(out[k].dtype) == str(v.dtype) and np.array_equal(_np(out[k]), v)
    save({k: ag.from_numpy(v) for k, v in ref.items()}, tmp_path / "v.safetensors")
    back = safetensors_numpy.load_file(tmp_path / "v.safetensors")
    assert all(back[k].dtype == v.dtype and np.array_equal(back[k], v) for k, v in ref.items())


# ---------------------------------------------------------------------------------------- corruption
def _valid_header():
    return {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "b": {"dtype": "I8", "shape": [4], "data_offsets": [8, 12]}}


def _with(**changes):
    h = _valid_header()
    for name, entry in changes.items():
        h[name] = entry
    return h


def _entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


def _structure(root):
    return {"__metadata__": {"nn.structure": json.dumps({"version": 1, "root": root})}, **_valid_header()}


_GOOD_ROOT = {"dict": [["a", {"tensor": "a"}], ["b", {"tensor": "b"}]]}
_BUF = bytes(12)

CORRUPT = [
    # (case, file bytes, message pattern)
    ("empty file", b"", "0 bytes, shorter than the 8-byte header length"),
    ("seven bytes", b"\x08\x00\x00\x00\x00\x00\x00", "7 bytes, shorter than the 8-byte"),
    ("header length absurd", struct.pack("<Q", 2**40) + b"{}", "over the limit of 100000000"),
    ("header length past end", _hand_file({}, n=64), "says 64 bytes but only 8 follow"),
    ("header not utf-8", struct.pack("<Q", 8) + b'{"\xff\xfe":1}', "not UTF-8"),
    ("header not json", struct.pack("<Q", 8) + b"{nope}  ", "not valid JSON"),
    ("header an array", struct.pack("<Q", 8) + b"[1, 2]  ", r"does not start with '\{'"),
    ("header with NaN", struct.pack("<Q", 16) + b'{"a": NaN}      ', "contains NaN, which is not JSON"),
    ("header nested deeply", _raw(b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}"), "not valid JSON .*recursion"),
    ("duplicate tensor name", _raw(b'{"a":{"dtype":"I8","shape":[4],"data_offsets":[8,12]},'
                                   b'"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', _BUF),
     "the header has the key 'a' twice"),
    ("entry not an object", _hand_file(_with(b=3), _BUF), "tensor 'b': its entry is 3"),
    ("entry missing data_offsets", _hand_file(_with(b={"dtype": "I8", "shape": [4]}), _BUF),
     "tensor 'b': its entry lacks data_offsets"),
    ("entry missing dtype and shape", _hand_file(_with(b={"data_offsets": [8, 12]}), _BUF),
     "tensor 'b': its entry lacks dtype, shape"),
    ("unknown dtype", _hand_file(_with(b=_entry("F17", (4,), (8, 12))), _BUF), "tensor 'b': unknown dtype 'F17'"),
    ("dtype not a string", _hand_file(_with(b=_entry(7, (4,), (8, 12))), _BUF), "tensor 'b': unknown dtype 7"),
    ("unsupported dtype", _hand_file(_with(b=_entry("F8_E4M3", (4,), (8, 12))), _BUF),
     "tensor 'b': dtype F8_E4M3 is valid safetensors but tkernels"),
    ("shape not a list", _hand_file(_with(a={"dtype": "F32", "shape": 2, "data_offsets": [0, 8]}), _BUF),
     "tensor 'a': shape 2 is not a list of non-negative ints"),
    ("negative dim", _hand_file(_with(a=_entry(shape=(-2,))), _BUF), r"tensor 'a': shape \[-2\] is not"),
    ("float dim", _hand_file(_with(a=_entry(shape=(2.0,))), _BUF), r"tensor 'a': shape \[2.0\] is not"),
    ("bool dim", _hand_file(_with(a=_entry(shape=(True, 2))), _BUF), r"tensor 'a': shape \[True, 2\] is not"),
    ("offsets one int", _hand_file(_with(a=_entry(offsets=(8,))), _BUF), r"data_offsets \[8\] is not \[begin, end\]"),
    ("offsets reversed", _hand_file(_with(a=_entry(offsets=(8, 0))), _BUF), r"data_offsets \[8, 0\] is not"),
    ("offsets negative", _hand_file(_with(a=_entry(offsets=(-8, 0))), _BUF), r"data_offsets \[-8, 0\] is not"),
    ("offsets strings", _hand_file(_with(a=_entry(offsets=("0", "8"))), _BUF), "data_offsets \\['0', '8'\\]"),
    ("bytes != shape x itemsize", _hand_file(_with(a=_entry(shape=(3,))), _BUF),
     r"tensor 'a': data_offsets \[0, 8\] span 8 bytes but shape \[3\] of F32 needs 12"),
    ("offsets past the buffer", _hand_file(_with(b=_entry("I8", (8,), (8, 16))), _BUF),
     r"tensor 'b': data_offsets \[8, 16\] run past the end of the data buffer \(12 bytes\)"),
    ("overlap", _hand_file(_with(b=_entry("I8", (4,), (4, 8))), bytes(8)),
     r"tensor 'b': data_offsets \[4, 8\] overlap the previous tensor's bytes \(which end at 8\)"),
    ("gap", _hand_file(_with(b=_entry("I8", (4,), (12, 16))), bytes(16)),
     r"tensor 'b': data_offsets \[12, 16\] leave a gap of 4 bytes after offset 8"),
    ("gap at the start", _hand_file({"a": _entry(offsets=(4, 12))}, bytes(12)),
     "leave a gap of 4 bytes after offset 0"),
    ("trailing bytes", _hand_file(_valid_header(), bytes(20)), "cover 12 bytes of the 20-byte data buffer; 8 trailing"),
    ("truncated data", _hand_file(_valid_header(), bytes(10)),
     r"tensor 'b': data_offsets \[8, 12\] run past the end of the data buffer \(10 bytes\)"),
    ("truncated header", _hand_file(_valid_header(), _BUF)[:40], "only 32 follow it; the file is truncated"),
    ("metadata not an object", _hand_file({"__metadata__": [1], **_valid_header()}, _BUF),
     "__metadata__ must be an object of strings to strings"),
    ("metadata value not a string", _hand_file({"__metadata__": {"k": 1}, **_valid_header()}, _BUF),
     "__metadata__ must be an object of strings"),
    ("structure not json", _hand_file({"__metadata__": {"nn.structure": "{oops"}, **_valid_header()}, _BUF),
     r"__metadata__\['nn.structure'\] is not valid JSON"),
    ("structure without version", _hand_file({"__metadata__": {"nn.structure": '{"root": null}'},
                                              **_valid_header()}, _BUF), "is not an object with 'version' and 'root'"),
    ("structure from the future", _hand_file({"__metadata__": {"nn.structure": '{"version": 2, "root": null}'},
                                              **_valid_header()}, _BUF), "has version 2; this reader knows version 1"),
    ("structure names a missing tensor", _hand_file(_structure(
        {"dict": [["a", {"tensor": "a"}], ["b", {"tensor": "b"}], ["c", {"tensor": "zz"}]]}), _BUF),
     r"at obj\['c'\]: refers to tensor 'zz', which is not in the file"),
    ("structure forgets a tensor", _hand_file(_structure({"dict": [["a", {"tensor": "a"}]]}), _BUF),
     r"does not mention tensors \['b'\]"),
    ("structure bad node", _hand_file(_structure({"dict": [["a", {"tensor": "a"}], ["b", {"tensor": "b"}],
                                                           ["x", [1, 2]]]}), _BUF),
     r"at obj\['x'\]: \[1, 2\] is not a scalar, a tensor reference or a container"),
    ("structure bad dict item", _hand_file(_structure({"dict": [["a", {"tensor": "a"}, 3], ["b", {"tensor": "b"}]]}),
                                           _BUF), "dict item .* is not \\[scalar key, value\\]"),
    ("structure duplicate key", _hand_file(_structure({"dict": [["a", {"tensor": "a"}], ["a", {"tensor": "b"}]]}),
                                           _BUF), "dict key 'a' appears twice"),
    ("structure bad device", _hand_file(_structure({"list": [{"tensor": "a", "device": "tpu:0"}, {"tensor": "b"}]}),
                                        _BUF), r"at obj\[0\]: bad device"),
    ("structure nested deeply", _hand_file(
        {"__metadata__": {"nn.structure": '{"version":1,"root":' + '{"list":[' * 20_000 + "]}" * 20_000 + "}"}}),
     r"nn.structure'\] is (not valid JSON|nested too deeply) .*recursion"),
    ("bool byte not 0/1", _hand_file({"m": _entry("BOOL", (3,), (0, 3))}, b"\x00\x01\x02"),
     "tensor 'm': BOOL data holds bytes other than 0 and 1"),
]


@pytest.mark.parametrize("case, data, pattern", CORRUPT, ids=[c[0] for c in CORRUPT])
def test_corrupt_files_are_refused_with_a_clear_error(tmp_path, case, data, pattern):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match=pattern) as info:
        load(path)
    assert isinstance(info.value, ValueError) and str(path) in str(info.value)


def test_the_hand_written_valid_file_loads(tmp_path):
    """The corruption cases start from this file, so each one breaks exactly one thing."""
    path = tmp_path / "ok.safetensors"
    path.write_bytes(_hand_file(_valid_header(), bytes(range(12))))
    out = load(path)
    assert _bits(_np(out["b"])) == bytes([8, 9, 10, 11]) and out["a"].shape == (2,)
    path.write_bytes(_hand_file(_structure(_GOOD_ROOT), _BUF))
    assert list(load(path)) == ["a", "b"]
    assert set(safetensors_numpy.load_file(path)) == {"a", "b"}


def test_every_truncation_of_a_real_checkpoint_is_refused(tmp_path):
    save(_optimizer_like(), tmp_path / "full.safetensors")
    data = (tmp_path / "full.safetensors").read_bytes()
    path = tmp_path / "cut.safetensors"
    for cut in sorted({0, 1, 7, 8, 9, 100, len(data) // 2, len(data) - 9, len(data) - 1}):
        path.write_bytes(data[:cut])
        with pytest.raises(CheckpointError):
            load(path)


# ---------------------------------------------------------------------------------------- atomicity
class _Crash(Exception):
    pass


@pytest.mark.parametrize("exc", [_Crash, KeyboardInterrupt])
def test_a_crash_mid_save_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch, exc):
    path = tmp_path / "ckpt.safetensors"
    save({"old": ag.ones(3)}, path)
    before = path.read_bytes()
    real, calls = ser._host_bytes, []

    def failing(entry):
        calls.append(entry.name)
        if len(calls) == 2:  # the header and the first tensor are already written
            raise exc("simulated crash")
        return real(entry)

    monkeypatch.setattr(ser, "_host_bytes", failing)
    with pytest.raises(exc):
        save({"a": ag.randn(1000), "b": ag.randn(1000), "c": ag.randn(10)}, path)
    assert len(calls) == 2
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.safetensors"]
    assert _np(load(path)["old"]).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(exc):  # and when there was no old file, there is no file at all
        calls.clear()
        save({"a": ag.randn(1000), "b": ag.randn(1000)}, tmp_path / "new.safetensors")
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


_STALLED_WRITER = """
import sys, time
import autograd as ag
import nn.serialization as ser

real, calls = ser._host_bytes, []

def stalled(entry):  # the header and the first (1 MB) tensor are written, then the save hangs until killed
    calls.append(entry)
    if len(calls) == 2:
        print("writing", flush=True)
        time.sleep(300)
    return real(entry)

ser._host_bytes = stalled
ser.save({"a": ag.ones(250_000), "b": ag.ones(250_000)}, sys.argv[1])
"""


@pytest.mark.timeout(240)
def test_a_killed_save_leaves_a_temporary_that_the_next_save_removes(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    save({"old": ag.ones(3)}, path)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    child = subprocess.Popen([sys.executable, "-c", _STALLED_WRITER, str(path)], stdout=subprocess.PIPE,
                             env=env, text=True)
    try:
        assert child.stdout.readline() == "writing\n"
        (tmp,) = set(os.listdir(tmp_path)) - {"ckpt.safetensors"}
        assert tmp.startswith(f".ckpt.safetensors.{child.pid}.") and tmp.endswith(".tmp")
        assert os.path.getsize(tmp_path / tmp) > 1_000_000
        save({"new": ag.arange(4.0)}, path)  # a save beside a live writer leaves the writer's temporary alone
        assert sorted(os.listdir(tmp_path)) == sorted(["ckpt.safetensors", tmp])
        assert _np(load(path)["new"]).tolist() == [0.0, 1.0, 2.0, 3.0]
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    assert (tmp_path / tmp).exists()  # the killed writer's temporary stays behind (was: forever)...
    save({"new": ag.arange(5.0)}, path)  # ...until the next save to that target removes it
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]
    assert _np(load(path)["new"]).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


@pytest.mark.skipif(os.name != "posix", reason="stale temporaries are found by pid and flock (POSIX)")
def test_only_our_dead_writers_temporaries_of_that_target_are_removed(tmp_path):
    import fcntl

    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    dead = done.pid  # a pid that no process has now (reused within the test: the file is kept, still safe)
    path = tmp_path / "ckpt.safetensors"
    stale = [f".ckpt.safetensors.{dead}.0123456789ab.tmp", f".ckpt.safetensors.{dead}.ba9876543210.tmp"]
    kept = [f".other.safetensors.{dead}.0123456789ab.tmp",  # another target's
            f".ckpt.safetensors.{dead}.xyz.tmp", f"ckpt.safetensors.{dead}.0123456789ab.tmp",  # not our pattern
            ".ckpt.safetensors.0123456789ab.tmp",  # no pid: the old naming, whose writer cannot be told
            f".ckpt.safetensors.{os.getpid()}.0123456789ab.tmp",  # ours: another thread may be writing it
            ".ckpt.safetensors.9999999999.0123456789ab.tmp",  # not a pid (os.kill: OverflowError): kept
            f".ckpt.safetensors.{dead}.00000000000a.tmp"]  # flocked: a live writer in another pid namespace
    for name in stale + kept:
        (tmp_path / name).write_bytes(b"partial")
    outside = tmp_path / "sub"
    outside.mkdir()
    (outside / "precious").write_bytes(b"keep")
    link = f".ckpt.safetensors.{dead}.0000000000ff.tmp"  # a symlink is never followed nor removed
    (tmp_path / link).symlink_to(outside / "precious")
    with open(tmp_path / kept[-1], "rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        save({"a": ag.ones(2)}, path)
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt.safetensors", "sub", link, *kept])
    assert (outside / "precious").read_bytes() == b"keep"
    assert _np(load(path)["a"]).tolist() == [1.0, 1.0]
    save({"a": ag.ones(2)}, path)  # the lock is gone: that file is now a dead writer's
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt.safetensors", "sub", link, *kept[:-1]])


def test_overwrite_keeps_the_file_mode_and_follows_symlinks(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    save({"a": ag.ones(1)}, path)
    os.chmod(path, 0o600)
    link = tmp_path / "latest.safetensors"
    link.symlink_to(path)
    save({"a": ag.zeros(1)}, link)
    assert link.is_symlink() and (os.stat(path).st_mode & 0o777) == 0o600
    assert _np(load(path)["a"]).tolist() == [0.0]
    assert sorted(os.listdir(tmp_path)) == ["ckpt.safetensors", "latest.safetensors"]


def test_saving_into_a_missing_directory_fails_cleanly(tmp_path):
    with pytest.raises(FileNotFoundError):
        save({"a": ag.ones(1)}, tmp_path / "nope" / "x.safetensors")


# --------------------------------------------------------------------------------------- no pickle
def test_the_module_never_uses_pickle():
    """serialization.py imports no pickle (whole objects go through nn/_pickled.py, its restricted unpickler)
    and runs no eval/exec."""
    source = open(ser.__file__, encoding="utf-8").read()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & {"pickle", "cPickle", "dill", "cloudpickle", "marshal", "shelve", "joblib"}
    assert "eval(" not in source and "exec(" not in source


def test_loading_a_plain_checkpoint_never_unpickles(tmp_path, monkeypatch):
    import nn._pickled as pk

    save({"a": ag.ones(2), "n": [1, "x"]}, tmp_path / "p.safetensors")

    def refuse(*a, **k):
        raise AssertionError("unpickled a plain checkpoint")

    monkeypatch.setattr(pk, "loads", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    assert load(tmp_path / "p.safetensors")["n"] == [1, "x"]


class _Payload:
    def __reduce__(self):
        return (exec, ("import builtins; builtins._nn_pwned = True",))


def test_a_pickle_payload_in_a_file_executes_nothing(tmp_path):
    payload = pickle.dumps(_Payload()).decode("latin-1")
    assert not hasattr(builtins, "_nn_pwned")
    cases = [  # as our structure, as foreign metadata, as a tensor's bytes
        (_hand_file({"__metadata__": {"nn.structure": payload}, **_valid_header()}, _BUF), CheckpointError),
        (_hand_file({"__metadata__": {"pickle": payload, "format": "pt"}, **_valid_header()}, _BUF), None),
        (_hand_file({"p": _entry("U8", (len(payload),), (0, len(payload)))}, payload.encode("latin-1")), None),
    ]
    for data, exc in cases:
        path = tmp_path / "evil.safetensors"
        path.write_bytes(data)
        if exc is None:
            out = load(path)
            assert all(isinstance(v, ag.Tensor) for v in out.values())
        else:
            with pytest.raises(exc):
                load(path)
    assert not hasattr(builtins, "_nn_pwned")


def test_load_gives_back_numpy_arrays_and_tkernels_arrays(tmp_path):
    """torch.load returns what was saved: a NumPy array stays a NumPy array (issue 15), an Array an Array."""
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    obj = {"np": a, "arr": tk.asarray([1.5, 2.5]), "t": ag.tensor([1.0]), "nested": [a[0]]}
    nn.save(obj, tmp_path / "m.safetensors")
    back = nn.load(tmp_path / "m.safetensors")
    assert isinstance(back["np"], np.ndarray) and back["np"].dtype == np.int32
    np.testing.assert_array_equal(back["np"], a)
    assert isinstance(back["nested"][0], np.ndarray)
    assert isinstance(back["arr"], tk.Array) and not isinstance(back["arr"], ag.Tensor)
    np.testing.assert_array_equal(back["arr"].numpy(), [1.5, 2.5])
    assert isinstance(back["t"], ag.Tensor)
    back["np"][0, 0] = 99  # its own memory
    assert nn.load(tmp_path / "m.safetensors")["np"][0, 0] == 0


def test_complex_tensors_round_trip_and_read_by_the_reference(tmp_path):
    """complex64 is safetensors' C64; complex128 (no tag in the format) is an F64 (..., 2) pair named in
    __metadata__["nn.complex128"]."""
    rng = np.random.default_rng(0)
    c64 = (rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))).astype(np.complex64)
    c128 = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    path = tmp_path / "c.safetensors"
    save({"a": ag.tensor(c64)[:, ::2], "b": ag.tensor(c128), "r": ag.ones(2)}, path)
    out = load(path)
    assert out["a"].dtype is tk.complex64 and out["b"].dtype is tk.complex128
    np.testing.assert_array_equal(_np(out["a"]), c64[:, ::2])
    np.testing.assert_array_equal(_np(out["b"]), c128)
    ref = safetensors_numpy.load_file(str(path))
    assert ref["a"].dtype == np.complex64 and ref["b"].dtype == np.float64 and ref["b"].shape == (2, 3, 2)
    np.testing.assert_array_equal(ref["b"][..., 0] + 1j * ref["b"][..., 1], c128)
    safetensors_numpy.save_file({"z": c64}, str(path))  # the reference's C64 file loads as complex64
    np.testing.assert_array_equal(_np(load(path)["z"]), c64)


def test_complex128_metadata_is_validated(tmp_path):
    path = tmp_path / "bad.safetensors"
    header = {"__metadata__": {"nn.complex128": '["x"]'},
              "x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    path.write_bytes(_raw(json.dumps(header).encode(), b"\0" * 8))
    with pytest.raises(CheckpointError, match="nn.complex128.*names 'x', which is not an F64"):
        load(path)
