"""ag.multinomial on the input's device: frequencies match the weights, without replacement draws distinct
indices (never a zero weight), reproducible under manual_seed, bad inputs refused."""

import numpy as np
import pytest

import autograd as ag

DEVICES = ["cpu"] + (["cuda"] if ag.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_with_replacement_frequencies(device):
    p = ag.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 1.0, 1.0]], device=device)
    ag.manual_seed(0)
    s = ag.multinomial(p, 4000, replacement=True)
    assert s.dtype == ag.int64 and tuple(s.shape) == (2, 4000) and s.device == p.device
    s = s.cpu().numpy()
    np.testing.assert_allclose(np.bincount(s[0], minlength=4) / 4000, [0.1, 0.0, 0.6, 0.3], atol=0.03)
    np.testing.assert_allclose(np.bincount(s[1], minlength=4) / 4000, [0.25] * 4, atol=0.03)
    ag.manual_seed(0)
    np.testing.assert_array_equal(ag.multinomial(p, 4000, replacement=True).cpu().numpy(), s)


@pytest.mark.parametrize("device", DEVICES)
def test_without_replacement(device):
    p = ag.tensor([0.5, 0.0, 0.2, 0.3, 1e-3], device=device)
    for _ in range(5):
        s = ag.multinomial(p, 4).cpu().numpy()
        assert s.shape == (4,) and len(set(s.tolist())) == 4 and 1 not in s
    if device == "cpu":  # the first draw follows the weights (300 calls: cpu only, the interpreter is slow)
        first = np.bincount([int(ag.multinomial(p, 1)[0]) for _ in range(300)], minlength=5) / 300
        np.testing.assert_allclose(first, [0.5, 0.0, 0.2, 0.3, 0.0], atol=0.08)


def test_bad_inputs():
    with pytest.raises(RuntimeError, match="invalid probability"):
        ag.multinomial(ag.tensor([0.5, -0.1]), 1)
    with pytest.raises(RuntimeError, match="invalid probability"):
        ag.multinomial(ag.tensor([0.0, 0.0]), 1)
    with pytest.raises(RuntimeError, match="without replacement"):
        ag.multinomial(ag.tensor([0.5, 0.0, 0.5]), 3)
    with pytest.raises(RuntimeError, match="1 or 2 dim"):
        ag.multinomial(ag.ones(2, 2, 2), 1)


@pytest.mark.skipif("cuda" not in DEVICES, reason="no (interpreted) cuda")
def test_cuda_checks_on_the_device_and_reports_at_the_next_sync():
    """No host read per draw: a bad distribution is recorded by a kernel and raised at the next synchronising
    call; the draw has the right shape and in-range indices meanwhile, and the process goes on."""
    bad = ag.tensor([[0.5, 0.5], [0.2, -0.1]], device="cuda")
    s = ag.multinomial(bad, 3, replacement=True)
    assert tuple(s.shape) == (2, 3)
    with pytest.raises(RuntimeError, match="invalid probability distribution: row 1"):
        s.tolist()
    s = ag.multinomial(ag.tensor([0.5, 0.0, 0.5], device="cuda"), 3)
    with pytest.raises(RuntimeError, match="without replacement: row 0"):
        s.cpu()
    ok = ag.multinomial(ag.tensor([0.0, 1.0], device="cuda"), 2, replacement=True).tolist()
    assert ok == [1, 1]
