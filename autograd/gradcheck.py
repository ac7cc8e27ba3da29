"""``gradcheck`` and ``gradgradcheck``: compare analytical gradients with central finite differences
(in float64 for a meaningful check), element by element or, in fast mode, as one projection vᵀJu.

Complex inputs and outputs are checked as PyTorch checks them: each complex element is two real variables
(its real and imaginary parts, both perturbed), each complex output element two real functions. With
PyTorch's convention the backward of grad_output ``v`` gives ``dL/dx + i dL/dy`` for ``L = Re(sum(conj(v) w))``,
so ``v = e_r`` is the row of ``Re(w_r)`` and ``v = 1j e_r`` the row of ``Im(w_r)``."""

from __future__ import annotations

import numpy as np

import tkernels as tk

from .engine import grad as _grad
from .tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    pass


def _as_tuple(x):
    return tuple(x) if isinstance(x, tuple | list) else (x,)


def _outputs(func, inputs):
    outs = _as_tuple(func(*inputs))
    return [o for o in outs if isinstance(o, Tensor) and o.dtype.kind in "fc"]


def _get(t, idx):
    return t._data._basic_index(idx).item()


def _set(t, idx, v):
    tk.copy_into(t._data._basic_index(idx), v)


def _is_c(t) -> bool:
    return t.dtype.kind == "c"


def _flat_np(t):
    """The values as a real float64 vector: a complex tensor's real parts, then its imaginary parts."""
    a = t.detach()._data.numpy().reshape(-1)
    if a.dtype.kind == "c":
        return np.concatenate([a.real, a.imag]).astype(np.float64)
    return np.array(a, dtype=np.float64, copy=True)


def _rows(o) -> int:
    return o.numel() * (2 if _is_c(o) else 1)


def _numerical_jacobian(func, inputs, diff_idx, outs_shapes, eps):
    """J[i][o]: (numel(out o), numel(input i)) by central differences."""
    jac = []
    for i in diff_idx:
        x = inputs[i]
        n = x.numel()
        steps = (eps, eps * 1j) if _is_c(x) else (eps,)  # a complex element: its real and imaginary parts
        cols = [np.zeros((r, n * len(steps))) for r in outs_shapes]
        for j, idx in enumerate(np.ndindex(*x.shape)):
            orig = _get(x, idx)
            for part, step in enumerate(steps):
                _set(x, idx, orig + step)
                plus = [_flat_np(o) for o in _outputs(func, inputs)]
                _set(x, idx, orig - step)
                minus = [_flat_np(o) for o in _outputs(func, inputs)]
                _set(x, idx, orig)
                for k in range(len(cols)):
                    cols[k][:, part * n + j] = (plus[k] - minus[k]) / (2 * eps)
        jac.append(cols)
    return jac


def _analytical_jacobian(func, inputs, diff_idx):
    outs = _outputs(func, inputs)
    diff = [inputs[i] for i in diff_idx]
    jac = [[np.zeros((_rows(o), _rows(x))) for o in outs] for x in diff]
    for k, o in enumerate(outs):
        if not o.requires_grad:
            continue
        n = o.numel()
        for r in range(_rows(o)):
            onehot = np.zeros(n, dtype=o.dtype.numpy)
            onehot[r % n] = 1.0 if r < n else 1j  # the row of Re(w_r), then of Im(w_r)
            go = Tensor._wrap(tk.asarray(onehot.reshape(tuple(o.shape)), dtype=o.dtype, device=o.device))
            gs = _grad([o], diff, [go], retain_graph=True, allow_unused=True)
            for i, g in enumerate(gs):
                if g is not None:
                    jac[i][k][r, :] = _grad_row(g, diff[i])
    return outs, jac


def _grad_row(g, x):
    """The gradient ``g`` of input ``x`` as its Jacobian row: dL/dx (and dL/dy for a complex ``x``)."""
    a = g.detach()._data.numpy().reshape(-1)
    if _is_c(x):
        return np.concatenate([a.real, a.imag]) if a.dtype.kind == "c" else np.concatenate([a, 0 * a])
    return a.real.astype(np.float64)


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, fast_mode: bool = False, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, masked=None) -> bool:
    """True when the analytical Jacobian of ``func`` at ``inputs`` (those with ``requires_grad``) matches
    finite differences: ``|analytical - numerical| <= atol + rtol * |numerical|``. Use float64 inputs."""
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff_idx:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them "
                         "have requires_grad=True.")
    for i in diff_idx:
        if inputs[i].dtype not in (tk.float64, tk.complex128):
            import warnings

            warnings.warn(f"gradcheck: input {i} is {inputs[i].dtype}, not float64; the check may fail for lack "
                          f"of precision", stacklevel=2)
    if fast_mode:
        return _fast(func, inputs, diff_idx, eps, atol, rtol, raise_exception)
    outs, ana = _analytical_jacobian(func, inputs, diff_idx)
    num = _numerical_jacobian(func, inputs, diff_idx, [_rows(o) for o in outs], eps)
    for a, i in enumerate(diff_idx):
        for k in range(len(outs)):
            A, N = ana[a][k], num[a][k]
            if not np.allclose(A, N, rtol=rtol, atol=atol, equal_nan=False):
                return _fail(f"Jacobian mismatch for output {k} with respect to input {i},\nnumerical:\n{N}\n"
                             f"analytical:\n{A}\nmax abs difference {np.max(np.abs(A - N)):.3e}", raise_exception)
    if nondet_tol == 0.0 and outs:  # reentrant: same gradients twice
        _, again = _analytical_jacobian(func, inputs, diff_idx)
        for a in range(len(diff_idx)):
            for k in range(len(outs)):
                if not np.array_equal(ana[a][k], again[a][k]):
                    return _fail(f"Backward is not reentrant, i.e., running backward with the same input and "
                                 f"grad_output multiple times gives different values (input {diff_idx[a]}, "
                                 f"output {k})", raise_exception)
    return True


def _fast(func, inputs, diff_idx, eps, atol, rtol, raise_exception):
    """Compare vᵀJu analytically and numerically for random u (inputs) and v (outputs)."""
    rng = np.random.default_rng(0)
    outs = _outputs(func, inputs)
    def draw(t):
        v = rng.standard_normal(tuple(t.shape))
        return v + 1j * rng.standard_normal(tuple(t.shape)) if _is_c(t) else v

    us = [draw(inputs[i]) for i in diff_idx]
    vs = [draw(o) for o in outs]
    gos = [Tensor._wrap(tk.asarray(v, dtype=o.dtype, device=o.device)) for v, o in zip(vs, outs)]
    live = [(o, g) for o, g in zip(outs, gos) if o.requires_grad]
    analytical = 0.0
    if live:
        gs = _grad([o for o, _ in live], [inputs[i] for i in diff_idx], [g for _, g in live], retain_graph=True,
                   allow_unused=True)
        # Re(sum(conj(grad) u)): dL/dx Re(u) + dL/dy Im(u), the derivative of L along u
        analytical = sum(float(np.sum((np.conj(g.detach()._data.numpy()) * u).real)) for g, u in zip(gs, us)
                         if g is not None)
    origs = [np.array(inputs[i].detach()._data.numpy(), dtype=np.complex128 if _is_c(inputs[i]) else np.float64)
             for i in diff_idx]

    def at(sign):
        for i, o, u in zip(diff_idx, origs, us):
            tk.copy_into(inputs[i]._data, tk.asarray(o + sign * eps * u, dtype=inputs[i].dtype,
                                                     device=inputs[i].device))
        res = [np.array(o.detach()._data.numpy(), copy=True) for o in _outputs(func, inputs)]  # (views of inputs)
        for i, o in zip(diff_idx, origs):
            tk.copy_into(inputs[i]._data, tk.asarray(o, dtype=inputs[i].dtype, device=inputs[i].device))
        return res

    plus, minus = at(1.0), at(-1.0)
    numerical = sum(float(np.sum((np.conj(v) * (p - m)).real) / (2 * eps)) for p, m, v in zip(plus, minus, vs))
    if not abs(analytical - numerical) <= atol + rtol * abs(numerical):
        return _fail(f"Jacobian mismatch (fast mode): vᵀJu analytical {analytical!r} vs numerical {numerical!r}",
                     raise_exception)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True, fast_mode: bool = False,
                  nondet_tol: float = 0.0, **_ignored) -> bool:
    """gradcheck of the gradients themselves (computed with ``create_graph=True``) with respect to the inputs
    and to random ``grad_outputs``."""
    inputs = _as_tuple(inputs)
    diff_idx = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(1)
        outs = _outputs(func, inputs)
        grad_outputs = []
        for o in outs:
            v = rng.standard_normal(tuple(o.shape))
            if _is_c(o):
                v = v + 1j * rng.standard_normal(tuple(o.shape))
            g = Tensor._wrap(tk.asarray(v, dtype=o.dtype, device=o.device))
            if gen_non_contig_grad_outputs and o.ndim >= 2:
                g = Tensor._wrap(tk.asarray(np.ascontiguousarray(np.swapaxes(v, -1, -2)), dtype=o.dtype,
                                            device=o.device)).mT.detach()
            g.requires_grad_(True)
            grad_outputs.append(g)
    grad_outputs = list(_as_tuple(grad_outputs))
    n = len(inputs)

    def new_func(*args):
        ins, gos = args[:n], args[n:]
        outs = _outputs(func, ins)
        pairs = [(o, g) for o, g in zip(outs, gos) if o.requires_grad]
        if not pairs:
            return ()
        gs = _grad([o for o, _ in pairs], [ins[i] for i in diff_idx], [g for _, g in pairs], create_graph=True,
                   allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(new_func, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, fast_mode=fast_mode, nondet_tol=nondet_tol)
