"""``python -m bench train``: training-step time of the example models, on cpu (and cuda when present),
next to PyTorch's for the same model when torch is importable.

Tables:
1. step time and samples/s (tokens/s for the GPT) of the digits MLP and CNN of ``examples/train_digits.py``
   and of the character GPT of ``examples/char_gpt.py`` (its cpu config; the "baby" config on cuda), and
   PyTorch's for the same model: the example's own source run on torch (its imports rewritten), loaded with
   our model's weights and checked to give the same first loss.
2. the DESIGN §11 targets: the small MLP step (64-256-10, batch 128, ReLU, cross-entropy, Adam) written with
   nn (``nn.Linear``, ``F.cross_entropy``, ``nn.optim.Adam``) against the same model by hand in NumPy
   (bench.autograd.NumpyMLP; target <= 1.3x), and the compute-bound MLP (784-1024-1024-10, batch 256)
   against NumPy by hand and PyTorch CPU (target <= 1.1x PyTorch); each with its step captured in an
   ``ag.graphs.Graph`` and replayed as well.
Every pair is checked to compute the same losses from the same weights before it is timed.
"""

from __future__ import annotations

import gc
import os
import sys
import time

import numpy as np

from bench import peers
from bench.autograd import BATCH, BETA1, BETA2, D_IN, D_OUT, EPS, HIDDEN, LR, MyGradMLP, NumpyMLP, _init
from bench.report import Column, Table, fmt_ratio, fmt_time
from bench.timing import measure

MACHINE = "cpu"
GPU_CHECK_ARGS = ["--quick", "--device", "cuda"]  # bench.gpu_check: the example models' steps on the GPU


# idle seconds before each interleaved sample (bench.timing): our steps leave OpenBLAS's threads spinning for
# ~0.1 s and PyTorch's leave OpenMP's; without it each side's sample ran against the other's spinning threads
# (PyTorch's char GPT step 8 -> 16 ms on a 2-core machine)
SETTLE = 0.25

def add_arguments(p) -> None:
    peers.add_arguments(p)
    p.add_argument("--device", default=None, help="cpu, cuda or both (default: cpu, plus cuda when available)")
    p.add_argument("--breakdown", action="store_true",
                   help="add where the small MLP's eager step spends its time: the backends' calls inside the step "
                        "and the Python above them (backends replaced by no-ops), next to NumPy by hand")


def environment(args) -> dict:
    return peers.environment(args)


def _examples():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if root not in sys.path:
        sys.path.insert(0, root)
    import examples.char_gpt as gpt
    import examples.train_digits as digits

    return digits, gpt


# ----------------------------------------------------------------------------------------- example models
# The PyTorch peer of an example model is the example's own source, ported the way the README says a PyTorch
# script ports, in reverse: its three import lines name torch instead of autograd/nn. Its modules then have the
# same names, so our model's state dict loads into it and both start from the same weights.
_PORT = (("import autograd as ag  # noqa: E402", "import torch as ag  # noqa: E402"),
         ("import nn  # noqa: E402", "import torch.nn as nn  # noqa: E402"),
         ("from nn import functional as F  # noqa: E402", "from torch.nn import functional as F  # noqa: E402"))


def torch_source(src: str, name: str) -> str:
    """An example's source with its imports pointed at torch (each import line must appear exactly once)."""
    for ours, theirs in _PORT:
        if src.count(ours) != 1:
            raise ValueError(f"bench train: examples/{name}.py has {src.count(ours)} copies of {ours!r} (expected "
                             f"1): the PyTorch port of the example needs its three import lines as they were")
        src = src.replace(ours, theirs)
    return src


def _torch_example(name: str):
    """examples/<name>.py executed with torch in place of autograd and nn (a module object)."""
    import types

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", name + ".py")
    with open(path) as f:
        src = torch_source(f.read(), name)
    mod = types.ModuleType(f"torch_port_{name}")
    mod.__file__ = path
    exec(compile(src, path, "exec"), mod.__dict__)  # noqa: S102 - our own example file, imports rewritten
    return mod


def _torch_twin(torch, ours, make):
    """``make(module)`` built from the torch port, with our model's weights; on the device of ``ours``."""
    twin = make()
    sd = {k: torch.from_numpy(np.array(v.detach().cpu().float().numpy()) if v.is_floating_point()
                              else np.array(v.detach().cpu().numpy())) for k, v in ours.state_dict().items()}
    twin.load_state_dict(sd)
    return twin


class _TorchStep:
    """The PyTorch twin of a ``_Step`` (same weights, batch, loss and optimizer settings)."""

    def __init__(self, torch, model, opt, loss_fn, x, y):
        self.torch, self.model, self.opt, self.loss_fn, self.x, self.y = torch, model, opt, loss_fn, x, y
        self.cuda = x.device.type == "cuda"

    def __call__(self):
        loss = self.loss_fn(self.model, self.x, self.y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        if self.cuda:  # our timer waits for our stream only: PyTorch's step waits for its own work
            self.torch.cuda.synchronize()
        return loss


def _torch_digits(torch, ours: _Step, kind: str) -> _TorchStep:
    port = _torch_example("train_digits")
    dev = "cuda" if ours.x.device.type == "cuda" else "cpu"
    model = _torch_twin(torch, ours.model, lambda: port.make_model(kind)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    x, y = (torch.from_numpy(np.array(t.cpu().numpy())).to(dev) for t in (ours.x, ours.y))
    return _TorchStep(torch, model, opt, lambda m, a, b: torch.nn.functional.cross_entropy(m(a), b), x, y)


def _torch_gpt(torch, ours: _Step, config: str) -> _TorchStep:
    port = _torch_example("char_gpt")
    cfg = port.CONFIGS[config]
    dev = "cuda" if ours.x.device.type == "cuda" else "cpu"
    model = _torch_twin(torch, ours.model, lambda: port.GPT(100, cfg["block_size"], cfg["n_layer"], cfg["n_head"],
                                                           cfg["n_embd"], 0.0)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    x, y = (torch.from_numpy(np.array(t.cpu().numpy())).to(dev) for t in (ours.x, ours.y))
    use_bf16 = dev == "cuda"

    def loss_fn(m, a, b):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_bf16):
            return m(a, b)[1]
    return _TorchStep(torch, model, opt, loss_fn, x, y)
class _Step:
    """One optimizer step of a model on a fixed batch (forward, loss, backward, step)."""

    def __init__(self, model, opt, loss_fn, x, y):
        self.model, self.opt, self.loss_fn, self.x, self.y = model, opt, loss_fn, x, y

    def __call__(self):
        loss = self.loss_fn(self.model, self.x, self.y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss


def _digits_step(kind, device, batch=64):
    import autograd as ag
    import nn
    from nn import functional as F

    digits, _ = _examples()
    (x, y), _ = digits.load_data(0)
    ag.manual_seed(0)
    model = digits.make_model(kind).to(device)
    opt = nn.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    xb, yb = ag.tensor(x[:batch], device=device), ag.tensor(y[:batch], device=device)
    return _Step(model, opt, lambda m, a, b: F.cross_entropy(m(a), b), xb, yb), batch


def _gpt_step(device, config):
    import autograd as ag
    import nn

    _, gpt = _examples()
    cfg = gpt.CONFIGS[config]
    ag.manual_seed(0)
    model = gpt.GPT(100, cfg["block_size"], cfg["n_layer"], cfg["n_head"], cfg["n_embd"], 0.0).to(device)
    opt = nn.optim.AdamW(model.parameters(), lr=cfg["lr"])
    rng = np.random.default_rng(0)
    x = ag.tensor(rng.integers(0, 100, (cfg["batch_size"], cfg["block_size"])), device=device)
    y = ag.tensor(rng.integers(0, 100, (cfg["batch_size"], cfg["block_size"])), device=device)
    use_bf16 = device.startswith("cuda")

    def loss_fn(m, a, b):
        with ag.autocast("cuda", dtype=ag.bfloat16, enabled=use_bf16):
            return m(a, b)[1]
    return _Step(model, opt, loss_fn, x, y), cfg["batch_size"] * cfg["block_size"]


def _lstm_lm(nn, vocab=100, emb=64, hid=128):
    """A word-level language model's core: embedding, 2-layer LSTM, decoder (the same code for ours and torch)."""

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(vocab, emb)
            self.rnn = nn.LSTM(emb, hid, num_layers=2)
            self.decoder = nn.Linear(hid, vocab)

        def forward(self, x):
            out, _ = self.rnn(self.encoder(x))
            return self.decoder(out).reshape(-1, vocab)

    return LM()


_LSTM_SHAPE = (35, 20)  # (bptt, batch): the word LM's defaults


def _lstm_step(device):
    import autograd as ag
    import nn
    from nn import functional as F

    ag.manual_seed(0)
    model = _lstm_lm(nn).to(device)
    opt = nn.optim.SGD(model.parameters(), lr=1.0)
    rng = np.random.default_rng(0)
    x, y = (ag.tensor(rng.integers(0, 100, _LSTM_SHAPE), device=device) for _ in range(2))
    loss_fn = lambda m, a, b: F.cross_entropy(m(a), b.reshape(-1))  # noqa: E731
    return _Step(model, opt, loss_fn, x, y), _LSTM_SHAPE[0] * _LSTM_SHAPE[1]


def _torch_lstm(torch, ours: _Step) -> _TorchStep:
    dev = "cuda" if ours.x.device.type == "cuda" else "cpu"
    model = _torch_twin(torch, ours.model, lambda: _lstm_lm(torch.nn)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    x, y = (torch.from_numpy(np.array(t.cpu().numpy())).to(dev) for t in (ours.x, ours.y))
    return _TorchStep(torch, model, opt, lambda m, a, b: torch.nn.functional.cross_entropy(m(a), b.reshape(-1)), x,
                      y)


def _resnet_block(nn, c=64):
    """A ResNet basic block: conv3x3-BN-ReLU-conv3x3-BN, identity shortcut, ReLU (the same code for ours and
    torch)."""

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)
            self.relu = nn.ReLU()

        def forward(self, x):
            h = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(h)) + x)

    return Block()


_RESNET_SHAPE = (32, 64, 32, 32)  # batch 32, 64 channels, 32x32


def _resnet_step(device, shape=_RESNET_SHAPE):
    import autograd as ag
    import nn

    ag.manual_seed(0)
    model = _resnet_block(nn, shape[1]).to(device)
    opt = nn.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    x, y = (ag.tensor(rng.standard_normal(shape).astype(np.float32), device=device) for _ in range(2))
    return _Step(model, opt, lambda m, a, b: ((m(a) - b) ** 2).mean(), x, y), shape[0]


def _torch_resnet(torch, ours: _Step) -> _TorchStep:
    dev = "cuda" if ours.x.device.type == "cuda" else "cpu"
    model = _torch_twin(torch, ours.model, lambda: _resnet_block(torch.nn, ours.x.shape[1])).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = (torch.from_numpy(np.array(t.cpu().numpy())).to(dev) for t in (ours.x, ours.y))
    return _TorchStep(torch, model, opt, lambda m, a, b: ((m(a) - b) ** 2).mean(), x, y)


def examples_table(timer, devices, torch=None) -> Table:
    t = Table("examples", "training step of the example models (forward, loss, backward, AdamW step), ours and "
                          "PyTorch's for the same model (the example's own code run on torch, from the same weights)",
              [Column("model", "model"), Column("device", "device"), Column("impl", "implementation"),
               Column("ms", "ms/step", fmt_time),
               Column("rate", "samples/s (tokens/s)", lambda v: "" if v is None else f"{v:,.0f}"),
               Column("ratio_torch", "vs PyTorch", fmt_ratio), Column("note", "note")])
    for dev in devices:
        gpt_cfg = "cpu" if dev == "cpu" else "baby"
        cases = [("digits MLP (64-256-10, batch 64)", lambda d=dev: _digits_step("mlp", d),
                  lambda tc, st: _torch_digits(tc, st, "mlp")),
                 ("digits CNN (2 conv + pool + linear, batch 64)", lambda d=dev: _digits_step("cnn", d),
                  lambda tc, st: _torch_digits(tc, st, "cnn")),
                 ("char GPT cpu config (2x64, ctx 64, batch 16)" if dev == "cpu" else
                  "char GPT baby (6x384, ctx 256, batch 64, bf16)",
                  lambda d=dev, c=gpt_cfg: _gpt_step(d, c), lambda tc, st, c=gpt_cfg: _torch_gpt(tc, st, c)),
                 ("2-layer LSTM LM (emb 64, hidden 128, 35x20 tokens; fused cell)", lambda d=dev: _lstm_step(d),
                  _torch_lstm),
                 ("ResNet block (2 conv3x3 + BN + ReLU, 64 ch, 32x32, batch 32; SGD)", lambda d=dev: _resnet_step(d),
                  _torch_resnet)]
        for name, make, make_torch in cases:
            try:
                step, per_step = make()
            except Exception as e:  # noqa: BLE001
                t.add(model=name, device=dev, impl="ours", status="failed", note=f"{type(e).__name__}: {e}"[:140])
                continue
            twin, twin_note = None, ""
            if torch is not None:
                try:
                    twin = make_torch(torch, step)
                    a, b = float(step()), float(twin())  # the same first loss: the same model and weights
                    if not np.isclose(a, b, rtol=2e-3, atol=1e-4):
                        twin_note = f"first losses differ: ours {a:.6g}, PyTorch {b:.6g}"
                except Exception as e:  # noqa: BLE001
                    twin, twin_note = None, f"PyTorch port failed: {type(e).__name__}: {e}"[:140]
            try:
                if twin is None:
                    step()
                ms = measure(step, *([twin] if twin is not None else []), timer=timer)
            except Exception as e:  # noqa: BLE001
                t.add(model=name, device=dev, impl="ours", status="failed", note=f"{type(e).__name__}: {e}"[:140])
                continue
            m = ms[0]
            ratio = m.seconds / ms[1].seconds if twin is not None else None
            row = t.add(model=name, device=dev, impl="ours", ms=m.ms, rate=per_step / m.seconds, s=m.seconds,
                        ratio_torch=ratio, status="ok", note="" if twin is not None or torch is None else twin_note)
            if dev != "cpu":  # bench.gpu_check shows these lines in its summary
                row.update(headline=f"{name.split(' (')[0]} train step",
                           headline_text=f"{m.ms:.1f} ms/step, {per_step / m.seconds:,.0f} "
                                         f"{'tokens' if 'GPT' in name else 'samples'}/s"
                                         + (f", {ratio:.2f}x PyTorch" if ratio is not None else ""),
                           headline_status="INFO")
            if twin is not None:
                t.add(model=name, device=dev, impl="PyTorch", ms=ms[1].ms, rate=per_step / ms[1].seconds,
                      s=ms[1].seconds, ratio_torch=1.0, status="failed" if twin_note else "ok", note=twin_note)
    if torch is None:
        t.notes.append("PyTorch is not importable here: no PyTorch rows.")
    return t


# ------------------------------------------------------------------------------------------ target pairs
class NnMLP:
    """The bench.autograd MLP written with nn: Linear layers, F.cross_entropy, nn.optim.Adam."""

    def __init__(self, sizes=(D_IN, HIDDEN, D_OUT), batch=BATCH, params=None):
        import autograd as ag
        import nn

        if params is None:
            params, x, onehot = _init()
        else:
            params, x, onehot = params
        layers = []
        for i in range(len(sizes) - 1):
            lin = nn.Linear(sizes[i], sizes[i + 1])
            with ag.no_grad():
                lin.weight.copy_(ag.tensor(np.ascontiguousarray(params[2 * i].T)))
                lin.bias.copy_(ag.tensor(params[2 * i + 1]))
            layers += [lin, nn.ReLU()]
        self.model = nn.Sequential(*layers[:-1])
        self.opt = nn.optim.Adam(self.model.parameters(), lr=LR, betas=(BETA1, BETA2), eps=EPS)
        self.x = ag.tensor(x)
        self.y = ag.tensor(onehot.argmax(1))

    def step(self) -> float:
        from nn import functional as F

        loss = F.cross_entropy(self.model(self.x), self.y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return float(loss)


class NnGraphMLP(NnMLP):
    """NnMLP with its whole step (forward, backward, Adam) captured in an ``ag.graphs.Graph`` at the first call
    (which is a real step) and replayed after: the kernels without the Python above them (the optimizer's
    step still runs as a host call: learning rate and step count are read each time)."""

    graph = None

    def step(self) -> float:
        import autograd as ag
        from nn import functional as F

        if self.graph is None:
            self.graph = ag.graphs.Graph()
            with ag.graphs.graph(self.graph):
                self.loss = F.cross_entropy(self.model(self.x), self.y)
                self.opt.zero_grad()
                self.loss.backward()
                self.opt.step()
        else:
            self.graph.replay()
        return float(self.loss)


class NumpyDeepMLP(NumpyMLP):
    """NumpyMLP generalized to several hidden ReLU layers (the compute-bound pair)."""

    def __init__(self, params):
        self.params = [p.copy() for p in params[0]]
        self.x, self.onehot = params[1], params[2]
        self.m = [np.zeros_like(p) for p in self.params]
        self.v = [np.zeros_like(p) for p in self.params]
        self.t = 0

    def step(self) -> float:
        acts, masks = [self.x], []
        n = len(self.params) // 2
        h = self.x
        for i in range(n):
            h = h @ self.params[2 * i] + self.params[2 * i + 1]
            if i < n - 1:
                mask = h > 0
                h = h * mask
                masks.append(mask)
                acts.append(h)
        zmax = h.max(axis=1, keepdims=True)
        e = np.exp(h - zmax)
        s = e.sum(axis=1, keepdims=True)
        loss = -((h - zmax - np.log(s)) * self.onehot).sum() / len(h)
        d = (e / s - self.onehot) / len(h)
        grads = [None] * len(self.params)
        for i in range(n - 1, -1, -1):
            grads[2 * i] = acts[i].T @ d
            grads[2 * i + 1] = d.sum(axis=0)
            if i:
                d = (d @ self.params[2 * i].T) * masks[i - 1]
        self.t += 1
        c1, c2 = 1 - BETA1**self.t, 1 - BETA2**self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m *= BETA1
            m += (1 - BETA1) * g
            v *= BETA2
            v += (1 - BETA2) * (g * g)
            p -= (LR / c1) * m / (np.sqrt(v / c2) + EPS)
        return float(loss)


class TorchMLP:
    def __init__(self, params):
        import torch

        ws, x, onehot = params
        layers = []
        for i in range(len(ws) // 2):
            lin = torch.nn.Linear(*ws[2 * i].shape)
            with torch.no_grad():
                lin.weight.copy_(torch.tensor(ws[2 * i].T))
                lin.bias.copy_(torch.tensor(ws[2 * i + 1]))
            layers += [lin, torch.nn.ReLU()]
        self.model = torch.nn.Sequential(*layers[:-1])
        self.opt = torch.optim.Adam(self.model.parameters(), lr=LR, betas=(BETA1, BETA2), eps=EPS)
        self.x, self.y = torch.tensor(x), torch.tensor(onehot.argmax(1))
        self.F = torch.nn.functional

    def step(self) -> float:
        loss = self.F.cross_entropy(self.model(self.x), self.y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


def _deep_params(sizes, batch, seed=0):
    rng = np.random.default_rng(seed)
    ws = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        ws += [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), np.zeros(b, np.float32)]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    onehot = np.zeros((batch, sizes[-1]), np.float32)
    onehot[np.arange(batch), rng.integers(0, sizes[-1], batch)] = 1.0
    return ws, x, onehot


def targets_table(timer, use_torch, mygrad=None) -> Table:
    t = Table("targets", "DESIGN §11 targets: nn training step vs the same model by hand in NumPy and in PyTorch "
                         "(ratio = time / reference; lower is better)",
              [Column("pair", "model"), Column("impl", "implementation"), Column("ms", "ms/step", fmt_time),
               Column("ratio_np", "vs NumPy", fmt_ratio), Column("ratio_torch", "vs PyTorch", fmt_ratio),
               Column("note", "note")])
    small = _init()
    deep_sizes = (784, 1024, 1024, 10)
    deep = _deep_params(deep_sizes, 256)
    pairs = [(f"small MLP {D_IN}-{HIDDEN}-{D_OUT}, batch {BATCH} (target <= 1.3x NumPy)",
              [("NumPy by hand", lambda: NumpyMLP()), ("nn", lambda: NnMLP()),
               ("nn, step captured in a graph", lambda: NnGraphMLP())]
              + ([("PyTorch CPU", lambda: TorchMLP(small))] if use_torch else [])
              + ([("MyGrad (Adam in NumPy)", lambda: MyGradMLP(mygrad))] if mygrad is not None else [])),
             ("compute-bound MLP 784-1024-1024-10, batch 256 (target <= 1.1x PyTorch)",
              [("NumPy by hand", lambda: NumpyDeepMLP(deep)), ("nn", lambda: NnMLP(deep_sizes, 256, deep)),
               ("nn, step captured in a graph", lambda: NnGraphMLP(deep_sizes, 256, deep))]
              + ([("PyTorch CPU", lambda: TorchMLP(deep))] if use_torch else []))]
    for pair, impls in pairs:
        models, losses = [], []
        for name, make in impls:
            try:
                mdl = make()
                losses.append([mdl.step() for _ in range(3)])
                models.append((name, mdl))
            except Exception as e:  # noqa: BLE001
                t.add(pair=pair, impl=name, status="failed", note=f"{type(e).__name__}: {e}"[:140])
        ms = measure(*(m.step for _, m in models), timer=timer) if models else []
        by = {name: m.seconds for (name, _), m in zip(models, ms)}
        ref = losses[0] if models else None
        for (name, _), m, ls in zip(models, ms, losses):
            bad = None if np.allclose(ls, ref, rtol=1e-3, atol=1e-4) else f"losses differ: {ls} vs {ref}"
            t.add(pair=pair, impl=name, ms=m.ms, ratio_np=m.seconds / by["NumPy by hand"] if "NumPy by hand" in by
                  else None, ratio_torch=m.seconds / by["PyTorch CPU"] if "PyTorch CPU" in by else None,
                  status="failed" if bad else "ok", note=bad or "", s=m.seconds)
    if not use_torch:
        t.notes.append("PyTorch is not importable here: the vs-PyTorch column is empty.")
    return t


class _BackendProbe:
    """Swaps the cpu device's backend table for timing wrappers (``timed``) or no-ops (``noop``: every op but
    ``empty``, so that the Python above the backends still allocates and wraps its outputs) and puts it back."""

    def __init__(self, device, mode):
        self.device, self.mode = device, mode
        self.spent: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def _timed(self, op, fn):
        pc, spent, calls = time.perf_counter, self.spent, self.calls

        def probe(*a, **k):
            t0 = pc()
            try:
                return fn(*a, **k)
            finally:
                spent[op] = spent.get(op, 0.0) + pc() - t0
                calls[op] = calls.get(op, 0) + 1
        return probe

    def __enter__(self):
        impls = self.device._impls
        self.saved = dict(impls)
        for op, fn in self.saved.items():
            if self.mode == "timed":
                impls[op] = self._timed(op, fn)
            elif op != "empty":
                impls[op] = lambda *a, **k: None
        return self

    def __exit__(self, *exc):
        self.device._impls.clear()
        self.device._impls.update(self.saved)


def breakdown_table(timer, steps: int = 2000) -> Table:
    """Where the small MLP's eager step spends its time (item 3 of the cpu-speed work): the whole step, ours and
    by hand (interleaved); ours with each backend call timed inside the step (what the NumPy/BLAS work costs
    there); ours with the backends made no-ops (the Python above them alone)."""
    t = Table("breakdown", "small MLP eager step (64-256-10, batch 128, Adam): the NumPy work inside our step "
                           "and the Python above it, next to the same model by hand in NumPy",
              [Column("part", "part"), Column("calls", "calls/step", lambda v: "" if v is None else f"{v:g}"),
               Column("us", "us/step", lambda v: "" if v is None else f"{v:.1f}"),
               Column("ratio_np", "vs NumPy by hand (whole step)", fmt_ratio), Column("note", "note")])
    hand, ours = NumpyMLP(), NnMLP()
    for _ in range(20):
        hand.step()
        ours.step()
    ms = measure(hand.step, ours.step, timer=timer)
    ref = ms[0].seconds
    t.add(part="NumPy by hand: whole step", us=ms[0].us, ratio_np=1.0)
    t.add(part="nn eager: whole step", us=ms[1].us, ratio_np=ms[1].seconds / ref)
    device = ours.x._data._device
    with _BackendProbe(device, "timed") as probe:
        for _ in range(20):
            ours.step()
        probe.spent.clear()
        probe.calls.clear()
        gc_was = gc.isenabled()
        gc.disable()  # as the timer does: a collection of the whole process is not the step's
        try:
            t0 = time.perf_counter()
            for _ in range(steps):
                ours.step()
            whole = (time.perf_counter() - t0) / steps
        finally:
            if gc_was:
                gc.enable()
    inside = sum(probe.spent.values()) / steps
    t.add(part="nn eager: inside the backends' calls (timed in the step)", us=inside * 1e6,
          calls=sum(probe.calls.values()) / steps, ratio_np=inside / ref, probed_s=whole,
          note=f"the probed step took {whole * 1e6:.1f} us (the probes add ~0.2 us per call)")
    for op in sorted(probe.spent, key=probe.spent.get, reverse=True):
        t.add(part=f"  {op}", calls=probe.calls[op] / steps, us=probe.spent[op] / steps * 1e6,
              ratio_np=probe.spent[op] / steps / ref)
    with _BackendProbe(device, "noop"):
        try:
            for _ in range(20):
                ours.step()
            bare = measure(ours.step, timer=timer)[0]
            t.add(part="nn eager, every backend call but empty a no-op: the Python above the backends", us=bare.us,
                  ratio_np=bare.seconds / ref)
        except Exception as e:  # noqa: BLE001
            t.add(part="nn eager, backends as no-ops", status="failed", note=f"{type(e).__name__}: {e}"[:140])
    t.notes.append("A backends-only step (the Python above them free) is the 'inside' row; it bounds what removing "
                   "the framework's Python alone could reach against NumPy by hand.")
    return t


def run(args, timer) -> list[Table]:
    import autograd as ag

    use_torch = peers.torch(not getattr(args, "no_torch", False)) is not None
    mygrad = peers.mygrad(not getattr(args, "no_mygrad", False))
    if args.device in (None, "both"):
        devices = ["cpu"] + (["cuda"] if ag.cuda.is_available() and os.environ.get("TKERNELS_INTERPRET") != "1"
                             else [])
    else:
        devices = [args.device]
    tables = [examples_table(timer, devices, peers.torch(not getattr(args, "no_torch", False)))]
    if "cpu" in devices:
        tables.append(targets_table(timer, use_torch, mygrad))
        if getattr(args, "breakdown", False):
            tables.append(breakdown_table(timer))
    return tables
