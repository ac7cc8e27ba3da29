"""A whole training step (forward, backward, optimizer) captured with ``ag.graphs`` and replayed gives the same
parameters, losses and optimizer state as the eager steps, bit for bit on cpu and on interpreted cuda: with
Adam (its lean replay), AdamW with a learning-rate scheduler, SGD with momentum (the generic host step),
dropout (new masks per replay, the eager sequence), batch norm's running statistics, and gradients set to
None between replays."""

import contextlib

import numpy as np
import pytest

import autograd as ag
import nn
from nn import functional as F  # noqa: N812

DEVICES = ["cpu", "cuda"]


def _model(dev, seed=0, extra=False):
    ag.manual_seed(seed)
    layers = [nn.Linear(6, 16), nn.ReLU()]
    if extra:
        layers += [nn.BatchNorm1d(16), nn.Dropout(0.3)]
    m = nn.Sequential(*layers, nn.Linear(16, 4))
    return m.to(dev)


def _data(dev, n=5, seed=1):
    rng = np.random.default_rng(seed)
    return [(ag.tensor(rng.standard_normal((9, 6)).astype(np.float32), device=dev),
             ag.tensor(rng.integers(0, 4, 9), device=dev)) for _ in range(n)]


def _params(m):
    return [p.detach().cpu().numpy().copy() for p in m.parameters()]


def _train_both(batches, setup, step, *, after=None, between=None):
    """The same training loop twice: eagerly, and with its first step captured and the others replayed.
    ``setup()`` gives ``(model, opt, extra)``; ``step(model, opt, extra, x, y)`` runs one step on the static inputs
    and returns the tensors to watch (a replay rewrites them: they are read after every step); ``between`` runs
    before every step but the first, ``after`` after every step. Returns per run: (the watched values per step,
    the parameters, model, opt, extra)."""
    runs = []
    for captured in (False, True):
        model, opt, extra = setup()
        sx, sy = ag.zeros_like(batches[0][0]), ag.zeros_like(batches[0][1])
        g = ag.graphs.Graph()
        seen = []
        for i, (x, y) in enumerate(batches):
            sx.copy_(x)
            sy.copy_(y)
            if i > 0 and between:
                between(model, opt, extra)
            if captured and i > 0:
                g.replay()
            else:
                with ag.graphs.graph(g) if captured else contextlib.nullcontext():
                    outs = step(model, opt, extra, sx, sy)
            seen.append([o.detach().cpu().numpy().copy() for o in outs])
            if after:
                after(model, opt, extra)
        runs.append((seen, _params(model), model, opt, extra))
    return runs


def _assert_same_runs(runs):
    (seen_a, params_a, *_), (seen_b, params_b, *_) = runs
    assert len(seen_a) == len(seen_b)
    for step_a, step_b in zip(seen_a, seen_b):
        for a, b in zip(step_a, step_b):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(params_a, params_b):
        np.testing.assert_array_equal(a, b)


def _ce_step(model, opt, extra, x, y):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return [loss]


def _run(dev, make_opt, *, extra=False, sched=None, none_between=False, steps=5):
    """Eager and captured training of ``_model`` on the same batches; returns both runs' losses, params, optimizer
    state, buffers."""
    def setup():
        m = _model(dev, extra=extra)
        opt = make_opt(m.parameters())
        ctx = {"sched": sched(opt) if sched else None}
        ag.manual_seed(5)
        return m, opt, ctx

    runs = _train_both(_data(dev, steps), setup, _ce_step,
                       after=lambda m, opt, ctx: ctx["sched"] and ctx["sched"].step(),
                       between=(lambda m, opt, ctx: opt.zero_grad(set_to_none=True)) if none_between else None)
    out = []
    for seen, params, m, opt, _ in runs:
        state = [v.detach().cpu().numpy().copy() for st in opt.state.values() for v in st.values()
                 if isinstance(v, ag.Tensor)]
        bufs = [b.detach().cpu().numpy().copy() for b in m.buffers()]
        out.append(([float(s[0]) for s in seen], params, state, bufs))
    return out


def _same(a, b):
    for x, y in zip(a, b):
        if isinstance(x, list):
            assert len(x) == len(y)
            for u, v in zip(x, y):
                np.testing.assert_array_equal(u, v)
        else:
            assert x == y


@pytest.mark.parametrize("dev", DEVICES)
def test_adam_step_replays_like_eager(dev):
    eager, cap = _run(dev, lambda p: nn.optim.Adam(p, lr=1e-2))
    _same(eager, cap)
    assert not np.array_equal(cap[1][0], _params(_model(dev))[0])  # it trained


def test_adamw_with_a_scheduler_and_grads_set_to_none_between_replays():
    mk = lambda p: nn.optim.AdamW(p, lr=1e-2, weight_decay=0.1, amsgrad=True)  # noqa: E731
    sched = lambda o: nn.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5)  # noqa: E731
    eager, cap = _run("cpu", mk, sched=sched, none_between=True)
    _same(eager, cap)


@pytest.mark.parametrize("dev", DEVICES)
def test_sgd_momentum_replays_through_its_generic_host_step(dev):
    eager, cap = _run(dev, lambda p: nn.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True))
    _same(eager, cap)


def test_dropout_and_batch_norm_replay_the_eager_sequence():
    eager, cap = _run("cpu", lambda p: nn.optim.Adam(p, lr=1e-2), extra=True)
    _same(eager, cap)
    assert eager[3][0].any()  # running_mean moved


def test_adam_replay_follows_a_loaded_state_dict():
    data = _data("cpu", 4)
    runs = []
    for captured in (False, True):
        m = _model("cpu")
        opt = nn.optim.Adam(m.parameters(), lr=1e-2)
        x, y = data[0]
        g = ag.graphs.Graph()
        if captured:
            with ag.graphs.graph(g):
                loss = F.cross_entropy(m(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        else:
            loss = F.cross_entropy(m(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        sd = opt.state_dict()
        opt.load_state_dict(sd)  # new state tensors: the lean replay must notice
        for _ in range(2):
            if captured:
                g.replay()
            else:
                loss = F.cross_entropy(m(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        runs.append((_params(m), [int(s["step"].item()) for s in opt.state.values()]))
    for a, b in zip(runs[0][0], runs[1][0]):
        np.testing.assert_array_equal(a, b)
    assert runs[0][1] == runs[1][1] == [3, 3, 3, 3]


def test_a_closure_cannot_be_captured():
    m = _model("cpu")
    opt = nn.optim.SGD(m.parameters(), lr=0.1)
    x, y = _data("cpu", 1)[0]
    with pytest.raises(RuntimeError, match="a closure cannot be captured"):
        with ag.graphs.graph(ag.graphs.Graph()):
            opt.step(lambda: F.cross_entropy(m(x), y))


def test_reading_the_loss_inside_the_capture_is_refused():
    m = _model("cpu")
    x, y = _data("cpu", 1)[0]
    with pytest.raises(RuntimeError, match="not allowed while a graph is being captured"):
        with ag.graphs.graph(ag.graphs.Graph()):
            loss = F.cross_entropy(m(x), y)
            loss.item()


@pytest.mark.parametrize("dev", DEVICES)
def test_a_gpt_step_with_clipping_and_a_schedule_replays_like_eager(dev):
    """The char GPT example's step (embeddings, causal attention, layer norms, GELU, weight tying, AdamW over two
    parameter groups, gradient clipping, a warmup schedule) on a fixed batch: captured and replayed, the same."""
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from examples import char_gpt

    rng = np.random.default_rng(0)
    batches = [(ag.tensor(rng.integers(0, 20, (2, 8)), device=dev), ag.tensor(rng.integers(0, 20, (2, 8)), device=dev))
               for _ in range(4)]
    def setup():
        ag.manual_seed(0)
        model = char_gpt.GPT(20, 8, 1, 2, 16, 0.0).to(dev)
        decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
        rest = [p for n, p in model.named_parameters() if p.dim() < 2]
        opt = nn.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}], lr=1e-2)
        return model, opt, nn.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3)

    def step(model, opt, sched, x, y):
        loss = model(x, y)[1]
        opt.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        return [loss, norm]

    _assert_same_runs(_train_both(batches, setup, step, after=lambda m, opt, sched: sched.step()))


@pytest.mark.parametrize("dev", DEVICES)
def test_the_digits_cnn_step_replays_like_eager(dev):
    """Convolutions, max pooling and flatten (the digits CNN of the README's example) under capture."""
    rng = np.random.default_rng(2)
    batches = [(ag.tensor(rng.random((4, 1, 8, 8)).astype(np.float32), device=dev),
                ag.tensor(rng.integers(0, 10, 4), device=dev)) for _ in range(3)]
    def setup():
        ag.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(4 * 4 * 4, 10)).to(dev)
        return model, nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), None

    _assert_same_runs(_train_both(batches, setup, _ce_step))


def test_gradients_found_at_capture_are_summed_into_and_zero_grad_between_replays_restarts_them():
    """A capture whose backward added to existing gradients: with zero_grad() (to None) between steps the replays
    equal eager steps (which assign); the stale sum is not carried over."""
    data = _data("cpu", 4)

    def setup():
        m = _model("cpu")
        opt = nn.optim.Adam(m.parameters(), lr=1e-2)
        F.cross_entropy(m(data[0][0]), data[0][1]).backward()
        opt.zero_grad(set_to_none=False)  # zero gradients exist when the first backward runs
        assert all(p.grad is not None for p in m.parameters())
        return m, opt, None

    def step(m, opt, _, x, y):
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return [p.grad for p in m.parameters()]  # (a replay points .grad at these again)

    _assert_same_runs(_train_both(data, setup, step, after=lambda m, opt, _: opt.zero_grad()))


def test_an_adam_subclass_step_override_runs_at_each_replay():
    class Frozen(nn.optim.Adam):
        calls = 0

        def step(self, closure=None):
            type(self).calls += 1
            for grp in self.param_groups:
                for p in grp["params"]:
                    p.grad = ag.zeros_like(p)  # no update, whatever the gradients
            return super().step(closure)

    m = _model("cpu")
    before = _params(m)
    opt = Frozen(m.parameters(), lr=0.1)
    x, y = _data("cpu", 1)[0]
    g = ag.graphs.Graph()
    with ag.graphs.graph(g):
        F.cross_entropy(m(x), y).backward()
        opt.step()
    g.replay()
    g.replay()
    assert Frozen.calls == 3
    for a, b in zip(before, _params(m)):
        np.testing.assert_array_equal(a, b)


def test_host_side_random_state_is_refused_and_the_same_code_without_it_captures():
    q = ag.randn(1, 2, 4, 8)
    with pytest.raises(RuntimeError, match="scaled_dot_product_attention: cannot be captured.*dropout"):
        with ag.graphs.graph(ag.graphs.Graph()):
            F.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
    w = ag.randn(8, 8, requires_grad=True)
    with pytest.raises(RuntimeError, match="checkpoint: cannot be captured.*preserve_rng_state=False"):
        with ag.graphs.graph(ag.graphs.Graph()):
            ag.checkpoint(lambda a: (a @ w).tanh(), q, use_reentrant=False)
    g = ag.graphs.Graph()
    with ag.graphs.graph(g):
        out = ag.checkpoint(lambda a: F.scaled_dot_product_attention(a @ w, a, a, is_causal=True).tanh(), q,
                            use_reentrant=False, preserve_rng_state=False).sum()
        out.backward()
    first = w.grad.numpy().copy()
    with ag.no_grad():
        q.copy_(q * 0.5)
    w.grad = None
    g.replay()
    w2 = w.detach().clone().requires_grad_()
    ref = F.scaled_dot_product_attention(q @ w2, q, q, is_causal=True).tanh().sum()
    ref.backward()
    np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert np.abs(first - w.grad.numpy()).max() > 0
