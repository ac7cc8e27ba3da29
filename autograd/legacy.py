"""PyTorch's legacy typed tensor classes: ``FloatTensor``, ``LongTensor``... ``ag.FloatTensor(2, 3)`` is a
zero-filled float32 tensor of that shape, ``ag.LongTensor([1, 2])`` an int64 copy of the data, and
``isinstance(t, ag.FloatTensor)`` is true for float32 tensors on the cpu, as in PyTorch (cuda tensors are
``torch.cuda.FloatTensor`` there, which this package does not define)."""

from __future__ import annotations

from tkernels import dtypes as _dt

from .tensor import Tensor, _legacy_data

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
           "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"]


class _LegacyType(type):
    def __call__(cls, *args, device=None, requires_grad: bool = False):
        t = Tensor._wrap(_legacy_data(args, device, cls.__name__, cls.dtype))
        if requires_grad:
            t.requires_grad = True
        return t

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device.type == "cpu"


def _legacy(name, dtype):
    return _LegacyType(name, (), {"dtype": dtype, "__doc__": f"``{name}(*sizes)`` / ``{name}(data)``: {dtype}.",
                                  "__module__": __name__})


FloatTensor = _legacy("FloatTensor", _dt.float32)
DoubleTensor = _legacy("DoubleTensor", _dt.float64)
HalfTensor = _legacy("HalfTensor", _dt.float16)
BFloat16Tensor = _legacy("BFloat16Tensor", _dt.bfloat16)
ByteTensor = _legacy("ByteTensor", _dt.uint8)
CharTensor = _legacy("CharTensor", _dt.int8)
ShortTensor = _legacy("ShortTensor", _dt.int16)
IntTensor = _legacy("IntTensor", _dt.int32)
LongTensor = _legacy("LongTensor", _dt.int64)
BoolTensor = _legacy("BoolTensor", _dt.bool)
