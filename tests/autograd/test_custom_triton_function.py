"""The documented extension example (examples/custom_triton_function.py): a Function backed by user-written
Triton kernels, on interpreted cuda against the composite of autograd ops, gradcheck in float64 on cpu, and
the kernels compiling for a real GPU (sm_90) without one."""

import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import autograd as ag

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATH = os.path.join(ROOT, "examples", "custom_triton_function.py")


def _load():
    spec = importlib.util.spec_from_file_location("custom_triton_function", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ex = _load()
cuda = pytest.mark.skipif(not ag.cuda.is_available(), reason="needs cuda (interpreted is enough)")


def _np(t):
    return t.detach().cpu().numpy()


def _ref(a, g, alpha):
    """NumPy float64 reference of y and dL/dx."""
    s = 1 / (1 + np.exp(-alpha * a))
    return a * s, g * (s + alpha * a * s * (1 - s))


@cuda
@pytest.mark.parametrize("shape", [(37, 129), (1,), (), (0, 3)])
def test_interpreted_cuda_matches_composite(shape):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(np.float32) * 3
    gn = rng.standard_normal(shape).astype(np.float32)
    alpha = 1.702
    x = ag.tensor(a, device="cuda", requires_grad=True)
    g = ag.tensor(gn, device="cuda")
    y = ex.scaled_silu(x, alpha)
    assert y.device.type == "cuda" and y.grad_fn.name() == "ScaledSiLUBackward" and y.dtype == ag.float32
    (dx,) = ag.grad(y, x, grad_outputs=g)
    y_ref = ex.scaled_silu_composite(x, alpha)
    (dx_ref,) = ag.grad(y_ref, x, grad_outputs=g)
    np.testing.assert_allclose(_np(y), _np(y_ref), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(dx), _np(dx_ref), rtol=1e-5, atol=1e-6)
    yn, dxn = _ref(a.astype(np.float64), gn.astype(np.float64), alpha)
    np.testing.assert_allclose(_np(y), yn, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(dx), dxn, rtol=1e-5, atol=1e-5)


@cuda
def test_interpreted_cuda_non_contiguous_and_float64():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 5))
    x = ag.tensor(a, dtype=ag.float64, device="cuda", requires_grad=True)
    xt = x.t()  # non-contiguous: the Function makes it contiguous for the kernel
    y = ex.scaled_silu(xt, 0.5)
    (y * y).sum().backward()
    yn, dxn = _ref(a.T, 2 * _ref(a.T, 0, 0.5)[0], 0.5)
    np.testing.assert_allclose(_np(y), yn, rtol=1e-12)
    np.testing.assert_allclose(_np(x.grad), dxn.T, rtol=1e-10)


@cuda
def test_interpreted_cuda_gradcheck_float64():
    x = ag.tensor(np.random.default_rng(2).standard_normal((3, 4)), dtype=ag.float64, device="cuda",
                  requires_grad=True)
    assert ag.gradcheck(lambda t: ex.scaled_silu(t, 1.3), (x,))


def test_cpu_gradcheck_float64_and_values():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 7))
    x = ag.tensor(a, dtype=ag.float64, requires_grad=True)
    assert ag.gradcheck(lambda t: ex.scaled_silu(t, 1.702), (x,))
    assert ag.gradcheck(lambda t: ex.scaled_silu(t, -0.7), (x,))
    y = ex.scaled_silu(x, 2.0)
    np.testing.assert_allclose(_np(y), _ref(a, 0, 2.0)[0], rtol=1e-13)
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), _ref(a, 1.0, 2.0)[1], rtol=1e-12)


def test_alpha_gets_no_gradient_and_no_double_backward():
    x = ag.tensor([0.3, -1.2], dtype=ag.float64, requires_grad=True)
    y = ex.scaled_silu(x, 1.0)
    assert y.grad_fn.next_functions[1] == (None, 0)
    assert y.grad_fn.alpha == 1.0
    (g,) = ag.grad((y * y).sum(), x, create_graph=True)
    np.testing.assert_allclose(_np(g), 2 * _ref(_np(x), _np(y), 1.0)[1], rtol=1e-12)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        ag.grad(g.sum(), x)


def test_example_main_runs(capsys):
    assert ex.main() == 0
    out = capsys.readouterr().out
    assert "OK" in out and "ScaledSiLUBackward" in out


def test_kernels_compile_for_sm90(tmp_path):
    """Triton's front end, LLVM and ptxas on the example's kernels (no GPU needed)."""
    code = textwrap.dedent(f"""
        import importlib.util
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        spec = importlib.util.spec_from_file_location("ex", {PATH!r})
        ex = importlib.util.module_from_spec(spec); spec.loader.exec_module(ex)
        for fn, nptr in ((ex._scaled_silu_fwd_kernel, 2), (ex._scaled_silu_bwd_kernel, 3)):
            sig = {{n: "*fp32" for n in fn.arg_names[:nptr]}}
            sig.update(n="i64", alpha="fp32", F64="constexpr", BLOCK="constexpr")
            ck = triton.compile(ASTSource(fn, sig, {{"F64": False, "BLOCK": 1024}}), target=GPUTarget("cuda", 90, 32))
            assert ".target sm_90" in ck.asm["ptx"], fn
        print("compiled")
    """)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(TKERNELS_INTERPRET="0", PYTHONPATH=ROOT, TRITON_DEFAULT_FP_FUSION="1", TRITON_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "compiled" in r.stdout, r.stderr[-3000:]
