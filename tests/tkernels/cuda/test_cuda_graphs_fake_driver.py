"""Real CUDA graphs (tkernels/graphs.py on a GPU), checked as a driver call sequence on the fake libcuda.

A replay on a real device captures each segment of consecutive kernel calls once (``cuStreamBeginCapture`` on the
graph's private stream: the fake driver logs ``capture fn=...`` and runs nothing), instantiates it, and launches it
(``graph-launch fn=...`` on the current stream); later replays only launch. Host calls and random kernels cut the
segments and run eagerly (``launch fn=...``). What the values of a replay are is checked in interpreted mode
(tests/tkernels/test_graphs.py), where the fake driver cannot help: it runs no kernel.
"""

import re

import pytest

from tests.tkernels.cuda.test_fake_driver import fake_env, run_child  # noqa: F401 - fake_env is a fixture

LINE_RE = re.compile(r"\[fake libcuda\] (?P<kind>launch|capture|graph-launch) fn=(?P<fn>\S+) "
                     r".*?stream=(?P<stream>0x[0-9a-f]+)")


def sections_of(stderr: str) -> dict:
    out, current = {}, None
    for line in stderr.splitlines():
        if line.startswith("@@mark "):
            current = line.split(" ", 1)[1]
            out[current] = []
        elif (m := LINE_RE.search(line)) and current is not None:
            out[current].append((m["kind"], m["fn"], int(m["stream"], 16)))
    return out


def test_replays_are_cuda_graph_launches_cut_at_host_calls_and_random_kernels(fake_env):  # noqa: F811
    res, _, stderr = run_child(fake_env, "cuda_graphs", """
        from tkernels.cuda.testing import FakeDriverStats

        x = tk.asarray(np.arange(1000, dtype=np.float32), device="cuda")
        w = tk.ones((1000,), device="cuda")
        user = tkc.Stream()
        alloc = tkc.caching_allocator()
        g = tk.graphs.Graph()
        host = []
        mark("capture")
        with tkc.stream(user), tk.graphs.graph(g):
            y = tk.exp(x) * 2 + w                          # segment 1: three kernels
            tk.graphs.host_call(lambda: host.append(1))     # cuts
            z = y * 3 - 1                                   # segment 2: two kernels
            r = tk.random.rand((10,), device="cuda")        # random: eager at every replay (its offset advances)
            q = z + 1                                       # segment 3
        res["user"] = user.handle
        mark("first")
        with tkc.stream(user):
            g.replay()
        mark("replays")
        with tkc.stream(user):
            g.replay()
            g.replay()
        mark("end")
        res["segments"] = g.cuda_graph_segments
        res["host"] = len(host)
        res["held"] = len(alloc._held)
        res["live"] = {k: v for k, v in FakeDriverStats().read().items() if k in ("graphs", "graph_execs", "streams")}
        g.reset()
        res["after_reset"] = {k: v for k, v in FakeDriverStats().read().items() if k in ("graphs", "graph_execs")}
        res["held_after"] = len(alloc._held)
        res["stats"] = {k: v for k, v in FakeDriverStats().read().items() if k.startswith("graph")}
        """, with_stderr=True)
    sec = sections_of(stderr)
    user = res["user"]
    eager = [fn for kind, fn, _ in sec["capture"]]
    assert eager == ["unary_kernel", "binary_kernel", "binary_kernel", "binary_kernel", "binary_kernel",
                     "random_kernel", "binary_kernel"]
    assert all(kind == "launch" and s == user for kind, _, s in sec["capture"])
    # first replay: capture (on a private stream, nothing runs) then launch, per segment; the random kernel eager
    first = sec["first"]
    captures = [(fn, s) for kind, fn, s in first if kind == "capture"]
    assert [fn for fn, _ in captures] == eager[:5] + eager[6:]
    private = {s for _, s in captures}
    assert len(private) == 1 and user not in private
    assert [(kind, fn) for kind, fn, _ in first if kind != "capture"] == (
        [("graph-launch", f) for f in eager[:5]] + [("launch", "random_kernel"), ("graph-launch", "binary_kernel")])
    assert all(s == user for kind, _, s in first if kind != "capture")
    # later replays: only graph launches on the current stream, plus the random kernel
    again = sec["replays"]
    assert not [x for x in again if x[0] == "capture"]
    assert [(kind, fn) for kind, fn, _ in again] == 2 * [(k, f) for k, f, _ in first if k != "capture"]
    assert res["segments"] == [{"device": "cuda:0", "calls": 3, "captured": True},
                               {"device": "cuda:0", "calls": 2, "captured": True},
                               {"device": "cuda:0", "calls": 1, "captured": True}]
    assert res["host"] == 4  # the capture and three replays
    assert res["held"] == 1 and res["held_after"] == 0  # the private stream's blocks are held while the graph lives
    assert res["live"]["graph_execs"] == 3 and res["live"]["graphs"] == 0  # graphs are destroyed once instantiated
    assert res["after_reset"] == {"graphs": 0, "graph_execs": 0}
    assert res["stats"]["graph_launches"] == 9 and res["stats"]["graph_kernels"] == 18


def test_a_segment_the_driver_refuses_to_capture_replays_eagerly_with_a_warning(fake_env):  # noqa: F811
    res, _, stderr = run_child(fake_env, "cuda_graphs_refused", """
        import warnings

        x = tk.ones((64,), device="cuda")
        g = tk.graphs.Graph()
        with tk.graphs.graph(g):
            y = x * 2
        syncs = []

        def syncing_kernel(a):  # a recorded call that synchronizes its stream: forbidden while capturing
            syncs.append(1)
            tkc.current_stream().synchronize()

        g._calls.insert(0, (syncing_kernel, (y,), {}, None))
        mark("first")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            g.replay()
        res["warnings"] = [str(m.message) for m in w]
        mark("second")
        g.replay()
        mark("end")
        res["segments"] = g.cuda_graph_segments
        res["syncs"] = len(syncs)
        """, with_stderr=True)
    sec = sections_of(stderr)
    assert len(res["warnings"]) == 1 and "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED" in res["warnings"][0]
    assert "replays eagerly" in res["warnings"][0]
    assert res["segments"] == [{"device": "cuda:0", "calls": 2, "captured": False}]
    # the refused capture ran nothing; the segment then ran eagerly (its kernel launched for real), every replay
    assert [(k, f) for k, f, _ in sec["first"]] == [("launch", "binary_kernel")]
    assert [(k, f) for k, f, _ in sec["second"]] == [("launch", "binary_kernel")]
    assert res["syncs"] == 3  # tried under capture once, then eagerly at both replays


def _replays_equal_eager(n: int) -> list:
    """Capture a chain cut by a host call and a random kernel, replay it on new inputs, compare with eager ops
    on the same inputs (bit for bit: the same kernels run on the same values); returns the graph's segments."""
    import numpy as np

    import tkernels as tk

    rng = np.random.default_rng(0)
    x = tk.asarray(rng.standard_normal(n).astype(np.float32), device="cuda")
    w = tk.asarray(rng.standard_normal(n).astype(np.float32), device="cuda")
    g = tk.graphs.Graph()
    seen = []
    with tk.graphs.graph(g):
        y = tk.exp(x) * 2 + w
        tk.graphs.host_call(lambda: seen.append(1))
        z = tk.tanh(y * 3 - 1)
        r = tk.random.rand((7,), device="cuda")
        q = z + tk.sum(z)
    for _ in range(3):
        x[...] = tk.asarray(rng.standard_normal(n).astype(np.float32), device="cuda")
        g.replay()
        y_e = tk.exp(x) * 2 + w
        z_e = tk.tanh(y_e * 3 - 1)
        np.testing.assert_array_equal(q.numpy(), (z_e + tk.sum(z_e)).numpy())
        assert 0 <= float(tk.min(r)) and float(tk.max(r)) < 1
    assert len(seen) == 4
    return g.cuda_graph_segments


@pytest.mark.gpu
def test_cuda_graph_replays_equal_eager_gpu():
    segments = _replays_equal_eager(100_003)
    assert [s["captured"] for s in segments] == [True, True, True]


def test_graph_replays_equal_eager_interpreted():
    assert _replays_equal_eager(1001) == []  # interpreted: the recorded calls, no CUDA graph


# an MLP training step captured and replayed three times on the fake driver ({opt}: the optimizer; {steps}: what
# res["steps"] reports of its state)
_MLP_STEP = """
    import autograd as ag
    import nn
    from nn import functional as F

    ag.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10)).to("cuda")
    opt = {opt}
    x, y = ag.randn(128, 64).to("cuda"), ag.randint(0, 10, (128,)).to("cuda")
    g = ag.graphs.Graph()
    with ag.graphs.graph(g):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    g.replay()
    mark("replays")
    g.replay()
    g.replay()
    mark("end")
    res["segments"] = g.cuda_graph_segments
    res["steps"] = {steps}
    """


def test_a_training_step_replays_as_one_cuda_graph_and_the_optimizer_kernel(fake_env):  # noqa: F811
    """Forward, loss and backward of an MLP are one segment (autograd's .grad bookkeeping is host calls without
    kernels, which do not cut it); Adam's step is a host call and launches its one fused kernel eagerly."""
    res, _, stderr = run_child(fake_env, "cuda_graphs_step", _MLP_STEP.format(
        opt="nn.optim.Adam(model.parameters(), lr=1e-3)",
        steps='[int(opt.state[p]["step"]) for p in model.parameters()]'), with_stderr=True)
    sec = sections_of(stderr)
    assert len(res["segments"]) == 1 and res["segments"][0]["captured"]
    per_replay = [(k, f) for k, f, _ in sec["replays"]]
    n = len(per_replay) // 2
    assert per_replay[:n] == per_replay[n:]
    one = per_replay[:n]
    assert one[-1] == ("launch", "adam_kernel")  # the optimizer step: one fused kernel, eagerly
    kernels = [f for k, f in one[:-1] if k == "graph-launch"]
    assert len(kernels) == len(one) - 1 == 20  # everything else from the graph
    assert kernels[:4] == ["matmul_kernel", "unary_kernel", "matmul_kernel", "ce_fwd_kernel"]
    assert kernels.count("matmul_kernel") == 5  # 2 forward, 3 backward (no input gradient for x)
    assert res["steps"] == [4, 4, 4, 4]  # the capture and three replays each stepped


def test_a_capturable_adam_step_joins_the_cuda_graph(fake_env):  # noqa: F811
    """With ``capturable=True`` Adam's step counts live on the device and its step is recorded as kernels: the
    whole training step (forward, backward, the counts' increment and the fused update) replays as ONE
    cuGraphLaunch, nothing launched eagerly, and the counts keep stepping on the device."""
    res, _, stderr = run_child(fake_env, "cuda_graphs_capturable", _MLP_STEP.format(
        opt="nn.optim.AdamW(model.parameters(), lr=1e-3, capturable=True)",
        steps='[opt.state[p]["step"].device.type for p in model.parameters()]'), with_stderr=True)
    sec = sections_of(stderr)
    assert len(res["segments"]) == 1 and res["segments"][0]["captured"]
    per_replay = [(k, f) for k, f, _ in sec["replays"]]
    assert {k for k, _ in per_replay} == {"graph-launch"}  # no eager launch left
    n = len(per_replay) // 2
    assert per_replay[:n] == per_replay[n:] and n == 22
    assert [f for _, f in per_replay[n - 2: n]] == ["adam_count_kernel", "adam_kernel"]
    assert res["steps"] == ["cuda"] * 4
