"""``python -m bench alloc``: what the caching allocator costs (DESIGN.md §4, §11: a cache hit ≤ 2 µs).

Two tables:
1. ``CachingAllocator.malloc`` + ``free`` per pair, on each raw backend: the fake one (no memory at all, so
   the pure Python cost of the allocator), the host one (interpreted cuda's host memory) and, on a GPU, the
   CUDA driver (``cuMemAlloc``/``cuMemFree``). *hit*: the block comes from the cache (the backend is not
   called: every backend should show the same figure). *miss*: a fresh segment every time, i.e. malloc
   making a segment + free + ``empty_cache`` giving it back (the backend's allocate and free included).
   Each backend gets fresh allocators, so the library's own allocator is not disturbed.
2. End to end: ``tk.empty((n,), dtype=uint8, device=...)`` whose result is dropped at once (entry, dispatch,
   allocator hit, Array, and the free through the refcount), on cpu next to ``np.empty`` and on cuda next
   to the peers present: ``torch.empty(..., device="cuda")`` and ``cupy.empty`` (their caching allocators),
   measured interleaved in the same run. Without a GPU, cuda means interpreted cuda (host memory; the
   module sets ``TKERNELS_INTERPRET=1`` when unset, before tkernels is imported).

Sizes: 512 B, 64 KiB, 4 MiB and 64 MiB (small pool; large pool from a 20 MiB segment; a segment of its
own). Every row checks what it measured (a hit made no segment, a miss made and returned one each time,
tk.empty made no raw allocation while timed); a row that fails its check is marked failed.
"""

from __future__ import annotations

import numpy as np

from bench.gpu_check import machine_label, select_cuda_mode
from bench.report import Column, Table, fmt_ratio, fmt_time
from bench.timing import measure

MODE, GPU = select_cuda_mode()
MACHINE = machine_label(GPU) if MODE == "gpu" else "cpu"
GPU_CHECK_ARGS = []  # bench.gpu_check runs the full benchmark (about 15 s on a GPU)

SIZES = ((512, "512 B"), (64 << 10, "64 KiB"), (4 << 20, "4 MiB"), (64 << 20, "64 MiB"))
HIT_TARGET_US = 2.0  # DESIGN.md §11



def _err(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}"[:140]

def add_arguments(p) -> None:
    p.add_argument("--sizes", metavar="BYTES", help="comma-separated sizes in bytes instead of the four defaults")


def environment(args) -> dict:
    if MODE == "gpu":
        where = f"GPU: {GPU['name']}, driver CUDA {GPU['driver_version']}"
    elif MODE == "interpreted":
        where = "no GPU: the cuda rows run interpreted (host memory through the same allocator)"
    else:
        where = "no GPU and TKERNELS_INTERPRET=0: no cuda rows"
    return {"cuda": where}


def _sizes(args):
    if getattr(args, "sizes", None):
        return [(int(s), _label(int(s))) for s in args.sizes.split(",")]
    return list(SIZES)


def _label(n: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def _backends():
    from tkernels.cuda.raw_backends import FakeBackend, HostBackend

    out = [("fake", lambda: FakeBackend(capacity=1 << 40)), ("host", HostBackend)]
    if MODE == "gpu":
        import tkernels.cuda as tkc

        tkc.set_device(0)
        out.append(("cuda", lambda: tkc.get_runtime().raw_backend(0)))
    return out


def _headline(row, label, us, target=HIT_TARGET_US):
    row.update(headline=label, headline_text=f"{us:.2f} µs (target ≤ {target:g} µs)",
               headline_status="PASS" if us <= target else "MISS")


def allocator_table(timer, sizes) -> Table:
    from tkernels.cuda.allocator import CachingAllocator

    t = Table("allocator", "CachingAllocator malloc + free, µs per pair: cache hit vs miss (lower is better)",
              [Column("backend", "backend"), Column("size", "size"), Column("hit_us", "hit µs", fmt_time),
               Column("miss_us", "miss µs", fmt_time), Column("miss_per_hit", "miss / hit", fmt_ratio),
               Column("note", "note")])
    for bname, make in _backends():
        for nbytes, label in sizes:
            row = t.add(backend=bname, size=label, nbytes=nbytes, op=f"{bname} {label}")
            try:
                hit_alloc, miss_alloc = CachingAllocator(make(), 0), CachingAllocator(make(), 0)
                hit_alloc.free(hit_alloc.malloc(nbytes, 0))  # one cached segment: every later malloc hits

                def hit(a=hit_alloc, n=nbytes):
                    a.free(a.malloc(n, 0))

                def miss(a=miss_alloc, n=nbytes):
                    a.free(a.malloc(n, 0))
                    a.empty_cache()

                m_hit, m_miss = measure(hit, miss, timer=timer)
                hs, ms = hit_alloc.memory_stats(), miss_alloc.memory_stats()
                bad = []
                if hs["num_segment_allocs"] != 1:
                    bad.append(f"hits made {hs['num_segment_allocs'] - 1} extra segment(s)")
                if ms["num_segment_allocs"] != ms["num_segment_frees"] or ms["num_cache_hits"] != 0:
                    bad.append("a miss was served from the cache or kept its segment")
                if ms["reserved_bytes.all.current"] or hs["allocated_bytes.all.current"]:
                    bad.append("memory left allocated")
                hit_alloc.empty_cache()
            except Exception as e:  # noqa: BLE001 - one broken backend must not hide the others
                row.update(status="failed", note=_err(e))
                continue
            row.update(status="failed" if bad else "ok", note="; ".join(bad), hit_us=m_hit.us, miss_us=m_miss.us,
                       miss_per_hit=m_miss.seconds / m_hit.seconds, hit_s=m_hit.seconds, miss_s=m_miss.seconds,
                       hit_p20_s=m_hit.p20, hit_p80_s=m_hit.p80, miss_p20_s=m_miss.p20, miss_p80_s=m_miss.p80,
                       hit_loops=m_hit.loops, miss_loops=m_miss.loops)
            if nbytes == 512 and not bad and bname == ("cuda" if MODE == "gpu" else "fake"):
                _headline(row, f"allocator cache hit ({bname}, 512 B)", m_hit.us)
    t.notes += [
        "hit: malloc served from the cache, then free (the backend is not called on this path).",
        "miss: malloc making a new segment, free, and empty_cache returning the segment: the backend's raw "
        "allocate + free are included (fake: Python bookkeeping; host: a NumPy buffer; cuda: cuMemAlloc/cuMemFree).",
        f"DESIGN.md §11: a cache hit ≤ {HIT_TARGET_US:g} µs.",
    ]
    return t


def _peers():
    """(name, make(nbytes) -> zero-argument fn) for the cuda peers importable here (GPU mode only)."""
    out = []
    if MODE != "gpu":
        return out
    try:
        import torch

        if torch.cuda.is_available():
            out.append(("torch", lambda n: (lambda: torch.empty(n, dtype=torch.uint8, device="cuda"))))
    except Exception:  # noqa: BLE001 - a peer that does not import is just absent
        pass
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            out.append(("cupy", lambda n: (lambda: cupy.empty(n, dtype=cupy.uint8))))
    except Exception:  # noqa: BLE001
        pass
    return out


def empty_table(timer, sizes) -> Table:
    import tkernels as tk

    peers = _peers()
    cols = [Column("size", "size"), Column("tk_cpu_us", "tk cpu µs", fmt_time),
            Column("np_us", "np.empty µs", fmt_time), Column("cpu_ratio", "tk / np", fmt_ratio)]
    if MODE != "none":
        cols.append(Column("tk_cuda_us", "tk cuda µs" if MODE == "gpu" else "tk cuda (interp.) µs", fmt_time))
    for name, _ in peers:
        cols += [Column(f"{name}_us", f"{name}.empty µs", fmt_time),
                 Column(f"{name}_ratio", f"tk / {name}", fmt_ratio)]
    cols.append(Column("note", "note"))
    t = Table("empty", "Create and drop an uninitialized uint8 array, µs per call (ratio: lower is better)", cols)
    u8 = tk.uint8
    for nbytes, label in sizes:
        row = t.add(size=label, nbytes=nbytes, op=f"empty {label}")
        fns = [("tk_cpu", lambda n=nbytes: tk.empty((n,), dtype=u8)), ("np", lambda n=nbytes: np.empty(n, np.uint8))]
        if MODE != "none":
            fns.append(("tk_cuda", lambda n=nbytes: tk.empty((n,), dtype=u8, device="cuda")))
        fns += [(name, make(nbytes)) for name, make in peers]
        try:
            for _, fn in fns:
                fn()
            seg0 = tk.cuda.memory_stats()["num_segment_allocs"] if MODE != "none" else 0
            ms = dict(zip([k for k, _ in fns], measure(*[f for _, f in fns], timer=timer)))
            seg1 = tk.cuda.memory_stats()["num_segment_allocs"] if MODE != "none" else 0
        except Exception as e:  # noqa: BLE001
            row.update(status="failed", note=_err(e))
            continue
        row.update(status="ok" if seg1 == seg0 else "failed",
                   note="" if seg1 == seg0 else f"tk.empty on cuda made {seg1 - seg0} raw allocation(s) while timed")
        for k, m in ms.items():
            row.update({f"{k}_us": m.us, f"{k}_s": m.seconds, f"{k}_p20_s": m.p20, f"{k}_p80_s": m.p80})
        row["cpu_ratio"] = ms["tk_cpu"].seconds / ms["np"].seconds
        for name, _ in peers:
            row[f"{name}_ratio"] = ms["tk_cuda"].seconds / ms[name].seconds
        if nbytes == 512 and MODE == "gpu":
            text = f"{ms['tk_cuda'].us:.2f} µs" + "".join(f"; {n}.empty {ms[n].us:.2f} µs" for n, _ in peers)
            row.update(headline="tk.empty + del (cuda, 512 B)", headline_text=text, headline_status="INFO")
    t.notes += ["Each call's result is dropped at once: the time includes the free (refcount → allocator).",
                "Peers run in the same process, interleaved with tkernels, each on its own caching allocator."]
    if MODE == "interpreted":
        t.notes.append("No GPU here: 'tk cuda' is interpreted cuda (host memory, same allocator and dispatch).")
    return t


def run(args, timer) -> list[Table]:
    sizes = _sizes(args)
    return [allocator_table(timer, sizes), empty_table(timer, sizes)]
