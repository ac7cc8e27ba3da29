"""autograd.accelerator (torch.accelerator's API) on interpreted cuda, and without an accelerator."""

import numpy as np
import pytest

import autograd as ag
from autograd import accelerator as acc


def test_accelerator_is_cuda():
    assert acc.is_available() is ag.cuda.is_available() is True  # tests run with interpreted cuda
    assert acc.device_count() == ag.cuda.device_count() >= 1
    assert acc.current_accelerator() == ag.device("cuda")
    assert acc.current_accelerator(check_available=True).type == "cuda"
    assert acc.current_device_index() == acc.current_device_idx() == ag.cuda.current_device()
    acc.set_device_index("cuda:0")
    acc.set_device_idx(0)
    with acc.device_index(0):
        assert acc.current_device_index() == 0
    with acc.device_index(None):
        pass


def test_streams_synchronize_and_memory():
    dev = acc.current_accelerator()
    s = acc.current_stream()
    assert s == ag.cuda.current_stream()
    acc.set_stream(s)
    x = ag.ones(1000, device=dev) * 3
    acc.synchronize()
    acc.synchronize(dev)
    assert acc.memory.memory_allocated() == ag.cuda.memory_allocated() >= 4000
    assert acc.memory.max_memory_allocated(0) >= acc.memory.memory_allocated(0)
    assert acc.memory.memory_reserved() >= acc.memory.memory_allocated()
    assert acc.memory.memory_stats()["allocated_bytes.all.current"] == acc.memory.memory_allocated()
    acc.memory.reset_peak_memory_stats()
    assert acc.memory.max_memory_allocated() == acc.memory.memory_allocated()
    acc.memory.reset_accumulated_memory_stats()
    assert acc.memory.memory_stats()["allocated_bytes.all.freed"] == 0
    acc.memory.empty_cache()
    np.testing.assert_array_equal(x.cpu().numpy(), np.full(1000, 3.0, np.float32))


def test_the_usual_script_pattern():
    dev = acc.current_accelerator().type if acc.is_available() else "cpu"
    y = (ag.arange(4.0, device=dev) + 1).sum()
    assert float(y) == 10.0


def test_bad_device_and_no_accelerator(monkeypatch):
    with pytest.raises(ValueError, match="accelerator.synchronize: expected a cuda device"):
        acc.synchronize("cpu")
    monkeypatch.setattr(ag.cuda, "is_available", lambda: False)
    assert acc.is_available() is False and acc.device_count() == 0
    assert acc.current_accelerator(check_available=True) is None
    with pytest.raises(RuntimeError, match="accelerator.current_stream: no accelerator is available"):
        acc.current_stream()
