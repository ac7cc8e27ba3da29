"""Adamax, NAdam, RAdam, ASGD, Rprop (and SparseAdam's limits) vs NumPy references of their documented updates;
state_dict layout and round trip; add_param_group; ConstantLR, PolynomialLR, MultiplicativeLR, CyclicLR and
ChainedScheduler vs their closed forms; the same against PyTorch when it is importable."""

import math

import numpy as np
import pytest

import autograd as ag
import nn
from nn.optim import lr_scheduler

STEPS = 12


def _setup(seed=0):
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    gs = [[rng.standard_normal(w.shape) for w in ws] for _ in range(STEPS)]
    for k in range(3, STEPS, 4):  # zero entries: Rprop's "no sign" case
        gs[k][0][0, :2] = 0
    return ws, gs


def _f32(x):
    """PyTorch keeps NAdam's mu_product and ASGD's eta and mu in 0-d tensors of the scalar dtype (float32)."""
    return float(np.float32(x))


# NumPy references: one function per optimizer, the update as documented, over all steps; returns the weights.

def _adamax_ref(ws, gs, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, maximize=False):
    b1, b2 = betas
    ws = [w.copy() for w in ws]
    m = [np.zeros_like(w) for w in ws]
    u = [np.zeros_like(w) for w in ws]
    for t, step_g in enumerate(gs, 1):
        for i, g in enumerate(step_g):
            g = (-g if maximize else g) + weight_decay * ws[i]
            m[i] = m[i] + (1 - b1) * (g - m[i])
            u[i] = np.maximum(b2 * u[i], np.abs(g) + eps)
            ws[i] = ws[i] - lr / (1 - b1**t) * m[i] / u[i]
    return ws


def _nadam_ref(ws, gs, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
               decoupled_weight_decay=False, maximize=False):
    b1, b2 = betas
    ws = [w.copy() for w in ws]
    m = [np.zeros_like(w) for w in ws]
    v = [np.zeros_like(w) for w in ws]
    prod = [1.0] * len(ws)
    for t, step_g in enumerate(gs, 1):
        mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        for i, g in enumerate(step_g):
            g = -g if maximize else g
            if decoupled_weight_decay:
                ws[i] = ws[i] * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * ws[i]
            prod[i] = _f32(np.float32(prod[i]) * np.float32(mu))
            m[i] = m[i] + (1 - b1) * (g - m[i])
            v[i] = b2 * v[i] + (1 - b2) * g * g
            d = np.sqrt(v[i] / (1 - b2**t)) + eps
            ws[i] = ws[i] - lr * (1 - mu) / (1 - prod[i]) * g / d - lr * mu_next / (1 - prod[i] * mu_next) * m[i] / d
    return ws


def _radam_ref(ws, gs, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled_weight_decay=False,
               maximize=False):
    b1, b2 = betas
    ws = [w.copy() for w in ws]
    m = [np.zeros_like(w) for w in ws]
    v = [np.zeros_like(w) for w in ws]
    rho_inf = 2 / (1 - b2) - 1
    for t, step_g in enumerate(gs, 1):
        rho = rho_inf - 2 * t * b2**t / (1 - b2**t)
        for i, g in enumerate(step_g):
            g = -g if maximize else g
            if decoupled_weight_decay:
                ws[i] = ws[i] * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * ws[i]
            m[i] = m[i] + (1 - b1) * (g - m[i])
            v[i] = b2 * v[i] + (1 - b2) * g * g
            mhat = m[i] / (1 - b1**t)
            if rho > 5:
                r = math.sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho))
                ws[i] = ws[i] - lr * mhat * math.sqrt(1 - b2**t) / (np.sqrt(v[i]) + eps) * r
            else:
                ws[i] = ws[i] - lr * mhat
    return ws


def _asgd_ref(ws, gs, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, maximize=False, axs=None):
    ws = [w.copy() for w in ws]
    ax = [np.zeros_like(w) for w in ws]
    eta, mu = _f32(lr), 1.0
    for t, step_g in enumerate(gs, 1):
        for i, g in enumerate(step_g):
            g = (-g if maximize else g) + weight_decay * ws[i]
            ws[i] = ws[i] * (1 - lambd * eta) - eta * g
            ax[i] = ws[i].copy() if mu == 1 else ax[i] + (ws[i] - ax[i]) * mu
        eta = _f32(lr / (1 + lambd * lr * t) ** alpha)
        mu = _f32(1 / max(1, t - t0))
    if axs is not None:
        axs.extend(ax)
    return ws


def _rprop_ref(ws, gs, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    ws = [w.copy() for w in ws]
    prev = [np.zeros_like(w) for w in ws]
    size = [np.full_like(w, lr) for w in ws]
    for step_g in gs:
        for i, g in enumerate(step_g):
            g = -g if maximize else g
            s = np.sign(g * prev[i])
            size[i] = np.clip(size[i] * np.where(s > 0, etas[1], np.where(s < 0, etas[0], 1.0)), *step_sizes)
            g = np.where(s < 0, 0.0, g)
            ws[i] = ws[i] - np.sign(g) * size[i]
            prev[i] = g
    return ws


REFS = {"Adamax": _adamax_ref, "NAdam": _nadam_ref, "RAdam": _radam_ref, "ASGD": _asgd_ref, "Rprop": _rprop_ref}
CASES = [
    ("Adamax", {}), ("Adamax", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1, maximize=True)),
    ("NAdam", {}), ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", {}), ("RAdam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)),  # rho_t > 5 from step 6 on
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9), weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("ASGD", {}), ("ASGD", dict(lr=0.1, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1)),
    ("ASGD", dict(t0=0, maximize=True)),
    ("Rprop", {}), ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.02), maximize=True)),
]
STATE_KEYS = {"Adamax": ["step", "exp_avg", "exp_inf"], "NAdam": ["step", "mu_product", "exp_avg", "exp_avg_sq"],
              "RAdam": ["step", "exp_avg", "exp_avg_sq"], "ASGD": ["step", "eta", "mu", "ax"],
              "Rprop": ["step", "prev", "step_size"]}


def _params(ws, dev="cpu"):
    return [nn.Parameter(ag.tensor(w, dtype=ag.float64, device=dev)) for w in ws]


def _steps(opt, params, gs, dev="cpu"):
    for step_g in gs:
        for p, g in zip(params, step_g):
            p.grad = ag.tensor(g, dtype=ag.float64, device=dev)
        opt.step()


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_vs_numpy_reference(name, kw):
    ws, gs = _setup()
    params = _params(ws)
    opt = getattr(nn.optim, name)(params, **kw)
    _steps(opt, params, gs)
    for p, ref in zip(params, REFS[name](ws, gs, **kw)):
        np.testing.assert_allclose(p.detach().numpy(), ref, rtol=0, atol=1e-10)
    assert all(list(opt.state[p]) == STATE_KEYS[name] for p in params)


@pytest.mark.parametrize("name,kw", [CASES[1], CASES[4], CASES[7], CASES[9], CASES[12]],
                         ids=["Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_interpreted_cuda(name, kw):
    ws, gs = _setup(1)
    gs = gs[:6]
    params = _params(ws, "cuda")
    opt = getattr(nn.optim, name)(params, **kw)
    _steps(opt, params, gs, "cuda")
    for p, ref in zip(params, REFS[name](ws, gs, **kw)):
        assert p.device.type == "cuda"
        np.testing.assert_allclose(p.detach().cpu().numpy(), ref, rtol=0, atol=1e-10)


def test_asgd_average():
    ws, gs = _setup(2)
    kw = dict(lr=0.1, t0=4, lambd=0.01)
    params = _params(ws)
    opt = nn.optim.ASGD(params, **kw)
    _steps(opt, params, gs)
    axs = []
    _asgd_ref(ws, gs, **kw, axs=axs)
    for p, ax in zip(params, axs):
        np.testing.assert_allclose(opt.state[p]["ax"].numpy(), ax, rtol=0, atol=1e-10)
        assert opt.state[p]["eta"].shape == () and opt.state[p]["mu"].shape == ()


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_state_dict_round_trip(name, kw):
    ws, gs = _setup(3)
    cls = getattr(nn.optim, name)
    params = _params(ws)
    opt = cls(params, **kw)
    _steps(opt, params, gs[:5])
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1] and [g["params"] for g in sd["param_groups"]] == [[0, 1]]
    assert all(list(s) == STATE_KEYS[name] for s in sd["state"].values())
    assert all(s["step"].shape == () and float(s["step"].item()) == 5 for s in sd["state"].values())
    fresh = _params([p.detach().numpy() for p in params])
    opt2 = cls(fresh, **{k: v for k, v in kw.items() if k != "lr"})  # lr comes back from the state dict
    opt2.load_state_dict(sd)
    scalars = {"NAdam": ["mu_product"], "ASGD": ["eta", "mu"]}.get(name, [])
    for k in scalars:  # like PyTorch's load: floating state but `step` takes the parameter's dtype
        assert all(s[k].dtype == ag.float32 for s in sd["state"].values())
        assert all(opt2.state[p][k].dtype == ag.float64 for p in fresh)
    _steps(opt, params, gs[5:])
    _steps(opt2, fresh, gs[5:])
    for a, b in zip(params, fresh):
        # exact, but where those float32 scalars became float64 (they then round less)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=0, atol=1e-6 if scalars else 0)


def test_group_options_and_add_param_group():
    a, b, c = (nn.Parameter(ag.zeros(2)) for _ in range(3))
    opt = nn.optim.NAdam([{"params": [a]}, {"params": [b], "lr": 0.5}], weight_decay=0.1)
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["momentum_decay"] == 4e-3
    opt.add_param_group({"params": c, "betas": (0.5, 0.6)})
    g = opt.param_groups[2]
    assert g["params"] == [c] and g["betas"] == (0.5, 0.6) and g["weight_decay"] == 0.1 and g["lr"] == 2e-3
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    assert list(opt.state_dict()["param_groups"][0]) == [
        "lr", "betas", "eps", "weight_decay", "momentum_decay", "decoupled_weight_decay", "maximize", "foreach",
        "capturable", "differentiable", "params"]
    assert type(opt.state).__name__ == "defaultdict" and opt.state[a] == {}


@pytest.mark.parametrize("cls,kw,msg", [
    (nn.optim.Adamax, dict(lr=-1), "Invalid learning rate: -1"),
    (nn.optim.Adamax, dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (nn.optim.NAdam, dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    (nn.optim.RAdam, dict(eps=-1), "Invalid epsilon value: -1"),
    (nn.optim.RAdam, dict(betas=(0.9, 1.5)), "Invalid beta parameter at index 1: 1.5"),
    (nn.optim.ASGD, dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (nn.optim.Rprop, dict(etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
    (nn.optim.SparseAdam, dict(lr=0.0), "Invalid learning rate: 0.0"),
])
def test_validation(cls, kw, msg):
    with pytest.raises(ValueError, match=msg):
        cls([nn.Parameter(ag.zeros(2))], **kw)


def test_sparse_adam_needs_sparse_gradients():
    p = nn.Parameter(ag.zeros(2))
    opt = nn.optim.SparseAdam([p])
    assert opt.defaults == dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False)
    opt.step()  # no gradient: nothing to do
    p.grad = ag.ones(2)
    with pytest.raises(RuntimeError, match=r"SparseAdam does not support dense gradients, please consider Adam"):
        opt.step()


# Schedulers: the learning rate (and momentum) after each of 30 steps vs the closed form.

def _sched_run(make, opt_cls=nn.optim.SGD, n=30, **okw):
    ps = [nn.Parameter(ag.zeros(2)), nn.Parameter(ag.zeros(2))]
    opt = opt_cls([{"params": [ps[0]], "lr": 0.1}, {"params": [ps[1]], "lr": 0.2}], **okw)
    sched = make(opt)
    lrs, moms = [[g["lr"] for g in opt.param_groups]], [[_momentum(g) for g in opt.param_groups]]
    for _ in range(n):
        opt.step()
        sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
        moms.append([_momentum(g) for g in opt.param_groups])
    assert sched.get_last_lr() == lrs[-1]
    return np.array(lrs), np.array(moms), opt, sched


def _momentum(g):
    return g["betas"][0] if "betas" in g else g.get("momentum", 0.0)


def _triangle(e, up, down):
    """CyclicLR's position: (cycle number, the fraction of the way from base to max)."""
    total = up + down
    cycle = math.floor(1 + e / total)
    x = 1 + e / total - cycle
    return cycle, (x * total / up if x <= up / total else (1 - x) * total / down)


BASES = (0.1, 0.2)
SCHEDULES = {
    "ConstantLR": (lambda o: lr_scheduler.ConstantLR(o, factor=0.25, total_iters=7),
                   lambda e, b: b * (0.25 if e < 7 else 1.0)),
    "PolynomialLR": (lambda o: lr_scheduler.PolynomialLR(o, total_iters=20, power=2.5),
                     lambda e, b: b * (1 - min(e, 20) / 20) ** 2.5),
    "MultiplicativeLR": (lambda o: lr_scheduler.MultiplicativeLR(o, lambda k: 0.9 + 0.001 * k),
                         lambda e, b: b * math.prod(0.9 + 0.001 * k for k in range(1, e + 1))),
    "ChainedScheduler": (lambda o: lr_scheduler.ChainedScheduler(
        [lr_scheduler.ConstantLR(o, factor=0.5, total_iters=4), lr_scheduler.ExponentialLR(o, 0.9)]),
        lambda e, b: b * (0.5 if e < 4 else 1.0) * 0.9**e),
    "ChainedScheduler-poly": (lambda o: lr_scheduler.ChainedScheduler(
        [lr_scheduler.PolynomialLR(o, total_iters=9), lr_scheduler.MultiplicativeLR(o, lambda k: 0.95)], o),
        lambda e, b: b * (1 - min(e, 9) / 9) * 0.95**e),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_scheduler_closed_form(name):
    make, formula = SCHEDULES[name]
    lrs, _, _, _ = _sched_run(make)
    expect = [[formula(e, b) for b in BASES] for e in range(31)]
    np.testing.assert_allclose(lrs, expect, rtol=1e-12, atol=1e-15)


CYCLIC = {
    "triangular": (dict(base_lr=0.01, max_lr=0.1, step_size_up=4, step_size_down=6), lambda c, e: 1.0),
    "triangular2": (dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2", base_momentum=0.7),
                    lambda c, e: 0.5 ** (c - 1)),
    "exp_range": (dict(base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range", gamma=0.97),
                  lambda c, e: 0.97**e),
    "scale_fn": (dict(base_lr=0.01, max_lr=0.1, step_size_up=5, scale_fn=lambda k: 1 / (1 + k),
                      scale_mode="iterations"), lambda c, e: 1 / (1 + e)),
}


@pytest.mark.parametrize("opt_cls,okw", [(nn.optim.SGD, dict(momentum=0.9)), (nn.optim.Adam, {})],
                         ids=["SGD", "Adam"])
@pytest.mark.parametrize("name", list(CYCLIC))
def test_cyclic_lr(name, opt_cls, okw):
    kw, scale = CYCLIC[name]
    lrs, moms, _, _ = _sched_run(lambda o: lr_scheduler.CyclicLR(o, **kw), opt_cls, **okw)
    up, down = kw["step_size_up"], kw.get("step_size_down") or kw["step_size_up"]
    bm, mm = kw.get("base_momentum", 0.8), 0.9
    for e in range(31):
        c, frac = _triangle(e, up, down)
        s = scale(c, e) * frac
        np.testing.assert_allclose(lrs[e], kw["base_lr"] + (kw["max_lr"] - kw["base_lr"]) * s, rtol=1e-12)
        np.testing.assert_allclose(moms[e], mm - (mm - bm) * s, rtol=1e-12)


def test_cyclic_lr_checks():
    opt = nn.optim.Adagrad([nn.Parameter(ag.zeros(2))])
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        lr_scheduler.CyclicLR(opt, 0.01, 0.1)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        lr_scheduler.CyclicLR(opt, 0.01, 0.1, mode="sine", cycle_momentum=False)


class _Decay:
    """A callable object: its attributes are what a scheduler's state dict keeps of it."""

    def __init__(self, factor):
        self.factor = factor

    def __call__(self, e):
        return self.factor


@pytest.mark.parametrize("make", [
    lambda o: lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="triangular2"),
    lambda o: lr_scheduler.MultiplicativeLR(o, _Decay(0.9)),
    lambda o: lr_scheduler.ChainedScheduler([lr_scheduler.ConstantLR(o, 0.5, 6), lr_scheduler.PolynomialLR(o, 12)]),
], ids=["CyclicLR", "MultiplicativeLR", "ChainedScheduler"])
def test_scheduler_state_dict_round_trip(make):
    lrs, moms, opt, sched = _sched_run(make, n=5, momentum=0.9)
    sd = sched.state_dict()
    assert "optimizer" not in sd and not any(callable(v) for v in sd.values())
    if isinstance(sched, lr_scheduler.MultiplicativeLR):
        assert sd["lr_lambdas"] == [{"factor": 0.9}, {"factor": 0.9}]
    opt_sd = opt.state_dict()
    ps = [nn.Parameter(ag.zeros(2)), nn.Parameter(ag.zeros(2))]
    opt2 = nn.optim.SGD([{"params": [ps[0]]}, {"params": [ps[1]]}], lr=1.0, momentum=0.5)
    opt2.load_state_dict(opt_sd)
    sched2 = make(opt2)
    sched2.load_state_dict(sd)
    opt2.load_state_dict(opt_sd)  # the new scheduler's first step changed the rates
    for _ in range(10):
        sched.step()
        sched2.step()
        assert [g["lr"] for g in opt.param_groups] == [g["lr"] for g in opt2.param_groups]
        assert [g["momentum"] for g in opt.param_groups] == [g["momentum"] for g in opt2.param_groups]


# PyTorch, when importable (not in CI): the same weights, states and schedules from the same inputs.

def test_against_torch():
    torch = pytest.importorskip("torch")
    ws, gs = _setup(4)
    for name, kw in CASES:
        params = _params(ws)
        tparams = [torch.tensor(w, requires_grad=True) for w in ws]
        opt = getattr(nn.optim, name)(params, **kw)
        topt = getattr(torch.optim, name)(tparams, foreach=False, **kw)
        for step_g in gs:
            for p, q, g in zip(params, tparams, step_g):
                p.grad = ag.tensor(g, dtype=ag.float64)
                q.grad = torch.tensor(g)
            opt.step()
            topt.step()
        for p, q in zip(params, tparams):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=1e-14)
        sd, tsd = opt.state_dict(), topt.state_dict()
        assert list(sd["param_groups"][0]) == list(tsd["param_groups"][0])
        for i, ts in tsd["state"].items():
            assert list(sd["state"][i]) == list(ts)
            for k, v in ts.items():
                a = sd["state"][i][k].numpy()
                assert a.shape == tuple(v.shape) and str(a.dtype) == str(v.dtype).removeprefix("torch.")
                np.testing.assert_allclose(a, v.numpy(), rtol=0, atol=1e-14)
    tls = torch.optim.lr_scheduler
    tmakes = {
        "ConstantLR": lambda o: tls.ConstantLR(o, factor=0.25, total_iters=7),
        "PolynomialLR": lambda o: tls.PolynomialLR(o, total_iters=20, power=2.5),
        "MultiplicativeLR": lambda o: tls.MultiplicativeLR(o, lambda k: 0.9 + 0.001 * k),
        "ChainedScheduler": lambda o: tls.ChainedScheduler([tls.ConstantLR(o, factor=0.5, total_iters=4),
                                                            tls.ExponentialLR(o, 0.9)]),
        "ChainedScheduler-poly": lambda o: tls.ChainedScheduler(
            [tls.PolynomialLR(o, total_iters=9), tls.MultiplicativeLR(o, lambda k: 0.95)], o),
    }
    tmakes.update({f"CyclicLR-{k}": (lambda o, kw=kw: tls.CyclicLR(o, **kw)) for k, (kw, _) in CYCLIC.items()})
    ours = dict(SCHEDULES)
    ours.update({f"CyclicLR-{k}": ((lambda o, kw=kw: lr_scheduler.CyclicLR(o, **kw)), None)
                 for k, (kw, _) in CYCLIC.items()})
    for name, tmake in tmakes.items():
        for ocls, tcls, okw in ((nn.optim.SGD, torch.optim.SGD, dict(momentum=0.9)),
                                (nn.optim.Adam, torch.optim.Adam, {})):
            lrs, moms, _, _ = _sched_run(ours[name][0], ocls, **okw)
            tp = [torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)]
            topt = tcls([{"params": [tp[0]], "lr": 0.1}, {"params": [tp[1]], "lr": 0.2}], **okw)
            ts = tmake(topt)
            tl, tm = [[g["lr"] for g in topt.param_groups]], [[_momentum(g) for g in topt.param_groups]]
            for _ in range(30):
                topt.step()
                ts.step()
                tl.append([g["lr"] for g in topt.param_groups])
                tm.append([_momentum(g) for g in topt.param_groups])
            np.testing.assert_array_equal(lrs, tl, err_msg=name)
            np.testing.assert_array_equal(moms, tm, err_msg=name)
