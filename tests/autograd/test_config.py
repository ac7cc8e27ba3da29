"""Process-wide switches with PyTorch's names (autograd/config.py) and the cuda random-state functions."""

import numpy as np
import pytest

import autograd as ag
import tkernels as tk
import tkernels.backends.matmul as matmul_flags


def test_num_threads_round_trip_and_reach_the_cpu_backend(monkeypatch):
    from tkernels.backends.numpy import _threads

    before = ag.get_num_threads()
    monkeypatch.setattr(_threads, "_set_by_call", [None])  # (undone after the test: the environment rules again)
    try:
        ag.set_num_threads(1)
        assert ag.get_num_threads() == 1 == _threads.num_threads() == tk.get_num_threads()
        if _threads._BLAS is not None:
            assert _threads._BLAS[0]() == 1
        with pytest.raises(ValueError):
            ag.set_num_threads(0)
    finally:
        ag.set_num_threads(before)
    assert ag.get_num_interop_threads() >= 1


def test_float32_matmul_precision_is_the_tf32_switch():
    try:
        ag.set_float32_matmul_precision("high")
        assert matmul_flags.allow_tf32 and ag.get_float32_matmul_precision() == "high"
        assert ag.backends.cuda.matmul.allow_tf32
        ag.backends.cuda.matmul.allow_tf32 = False
        assert not matmul_flags.allow_tf32 and ag.get_float32_matmul_precision() == "highest"
        with pytest.raises(ValueError):
            ag.set_float32_matmul_precision("low")
    finally:
        matmul_flags.allow_tf32 = False


def test_deterministic_switch_and_memory_formats():
    try:
        ag.use_deterministic_algorithms(True, warn_only=True)
        assert ag.are_deterministic_algorithms_enabled() and ag.is_deterministic_algorithms_warn_only_enabled()
    finally:
        ag.use_deterministic_algorithms(False)
    x = ag.ones(1, 2, 3, 3)
    for fmt in (ag.contiguous_format, ag.channels_last, ag.preserve_format):
        assert tuple(x.contiguous(memory_format=fmt).shape) == (1, 2, 3, 3)
        assert tuple(x.to(memory_format=fmt).shape) == (1, 2, 3, 3)
    assert repr(ag.channels_last) == "autograd.channels_last"


def test_set_printoptions_as_pytorch_prints():
    t = ag.tensor([1.23456, 2.5])
    try:
        ag.set_printoptions(precision=2)
        assert repr(t) == "tensor([1.23, 2.50])"
        ag.set_printoptions(sci_mode=True)
        assert repr(t) == "tensor([1.23e+00, 2.50e+00])"
        ag.set_printoptions(profile="default", sci_mode=None)
        assert repr(t) == "tensor([1.2346, 2.5000])"
        ag.set_printoptions(threshold=5)
        assert repr(ag.arange(10.0)) == "tensor([0., 1., 2.,  ..., 7., 8., 9.])"
    finally:
        ag.set_printoptions(profile="default", sci_mode=None)
    assert repr(ag.arange(10.0)) == "tensor([0., 1., 2., 3., 4., 5., 6., 7., 8., 9.])"


def test_cuda_seeding_reseeds_only_the_cuda_stream():
    ag.manual_seed(0)
    a = ag.rand(4).numpy()
    ag.cuda.manual_seed_all(123)  # (the cpu stream goes on where it was)
    b = ag.rand(4).numpy()
    ag.manual_seed(0)
    np.testing.assert_array_equal(ag.rand(4).numpy(), a)
    np.testing.assert_array_equal(ag.rand(4).numpy(), b)
    ag.cuda.manual_seed(7)
    assert ag.cuda.initial_seed() == 7 and ag.initial_seed() == 0
    st = ag.cuda.get_rng_state()
    g = tk.random.default_generator
    g.philox_next(10)
    ag.cuda.set_rng_state(st)
    assert g.philox_next(4) == (7, 0)
    ag.cuda.set_rng_state_all(ag.cuda.get_rng_state_all())
    with pytest.raises(ValueError):
        ag.cuda.set_rng_state({"nope": 1})
    ag.cuda.seed_all()
    assert isinstance(ag.cuda.initial_seed(), int)
    assert ag.cuda.is_bf16_supported() == ag.cuda.is_available()  # (emulated before sm_80, as PyTorch counts)
    ag.manual_seed(0)
    assert ag.cuda.initial_seed() == 0  # manual_seed seeds every stream
