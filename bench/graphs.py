"""``python -m bench graphs``: what replaying a captured step saves on a GPU (issue 19's measurements).

Tables (cuda only; without a GPU the benchmark says so and reports nothing):
1. per kernel: a chain of ``K`` tiny elementwise kernels (``y = y + 1`` on one element), host time per kernel
   run eagerly (op entry, dispatch, the Triton launcher), replayed from the recorded calls
   (``Graph(cuda_graphs=False)``: no Python above the backends) and replayed as a CUDA graph (one
   ``cuGraphLaunch``); the GPU time of a kernel is below all three, so this is host overhead per kernel.
2. per example model (digits MLP and CNN, the char GPT's "baby" config in bf16): the training step eager, replayed
   from the recorded calls, replayed as CUDA graphs; next to PyTorch's eager step and its step captured in
   ``torch.cuda.graph`` (capturable AdamW) from the same weights; ``torch.compile`` of the model too when not
   ``--quick`` (its compile time is excluded).
Every timed call ends with a synchronize of the stream that did the work, so a row is the step's wall time.
"""

from __future__ import annotations

from bench import peers
from bench.report import Column, Table, fmt_ratio, fmt_time
from bench.timing import measure

MACHINE = "gpu"
GPU_CHECK_ARGS = ["--quick"]  # bench.gpu_check: a 32-kernel chain and the digits MLP


def add_arguments(p) -> None:
    peers.add_arguments(p)
    p.add_argument("--kernels", type=int, default=256, help="length of the kernel chain of table 1 (default 256)")


def environment(args) -> dict:
    return peers.environment(args)


def _on_gpu() -> bool:
    import tkernels.cuda as tkc

    return tkc.is_available() and not tkc.is_interpreted()


def _fake_driver() -> bool:
    """tkernels.cuda.testing's stand-in driver (bench.gpu_check's CI run): kernels compile, nothing computes."""
    import tkernels.cuda as tkc

    return tkc.get_device_name(0) == "Fake GPU"


def _synced(fn):
    import tkernels.cuda as tkc

    def call():
        fn()
        tkc.synchronize()
    return call


def per_kernel_table(timer, k: int) -> Table:
    import tkernels as tk

    t = Table("per_kernel", f"host time per kernel: a chain of {k} one-element adds, eager vs replays",
              [Column("impl", "implementation"), Column("us", "us/kernel", lambda v: f"{v:.2f}"),
               Column("ratio", "vs eager", fmt_ratio), Column("note", "note")])
    x = tk.zeros((1,), dtype=tk.float32, device="cuda")

    def chain():
        y = x
        for _ in range(k):
            y = y + 1
        return y

    graphs = {}
    for name, flag in (("recorded calls", False), ("CUDA graph", True)):
        g = tk.graphs.Graph(cuda_graphs=flag)
        with tk.graphs.graph(g):
            out = chain()
        g.replay()
        graphs[name] = (g, out)
    fns = [_synced(chain)] + [_synced(g.replay) for g, _ in graphs.values()]
    ms = measure(*fns, timer=timer)
    expect = float(k)
    fake = _fake_driver()
    for name, m, (_, out) in zip(["eager", *graphs], ms, [(None, chain()), *graphs.values()]):
        ok = fake or float(out.numpy()[0]) == expect
        t.add(impl=name, us=m.seconds / k * 1e6, s=m.seconds, ratio=m.seconds / ms[0].seconds,
              status="ok" if ok else "failed", note="" if ok else f"result {float(out.numpy()[0])} != {expect}",
              **({"headline": f"{name} per kernel", "headline_text": f"{m.seconds / k * 1e6:.2f} us/kernel",
                  "headline_status": "INFO"} if name != "eager" else {}))
    return t


def _ours_rows(step):
    """(name, timed function, graph or None) for our eager step and its two replays."""
    import tkernels as tk

    rows = [("ours eager", _synced(step), None)]
    for name, flag in (("ours, recorded calls", False), ("ours, CUDA graph", True),
                       ("ours, CUDA graph, capturable AdamW", True)):
        if name.endswith("capturable AdamW"):  # the optimizer's kernels inside the graph: one segment
            for group in step.opt.param_groups:
                group["capturable"] = True
        g = tk.graphs.Graph(cuda_graphs=flag)
        with tk.graphs.graph(g):
            step()
        g.replay()
        rows.append((name, _synced(g.replay), g))
    return rows


def _torch_graph_step(torch, twin):
    """PyTorch's step captured in torch.cuda.graph with a capturable AdamW (warm-up on a side stream first)."""
    opt = twin.opt
    for group in opt.param_groups:
        group["capturable"] = True
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            twin.opt.zero_grad(set_to_none=False)
            twin.loss_fn(twin.model, twin.x, twin.y).backward()
            twin.opt.step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=False)
    with torch.cuda.graph(g):
        loss = twin.loss_fn(twin.model, twin.x, twin.y)
        loss.backward()
        opt.step()

    def replay():
        g.replay()
        torch.cuda.synchronize()
    return replay


def models_table(timer, torch, quick: bool) -> Table:
    from bench import train

    t = Table("models", "training step of the example models on cuda: eager, replayed from the recorded calls, "
                        "replayed as CUDA graphs; PyTorch eager, CUDA graph and torch.compile from the same weights",
              [Column("model", "model"), Column("impl", "implementation"), Column("ms", "ms/step", fmt_time),
               Column("ratio_eager", "vs our eager", fmt_ratio), Column("ratio_torch", "vs PyTorch eager", fmt_ratio),
               Column("segments", "CUDA graph segments", lambda v: "" if v is None else str(v)),
               Column("note", "note")])
    cases = [("digits MLP", lambda: train._digits_step("mlp", "cuda"),
              lambda tc, st: train._torch_digits(tc, st, "mlp")),
             ("digits CNN", lambda: train._digits_step("cnn", "cuda"),
              lambda tc, st: train._torch_digits(tc, st, "cnn")),
             ("char GPT baby (bf16)", lambda: train._gpt_step("cuda", "baby"),
              lambda tc, st: train._torch_gpt(tc, st, "baby"))]
    for name, make, make_torch in cases[:1] if quick else cases:  # --quick (bench.gpu_check): the MLP only
        try:
            step, _ = make()
            rows = _ours_rows(step)
        except Exception as e:  # noqa: BLE001
            t.add(model=name, impl="ours", status="failed", note=f"{type(e).__name__}: {e}"[:140])
            continue
        torch_rows = []
        if torch is not None:
            for tname, build in (("PyTorch eager", lambda tw: tw),
                                 ("PyTorch CUDA graph", lambda tw: _torch_graph_step(torch, tw)),
                                 *([] if quick else [("PyTorch torch.compile", lambda tw: _compiled(torch, tw))])):
                try:
                    twin = make_torch(torch, step)
                    fn = build(twin)
                    fn()
                    torch_rows.append((tname, fn))
                except Exception as e:  # noqa: BLE001
                    t.add(model=name, impl=tname, status="failed", note=f"{type(e).__name__}: {e}"[:140])
        fns = [f for _, f, _ in rows] + [f for _, f in torch_rows]
        ms = measure(*fns, timer=timer)
        eager = ms[0].seconds
        ref = next((m.seconds for (tn, _), m in zip(torch_rows, ms[len(rows):]) if tn == "PyTorch eager"), None)
        for (rname, _, g), m in zip(rows, ms):
            segs = None if g is None else len(g.cuda_graph_segments) or None
            t.add(model=name, impl=rname, ms=m.ms, s=m.seconds, ratio_eager=m.seconds / eager,
                  ratio_torch=None if ref is None else m.seconds / ref, segments=segs, status="ok", note="")
        for (tname, _), m in zip(torch_rows, ms[len(rows):]):
            t.add(model=name, impl=tname, ms=m.ms, s=m.seconds, ratio_eager=m.seconds / eager,
                  ratio_torch=None if ref is None else m.seconds / ref, status="ok", note="")
    if torch is None:
        t.notes.append("PyTorch is not importable here: no PyTorch rows.")
    return t


def _compiled(torch, twin):
    twin.model = torch.compile(twin.model)
    return twin


def run(args, timer) -> list[Table]:
    if not _on_gpu():
        t = Table("per_kernel", "host time per kernel (needs a GPU: cuda is interpreted or absent here)",
                  [Column("note", "note")])
        t.notes.append("No GPU: nothing measured. CUDA graphs need the driver; run this where one is lent.")
        return [t]
    torch = peers.torch(not getattr(args, "no_torch", False))
    if torch is not None and not torch.cuda.is_available():
        torch = None
    k = 32 if args.quick else args.kernels
    tables = [per_kernel_table(timer, k), models_table(timer, torch, args.quick)]
    if _fake_driver():
        for t in tables:
            t.notes.append("The fake driver runs no kernel: results are not checked and times are host times only.")
    return tables
