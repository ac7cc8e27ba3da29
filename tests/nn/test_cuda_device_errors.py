"""Errors found by cuda kernels at the autograd and nn level (tkernels/cuda/device_errors.py): an out-of-range
embedding index or class target on (interpreted) cuda raises the cpu backend's IndexError at ``.item()`` or at the
end of ``backward``; a training step after it works; cpu raises at the op."""

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812

pytestmark = pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")


def test_embedding_index_raises_at_item_on_cuda_and_at_the_op_on_cpu():
    with pytest.raises(IndexError, match="embedding: index 5"):
        F.embedding(ag.tensor([0, 5]), ag.ones(4, 3))
    out = F.embedding(ag.tensor([0, 5], device="cuda"), ag.ones(4, 3, device="cuda"))  # no raise: recorded
    with pytest.raises(IndexError, match=r"embedding: index 5 is out of bounds for a table of 4 rows .*cuda:0"):
        out.sum().item()
    np.testing.assert_array_equal(out.cpu().numpy(), [[1, 1, 1], [0, 0, 0]])  # the bad row is zeros


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
def test_class_target_raises_at_the_end_of_backward(loss):
    z = ag.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), device="cuda", requires_grad=True)
    t = ag.tensor([0, 3], device="cuda")
    with pytest.raises(IndexError, match=f"{loss}: target 3 is out of bounds for 3 classes"):
        getattr(F, loss)(z, t).backward()  # backward ends without a sync, and looks
    with pytest.raises(IndexError, match=f"{loss}: target 3"):
        getattr(F, loss)(z.detach().cpu(), t.cpu())


def test_training_goes_on_after_a_reported_error():
    ag.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 4)).to("cuda")
    opt = nn.optim.SGD(model.parameters(), lr=0.1)
    x_bad = ag.tensor([[1, 2, 12]], device="cuda")
    y = ag.tensor([[0, 1, 2]], device="cuda")
    loss = F.cross_entropy(model(x_bad).reshape(-1, 4), y.reshape(-1))
    with pytest.raises(IndexError, match="embedding: index 12"):
        loss.backward()
    opt.zero_grad()
    x = ag.tensor([[1, 2, 9]], device="cuda")
    losses = []
    for _ in range(3):
        loss = F.cross_entropy(model(x).reshape(-1, 4), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[2] < losses[0] and all(np.isfinite(losses))


def test_valid_indices_never_raise():
    w = ag.ones(4, 3, device="cuda", requires_grad=True)
    F.embedding(ag.tensor([[0, 3], [2, 2]], device="cuda"), w, padding_idx=2).sum().backward()
    np.testing.assert_array_equal(w.grad.cpu().numpy()[:, 0], [1, 0, 0, 1])
    z = ag.zeros(3, 5, device="cuda", requires_grad=True)
    F.cross_entropy(z, ag.tensor([4, -100, 0], device="cuda")).backward()
    assert np.isfinite(z.grad.cpu().numpy()).all()
    ag.cuda.synchronize()
