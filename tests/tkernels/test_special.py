"""lgamma, digamma, polygamma (tkernels/kernels/special.py on cuda, SciPy on cpu): against SciPy on a dense grid
with the poles, reflections and the shift thresholds, both float dtypes, cpu and interpreted cuda; the limits
(PyTorch's where it differs from SciPy: lgamma(-inf) = +inf); gradients in float64; bad n refused."""

import numpy as np
import pytest
from scipy import special

import autograd as ag
import tkernels as tk
from autograd.gradcheck import gradcheck, gradgradcheck

GRID = np.concatenate([np.linspace(-7.7, 30, 501), [0.5, -0.5, 1e-8, -1e-8, 1.0, 2.0, 7.999, 8.0, 15.999, 16.0,
                                                    150.0, 1e5, 3.0000001, 5e-324, 1e-310, -1e-310]])
def _gammaln(x):  # SciPy overflows 1 / x for subnormal x, where lgamma(x) = -log|x|
    with np.errstate(divide="ignore"):
        return np.where((np.abs(x) < 1e-300) & (x != 0), -np.log(np.abs(x)), special.gammaln(x))


def _psi(x):  # digamma(-0.0) = -inf as digamma(0.0) (PyTorch; SciPy gives +inf)
    return np.where(x == 0, -np.inf, special.psi(x))


CASES = [("lgamma", tk.lgamma, _gammaln), ("digamma", tk.digamma, _psi),
         ("polygamma1", lambda x: tk.polygamma(1, x), lambda x: special.polygamma(1, x)),
         ("polygamma2", lambda x: tk.polygamma(2, x), lambda x: special.polygamma(2, x)),
         ("polygamma4", lambda x: tk.polygamma(4, x), lambda x: special.polygamma(4, x))]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-11), ("float32", 3e-5)])
@pytest.mark.parametrize("name, f, ref", CASES, ids=[c[0] for c in CASES])
def test_against_scipy_on_a_grid(device, dtype, rtol, name, f, ref):
    x = tk.asarray(GRID, dtype=getattr(tk, dtype), device=device)
    xr = x.astype(tk.float64).numpy()
    with np.errstate(over="ignore"):  # (values past float32's max are inf in float32)
        got, want = f(x).astype(tk.float64).numpy(), ref(xr).astype(dtype).astype(np.float64)
    ok = np.isclose(got, want, rtol=rtol, atol=rtol * 10) | (np.isnan(got) & np.isnan(want))
    assert ok.all(), list(zip(xr[~ok][:5], got[~ok][:5], want[~ok][:5]))


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_poles_and_limits(device):
    x = tk.asarray([0.0, -1.0, -2.0, np.inf, -np.inf, np.nan], dtype=tk.float64, device=device)
    np.testing.assert_array_equal(tk.lgamma(x).numpy(), [np.inf, np.inf, np.inf, np.inf, np.inf, np.nan])
    np.testing.assert_array_equal(tk.digamma(x).numpy(), [-np.inf, np.nan, np.nan, np.inf, np.nan, np.nan])
    np.testing.assert_array_equal(tk.polygamma(1, x).numpy(), [np.inf, np.inf, np.inf, 0.0, np.inf, np.nan])
    np.testing.assert_array_equal(tk.polygamma(2, x).numpy(), [-np.inf, -np.inf, -np.inf, 0.0, -np.inf, np.nan])
    half = tk.asarray([0.5, 3.0, -2.5], dtype=tk.bfloat16, device=device)
    np.testing.assert_allclose(tk.lgamma(half).astype(tk.float64).numpy(), special.gammaln([0.5, 3.0, -2.5]),
                               rtol=1e-2)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_gradients(device):
    x = ag.tensor([-2.3, -0.7, 0.4, 1.0, 2.6, 9.5], dtype=ag.float64, device=device, requires_grad=True)
    assert gradcheck(ag.lgamma, (x,)) and gradgradcheck(ag.lgamma, (x,))
    assert gradcheck(ag.digamma, (x,)) and gradcheck(lambda t: ag.polygamma(2, t), (x,))
    assert type(x.lgamma().grad_fn).__name__ == "LgammaBackward0"
    assert type(x.polygamma(3).grad_fn).__name__ == "PolygammaBackward0"
    np.testing.assert_allclose(ag.polygamma(0, x).detach().cpu().numpy(), special.psi(x.detach().cpu().numpy()))


def test_int_inputs_promote_and_bad_n_is_refused():
    assert tk.lgamma(tk.asarray([1, 2, 3])).dtype == tk.float32
    np.testing.assert_allclose(ag.lgamma(ag.tensor([4])).tolist(), [np.log(6.0)], rtol=1e-6)
    for n in (-1, 1.5, True):
        with pytest.raises(ValueError, match="polygamma: n must be a non-negative int"):
            tk.polygamma(n, tk.ones(2))
    with pytest.raises(RuntimeError, match="polygamma"):
        ag.polygamma(-1, ag.ones(2))


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    x = np.linspace(-5.3, 12, 97)
    for ours, theirs in ((ag.lgamma, torch.lgamma), (ag.digamma, torch.digamma),
                         (lambda t: ag.polygamma(2, t), lambda t: torch.polygamma(2, t))):
        np.testing.assert_allclose(ours(ag.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy(), rtol=1e-10)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_in_place_equals_out_of_place(device, dtype, name):
    # the cpu implementations fix SciPy's limits by masks of x: read before out (x itself here) is written
    values = np.concatenate([GRID, [-0.0, 0.0, -np.inf, np.inf]])
    x = ag.tensor(values, dtype=getattr(ag, dtype), device=device)
    want = getattr(x, name)().cpu().numpy()
    getattr(x, name + "_")()
    np.testing.assert_array_equal(x.cpu().numpy(), want)
    assert np.isneginf(want[-4]) == (name == "digamma")  # digamma(-0.0) = -inf
