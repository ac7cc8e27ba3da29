"""Optimizers against their closed-form updates (NumPy), several steps; state_dict resume is bit-identical."""

import numpy as np
import pytest

import autograd as ag
import nn


def _setup(seed=0, n=2):
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal((3, 4)), rng.standard_normal(4)]
    gs = [[rng.standard_normal(w.shape) for w in ws] for _ in range(5)]
    return ws, gs


def _run(opt_cls, ws, gs, **kw):
    params = [nn.Parameter(ag.tensor(w, dtype=ag.float64)) for w in ws]
    opt = opt_cls(params, **kw)
    for step_g in gs:
        for p, g in zip(params, step_g):
            p.grad = ag.tensor(g, dtype=ag.float64)
        opt.step()
    return [p.detach().numpy() for p in params]


def _sgd_ref(ws, gs, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    ws = [w.copy() for w in ws]
    bufs = [None] * len(ws)
    for step_g in gs:
        for i, g in enumerate(step_g):
            d = -g if maximize else g
            d = d + weight_decay * ws[i]
            if momentum:
                bufs[i] = d.copy() if bufs[i] is None else momentum * bufs[i] + (1 - dampening) * d
                d = d + momentum * bufs[i] if nesterov else bufs[i]
            ws[i] = ws[i] - lr * d
    return ws


@pytest.mark.parametrize("kw", [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, dampening=0.5),
                                dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
                                dict(lr=0.1, maximize=True, weight_decay=0.1)])
def test_sgd(kw):
    ws, gs = _setup()
    for a, b in zip(_run(nn.optim.SGD, ws, gs, **kw), _sgd_ref(ws, gs, **kw)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _adam_ref(ws, gs, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, decoupled=False,
              maximize=False):
    ws = [w.copy() for w in ws]
    m = [np.zeros_like(w) for w in ws]
    v = [np.zeros_like(w) for w in ws]
    vmax = [np.zeros_like(w) for w in ws]
    for t, step_g in enumerate(gs, 1):
        for i, g in enumerate(step_g):
            g = -g if maximize else g
            if weight_decay:
                if decoupled:
                    ws[i] = ws[i] * (1 - lr * weight_decay)
                else:
                    g = g + weight_decay * ws[i]
            m[i] = betas[0] * m[i] + (1 - betas[0]) * g
            v[i] = betas[1] * v[i] + (1 - betas[1]) * g * g
            vhat = v[i]
            if amsgrad:
                vmax[i] = np.maximum(vmax[i], v[i])
                vhat = vmax[i]
            mh = m[i] / (1 - betas[0] ** t)
            ws[i] = ws[i] - lr * mh / (np.sqrt(vhat) / np.sqrt(1 - betas[1] ** t) + eps)
    return ws


@pytest.mark.parametrize("kw", [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1), dict(lr=0.01, amsgrad=True),
                                dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, maximize=True)])
def test_adam(kw):
    ws, gs = _setup(1)
    for a, b in zip(_run(nn.optim.Adam, ws, gs, **kw), _adam_ref(ws, gs, **kw)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kw", [dict(lr=0.01), dict(lr=0.01, weight_decay=0.5, amsgrad=True)])
def test_adamw(kw):
    ws, gs = _setup(2)
    ref_kw = dict(kw)
    ref_kw.setdefault("weight_decay", 1e-2)
    for a, b in zip(_run(nn.optim.AdamW, ws, gs, **kw), _adam_ref(ws, gs, decoupled=True, **ref_kw)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_param_groups_and_state_dict_resume_bit_identical():
    ag.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
    opt = nn.optim.Adam([{"params": model[0].parameters(), "lr": 0.01}, {"params": model[2].parameters()}],
                        lr=0.001, amsgrad=True)
    assert opt.param_groups[0]["lr"] == 0.01 and opt.param_groups[1]["lr"] == 0.001
    x = ag.randn(8, 4)

    def step(m, o):
        o.zero_grad()
        (m(x) ** 2).mean().backward()
        o.step()
    for _ in range(3):
        step(model, opt)
    sd_model = {k: v.clone() for k, v in model.state_dict().items()}
    sd_opt = opt.state_dict()  # references to the live state, like PyTorch: copy it before stepping on
    sd_opt = {"state": {k: {n: v.clone() for n, v in st.items()} for k, st in sd_opt["state"].items()},
              "param_groups": [dict(g) for g in sd_opt["param_groups"]]}
    assert sorted(sd_opt["state"]) == [0, 1, 2, 3] and sd_opt["param_groups"][1]["params"] == [2, 3]
    step(model, opt)
    expected = [p.detach().numpy().copy() for p in model.parameters()]

    model2 = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
    model2.load_state_dict(sd_model)
    opt2 = nn.optim.Adam([{"params": model2[0].parameters(), "lr": 0.5}, {"params": model2[2].parameters()}])
    opt2.load_state_dict(sd_opt)
    assert opt2.param_groups[0]["lr"] == 0.01 and opt2.param_groups[0]["amsgrad"]
    step(model2, opt2)
    for a, b in zip(expected, model2.parameters()):
        np.testing.assert_array_equal(a, b.detach().numpy())


def test_optimizer_errors():
    p = nn.Parameter(ag.ones(2))
    with pytest.raises(ValueError, match="empty parameter list"):
        nn.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        nn.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        nn.optim.Adam([p], lr=-1)
    with pytest.raises(TypeError, match="single Tensor"):
        nn.optim.SGD(p, lr=0.1)
    opt = nn.optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})


def test_zero_grad_and_closure():
    p = nn.Parameter(ag.tensor([1.0, 2.0]))
    opt = nn.optim.SGD([p], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss
    loss = opt.step(closure)
    assert float(loss) == 5.0
    np.testing.assert_allclose(p.detach().numpy(), [0.0, 0.0])
    opt.zero_grad()
    assert p.grad is None
