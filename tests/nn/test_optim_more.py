"""RMSprop/Adagrad vs closed forms, LBFGS convergence, schedulers vs their formulas, grad clipping."""

import math

import numpy as np
import pytest

import autograd as ag
import nn
from nn.optim import lr_scheduler

from .test_optim import _run, _setup


def _rmsprop_ref(ws, gs, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False):
    ws = [w.copy() for w in ws]
    sq = [np.zeros_like(w) for w in ws]
    ga = [np.zeros_like(w) for w in ws]
    buf = [np.zeros_like(w) for w in ws]
    for step_g in gs:
        for i, g in enumerate(step_g):
            g = g + weight_decay * ws[i]
            sq[i] = alpha * sq[i] + (1 - alpha) * g * g
            if centered:
                ga[i] = ga[i] + (1 - alpha) * (g - ga[i])
                avg = np.sqrt(sq[i] - ga[i] ** 2) + eps
            else:
                avg = np.sqrt(sq[i]) + eps
            if momentum:
                buf[i] = momentum * buf[i] + g / avg
                ws[i] = ws[i] - lr * buf[i]
            else:
                ws[i] = ws[i] - lr * g / avg
    return ws


@pytest.mark.parametrize("kw", [dict(lr=0.01), dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)])
def test_rmsprop(kw):
    ws, gs = _setup(3)
    for a, b in zip(_run(nn.optim.RMSprop, ws, gs, **kw), _rmsprop_ref(ws, gs, **kw)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_adagrad():
    ws, gs = _setup(4)
    lr, decay, wd, init, eps = 0.1, 0.01, 0.05, 0.1, 1e-10
    ref = [w.copy() for w in ws]
    acc = [np.full_like(w, init) for w in ws]
    for t, step_g in enumerate(gs, 1):
        for i, g in enumerate(step_g):
            g = g + wd * ref[i]
            acc[i] += g * g
            ref[i] = ref[i] - lr / (1 + (t - 1) * decay) * g / (np.sqrt(acc[i]) + eps)
    out = _run(nn.optim.Adagrad, ws, gs, lr=lr, lr_decay=decay, weight_decay=wd, initial_accumulator_value=init)
    for a, b in zip(out, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10)


@pytest.mark.parametrize("ls", [None, "strong_wolfe"])
def test_lbfgs_rosenbrock(ls):
    xy = nn.Parameter(ag.tensor([-1.5, 2.0], dtype=ag.float64))
    opt = nn.optim.LBFGS([xy], lr=1 if ls else 0.5, max_iter=200 if ls else 500, history_size=10,
                         line_search_fn=ls, tolerance_grad=1e-10, tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        x, y = xy[0], xy[1]
        loss = (1 - x) ** 2 + 100 * (y - x * x) ** 2
        loss.backward()
        return loss
    for _ in range(5 if ls else 20):
        opt.step(closure)
    np.testing.assert_allclose(xy.detach().numpy(), [1.0, 1.0], atol=1e-4)
    with pytest.raises(RuntimeError, match="closure"):
        opt.step(None)


def _opt(lr=1.0, **kw):
    return nn.optim.SGD([nn.Parameter(ag.zeros(1))], lr=lr, **kw)


def _lrs(sched, n):
    out = [sched.get_last_lr()[0]]
    for _ in range(n):
        sched.optimizer.step()
        sched.step()
        out.append(sched.get_last_lr()[0])
    return np.array(out)


def test_step_multistep_exponential_lambda_linear():
    np.testing.assert_allclose(_lrs(lr_scheduler.StepLR(_opt(), 3, 0.5), 9), [0.5 ** (e // 3) for e in range(10)])
    np.testing.assert_allclose(_lrs(lr_scheduler.MultiStepLR(_opt(), [2, 5, 5], 0.1), 7),
                               [0.1 ** sum(m <= e for m in [2, 5, 5]) for e in range(8)], rtol=1e-12)
    np.testing.assert_allclose(_lrs(lr_scheduler.ExponentialLR(_opt(), 0.9), 6), [0.9**e for e in range(7)], rtol=1e-12)
    np.testing.assert_allclose(_lrs(lr_scheduler.LambdaLR(_opt(2.0), lambda e: 1 / (e + 1)), 4),
                               [2 / (e + 1) for e in range(5)])
    np.testing.assert_allclose(_lrs(lr_scheduler.LinearLR(_opt(), 0.25, 1.0, 4), 6),
                               [0.25 + 0.75 * min(e, 4) / 4 for e in range(7)], rtol=1e-12)


def test_cosine_and_warm_restarts():
    T, m = 10, 0.01
    np.testing.assert_allclose(_lrs(lr_scheduler.CosineAnnealingLR(_opt(), T, m), 25),
                               [m + (1 - m) * (1 + math.cos(math.pi * e / T)) / 2 for e in range(26)], atol=1e-12)
    lrs = _lrs(lr_scheduler.CosineAnnealingWarmRestarts(_opt(), T_0=3, T_mult=2, eta_min=0.0), 10)
    tcur, ti, ref = 0, 3, []
    for _ in range(11):
        ref.append((1 + math.cos(math.pi * tcur / ti)) / 2)
        tcur += 1
        if tcur >= ti:
            tcur, ti = tcur - ti, ti * 2
    np.testing.assert_allclose(lrs, ref, atol=1e-12)


def test_onecycle_with_adam_betas():
    p = nn.Parameter(ag.zeros(1))
    opt = nn.optim.Adam([p], lr=1.0)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=0.3)
    lrs, moms = [opt.param_groups[0]["lr"]], [opt.param_groups[0]["betas"][0]]
    for _ in range(9):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
        moms.append(opt.param_groups[0]["betas"][0])

    def cos(a, b, pct):
        return b + (a - b) / 2 * (math.cos(math.pi * pct) + 1)
    up = 0.3 * 10 - 1
    ref_lr = [cos(1 / 25, 1.0, e / up) if e <= up else cos(1.0, 1 / 25 / 1e4, (e - up) / (9 - up)) for e in range(10)]
    ref_m = [cos(0.95, 0.85, e / up) if e <= up else cos(0.85, 0.95, (e - up) / (9 - up)) for e in range(10)]
    np.testing.assert_allclose(lrs, ref_lr, rtol=1e-12)
    np.testing.assert_allclose(moms, ref_m, rtol=1e-12)


def test_sequential_warmup_then_cosine_and_resume():
    opt = _opt()
    warm = lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3)
    cos = lr_scheduler.CosineAnnealingLR(opt, T_max=5)
    seq = lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[3])
    lrs = _lrs(seq, 8)
    ref = [0.1 + 0.9 * e / 3 for e in range(3)] + [(1 + math.cos(math.pi * e / 5)) / 2 for e in range(6)]
    np.testing.assert_allclose(lrs, ref, atol=1e-12)
    sd = lr_scheduler.StepLR(_opt(), 2, 0.5)
    for _ in range(3):
        sd.step()
    state = sd.state_dict()
    other = lr_scheduler.StepLR(_opt(), 2, 0.5)
    other.load_state_dict(state)
    assert other.last_epoch == 3 and other.get_last_lr() == sd.get_last_lr()


def test_reduce_on_plateau():
    opt = _opt()
    s = lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1, min_lr=0.2)
    seen = []
    for metric in [1.0, 0.9, 0.95, 0.96, 0.97, 0.98, 0.99, 1.0, 1.0, 1.0]:
        s.step(metric)
        seen.append(opt.param_groups[0]["lr"])
    assert seen == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.2]


def test_clip_grad_norm_and_value():
    a = nn.Parameter(ag.zeros(3))
    b = nn.Parameter(ag.zeros(4))
    a.grad = ag.tensor([3.0, 0.0, 0.0])
    b.grad = ag.tensor([0.0, 4.0, 0.0, 0.0])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert abs(float(total) - 5.0) < 1e-6
    np.testing.assert_allclose(a.grad.numpy(), [0.6, 0, 0], rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), [0, 0.8, 0, 0], rtol=1e-5)
    total = nn.utils.clip_grad_norm_([a, b], max_norm=10.0, norm_type=math.inf)
    assert abs(float(total) - 0.8) < 1e-6
    np.testing.assert_allclose(b.grad.numpy(), [0, 0.8, 0, 0], rtol=1e-5)  # under the limit: unchanged
    a.grad = ag.tensor([math.nan, 0.0, 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([a], 1.0, error_if_nonfinite=True)
    b.grad = ag.tensor([-3.0, 0.5, 2.0, -0.1])
    nn.utils.clip_grad_value_([b], 1.0)
    np.testing.assert_allclose(b.grad.numpy(), [-1.0, 0.5, 1.0, -0.1])


def test_parameters_vector_round_trip():
    m = nn.Linear(3, 2)
    v = nn.utils.parameters_to_vector(m.parameters())
    assert v.shape == (8,)
    nn.utils.vector_to_parameters(ag.arange(8.0), m.parameters())
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(m.bias.detach().numpy(), [6.0, 7.0])
    with pytest.raises(RuntimeError, match="hold 8 elements"):
        nn.utils.vector_to_parameters(ag.zeros(5), m.parameters())


def test_custom_optimizer_written_the_pytorch_way():
    """``self.state[p]`` starts as an empty dict (PyTorch's defaultdict), and the state round-trips."""

    class Momentum(nn.optim.Optimizer):
        def __init__(self, params, lr=0.1, beta=0.9):
            super().__init__(params, dict(lr=lr, beta=beta))

        @ag.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    state = self.state[p]
                    if len(state) == 0:
                        state["buf"] = ag.zeros_like(p)
                    state["buf"].mul_(group["beta"]).add_(p.grad)
                    p.sub_(group["lr"] * state["buf"])

    w = ag.tensor([1.0, -2.0], requires_grad=True)
    opt = Momentum([w])
    for _ in range(2):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
    # by hand: g1 = 2w0, buf1 = g1, w1 = w0 - 0.1 g1; g2 = 2 w1, buf2 = 0.9 buf1 + g2, w2 = w1 - 0.1 buf2
    w0 = np.array([1.0, -2.0], dtype=np.float32)
    w1 = w0 - 0.1 * 2 * w0
    w2 = w1 - 0.1 * (0.9 * 2 * w0 + 2 * w1)
    np.testing.assert_allclose(w.detach().numpy(), w2, rtol=1e-6)
    sd = opt.state_dict()
    opt2 = Momentum([ag.tensor([0.0, 0.0], requires_grad=True)])
    opt2.load_state_dict(sd)
    assert isinstance(opt2.state, type(opt.state))
    np.testing.assert_array_equal(next(iter(opt2.state.values()))["buf"].numpy(), opt.state[w]["buf"].numpy())


@pytest.mark.parametrize("kw", [dict(), dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1), dict(maximize=True)])
@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_adadelta(kw, dev):
    ws, gs = _setup(5)
    lr, rho, eps, wd = kw.get("lr", 1.0), kw.get("rho", 0.9), kw.get("eps", 1e-6), kw.get("weight_decay", 0.0)
    ref = [w.copy() for w in ws]
    sq = [np.zeros_like(w) for w in ws]
    acc = [np.zeros_like(w) for w in ws]
    for step_g in gs:
        for i, g in enumerate(step_g):
            g = (-g if kw.get("maximize") else g) + wd * ref[i]
            sq[i] = rho * sq[i] + (1 - rho) * g * g
            delta = np.sqrt(acc[i] + eps) / np.sqrt(sq[i] + eps) * g
            acc[i] = rho * acc[i] + (1 - rho) * delta * delta
            ref[i] = ref[i] - lr * delta
    params = [nn.Parameter(ag.tensor(w, dtype=ag.float64, device=dev)) for w in ws]
    opt = nn.optim.Adadelta(params, **kw)
    for step_g in gs:
        for p, g in zip(params, step_g):
            p.grad = ag.tensor(g, dtype=ag.float64, device=dev)
        opt.step()
    for p, b in zip(params, ref):
        np.testing.assert_allclose(p.detach().cpu().numpy(), b, rtol=1e-10, atol=1e-14)
    assert float(opt.state[params[0]]["step"]) == len(gs)
    sd = opt.state_dict()
    assert sorted(sd["state"][0]) == ["acc_delta", "square_avg", "step"]
    assert sd["param_groups"][0]["rho"] == rho
    with pytest.raises(ValueError, match="Invalid rho value"):
        nn.optim.Adadelta(params, rho=1.5)
