"""PyTorch's legacy constructors: ``Tensor(*sizes)``, ``Tensor(data)`` as the default float dtype, and the typed
classes (``FloatTensor``, ``LongTensor``...) with their ``isinstance`` meaning."""

import numpy as np
import pytest

import autograd as ag
import nn


def test_tensor_legacy_constructor():
    t = ag.Tensor(3, 4)
    assert t.shape == (3, 4) and t.dtype == ag.float32 and not t.requires_grad
    assert ag.Tensor().shape == (0,) and ag.Tensor().dtype == ag.float32
    assert ag.Tensor(ag.Size([2, 5])).shape == (2, 5)
    d = ag.Tensor([1, 2, 3])
    assert d.dtype == ag.float32
    np.testing.assert_array_equal(d.numpy(), [1.0, 2.0, 3.0])
    assert ag.Tensor(np.arange(4, dtype=np.int32)).dtype == ag.float32
    ag.set_default_dtype(ag.float64)
    try:
        assert ag.Tensor([0.1]).dtype == ag.float64 and ag.Tensor([0.1]).item() == 0.1
    finally:
        ag.set_default_dtype(ag.float32)
    x = ag.ones(2, dtype=ag.int64)
    assert ag.Tensor(x)._data is x._data  # a Tensor is wrapped, sharing memory
    assert ag.Tensor(2, 3, device="cuda").device.type == "cuda"
    assert nn.Parameter(ag.randn(2)).requires_grad
    with pytest.raises(RuntimeError, match="negative dimension"):
        ag.Tensor(2, -1)
    with pytest.raises(TypeError, match="Tensor\\(\\): expected sizes"):
        ag.Tensor([1], [2])
    with pytest.raises(TypeError, match="data must be a sequence"):
        ag.Tensor("ab")


@pytest.mark.parametrize("cls,dtype", [(ag.FloatTensor, ag.float32), (ag.DoubleTensor, ag.float64),
                                       (ag.HalfTensor, ag.float16), (ag.BFloat16Tensor, ag.bfloat16),
                                       (ag.ByteTensor, ag.uint8), (ag.CharTensor, ag.int8),
                                       (ag.ShortTensor, ag.int16), (ag.IntTensor, ag.int32),
                                       (ag.LongTensor, ag.int64), (ag.BoolTensor, ag.bool)])
def test_typed_classes(cls, dtype):
    t = cls(2, 3)
    assert t.shape == (2, 3) and t.dtype == dtype and isinstance(t, ag.Tensor)
    np.testing.assert_array_equal(t.numpy().astype(np.float64), np.zeros((2, 3)))
    d = cls([1, 0, 1])
    assert d.dtype == dtype
    np.testing.assert_array_equal(d.numpy().astype(np.float64), [1, 0, 1])
    assert isinstance(d, cls)
    assert isinstance(cls(2, device="cuda"), cls) is False  # PyTorch: a cuda tensor is torch.cuda.<Type>
    other = ag.LongTensor if cls is not ag.LongTensor else ag.FloatTensor
    assert not isinstance(d, other)
    assert cls(ag.tensor([1.7, 0.0])).dtype == dtype  # converted


def test_float_tensor_requires_grad():
    w = ag.FloatTensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0])
