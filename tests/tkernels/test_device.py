"""Devices: parsing, equality, errors, the default device."""

import pickle

import pytest

import tkernels as tk
from tkernels.device import Device, as_device


def _cuda_available():
    try:
        import tkernels.cuda as tkc

        return tkc.is_available()
    except Exception:  # noqa: BLE001 - no runtime layer: no cuda
        return False


def test_cpu():
    d = Device("cpu")
    assert d.type == "cpu" and d.index is None
    assert str(d) == "cpu"
    assert d == "cpu" and d != "cuda"
    assert Device(" cpu ") == d
    assert Device("cpu:0") == d
    assert repr(d) == "device(type='cpu')"


def test_cuda_with_and_without_index():
    d = Device("cuda")
    assert d.type == "cuda" and d.index is None
    assert str(d) == "cuda"
    d1 = Device("cuda:1")
    assert (d1.type, d1.index, str(d1)) == ("cuda", 1, "cuda:1")
    assert repr(d1) == "device(type='cuda', index=1)"
    assert Device("cuda", 1) == d1
    assert Device(1) == d1  # a bare ordinal means cuda, like PyTorch
    assert d1 == "cuda:1" and d1 != "cuda:0" and d1 != "cpu"
    assert Device("cuda:0") == Device("cuda", 0)


def test_device_objects_pass_through():
    d = Device("cuda:2")
    assert Device(d) is d
    assert Device(d, 2) is d
    with pytest.raises(ValueError, match="conflicting index"):
        Device(d, 3)


def test_equality_and_hash():
    assert Device("cpu") != Device("cuda:0")
    assert Device("cpu") != 0
    assert Device("cpu") != "gpu"  # an unparsable string is simply unequal
    assert hash(Device("cuda:0")) == hash("cuda:0")
    assert {Device("cpu"): 1}["cpu"] == 1
    assert pickle.loads(pickle.dumps(Device("cuda:1"))) == Device("cuda:1")


def test_immutable():
    with pytest.raises(AttributeError):
        Device("cpu").type = "cuda"


# ids avoid the bare word "gpu": pytest turns ids into keywords, and the `gpu` keyword means "needs a GPU"
@pytest.mark.parametrize("spec", ["gpu", "CPU", "cuda:x", "cuda:-1", "cuda:", "cuda:1:2", "", "tpu:0"],
                         ids=lambda s: f"spec={s!r}")
def test_bad_strings(spec):
    with pytest.raises(ValueError, match="Device"):
        Device(spec)


@pytest.mark.parametrize("spec", [3.5, True, [0], b"cpu"])
def test_bad_types(spec):
    with pytest.raises(TypeError, match="Device"):
        Device(spec)


def test_bad_index():
    with pytest.raises(ValueError, match="non-negative"):
        Device("cuda", -1)
    with pytest.raises(ValueError, match="cpu"):
        Device("cpu", 1)
    with pytest.raises(ValueError, match="twice"):
        Device("cuda:0", 1)
    with pytest.raises(ValueError, match="Device"):
        Device("cuda", 1.5)


def test_bool_index_is_refused():
    # True is an int to Python, not a device ordinal (PyTorch refuses it too)
    with pytest.raises((TypeError, ValueError), match="Device"):
        Device("cuda", True)


def test_as_device():
    assert as_device("cpu") == Device("cpu")
    assert as_device(Device("cpu")) is Device("cpu")
    assert as_device(None) == tk.get_default_device()
    assert as_device("cuda:3") == Device("cuda", 3)  # an explicit index needs no runtime
    with pytest.raises(ValueError):
        as_device("gpu")
    with pytest.raises(TypeError):
        as_device(3.5)


@pytest.mark.skipif(_cuda_available(), reason="a cuda device exists here: 'cuda' resolves to it")
def test_as_device_cuda_without_a_device_says_so():
    with pytest.raises(RuntimeError, match="cuda"):
        as_device("cuda")


@pytest.mark.skipif(not _cuda_available(), reason="no cuda device, not even interpreted (TKERNELS_INTERPRET=1)")
def test_as_device_cuda_resolves_the_current_device():
    d = as_device("cuda")
    assert d.type == "cuda" and d.index == 0
    assert tk.zeros(2, device="cuda").device == "cuda:0"


def test_default_device_get_set():
    assert tk.get_default_device() == "cpu"
    prev = tk.get_default_device()
    try:
        tk.set_default_device(Device("cpu"))
        assert tk.get_default_device() is Device("cpu")
        assert tk.zeros(2).device == "cpu"
        tk.set_default_device("cpu")
        assert tk.ones(1).device == Device("cpu")
        with pytest.raises(ValueError):
            tk.set_default_device("gpu")
        assert tk.get_default_device() == "cpu"
    finally:
        tk.set_default_device(prev)
    assert tk.get_default_device() == "cpu"


@pytest.mark.skipif(_cuda_available(), reason="a cuda device exists here")
def test_set_default_device_cuda_without_a_device_fails_and_keeps_cpu():
    with pytest.raises(RuntimeError, match="cuda"):
        tk.set_default_device("cuda")
    assert tk.get_default_device() == "cpu"


def test_arrays_report_their_device():
    x = tk.zeros(3)
    assert x.device == "cpu"
    assert isinstance(x.device, Device)
    assert x.__dlpack_device__() == (1, 0)
