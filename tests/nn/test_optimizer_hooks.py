"""Optimizer step and state-dict hooks (PyTorch's API; the expected calls are what PyTorch 2.13 makes)."""

import pytest

import autograd as ag
import nn
from nn.optim import optimizer as optimizer_mod


def _opt():
    p = nn.Parameter(ag.ones(2))
    p.grad = ag.ones(2)
    return nn.optim.AdamW([p], lr=0.1), p


def test_step_hooks_order_arguments_and_removal():
    opt, p = _opt()
    log = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", len(a), a[0] is o, sorted(k))))
    h2 = opt.register_step_post_hook(lambda o, a, k: log.append(("post",)))
    g = optimizer_mod.register_optimizer_step_pre_hook(lambda o, a, k: log.append(("global pre",)))
    try:
        opt.step()
        opt.step(closure=None)
    finally:
        g.remove()
    h1.remove()
    opt.step()
    h2.remove()
    opt.step()
    assert log == [("global pre",), ("pre", 1, True, []), ("post",), ("global pre",), ("pre", 1, True, ["closure"]),
                   ("post",), ("post",)]
    sched = nn.optim.lr_scheduler.StepLR(opt, 1)
    opt.step()
    sched.step()
    assert round(float(p.detach().numpy()[0]), 6) == 0.496009  # (PyTorch's value after the same 5 steps)


def test_a_pre_hook_may_replace_the_arguments_and_must_return_a_pair():
    opt, _ = _opt()
    seen = []

    def closure():
        seen.append("closure")
        return ag.tensor(1.0)

    h = opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": closure}))
    assert opt.step().item() == 1.0 and seen == ["closure"]
    h.remove()
    opt.register_step_pre_hook(lambda o, a, k: 5)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt.step()


def test_state_dict_hooks():
    opt, _ = _opt()
    opt.step()
    log = []
    opt.register_state_dict_pre_hook(lambda o: log.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: (log.append("post"), {**sd, "extra": 1})[1])
    sd = opt.state_dict()
    assert sd["extra"] == 1
    opt.register_load_state_dict_pre_hook(lambda o, sd: (log.append("load pre"),
                                                         {k: v for k, v in sd.items() if k != "extra"})[1])
    opt.register_load_state_dict_post_hook(lambda o: log.append("load post"))
    opt.load_state_dict(sd)
    assert log == ["pre", "post", "load pre", "load post"]
