"""The array API inspection namespace, ``tkernels.__array_namespace_info__()`` (2024.12): capabilities, devices,
default dtypes, dtypes by kind, and the argument errors."""

import pytest

import tkernels as tk
import tkernels.cuda as tkc

INFO = tk.__array_namespace_info__()
CUDA = tkc.is_available()
DEVICES = ["cpu"] + (["cuda", "cuda:0"] if CUDA else [])
needs_cuda = pytest.mark.skipif(not CUDA, reason="no cuda device, not even interpreted")

KINDS = {
    "bool": {"bool"},
    "signed integer": {"int8", "int16", "int32", "int64"},
    "unsigned integer": {"uint8", "uint16", "uint32", "uint64"},
    "integral": {"uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64"},
    "real floating": {"float32", "float64"},  # (float16 and bfloat16 are not array API dtypes: not listed)
    "complex floating": {"complex64", "complex128"},
    "numeric": {"uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64",
                "complex64", "complex128"},
}


def test_namespace_function_and_methods():
    assert tk.__array_namespace_info__() is INFO  # stateless: one shared object
    x = tk.asarray([1.0])
    assert x.__array_namespace__().__array_namespace_info__ is tk.__array_namespace_info__
    for name in ("capabilities", "default_device", "default_dtypes", "devices", "dtypes"):
        assert callable(getattr(INFO, name))


def test_capabilities():
    caps = INFO.capabilities()
    assert set(caps) == {"boolean indexing", "data-dependent shapes", "max dimensions"}
    assert caps["boolean indexing"] is True and caps["data-dependent shapes"] is True
    assert caps["max dimensions"] == (6 if CUDA else 64)


@pytest.mark.parametrize("device", DEVICES)
def test_capabilities_are_true_on_every_device(device):
    x = tk.asarray([3.0, -1.0, 3.0, 2.0], device=device)
    assert x[x > 0].tolist() == [3.0, 3.0, 2.0]  # boolean indexing
    assert tk.nonzero(x > 2.5)[0].tolist() == [0, 2]  # data-dependent shapes
    assert tk.unique_values(x).tolist() == [-1.0, 2.0, 3.0]
    n = INFO.capabilities()["max dimensions"]
    a = tk.ones((2,) * 6 + (1,) * (n - 6), device=device)  # no dimension merges with its neighbour once permuted
    assert tk.sum(tk.permute_dims(a, tuple(reversed(range(n)))) + 1).item() == 2 * 2**6


@needs_cuda
def test_cuda_max_dimensions_is_the_strided_kernel_limit():
    a = tk.ones((2,) * 7, device="cuda")
    with pytest.raises(ValueError, match="6 non-mergeable"):
        tk.permute_dims(a, tuple(reversed(range(7)))) + 1


def test_devices_and_default_device():
    devs = INFO.devices()
    assert devs[0] == "cpu"
    assert devs[1:] == ([tk.Device("cuda", i) for i in range(tkc.device_count())] if CUDA else [])
    assert all(isinstance(d, tk.Device) for d in devs)
    assert INFO.default_device() == "cpu"
    if CUDA:
        tk.set_default_device("cuda")
        try:
            assert INFO.default_device() == "cuda:0"
        finally:
            tk.set_default_device("cpu")


@pytest.mark.parametrize("device", [None] + DEVICES)
def test_default_dtypes(device):
    d = INFO.default_dtypes(device=device)
    assert d == {"real floating": tk.float32, "complex floating": tk.complex64, "integral": tk.int64,
                 "indexing": tk.int64}
    assert tk.asarray([1.5]).dtype is d["real floating"] and tk.asarray([1]).dtype is d["integral"]
    assert tk.argmax(tk.asarray([1, 2])).dtype is d["indexing"]


def test_default_dtypes_follow_set_default_dtype():
    tk.set_default_dtype(tk.float64)
    try:
        assert INFO.default_dtypes()["real floating"] is tk.float64
    finally:
        tk.set_default_dtype(tk.float32)


@pytest.mark.parametrize("device", [None] + DEVICES)
def test_dtypes_every_kind(device):
    everything = INFO.dtypes(device=device)
    assert list(everything) == [d.name for d in tk.dtypes.all_dtypes if d.name not in ("float16", "bfloat16")]
    assert all(everything[name] is getattr(tk, name) for name in everything)
    for kind, names in KINDS.items():
        got = INFO.dtypes(device=device, kind=kind)
        assert set(got) == names, kind
        assert all(tk.isdtype(d, kind) for d in got.values())
    assert set(INFO.dtypes(device=device, kind=("bool", "unsigned integer"))) == {"bool", *KINDS["unsigned integer"]}
    assert set(INFO.dtypes(kind=("real floating", "real floating"))) == KINDS["real floating"]
    assert INFO.dtypes(kind=()) == {}


@pytest.mark.parametrize("kind, err", [("foo", ValueError), (("bool", "floating"), ValueError), (3, TypeError),
                                       (["bool"], TypeError), ((1,), ValueError)], ids=repr)
def test_dtypes_bad_kind(kind, err):
    with pytest.raises(err, match=r"__array_namespace_info__\(\).dtypes: .*kind"):
        INFO.dtypes(kind=kind)


@pytest.mark.parametrize("method", ["dtypes", "default_dtypes"])
def test_bad_devices(method):
    fn = getattr(INFO, method)
    with pytest.raises(ValueError, match=rf"__array_namespace_info__\(\).{method}: bad device 'tpu'"):
        fn(device="tpu")
    with pytest.raises(TypeError, match=rf"__array_namespace_info__\(\).{method}: bad device 3.5"):
        fn(device=3.5)
    missing = "cuda:1" if CUDA else "cuda"
    with pytest.raises(ValueError, match=rf"{method}: device {missing} is not available here; devices\(\): cpu"):
        fn(device=missing)
