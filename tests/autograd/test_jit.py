"""autograd.jit.trace: graphs with PyTorch op names, replay on new sizes and devices, gradients, frozen control
flow and TracerWarning, constant folding, check_trace, save/load."""

import os
import sys
import warnings

import numpy as np
import pytest

import autograd as ag
import nn
from autograd.jit import TracerWarning, TracingCheckError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from char_gpt import GPT  # noqa: E402
from train_digits import make_model  # noqa: E402


def _ops(traced):
    return [n.op for n in traced.graph.nodes]


def test_module_calls_give_one_node_per_fused_op():
    m = make_model("mlp").eval()
    tr = ag.jit.trace(m, (ag.randn(3, 1, 8, 8),))
    assert _ops(tr) == ["flatten", "linear", "gelu", "linear"]
    text = str(tr.graph)
    assert "linear(%v" in text and "%p_1_weight" in text and "return %v" in text
    assert "autograd.linear(" in tr.code and "self._1.weight" in tr.code
    assert list(tr.graph.params.values()) == [k for k, _ in m.named_parameters()]


def test_new_batch_sizes_and_sequence_lengths():
    ag.manual_seed(0)
    g = GPT(vocab_size=11, block_size=16, n_layer=1, n_head=2, n_embd=8, dropout=0.0).eval()
    tr = ag.jit.trace(g, (ag.randint(0, 11, (2, 8)),))
    assert "scaled_dot_product_attention" in _ops(tr) and "size" in _ops(tr)
    for shape in [(1, 3), (4, 13)]:
        idx = ag.randint(0, 11, shape)
        got, none = tr(idx)
        assert none is None
        np.testing.assert_allclose(got.detach().numpy(), g(idx)[0].detach().numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="rank 3.*rank 2"):
        tr(ag.randint(0, 11, (1, 2, 3)))
    with pytest.raises(TypeError, match="takes 1 tensor input"):
        tr()


def test_traced_module_is_differentiable():
    ag.manual_seed(0)
    m = make_model("cnn")
    x = ag.randn(4, 1, 8, 8)
    tr = ag.jit.trace(m, (x,))
    tr(x).square().sum().backward()
    got = {k: p.grad.numpy().copy() for k, p in tr.named_parameters()}
    for p in m.parameters():
        p.grad = None
    m(x).square().sum().backward()
    for k, p in m.named_parameters():
        np.testing.assert_allclose(got[k], p.grad.numpy(), rtol=1e-5, atol=1e-6)
    xi = ag.randn(2, 1, 8, 8, requires_grad=True)
    tr(xi).sum().backward()
    assert xi.grad is not None and xi.grad.shape == xi.shape


def test_control_flow_is_frozen_with_a_warning():
    def fn(x):
        if x.sum() > 0:
            return x * 2
        return x * 3

    with pytest.warns(TracerWarning, match="Python boolean"):
        tr = ag.jit.trace(fn, (ag.ones(3),))
    assert _ops(tr) == ["sum", "gt", "mul"]
    np.testing.assert_allclose(tr(-ag.ones(3)).numpy(), [-2, -2, -2])  # the branch taken while tracing

    with pytest.warns(TracerWarning, match="Python float"):
        ag.jit.trace(lambda x: x * float(x.mean()), (ag.randn(3),))
    with pytest.warns(TracerWarning, match="Python number"):
        ag.jit.trace(lambda x: x + x.max().item(), (ag.randn(3),))
    with pytest.warns(TracerWarning, match="len()"):
        ag.jit.trace(lambda x: x * len(x), (ag.randn(3),))
    with pytest.warns(TracerWarning, match="iterator"):
        tr = ag.jit.trace(lambda x: sum(row for row in x), (ag.randn(3, 2),))
    np.testing.assert_allclose(tr(ag.ones(3, 2)).numpy(), [3, 3])
    with warnings.catch_warnings():  # parameters and constants are not traced values: no warning
        warnings.simplefilter("error")
        w = ag.randn(3)
        ag.jit.trace(lambda x: x * float(w.sum()), (ag.randn(3),))


def test_constants_are_folded():
    c = ag.randn(4)

    def fn(x):
        k = ag.ones(4) * 2 + c.exp()  # no input involved: one constant
        return x * k

    tr = ag.jit.trace(fn, (ag.randn(2, 4),))
    assert _ops(tr) == ["mul"] and len(tr.graph.constants) == 1
    x = ag.randn(5, 4)
    np.testing.assert_allclose(tr(x).numpy(), fn(x).numpy(), rtol=1e-6)


def test_check_trace_and_check_inputs():
    def leaky(x):
        return ag.from_numpy(x.numpy() * 2)  # leaves the graph: a constant

    with pytest.warns(TracerWarning, match="NumPy array"):
        ag.jit.trace(leaky, (ag.randn(3),))  # same inputs: the check cannot tell
    with pytest.raises(TracingCheckError, match="differs from eager"):
        with pytest.warns(TracerWarning):
            ag.jit.trace(leaky, (ag.randn(3),), check_inputs=[(ag.randn(3),)])
    drop = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5)).train()
    with pytest.warns(TracerWarning, match="nondeterministic"):
        tr = ag.jit.trace(drop, (ag.randn(2, 3),))
    assert "dropout" in _ops(tr)


def test_inplace_ops_and_setitem():
    def fn(x):
        y = x.clone()
        y.relu_()
        y[:, 0] = 5.0
        y += 1
        return y

    tr = ag.jit.trace(fn, (ag.randn(3, 2),))
    x = ag.randn(4, 2)
    np.testing.assert_allclose(tr(x).numpy(), fn(x).numpy())


def test_buffers_and_state_dict():
    m = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3)).eval()
    tr = ag.jit.trace(m, (ag.randn(2, 2, 6, 6),))
    assert set(tr.state_dict()) == set(m.state_dict())
    assert {k for k, _ in tr.named_buffers()} >= {"1.running_mean", "1.running_var"}


def test_save_load_round_trip(tmp_path):
    ag.manual_seed(0)
    g = GPT(vocab_size=11, block_size=16, n_layer=1, n_head=2, n_embd=8, dropout=0.0).eval()
    tr = ag.jit.trace(g, (ag.randint(0, 11, (2, 8)),))
    p = tmp_path / "gpt.safetensors"
    tr.save(p)
    back = ag.jit.load(p)
    assert str(back.graph) == str(tr.graph)
    idx = ag.randint(0, 11, (3, 5))
    np.testing.assert_array_equal(back(idx)[0].detach().numpy(), tr(idx)[0].detach().numpy())
    assert all(t.requires_grad for _, t in back.named_parameters())
    st = pytest.importorskip("safetensors.numpy")  # a standard safetensors file
    assert set(st.load_file(str(p))) >= {"wte.weight", "lm_head.weight"} - {"lm_head.weight"}
    raw = p.read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(raw[:-7])
    with pytest.raises(ValueError, match="corrupt|truncated"):
        ag.jit.load(tmp_path / "cut.safetensors")
    nn.save(g.state_dict(), str(tmp_path / "weights.safetensors"))
    with pytest.raises(ValueError, match="not a traced module.*nn.load"):
        ag.jit.load(tmp_path / "weights.safetensors")
    (tmp_path / "junk.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!")
    with pytest.raises(ValueError, match="not valid JSON"):
        ag.jit.load(tmp_path / "junk.safetensors")


def test_save_load_with_constants_and_symbolic_sizes(tmp_path):
    c = ag.arange(4).float()
    fn = lambda x: (x.reshape(x.shape[0], 2, -1) + c.reshape(2, 2)[:, :1]).flatten(1)  # noqa: E731
    tr = ag.jit.trace(fn, (ag.randn(3, 4),))
    tr.save(tmp_path / "f.safetensors")
    back = ag.jit.load(tmp_path / "f.safetensors")
    x = ag.randn(6, 4)
    np.testing.assert_allclose(back(x).numpy(), fn(x).numpy())


def test_bad_arguments():
    with pytest.raises(TypeError, match="example input 0 is a int"):
        ag.jit.trace(lambda x: x, (3,))
    with pytest.raises(TypeError, match="expected a function or module"):
        ag.jit.trace(5, (ag.randn(1),))


def test_eager_mode_unchanged_after_trace():
    before = ag.Tensor.__add__, ag.linear, ag.Tensor.shape
    ag.jit.trace(nn.Linear(2, 2), (ag.randn(1, 2),))
    assert (ag.Tensor.__add__, ag.linear, ag.Tensor.shape) == before
    with pytest.raises(ZeroDivisionError):
        ag.jit.trace(lambda x: x / 0 if 1 / 0 else x, (ag.randn(1),))
    assert ag.linear is before[1]


@pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")
def test_trace_on_cpu_runs_on_cuda():
    ag.manual_seed(0)
    m = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 3)).eval()
    tr = ag.jit.trace(lambda x: m(x) + ag.arange(3, device=x.device).float(), (ag.randn(2, 5),))
    x = ag.randn(3, 5)
    want = m(x) + ag.arange(3).float()
    m.to("cuda")
    got = tr(x.to("cuda"))
    assert got.device.type == "cuda"
    np.testing.assert_allclose(got.cpu().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_rnn_modules_are_one_node_any_length_and_round_trip(tmp_path):
    ag.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 3), nn.LSTM(3, 4, num_layers=2, batch_first=True))
    tr = ag.jit.trace(m[1], (ag.randn(2, 5, 3),))
    assert _ops(tr) == ["rnn"]
    x = ag.randn(3, 9, 3)  # another batch size and sequence length
    (out, (h, c)), (want, (wh, wc)) = tr(x), m[1](x)
    np.testing.assert_allclose(h.detach().numpy(), wh.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c.detach().numpy(), wc.detach().numpy(), rtol=1e-6, atol=1e-6)
    out.sum().backward()
    assert all(p.grad is not None for p in m[1].parameters())
    whole = ag.jit.trace(m, (ag.randn(2, 5, 3),))
    assert _ops(whole) == ["linear", "rnn"]
    whole.save(tmp_path / "lstm.safetensors")
    back = ag.jit.load(tmp_path / "lstm.safetensors")
    np.testing.assert_allclose(back(x)[0].detach().numpy(), m(x)[0].detach().numpy(), rtol=1e-6, atol=1e-6)
    assert {k for k, _ in back.named_parameters()} == {k for k, _ in m.named_parameters()}
    back(x)[0].sum().backward()
    assert all(p.grad is not None for _, p in back.named_parameters())


def test_nested_trace_is_refused():
    inner = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="already in progress"):
        ag.jit.trace(lambda x: ag.jit.trace(inner, (x,))(x), (ag.randn(1, 2),))
    ag.jit.trace(inner, (ag.randn(1, 2),))  # and the state is clean afterwards


def test_ops_namespace_is_traced_and_escapes_warn():
    tr = ag.jit.trace(lambda x: ag.ops.relu(x) * 2, (ag.randn(3),))
    assert _ops(tr) == ["relu", "mul"]
    w = ag.randn(3, requires_grad=True)
    with pytest.warns(TracerWarning, match="captured as a constant; gradients will not flow"):
        ag.jit.trace(lambda x: x + (w * 2).exp(), (ag.randn(3),))


@pytest.mark.skipif(not ag.cuda.is_available(), reason="no cuda (not even interpreted)")
def test_trace_on_cuda_save_load_to_cpu_and_back(tmp_path):
    ag.manual_seed(0)
    m = nn.Sequential(nn.Linear(5, 4), nn.GELU(), nn.LayerNorm(4)).eval().to("cuda")
    x = ag.randn(3, 5)
    tr = ag.jit.trace(m, (x.to("cuda"),))  # check_trace compares on cuda
    tr.save(tmp_path / "m.safetensors")
    on_cpu = ag.jit.load(tmp_path / "m.safetensors")
    on_cuda = ag.jit.load(tmp_path / "m.safetensors", map_location="cuda")
    want = m(x.to("cuda")).detach().cpu().numpy()
    np.testing.assert_allclose(on_cpu(x).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    got = on_cuda(x.to("cuda"))
    assert got.device.type == "cuda"
    np.testing.assert_allclose(got.detach().cpu().numpy(), want, rtol=1e-5, atol=1e-6)


def test_layering_no_nn_torch_or_onnx_at_import():
    """autograd.jit and autograd.onnx import neither nn (a layer up) nor onnx at module level; torch never."""
    import ast
    import pathlib

    root = pathlib.Path(ag.__file__).parent
    for path in sorted([*root.glob("jit/*.py"), *root.glob("onnx/*.py")]):
        tree = ast.parse(path.read_text())
        top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        names = [a.name for n in top if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in top if isinstance(n, ast.ImportFrom) and not n.level]
        assert not [n for n in names if n.split(".")[0] in ("nn", "onnx", "onnxruntime", "torch")], path
        every = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [n for n in every if n.split(".")[0] == "torch"], path


class _DoubleGrad(ag.Function):
    """y = x * 3 with a deliberately wrong gradient (2·g): shows which backward runs."""

    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 2


class _OwnKernel(ag.Function):
    """y = x + 1 computed on the Array directly (as a Function with its own kernel does)."""

    @staticmethod
    def forward(ctx, x):
        import tkernels as tk

        return ag.Tensor._wrap(tk.add(x._data, 1.0))

    @staticmethod
    def backward(ctx, g):
        return g


def test_autograd_functions_are_one_node_with_their_backward(tmp_path):
    x = ag.randn(4, requires_grad=True)
    tr = ag.jit.trace(lambda x: _DoubleGrad.apply(x.sin()).sum(), (x,))
    assert _ops(tr) == ["sin", "_DoubleGrad", "sum"] and [n.op for n in tr.graph.nodes[1].sub] == ["mul"]
    x2 = ag.randn(6, requires_grad=True)
    tr(x2).backward()
    np.testing.assert_allclose(x2.grad.numpy(), 2 * x2.detach().cos().numpy(), rtol=1e-6)
    tr.save(tmp_path / "f.safetensors")
    back = ag.jit.load(tmp_path / "f.safetensors")  # the class is found in its (imported) module
    np.testing.assert_allclose(back(x2).detach().numpy(), tr(x2).detach().numpy())
    own = ag.jit.trace(lambda x: _OwnKernel.apply(x) * 2, (ag.randn(3),))
    np.testing.assert_allclose(own(ag.ones(2)).numpy(), [4, 4])  # replayed by apply: its own computation
