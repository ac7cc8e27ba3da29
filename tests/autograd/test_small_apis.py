"""The small APIs real scripts touch (issue 15): size= keywords, indexing with range, is_xpu/is_mps...,
autograd.backends flags."""

import numpy as np
import pytest

import autograd as ag


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_keyword(name):
    f = getattr(ag, name)
    assert f(size=(2, 3)).shape == (2, 3) == f(2, 3).shape == f((2, 3)).shape == f(size=[2, 3]).shape
    with pytest.raises(TypeError, match=f"{name}\\(\\): got the size both"):
        f(2, size=(2,))


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_indexing_with_range(dev):
    x = ag.arange(24.0, device=dev).reshape(4, 6)
    ref = np.arange(24.0).reshape(4, 6)
    np.testing.assert_array_equal(x[range(1, 4, 2)].cpu().numpy(), ref[[1, 3]])
    np.testing.assert_array_equal(x[:, range(5, 0, -2)].cpu().numpy(), ref[:, [5, 3, 1]])
    assert x[range(0)].shape == (0, 6)
    x[range(2), 0] = -1.0
    assert x[:2, 0].cpu().numpy().tolist() == [-1.0, -1.0]
    with pytest.raises(IndexError, match="out of"):
        x[range(3, 6)].cpu().numpy()


def test_other_backend_flags():
    x = ag.ones(2)
    assert not (x.is_xpu or x.is_mps or x.is_meta or x.is_quantized or x.is_mkldnn)
    ag.backends.cudnn.benchmark = True
    ag.backends.cudnn.deterministic = True
    ag.backends.cuda.matmul.allow_tf32 = True  # (our matmul kernels' TF32 switch)
    assert ag.get_float32_matmul_precision() == "high"
    ag.backends.cuda.matmul.allow_tf32 = False
    assert ag.backends.cudnn.is_available() is False and ag.backends.mps.is_available() is False
    ag.backends.cuda.enable_flash_sdp(False)
    assert ag.backends.cuda.flash_sdp_enabled() is False
    ag.backends.cuda.enable_flash_sdp(True)
    import autograd.backends.cudnn as cudnn  # the module path scripts import

    assert cudnn.benchmark is True
    ag.backends.cudnn.benchmark = ag.backends.cudnn.deterministic = False
