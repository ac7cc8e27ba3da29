"""``ag.Tensor``: autograd attributes, metadata, host conversion, device/dtype conversion, copies, detach and
``.data``, and ``repr`` like PyTorch's (PyTorch's outputs quoted from its documentation and its printing
rules: 4 decimals, fixed width, scientific notation when magnitudes span > 1000x)."""

import numpy as np
import pytest

import autograd as ag


def _cuda_or_skip():
    if not ag.cuda.is_available():
        pytest.skip("no cuda (not even interpreted)")


# ------------------------------------------------------------------------------------- autograd state
def test_leaf_and_non_leaf_attributes():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad_fn is None and x.grad is None
    y = x * 2
    assert y.requires_grad and not y.is_leaf and y.grad_fn.name() == "MulBackward0"
    assert y.grad_fn.next_functions[0][0].variable is x  # AccumulateGrad of x
    c = ag.tensor([1.0, 2.0])
    assert not c.requires_grad and c.is_leaf and (c * 2).is_leaf


def test_requires_grad_flags():
    t = ag.zeros(2)
    assert t.requires_grad_() is t and t.requires_grad
    t.requires_grad = False
    assert not t.requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require"):
        ag.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf variables"):
        (ag.ones(2, requires_grad=True) * 2).requires_grad_(False)


def test_version_counter_int_semantics_and_sharing():
    x = ag.zeros(3)
    assert x._version == 0 and int(x._version) == 0 and repr(x._version) == "0"
    x.add_(1)
    x[0] = 5.0
    assert x._version == 2 and x._version.v == 2 and x._version > 1
    v = x.view(3)
    d = x.detach()
    assert v._version == 2 and d._version == 2
    d.mul_(2)  # detach shares the counter (like PyTorch)
    assert x._version == 3 and v._version == 3
    np.testing.assert_array_equal(x.numpy(), [10.0, 2.0, 2.0])
    data = x.data  # .data does not share it
    data.mul_(2)
    assert x._version == 3 and data._version == 1
    np.testing.assert_array_equal(x.numpy(), [20.0, 4.0, 4.0])


def test_detach_detach_and_data():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.data_ptr() == y.data_ptr()
    assert y.detach_() is y and not y.requires_grad and y.grad_fn is None and y.is_leaf
    xd = x.data
    assert not xd.requires_grad and xd.data_ptr() == x.data_ptr()
    x.data = ag.tensor([5.0, 6.0])
    assert x.requires_grad and x.tolist() == [5.0, 6.0]
    with pytest.raises(TypeError, match="Tensor.data must be set to a Tensor"):
        x.data = [1.0]


# ------------------------------------------------------------------------------------------ metadata
def test_metadata():
    x = ag.zeros(2, 3, 4)
    assert x.dtype == ag.float32 and x.device.type == "cpu" and not x.is_cuda
    assert x.shape == (2, 3, 4) and x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    assert repr(x.shape) == "autograd.Size([2, 3, 4])" and x.shape.numel() == 24
    assert x.ndim == 3 and x.dim() == 3 and x.numel() == 24 and len(x) == 2
    assert x.element_size() == 4 and x.nbytes == 96 and x.is_contiguous() and x.is_floating_point()
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3"):
        x.size(3)


def test_item_tolist_and_python_scalars():
    assert ag.tensor([[2.5]]).item() == 2.5
    assert isinstance(ag.tensor(3).item(), int) and ag.tensor(3).item() == 3
    assert ag.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert ag.tensor(1.5).tolist() == 1.5
    assert float(ag.tensor([1.5])) == 1.5 and int(ag.tensor(7)) == 7 and bool(ag.tensor([1.0]))
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        ag.tensor([1.0, 2.0]).item()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(ag.tensor([1.0, 2.0]))


def test_numpy_refuses_grad_with_detach_hint_and_shares_memory():
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad.*detach\(\)"):
        x.numpy()
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(x)
    n = x.detach().numpy()
    n[0] = 9.0  # a view, like PyTorch's
    assert x.tolist() == [9.0, 2.0]
    assert x.numpy(force=True).tolist() == [9.0, 2.0]


# ------------------------------------------------------------------------------------ device and dtype
def test_to_dtype_returns_self_when_unchanged_and_copies_when_asked():
    x = ag.tensor([1.5, 2.5], requires_grad=True)
    assert x.to(ag.float32) is x and x.to("cpu") is x and x.to(x) is x
    c = x.to(ag.float32, copy=True)
    assert c is not x and c.data_ptr() != x.data_ptr() and c.grad_fn is not None
    y = x.to(ag.float64)
    assert y.dtype == ag.float64 and y.grad_fn.name() == "ToCopyBackward0"
    z = x.to(ag.zeros(1, dtype=ag.float64))  # to(other)
    assert z.dtype == ag.float64
    w = x.to(device="cpu", dtype=ag.float64, non_blocking=True)
    assert w.dtype == ag.float64
    (y * 2 + z + w).sum().backward()
    assert x.grad.dtype == ag.float32 and x.grad.tolist() == [4.0, 4.0]
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        x.to(bogus=1)


@pytest.mark.parametrize("method,dtype", [("float", "float32"), ("half", "float16"), ("bfloat16", "bfloat16"),
                                          ("double", "float64"), ("long", "int64"), ("int", "int32"),
                                          ("bool", "bool")])
def test_dtype_conversion_methods(method, dtype):
    x = ag.tensor([0.0, 1.5, -2.0], dtype=ag.float64)
    y = getattr(x, method)()
    assert y.dtype == getattr(ag, dtype)
    want = np.array([0.0, 1.5, -2.0]).astype({"bfloat16": np.float32}.get(dtype, dtype))
    got = y.to(ag.float64).numpy() if dtype == "bfloat16" else y.numpy()
    np.testing.assert_array_equal(got, want)


def test_clone_and_contiguous():
    x = ag.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    c = x.clone()
    assert c.data_ptr() != x.data_ptr() and c.grad_fn.name() == "CloneBackward0"
    t = x.t()
    assert not t.is_contiguous()
    tc = t.contiguous()
    assert tc.is_contiguous() and tc.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert x.contiguous() is x
    (tc * ag.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.grad.tolist() == [[1.0, 3.0], [2.0, 4.0]]


def test_cuda_and_cpu_round_trip_with_gradients():
    _cuda_or_skip()
    x = ag.tensor([1.0, 2.0], requires_grad=True)
    y = x.cuda()
    assert y.is_cuda and y.device.type == "cuda" and y.get_device() == 0 and y.grad_fn.name() == "ToCopyBackward0"
    z = y * y + y - 1.0
    assert z.device.type == "cuda" and z.cpu().tolist() == [1.0, 5.0]
    z.backward(ag.ones(2, device="cuda"))
    assert x.grad.device.type == "cpu" and x.grad.tolist() == [3.0, 5.0]
    w = ag.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    assert w.cuda() is w and w.to("cuda:0") is w
    back = w.to("cpu", ag.float64)
    assert back.device.type == "cpu" and back.dtype == ag.float64
    with pytest.raises(TypeError, match="Use Tensor.cpu"):
        w.detach().numpy()


# ------------------------------------------------------------------------------------------- repr
@pytest.mark.parametrize("make,want", [
    (lambda: ag.tensor([1.0, 2.0], requires_grad=True), "tensor([1., 2.], requires_grad=True)"),
    (lambda: ag.tensor([1.0, 2.0], requires_grad=True) * 2, "tensor([2., 4.], grad_fn=<MulBackward0>)"),
    (lambda: ag.tensor(3.5), "tensor(3.5000)"),
    (lambda: ag.tensor([1.5, 2.25], dtype=ag.float64), "tensor([1.5000, 2.2500], dtype=autograd.float64)"),
    (lambda: ag.tensor([1, 2]), "tensor([1, 2])"),
    (lambda: ag.tensor([-1, 10, 100]), "tensor([ -1,  10, 100])"),
    (lambda: ag.tensor([1, 2], dtype=ag.int32), "tensor([1, 2], dtype=autograd.int32)"),
    (lambda: ag.tensor([True, False]), "tensor([ True, False])"),
    (lambda: ag.tensor([1.23456, -2.5, 100.0]), "tensor([  1.2346,  -2.5000, 100.0000])"),
    (lambda: ag.tensor([[1.5, 2.0], [3.0, 4.0]]), "tensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]])"),
    (lambda: ag.tensor([1e10, 1.0]), "tensor([1.0000e+10, 1.0000e+00])"),
    (lambda: ag.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
    (lambda: ag.tensor([1.0, 10000.0]), "tensor([1.0000e+00, 1.0000e+04])"),
    (lambda: ag.tensor([float("nan"), 1.0, float("inf")]), "tensor([nan, 1., inf])"),
    (lambda: ag.tensor([0.0, 0.0]), "tensor([0., 0.])"),
    (lambda: ag.tensor([1.5, 2.0], dtype=ag.float16), "tensor([1.5000, 2.0000], dtype=autograd.float16)"),
    (lambda: ag.tensor([]), "tensor([])"),
    (lambda: ag.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: ag.zeros(0, dtype=ag.int64), "tensor([], dtype=autograd.int64)"),
    (lambda: ag.linspace(0, 1, 5), "tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])"),
    (lambda: ag.arange(24.0).reshape(2, 3, 4),
     "tensor([[[ 0.,  1.,  2.,  3.],\n         [ 4.,  5.,  6.,  7.],\n         [ 8.,  9., 10., 11.]],\n\n"
     "        [[12., 13., 14., 15.],\n         [16., 17., 18., 19.],\n         [20., 21., 22., 23.]]])"),
    (lambda: ag.arange(2000.0),
     "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])"),
])
def test_repr_like_pytorch(make, want):
    assert repr(make()) == want
    assert str(make()) == want


def test_repr_wraps_long_rows_at_80_columns():
    r = repr(ag.arange(30.0) / 7)
    lines = r.splitlines()
    assert lines[0] == "tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,"
    assert all(len(ln) <= 80 for ln in lines) and lines[1].startswith("        1.2857")


def test_repr_default_dtype_is_not_shown():
    old = ag.get_default_dtype()
    ag.set_default_dtype(ag.float64)
    try:
        assert repr(ag.tensor([1.5])) == "tensor([1.5000])"
        assert repr(ag.tensor([1.5], dtype=ag.float32)) == "tensor([1.5000], dtype=autograd.float32)"
    finally:
        ag.set_default_dtype(old)


def test_repr_cuda_shows_device():
    _cuda_or_skip()
    x = ag.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    assert repr(x * 2) == "tensor([2., 4.], device='cuda:0', grad_fn=<MulBackward0>)"
