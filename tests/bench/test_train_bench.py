"""bench train: the timed pairs compute the same thing (same losses from the same weights), and the example
models' steps run."""

import numpy as np
import pytest

from bench import train


def test_nn_mlp_matches_numpy_by_hand():
    a, b = train.NumpyMLP(), train.NnMLP()
    la = [a.step() for _ in range(3)]
    lb = [b.step() for _ in range(3)]
    np.testing.assert_allclose(lb, la, rtol=1e-4)
    assert la[2] < la[0]


def test_captured_nn_mlp_matches_the_eager_one_bit_for_bit():
    a, b = train.NnMLP(), train.NnGraphMLP()
    la = [a.step() for _ in range(4)]
    lb = [b.step() for _ in range(4)]
    assert la == lb and b.graph.num_calls > 0
    sizes = (20, 16, 16, 5)
    params = train._deep_params(sizes, 8)
    c, d = train.NnMLP(sizes, 8, params), train.NnGraphMLP(sizes, 8, params)
    assert [c.step() for _ in range(3)] == [d.step() for _ in range(3)]


def test_deep_pair_matches():
    sizes = (20, 16, 16, 5)
    params = train._deep_params(sizes, 8)
    a, b = train.NumpyDeepMLP(params), train.NnMLP(sizes, 8, params)
    np.testing.assert_allclose([b.step() for _ in range(3)], [a.step() for _ in range(3)], rtol=1e-4)


def test_example_steps_run():
    for make in (lambda: train._digits_step("mlp", "cpu", batch=8), lambda: train._gpt_step("cpu", "tiny")):
        step, per = make()
        l0 = float(step())
        for _ in range(3):
            l1 = float(step())
        assert per > 0 and np.isfinite(l1) and l1 < l0


def test_torch_port_of_the_examples_rewrites_exactly_their_imports():
    import os
    import re

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for name in ("train_digits", "char_gpt"):
        with open(os.path.join(root, "examples", name + ".py")) as f:
            src = f.read()
        port = train.torch_source(src, name)
        assert "import torch as ag" in port and "import torch.nn as nn" in port
        assert "from torch.nn import functional as F" in port
        assert not re.search(r"^(import (autograd|nn)\b|from nn )", port, re.M)  # nothing of ours is left
        assert len(port.splitlines()) == len(src.splitlines())
        with pytest.raises(ValueError, match=f"examples/{name}.py has 0 copies"):
            train.torch_source(src.replace("import nn  # noqa: E402", "import nn"), name)


def test_torch_twins_start_from_our_weights():
    torch = pytest.importorskip("torch")  # optional peer: skipped when PyTorch is absent
    cases = [(lambda: train._digits_step("mlp", "cpu", batch=8), lambda s: train._torch_digits(torch, s, "mlp")),
             (lambda: train._digits_step("cnn", "cpu", batch=8), lambda s: train._torch_digits(torch, s, "cnn")),
             (lambda: train._gpt_step("cpu", "tiny"), lambda s: train._torch_gpt(torch, s, "tiny"))]
    for make, twin in cases:
        step, _ = make()
        tw = twin(step)
        np.testing.assert_allclose(float(tw()), float(step()), rtol=1e-4)


def test_resnet_block_row_runs():
    step, per = train._resnet_step("cpu", (2, 4, 5, 5))
    losses = [float(step()) for _ in range(4)]
    assert per == 2 and np.all(np.isfinite(losses)) and losses[-1] < losses[0]


def test_resnet_block_torch_twin_agrees():
    torch = pytest.importorskip("torch")  # optional peer: skipped when PyTorch is absent
    step, _ = train._resnet_step("cpu", (2, 4, 5, 5))
    tw = train._torch_resnet(torch, step)
    for _ in range(3):
        np.testing.assert_allclose(float(tw()), float(step()), rtol=1e-4)


def test_breakdown_times_the_backends_inside_the_step_and_puts_them_back():
    from bench.timing import CPUTimer

    warm = train.NnMLP()
    warm.step()  # every op of the step is in the device's table now
    probe_dev = warm.x._data._device
    before = dict(probe_dev._impls)
    t = train.breakdown_table(CPUTimer(min_time=0.002, repeat=2, warmup=1), steps=10)
    assert dict(probe_dev._impls) == before  # every wrapper and no-op is gone again
    rows = {r["part"].strip(): r for r in t.rows}
    ops = [r for r in t.rows if r["part"].startswith("  ")]
    whole = rows["nn eager: whole step"]["us"]
    inside = rows["nn eager: inside the backends' calls (timed in the step)"]
    assert 0 < inside["us"] < inside["probed_s"] * 1e6  # the calls' time is part of the probed step's
    assert inside["probed_s"] * 1e6 < whole * 3  # a probed step is a little slower than an unprobed one, never 3x
    assert rows["linear"]["calls"] == 2 and rows["linear_backward"]["calls"] == 2  # two Linear layers
    assert rows["adam_step"]["calls"] == 1 and rows["cross_entropy"]["calls"] == 1
    assert {r["part"].strip() for r in ops} <= set(before)
    assert sum(r["us"] for r in ops) == pytest.approx(inside["us"])
    bare = rows["nn eager, every backend call but empty a no-op: the Python above the backends"]
    assert 0 < bare["us"] < whole
    # the model still trains after the probes: the losses keep falling from where they were
    m = train.NnMLP()
    losses = [m.step() for _ in range(3)]
    assert losses[2] < losses[0]
