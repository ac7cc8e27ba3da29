"""``functional_call``: call a module with some of its parameters and buffers replaced by given tensors (PyTorch's
``torch.func.functional_call`` / ``nn.utils.stateless.functional_call``), e.g. for meta-learning or per-sample
gradients: the module's own tensors are put back afterwards, whatever happens in the call."""

from __future__ import annotations

from autograd.tensor import Tensor

__all__ = ["functional_call"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts`` (a dict of dotted names, or a
    sequence of such dicts) in place of the module's. With ``tie_weights`` a tensor given for one name of a tied
    parameter (``lm_head.weight is wte.weight``) replaces every name of it; ``strict`` requires a tensor for every
    parameter and buffer and no other name."""
    dicts = [parameter_and_buffer_dicts] if isinstance(parameter_and_buffer_dicts, dict) else \
        list(parameter_and_buffer_dicts)
    given: dict = {}
    for d in dicts:
        for k, v in d.items():
            if k in given:
                raise ValueError(f"functional_call: {k!r} appeared in multiple dictionaries")
            given[k] = v
    slots = {}  # dotted name -> (the module holding it, its store, the attribute name)
    for prefix, mod in module.named_modules(remove_duplicate=False):
        for store in ("_parameters", "_buffers"):
            for name, t in mod.__dict__[store].items():
                slots[(prefix + "." if prefix else "") + name] = (mod, store, name, t)
    unknown = sorted(k for k in given if k not in slots)
    if unknown and strict:
        raise RuntimeError(f"functional_call: unexpected key(s): {', '.join(map(repr, unknown))} (not parameters or "
                           f"buffers of {type(module).__name__})")
    for k in unknown:  # (not strict: names the module does not have are not used, as in PyTorch)
        del given[k]
    if tie_weights:  # every other name of a tied tensor takes the value given for one of them
        by_id = {id(slots[k][3]): v for k, v in given.items() if slots[k][3] is not None}
        for k, (_, _, _, t) in slots.items():
            if k not in given and t is not None and id(t) in by_id:
                given[k] = by_id[id(t)]
    if strict:
        missing = sorted(k for k, s in slots.items() if k not in given and s[3] is not None)
        if missing:
            raise RuntimeError(f"functional_call: missing key(s): {', '.join(map(repr, missing))}")
    for k, v in given.items():
        if not isinstance(v, Tensor):
            raise TypeError(f"functional_call: {k!r} must be a Tensor, got {type(v).__name__}")
    saved = []
    try:
        for k, v in given.items():
            mod, store, name, t = slots[k]
            saved.append((mod.__dict__[store], name, t))
            mod.__dict__[store][name] = v
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for store, name, t in reversed(saved):
            store[name] = t
