"""bench train: the timed pairs compute the same thing (same losses from the same weights), and the example
models' steps run."""

import numpy as np

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
