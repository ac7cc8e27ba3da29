"""``autograd.compile``: a training step (or a module's inference forward) compiled into fused kernels.

>>> step = ag.compile(train_step)     # train_step(x, y): forward, loss.backward(), opt.step(); returns the loss
>>> for x, y in batches: loss = step(x, y)

How: the first call with given shapes/dtypes/devices runs ``fn`` eagerly (a warm-up: optimizers create their
state); the second runs it once more while recording every kernel it launches (``capture``), partitions the
recording into fusible regions (``schedule``: elementwise chains, elementwise epilogues of matmuls and convolutions,
the sums of bias and norm gradients, on cuda row reductions with their elementwise prologues and epilogues: layer
norm, softmax, cross-entropy, forward and backward: ``rows``, ``splits``) and generates one Triton kernel per
region (``codegen``, cached on disk); later calls copy the new input values into the recorded inputs and replay:
generated kernels for the regions, the existing kernels (matmul, attention, embeddings, the optimizer's fused step)
for the rest. On ``cpu`` the same
partitioned plan runs the NumPy kernels into the recorded (preallocated) buffers. Results are returned as fresh
tensors.

Guards: another shape, dtype, device, ``requires_grad``, non-tensor argument or grad mode compiles anew. What a
replay cannot repeat — reading array values on the host (``.item()``, ``bool(t)``, data-dependent shapes such as
boolean-mask indexing), kernels returning host values, ops that refuse capture — makes that guard run eagerly,
logged with the reason on the ``autograd.compile`` logger. As with CUDA graphs, Python in ``fn`` runs only while
recording, except the optimizers' steps (host calls: learning-rate schedules keep working).

``ag.compile(module)`` returns the module with a compiled ``__call__``: without autograd (``no_grad`` inference) the
forward is one plan; with autograd the forward and its backward are recorded together and applied as one
``autograd.Function`` (``module.py``), so ``compiled(x).sum().backward()`` fills the parameters' ``.grad``.
Compiling the whole training step fuses more (the loss, the optimizer update and the gradient bookkeeping)."""

from __future__ import annotations

from .codegen import cache_dir
from .runtime import CompiledFunction, log

__all__ = ["compile", "CompiledFunction", "CompiledModule", "cache_dir", "log"]

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class CompiledModule:
    """``autograd.compile(module)``: calls the module through a compiled function when no autograd history is
    recorded, eagerly otherwise; attributes are the module's."""

    def __init__(self, module, mode):
        object.__setattr__(self, "_orig_mod", module)
        object.__setattr__(self, "_compiled", CompiledFunction(module, mode))
        object.__setattr__(self, "_training", {})  # guard -> "warm", "eager" or a module.TrainingEntry

    def __call__(self, *args, **kwargs):
        from ..grad_mode import is_grad_enabled
        from ..tensor import Tensor

        mod = self._orig_mod
        needs_grad = is_grad_enabled() and (any(p.requires_grad for p in mod.parameters()) or any(
            isinstance(a, Tensor) and a.requires_grad for a in args))
        if not needs_grad:
            return self._compiled(*args, **kwargs)
        if kwargs:
            return mod(*args, **kwargs)
        from . import module as _module
        from .runtime import _guard

        key = (_guard(args, {}), mod.training)
        e = self._training.get(key)
        if e is None:
            self._training[key] = "warm"
            return mod(*args)  # warm-up
        if e == "warm":
            e, why = _module.record_training(mod, args, type(mod).__name__)
            if e is None:
                log.warning("autograd.compile: %s with autograd runs eagerly: %s", type(mod).__name__, why)
                self._training[key] = "eager"
                return mod(*args)
            self._training[key] = e
        if e == "eager":
            return mod(*args)
        return _module.apply(e, args)

    def __getattr__(self, name):
        return getattr(self._orig_mod, name)

    def __setattr__(self, name, value):
        setattr(self._orig_mod, name, value)

    def __repr__(self):
        return f"CompiledModule({self._orig_mod!r})"


def compile(model=None, *, mode: str | None = "default", fullgraph: bool = False, dynamic=None, backend=None,
            options=None, disable: bool = False):
    """Compile a function (a training step) or a module (see the package docstring). Like ``torch.compile``, usable
    as ``compile(fn)``, ``@compile`` and ``@compile(mode=...)``; ``disable=True`` returns ``model`` itself."""
    mode = "default" if mode is None else mode
    if mode not in MODES:
        raise ValueError(f"autograd.compile: unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if backend not in (None, "tkernels", "inductor"):
        raise ValueError(f"autograd.compile: unknown backend {backend!r}; this framework has one code generator "
                         f"(backend=None or 'tkernels')")
    if model is None:
        return lambda m: compile(m, mode=mode, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 options=options, disable=disable)
    if not callable(model):
        raise TypeError(f"autograd.compile: expected a function or a module, got {type(model).__name__}")
    if disable:
        return model
    if hasattr(model, "parameters") and hasattr(model, "forward"):
        return CompiledModule(model, mode)
    return CompiledFunction(model, mode)
