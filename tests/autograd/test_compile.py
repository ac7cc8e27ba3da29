"""autograd.compile: compiled steps equal eager ones (bitwise on cpu and for elementwise chains on interpreted cuda,
within float32 rounding where generated sums reassociate), guards, fallback with a logged reason, the on-disk
cache, generated kernels compiling ahead of time for sm_90 and sm_80, and the bench's counts."""

import json
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import autograd as ag
import nn
from autograd.compile import codegen
from nn import functional as F  # noqa: N812

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TKERNELS_CACHE_DIR", str(tmp_path / "cache"))
    codegen._LOADED.clear()


def _mlp_step(dev, seed=0):
    ag.manual_seed(seed)
    m = nn.Sequential(nn.Linear(13, 33), nn.GELU(), nn.Linear(33, 5)).to(dev)
    opt = nn.optim.AdamW(m.parameters(), lr=1e-2)

    def step(x, y):
        loss = F.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return m, step


def _data(dev, n=7):
    rng = np.random.default_rng(1)
    return (ag.tensor(rng.standard_normal((n, 13)).astype(np.float32), device=dev),
            ag.tensor(rng.integers(0, 5, n), device=dev))


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_compiled_training_step_equals_eager(dev):
    m1, s1 = _mlp_step(dev)
    m2, s2 = _mlp_step(dev)
    c = ag.compile(s2)
    x, y = _data(dev)
    for _ in range(4):
        a, b = s1(x, y), c(x, y)
        np.testing.assert_allclose(b.item(), a.item(), rtol=1e-6)
    plan = c.plans()[0]
    assert plan.num_regions >= 2 and plan.num_fused_ops >= 10
    for p, q in zip(m1.parameters(), m2.parameters()):
        if dev == "cpu":  # the same NumPy kernels in the same order
            np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())
        else:  # generated sums add in another order
            np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)


def test_char_gpt_step_is_bitwise_on_cpu():
    # the rewrites on a real model: concat as copies, copies written by their producers, residual adds in the linear
    # kernel, the GELU backward moved beside its gradient
    from bench import compile as bc

    s1, i1 = bc._gpt("cpu", "tiny")
    s2, i2 = bc._gpt("cpu", "tiny")
    c = ag.compile(s2)
    for _ in range(4):
        assert c(*i2).item() == s1(*i1).item()
    plan = c.plans()[0]
    ops = [it.call.op for it in plan.items if not hasattr(it, "ops")]
    assert "concat" not in ops
    assert any(it.call.op == "linear" and it.call.args[4] is not None for it in plan.items if not hasattr(it, "ops"))


def test_returned_intermediates_are_stored():
    m, step = _mlp_step("cpu")

    def fn(x, y):
        h = ag.tanh(x * 3) + 1  # kept by the caller: must be written although nothing else reads it
        return step(h, y), h

    x, y = _data("cpu")
    c = ag.compile(fn)
    for k in range(3):
        xk = x * (k + 1)
        loss, h = c(xk, y)
        np.testing.assert_array_equal(h.numpy(), (ag.tanh(xk * 3) + 1).numpy())


def test_elementwise_chain_is_bitwise_on_cuda():
    rng = np.random.default_rng(2)
    xs = [ag.tensor(rng.standard_normal((3, 129)).astype(np.float32), device="cuda") for _ in range(3)]
    b = ag.tensor(rng.standard_normal(129).astype(np.float32), device="cuda")

    def fn(x, b):
        return ag.tanh(x * 2.5 + b).exp() - F.gelu(x) / 3

    c = ag.compile(fn)
    for x in xs:
        np.testing.assert_array_equal(c(x, b).cpu().numpy(), fn(x, b).cpu().numpy())
    plan = c.plans()[0]
    assert plan.num_regions == 1 and len(plan.items) == 1  # one generated kernel for the whole function
    src = plan.kernels[0].source
    assert "ek._unary_transcendental" in src and src.count("tl.store(") == 1  # only the result is stored


def test_guards_retrace_on_new_shape_and_dtype(caplog):
    def fn(x):
        return (x * x + 1).sqrt()

    c = ag.compile(fn)
    caplog.set_level(logging.INFO, logger="autograd.compile")
    for shape, dt in (((5,), ag.float32), ((5,), ag.float32), ((5,), ag.float32), ((2, 7), ag.float32),
                      ((2, 7), ag.float32), ((2, 7), ag.float32), ((5,), ag.float64), ((5,), ag.float64),
                      ((5,), ag.float64)):
        x = ag.randn(*shape, dtype=dt, device="cpu")
        r = c(x)
        assert r.shape == x.shape and r.dtype is dt
        np.testing.assert_array_equal(r.numpy(), fn(x).numpy())
    assert len(c.plans()) == 3
    assert any("re-tracing" in r.message for r in caplog.records if r.name == "autograd.compile")


def test_host_read_falls_back_to_eager_with_reason(caplog):
    m1, s1 = _mlp_step("cpu")
    m2, s2 = _mlp_step("cpu")
    x, y = _data("cpu")

    def reads(step):
        def f(x, y):
            return step(x, y).item()  # a host read: cannot be replayed
        return f

    c = ag.compile(reads(s2))
    caplog.set_level(logging.WARNING, logger="autograd.compile")
    for _ in range(3):
        assert c(x, y) == reads(s1)(x, y)  # each call is one step, also the recording one
    assert not c.plans() and "host" in c.fallback_reasons()[0]
    msgs = [r.message for r in caplog.records if r.name == "autograd.compile"]
    assert any("runs eagerly" in m and "reads array values on the host" in m for m in msgs)
    for p, q in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())


@pytest.mark.parametrize("dev", ["cpu", "cuda"])
def test_data_dependent_shape_falls_back_to_eager(dev, caplog):
    def fn(x):
        return x[x > 0.3] * 2

    c = ag.compile(fn)
    caplog.set_level(logging.WARNING, logger="autograd.compile")
    rng = np.random.default_rng(3)
    for _ in range(4):
        x = ag.tensor(rng.standard_normal(23).astype(np.float32), device=dev)
        np.testing.assert_array_equal(c(x).cpu().numpy(), fn(x).cpu().numpy())  # a new count each call
    assert not c.plans() and "data-dependent shape" in c.fallback_reasons()[0]
    assert any("getitem" in r.message for r in caplog.records if r.name == "autograd.compile")


def test_generated_source_is_cached_on_disk_and_reused(tmp_path):
    x = ag.randn(4, 9, device="cuda")

    def fn(x):
        return ag.sigmoid(x) * x

    c = ag.compile(fn)
    for _ in range(3):
        c(x)
    files = os.listdir(tmp_path / "cache" / "compile")
    assert len(files) == 1 and files[0].startswith("fused_")
    written, reused = codegen.STATS["written"], codegen.STATS["reused"]
    codegen._LOADED.clear()  # as a new process would: the file is read, not written
    c2 = ag.compile(fn)
    for _ in range(3):
        np.testing.assert_array_equal(c2(x).cpu().numpy(), fn(x).cpu().numpy())
    assert codegen.STATS["written"] == written and codegen.STATS["reused"] == reused + 1
    import triton

    assert c2.plans()[0].kernels[0].key == codegen.Kernel(
        c2.plans()[0].kernels[0].source, [], 0, [], 0).key and triton.__version__


def test_module_form_inference_and_training_calls():
    def make():
        ag.manual_seed(0)
        return nn.Sequential(nn.Linear(6, 11), nn.GELU(), nn.LayerNorm(11), nn.Linear(11, 3))

    m, m2 = make(), make()
    cm = ag.compile(m2)
    x = ag.randn(5, 6)
    with ag.no_grad():
        for _ in range(3):
            np.testing.assert_array_equal(cm(x).numpy(), m(x).numpy())
    xs = [ag.randn(5, 6) for _ in range(4)]
    for k in range(3):  # warm-up, recording, replays; then two forwards before their two backwards
        for mod in (m, cm):
            for p in mod.parameters():
                p.grad = None
            la = mod(xs[k]).square().sum()
            lb = mod(xs[k + 1]).exp().sum()
            la.backward()  # (compiled: its forward is replayed again first: the buffers hold lb's)
            lb.backward()
        for p, q in zip(m.parameters(), m2.parameters()):
            np.testing.assert_array_equal(q.grad.numpy(), p.grad.numpy())
    from autograd.compile.module import TrainingEntry

    assert cm.training and any(isinstance(e, TrainingEntry) for e in cm._training.values())


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="mode"):
        ag.compile(lambda x: x, mode="fast")
    with pytest.raises(TypeError, match="function or a module"):
        ag.compile(3)
    f = lambda x: x  # noqa: E731
    assert ag.compile(f, disable=True) is f


_AOT = textwrap.dedent("""
    import json, sys, importlib.util
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    out = []
    for n, req in enumerate(json.load(sys.stdin)):
        spec = importlib.util.spec_from_file_location(f"gen{n}", req["path"])
        mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
        fn = mod.fused_kernel
        for cap in (90, 80):
            ck = triton.compile(ASTSource(fn, req["sig"], req["consts"]), target=GPUTarget("cuda", cap, 32))
            out.append([ln for ln in ck.asm["ptx"].splitlines() if ln.startswith(".target")])
    print(json.dumps(out))
    """)


def test_generated_kernels_compile_ahead_of_time_for_sm90_and_sm80(tmp_path):
    # one region holding every kind of segment: two matmuls (a batched one with a broadcast operand), a sum, an
    # elementwise chain with a broadcast operand and a scalar
    rng = np.random.default_rng(4)
    t = [ag.tensor(rng.standard_normal(s).astype(np.float32), device="cuda")
         for s in ((5, 7), (7, 3), (2, 5, 7), (1, 7, 3), (9, 4), (3, 33), (33,))]

    def fn(a, b, a3, b3, c, x, bias):
        return a @ b, a3 @ b3, c.sum(0), F.gelu(x + bias) * x - 0.5

    c = ag.compile(fn)
    for _ in range(3):
        for r, e in zip(c(*t), fn(*t)):
            np.testing.assert_allclose(r.cpu().numpy(), e.cpu().numpy(), rtol=1e-6, atol=1e-6)
    (k,) = c.plans()[0].kernels
    assert sorted(set(k.names)) == ["add", "gelu", "matmul", "multiply", "subtract", "sum"]
    _aot(k, tmp_path)


def _aot_request(k):
    dont = set(k.fn.do_not_specialize) if hasattr(k.fn, "do_not_specialize") else set()
    consts = {"BLOCK": k.block, "RB": codegen.RB, "RR": codegen.RR, "MB": codegen.MB, "MK": codegen.MK}
    sig = {}
    ptrs = {"float64": "*fp64", "float32": "*fp32", "int64": "*i64", "int32": "*i32"}
    for name, v in zip(k.fn.arg_names, k.args):
        if hasattr(v, "_dtype"):
            sig[name] = ptrs[str(v._dtype)]
        elif isinstance(v, float):
            sig[name] = "fp32"
        elif v == 1 and name not in dont and not name.startswith("c"):
            sig[name], consts[name] = "constexpr", 1  # the JIT makes a 1-valued integer a constant
        else:
            sig[name] = "i64" if abs(v) >= 2**31 else "i32"
    for n in ("BLOCK", "RB", "RR", "MB", "MK"):
        sig[n] = "constexpr"
    return {"path": os.path.join(codegen.cache_dir(), f"fused_{k.key}.py"), "sig": sig, "consts": consts}


def _aot(ks, tmp_path):
    """Compile the generated kernels ``ks`` (one or a list) for sm_90 and sm_80 in one helper process."""
    ks = ks if isinstance(ks, list) else [ks]
    env = {kk: v for kk, v in os.environ.items() if kk not in ("TRITON_INTERPRET",)}
    env.update(TKERNELS_INTERPRET="0", TRITON_CACHE_DIR=str(tmp_path / "tc"), PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", _AOT], input=json.dumps([_aot_request(k) for k in ks]),
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    targets = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(targets) == 2 * len(ks)
    for t90, t80 in zip(targets[::2], targets[1::2]):
        assert t90[0].startswith(".target sm_90") and t80[0].startswith(".target sm_80")


def test_bench_compile_counts_fewer_kernels_and_bytes():
    from bench import compile as bc

    m = bc.measure(bc.models(True)[0][1])  # the digits MLP, small batch
    assert m["kernels"] < m["eager_kernels"] and m["bytes"] < m["eager_bytes"]
    assert m["kernels"] <= 0.7 * m["eager_kernels"] and m["bytes"] <= 0.7 * m["eager_bytes"]


# row ops (layer norm forward and backward generated with their neighbours), cross-entropy's count, embedding's fill

def _ln_fn(affine, transposed):
    def fn(a, b, r, w, bias):
        x = a.mT if transposed else a + b  # a strided input; else an elementwise prologue
        h = x + F.layer_norm(x, (x.shape[-1],), w if affine else None, bias if affine else None, 1e-5)
        loss = (h * r).sum()
        grads = ag.grad(loss, [a, w, bias] if affine else [a], allow_unused=True)
        return (loss, h, *grads)
    return fn


def _ln_inputs(dev, dtype, transposed, seed=0):
    rng = np.random.default_rng(seed)
    shape, n = ((37, 15) if transposed else (3, 5, 37)), 37  # transposed: rows of a.mT (15, 37)
    vals = [rng.standard_normal(shape), rng.standard_normal(n), rng.standard_normal((15, 37) if transposed else shape),
            1 + 0.1 * rng.standard_normal(n), 0.1 * rng.standard_normal(n)]
    return [ag.tensor(v.astype(dtype), device=dev, requires_grad=i in (0, 3, 4)) for i, v in enumerate(vals)]


@pytest.mark.parametrize("dev,dtype,affine,transposed", [("cuda", np.float32, True, False),
                                                         ("cuda", np.float64, False, True),
                                                         ("cuda", np.float32, True, True),
                                                         ("cpu", np.float32, True, False)])
def test_layer_norm_rows_equal_eager(dev, dtype, affine, transposed):
    fn = _ln_fn(affine, transposed)
    c = ag.compile(fn)
    for seed in range(3):
        t = _ln_inputs(dev, dtype, transposed, seed)
        got, want = c(*t), fn(*t)
        # h and dx: the eager kernels' formulas and row sums (bitwise); the loss, dw, db: generated sums reassociate
        for k, (r, e) in enumerate(zip(got, want)):
            r, e = r.detach().cpu().numpy(), e.detach().cpu().numpy()
            if k in (1, 2) or dev == "cpu":
                np.testing.assert_array_equal(r, e)
            else:
                np.testing.assert_allclose(r, e, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    if dev == "cuda":
        names = [k.names for k in c.plans()[0].kernels]
        assert any("layer_norm_rows" in n and (transposed or "add" in n) for n in names)  # with its prologue
        assert any("layer_norm_backward_rows" in n and "add" in n for n in names)  # with the residual gradient
        assert not any(it.call.op.startswith("layer_norm") for it in c.plans()[0].items if not hasattr(it, "ops"))


def test_layer_norm_rows_without_autograd_are_one_kernel():
    # no statistics to store: the GELU before and the scale after in the same kernel
    def fn(x, w, b):
        return F.layer_norm(F.gelu(x), (37,), w, b) * 0.5

    rng = np.random.default_rng(6)
    w, b = (ag.tensor(rng.standard_normal(37).astype(np.float32), device="cuda") for _ in range(2))
    c = ag.compile(fn)
    with ag.no_grad():
        for _ in range(3):
            x = ag.tensor(rng.standard_normal((2, 7, 37)).astype(np.float32), device="cuda")
            np.testing.assert_array_equal(c(x, w, b).cpu().numpy(), fn(x, w, b).cpu().numpy())
    (k,) = c.plans()[0].kernels
    assert k.names == ["gelu", "layer_norm_rows", "multiply"] and len(c.plans()[0].items) == 1


@pytest.mark.parametrize("dev,fused", [("cuda", True), ("cuda", False), ("cpu", True)])
def test_cross_entropy_and_embedding_equal_eager(dev, fused):
    # fused: the forward and backward of the loss as one row op; else (the loss read before its backward) the
    # backward's denominator as a generated count. The embedding's backward: its fill in a region.
    rng = np.random.default_rng(3)
    w = ag.tensor(rng.standard_normal((13, 6)).astype(np.float32), device=dev, requires_grad=True)
    proj = ag.tensor(rng.standard_normal((6, 7)).astype(np.float32), device=dev, requires_grad=True)

    def fn(idx, t):
        z = F.embedding(idx, w).reshape(-1, 6) @ proj
        loss = F.cross_entropy(z * 2, t)
        if not fused:
            loss = loss * 1.5
        return (loss, *ag.grad(loss, [w, proj]))

    c = ag.compile(fn)
    for k in range(3):
        idx = ag.tensor(rng.integers(0, 13, (4, 5)), device=dev)
        t = rng.integers(0, 7, 20)
        t[k::4] = -100  # ignored targets: the mean divides by the others' count
        t = ag.tensor(t, device=dev)
        for r, e in zip(c(idx, t), fn(idx, t)):
            np.testing.assert_array_equal(r.detach().cpu().numpy(), e.detach().cpu().numpy())
    if dev == "cuda":
        plan = c.plans()[0]
        ops = [it.call.op for it in plan.items if not hasattr(it, "ops")]
        fused_ops = [n for k in plan.kernels for n in k.names]
        assert "embedding_scatter" in ops and "count_ne" in fused_ops and "fill" in fused_ops
        assert ("cross_entropy_rows" in fused_ops and "loss_mean" in fused_ops) == fused
        assert ("cross_entropy_backward_from_den" in ops) != fused
        bad = ag.tensor(np.full(20, 7), device=dev)  # out of range: the error buffer, raised at the next sync
        with pytest.raises(IndexError):
            c(idx, bad)[0].cpu()


@pytest.mark.parametrize("dev,dtype", [("cuda", np.float32), ("cuda", np.float64), ("cpu", np.float32)])
def test_softmax_rows_equal_eager(dev, dtype):
    def fn(x, r):
        p = F.softmax(x * 3, dim=-1)  # with a prologue
        q = F.log_softmax(x.mT, dim=-1) + 1  # a strided input and an epilogue
        loss = (p * r).sum() + (q * r.mT).sum()
        return (p, q, *ag.grad(loss, [x]))

    rng = np.random.default_rng(5)
    c = ag.compile(fn)
    for k in range(3):
        x = ag.tensor(rng.standard_normal((2, 19, 19)).astype(dtype) * (k + 1), device=dev, requires_grad=True)
        r = ag.tensor(rng.standard_normal((2, 19, 19)).astype(dtype), device=dev)
        for got, want in zip(c(x, r), fn(x, r)):
            np.testing.assert_array_equal(got.detach().cpu().numpy(), want.detach().cpu().numpy())
    if dev == "cuda":
        names = [n for k in c.plans()[0].kernels for n in k.names]
        assert names.count("softmax_rows") == 2 and names.count("softmax_backward_rows") == 2


def test_generated_row_kernels_compile_ahead_of_time_for_sm90_and_sm80(tmp_path):
    # the row segments (layer norm forward with its prologue, backward with its epilogue, log_softmax and its
    # backward, cross-entropy forward and backward) and the single-program segments (count, mean)
    a, b, _, w, bias = _ln_inputs("cuda", np.float32, False)
    y = ag.tensor(np.where(np.arange(15) % 4 == 0, -100, np.arange(15) * 2), device="cuda")

    def fn(a, b, w, bias, y):
        x = a + b
        h = x + F.layer_norm(x, (37,), w, bias, 1e-5)
        loss, sm = F.cross_entropy(h.reshape(-1, 37), y), (F.log_softmax(h, dim=-1) * b).sum()
        return (loss, *ag.grad(loss, [a, w, bias], retain_graph=True), *ag.grad(sm, [a]))

    c = ag.compile(fn)
    for _ in range(3):
        for r, e in zip(c(a, b, w, bias, y), fn(a, b, w, bias, y)):
            np.testing.assert_allclose(r.detach().cpu().numpy(), e.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)
    wanted = {"layer_norm_rows", "layer_norm_backward_rows", "count_ne", "cross_entropy_rows", "loss_mean",
              "softmax_rows", "softmax_backward_rows"}
    ks = [k for k in c.plans()[0].kernels if wanted & set(k.names)]
    assert {n for k in ks for n in k.names} >= wanted
    _aot(ks, tmp_path)


def test_char_gpt_step_on_cuda_equals_eager_with_row_ops():
    # interpreted cuda: the layer norms, the loss and its backward generated with their neighbours
    from bench import compile as bc

    s1, i1 = bc._gpt("cuda", "tiny")
    s2, i2 = bc._gpt("cuda", "tiny")
    c = ag.compile(s2)
    for _ in range(3):
        assert c(*i2).item() == s1(*i1).item()  # (the updates' sums reassociate; the losses stay bitwise)
    names = {n for k in c.plans()[0].kernels for n in k.names}
    assert {"layer_norm_rows", "layer_norm_backward_rows", "cross_entropy_rows", "loss_mean", "count_ne"} <= names
    barriers = {it.call.op for it in c.plans()[0].items if not hasattr(it, "ops")}
    assert not barriers & {"layer_norm", "layer_norm_backward", "cross_entropy", "cross_entropy_backward",
                           "embedding_backward"}
