"""Dropout1d/2d/3d (channel dropout): whole channels zeroed, kept ones scaled by 1/(1-p), gradients through
the same mask, eval mode and p=0 the identity, unbatched inputs, PyTorch's errors and warnings; cpu and
interpreted cuda."""

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812

DEVICES = ["cpu", "cuda"]
CASES = [(nn.Dropout1d, (6, 40, 3)), (nn.Dropout1d, (40, 3)), (nn.Dropout2d, (5, 30, 2, 3)),
         (nn.Dropout2d, (4, 30, 3)), (nn.Dropout3d, (3, 30, 2, 2, 2)), (nn.Dropout3d, (30, 2, 1, 3))]


@pytest.mark.filterwarnings("ignore:dropout2d. Received a 3D input")  # the eval-mode call warns too
@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("cls,shape", CASES)
def test_whole_channels_dropped_and_scaled(dev, cls, shape):
    ag.manual_seed(3)
    p = 0.4
    x = ag.tensor(np.random.default_rng(0).uniform(1, 2, shape), dtype=ag.float64, device=dev, requires_grad=True)
    m = cls(p)
    if cls is nn.Dropout2d and len(shape) == 3:
        with pytest.warns(UserWarning, match="dropout2d: Received a 3D input"):
            y = m(x)
    else:
        y = m(x)
    (y * 2).sum().backward()
    xv, yv, gv = x.detach().cpu().numpy(), y.detach().cpu().numpy(), x.grad.cpu().numpy()
    batched = len(shape) == {nn.Dropout1d: 3, nn.Dropout2d: 4, nn.Dropout3d: 5}[cls] or (
        cls is nn.Dropout2d and len(shape) == 3)
    lead = 2 if batched else 1
    ratio = (yv / xv).reshape(int(np.prod(shape[:lead])), -1)
    for row in ratio:  # each channel: all zero or all 1/(1-p)
        assert np.allclose(row, 0.0) or np.allclose(row, 1 / (1 - p))
    kept = np.mean([np.allclose(r, 1 / (1 - p)) for r in ratio])
    assert 0.3 < kept < 0.9  # 1 - p = 0.6 of ~30-240 channels
    np.testing.assert_allclose(gv, 2 * yv / xv, rtol=1e-12)  # the gradient goes through the same mask
    m.eval()
    np.testing.assert_array_equal(m(x).detach().cpu().numpy(), xv)


@pytest.mark.parametrize("dev", DEVICES)
def test_p_zero_one_inplace_and_empty(dev):
    x = ag.ones(2, 3, 4, 5, device=dev)
    assert F.dropout2d(x, 0.0) is x
    np.testing.assert_array_equal(F.dropout2d(x, 1.0).cpu().numpy(), np.zeros((2, 3, 4, 5), np.float32))
    y = ag.ones(2, 3, 4, 5, device=dev)
    ag.manual_seed(0)
    out = F.dropout2d(y, 0.5, inplace=True)
    np.testing.assert_array_equal(y.cpu().numpy(), out.cpu().numpy())
    assert set(np.unique(y.cpu().numpy())) <= {0.0, 2.0}
    e = ag.ones(0, 3, 4, 5, device=dev)
    assert F.dropout2d(e, 0.5).shape == (0, 3, 4, 5)


def test_errors():
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout2d(1.5)
    with pytest.raises(ValueError, match="dropout2d: dropout probability"):
        F.dropout2d(ag.ones(2, 3, 4, 5), -0.1)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(ag.ones(2, 3, 4, 5))
    with pytest.warns(UserWarning, match="dropout3d: Received a 3D input"):
        F.dropout3d(ag.ones(2, 3, 4), 0.5)
    assert repr(nn.Dropout2d(0.2)) == "Dropout2d(p=0.2, inplace=False)"
