"""A hypothesis state machine drives the caching allocator on the fake backend over two streams.

Each step is a random malloc, free, record_stream, event completion, empty_cache or limit change. After
each step the invariants are checked against an independent model: live blocks never overlap (nor
overlap blocks still waiting for their record_stream events); a block is only handed out on its
segment's stream and never while events on its memory are pending; reserved = allocated + pending +
cached free; and every stat equals a recount from ``snapshot()``.
"""

from __future__ import annotations

import importlib
import importlib.util
import pathlib
import sys

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule


def _load(name):
    """``tkernels.cuda.<name>``; by file path when the package itself does not import (yet)."""
    try:
        return importlib.import_module(f"tkernels.cuda.{name}")
    except ImportError:
        path = pathlib.Path(__file__).resolve().parents[3] / "tkernels" / "cuda" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"_standalone_tkernels_cuda_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        return mod


allocator = _load("allocator")
raw = _load("raw_backends")

MiB = 1 << 20
STREAMS = (0, 1)
SMALL_SIZES = st.one_of(st.sampled_from([0, 1, 511, 512, 513, 4096, 100_000, MiB - 1, MiB]),
                        st.integers(0, MiB))
LARGE_SIZES = st.one_of(st.sampled_from([MiB + 1, 3 * MiB, 9 * MiB, 10 * MiB, 11 * MiB, 19 * MiB, 30 * MiB]),
                        st.integers(MiB + 1, 32 * MiB))
STATS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
         "active_bytes", "inactive_split_bytes", "requested_bytes")
SCOPES = {"all": None, "small_pool": "small", "large_pool": "large"}


def recount(snapshot):
    """The current value of every stat, recomputed from the segments and their blocks."""
    out = {}
    for scope, pool in SCOPES.items():
        segs = [s for s in snapshot if pool is None or s["segment_type"] == pool]
        blocks = [(b, len(s["blocks"]) > 1) for s in segs for b in s["blocks"]]
        alloc = [b for b, _ in blocks if b["state"] == "active_allocated"]
        active = [b for b, _ in blocks if b["state"] != "inactive"]
        isplit = [b for b, split in blocks if b["state"] == "inactive" and split]
        vals = {
            "allocation": len(alloc),
            "segment": len(segs),
            "active": len(active),
            "inactive_split": len(isplit),
            "allocated_bytes": sum(b["size"] for b in alloc),
            "reserved_bytes": sum(s["total_size"] for s in segs),
            "active_bytes": sum(b["size"] for b in active),
            "inactive_split_bytes": sum(b["size"] for b in isplit),
            "requested_bytes": sum(b["requested_size"] for b in alloc),
        }
        for name, v in vals.items():
            out[f"{name}.{scope}"] = v
    return out


class AllocatorMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self):
        self.backend = raw.FakeBackend(capacity=48 * MiB)
        self.alloc = allocator.CachingAllocator(self.backend)
        self.live = {}  # id -> (Block, ptr, size, requested, stream) as handed out
        self.next_id = 0
        self.waiting = []  # [ptr, size, set of streams whose event is not complete yet]: memory not reusable
        self.segment_stream = {}  # segment address -> stream, for as long as the fake address exists
        self.peaks = {k: 0 for k in recount([])}
        self.mallocs = 0
        self.malloc_bytes = 0
        self.ooms = 0
        self.retries = 0

    # --- helpers

    def observe(self):
        """Check the stats against a recount now, and note it (the allocator's peaks are its maxima)."""
        stats = self.alloc.memory_stats()
        for k, v in recount(self.alloc.snapshot()).items():
            assert stats[f"{k}.current"] == v, k
            self.peaks[k] = max(self.peaks[k], v)

    def pick(self, data):
        key = data.draw(st.sampled_from(sorted(self.live)))
        return key, self.live[key]

    # --- rules

    @rule(nbytes=SMALL_SIZES, stream=st.sampled_from(STREAMS))
    def malloc_small(self, nbytes, stream):
        self.malloc(nbytes, stream)

    @rule(nbytes=LARGE_SIZES, stream=st.sampled_from(STREAMS))
    def malloc_large(self, nbytes, stream):
        self.malloc(nbytes, stream)

    def malloc(self, nbytes, stream):
        # poll events first, as malloc would, so that the model sees that state too (peaks)
        self.alloc.process_events()
        self.observe()
        segs_before = self.backend.num_mallocs
        frees_before = self.backend.num_frees
        try:
            block = self.alloc.malloc(nbytes, stream)
        except allocator.OutOfMemoryError as e:
            self.ooms += 1
            self.retries += self.backend.num_frees > frees_before
            assert f"Tried to allocate {allocator.format_size(allocator.round_size(nbytes))}" in str(e)
            limit = self.alloc.memory_limit
            need = allocator.allocation_size(allocator.round_size(nbytes))
            free_dev = self.backend.capacity - self.backend.used
            assert need > free_dev or (limit is not None and self.alloc.memory_reserved() + need > limit)
            # before giving up it released every cached unsplit segment
            for s in self.alloc.snapshot():
                assert len(s["blocks"]) > 1 or s["blocks"][0]["state"] != "inactive"
            return
        self.mallocs += 1
        self.malloc_bytes += block.size
        # malloc releases segments only on a failed raw allocation, and then it retries once
        self.retries += self.backend.num_frees > frees_before
        assert block.size >= nbytes and block.size % 512 == 0 and block.requested_size == nbytes
        assert block.stream == stream
        if self.backend.num_mallocs > segs_before and self.alloc.memory_limit is not None:
            assert self.alloc.memory_reserved() <= self.alloc.memory_limit
        # the block sits in a segment of its own stream
        (seg,) = [s for s in self.alloc.snapshot()
                  if s["address"] <= block.ptr < s["address"] + s["total_size"]]
        assert block.ptr + block.size <= seg["address"] + seg["total_size"]
        assert self.segment_stream.setdefault(seg["address"], seg["stream"]) == seg["stream"] == stream
        # and not on memory whose record_stream events are still pending
        for ptr, size, streams in self.waiting:
            assert not (ptr < block.ptr + block.size and block.ptr < ptr + size), \
                f"allocation re-used too soon: {block} overlaps a block waiting for streams {streams}"
        self.live[self.next_id] = (block, block.ptr, block.size, nbytes, stream)
        self.next_id += 1

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def free(self, data):
        key, (block, ptr, size, _, stream) = self.pick(data)
        uses = set(block.stream_uses or ())
        self.alloc.free(block)
        del self.live[key]
        if uses:
            self.waiting.append([ptr, size, uses])

    @precondition(lambda self: self.live)
    @rule(data=st.data(), other=st.sampled_from(STREAMS + (2,)))
    def record_stream(self, data, other):
        _, (block, *_rest) = self.pick(data)
        self.alloc.record_stream(block, other)

    @rule(stream=st.sampled_from(STREAMS + (2, "all")))
    def complete(self, stream):
        if stream == "all":
            self.backend.complete_all()
            self.waiting = []
            return
        self.backend.complete_stream(stream)
        for entry in self.waiting:
            entry[2].discard(stream)
        self.waiting = [e for e in self.waiting if e[2]]

    @rule()
    def empty_cache(self):
        self.alloc.process_events()
        self.observe()
        live_before = self.backend.num_live_events
        self.alloc.empty_cache()
        assert self.backend.num_live_events == live_before
        # nothing cached and unsplit is left
        for s in self.alloc.snapshot():
            assert len(s["blocks"]) > 1 or s["blocks"][0]["state"] != "inactive"

    @rule(what=st.sampled_from(["reset_peaks", None, 16 * MiB, 40 * MiB]))
    def control(self, what):
        if what == "reset_peaks":
            self.alloc.reset_peak_memory_stats()
            self.peaks = recount(self.alloc.snapshot())
        else:
            self.alloc.set_memory_limit(what)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def double_free(self, data):
        key, (block, ptr, size, _, _) = self.pick(data)
        uses = set(block.stream_uses or ())
        self.alloc.free(block)
        del self.live[key]
        if uses:
            self.waiting.append([ptr, size, uses])
        try:
            self.alloc.free(block)
        except ValueError as e:
            assert "double free" in str(e)
        else:
            raise AssertionError("a double free was not detected")

    # --- invariants

    @invariant()
    def blocks_unchanged_and_disjoint(self):
        spans = []
        for block, ptr, size, _, stream in self.live.values():
            assert (block.ptr, block.size, block.stream) == (ptr, size, stream)
            assert block.state == allocator.ALLOCATED
            spans.append((ptr, size))
        spans += [(ptr, size) for ptr, size, _ in self.waiting]
        spans.sort()
        for (p0, s0), (p1, _) in zip(spans, spans[1:]):
            assert p0 + s0 <= p1, "two live blocks overlap"

    @invariant()
    def segments_are_consistent(self):
        snap = self.alloc.snapshot()
        assert self.backend.live == {s["address"]: s["total_size"] for s in snap}
        for s in snap:
            addr = s["address"]
            assert self.segment_stream.setdefault(addr, s["stream"]) == s["stream"]
            for b in s["blocks"]:
                assert b["address"] == addr and b["size"] > 0 and b["stream"] == s["stream"]
                addr += b["size"]
            assert addr == s["address"] + s["total_size"]  # blocks tile the segment
            states = [b["state"] for b in s["blocks"]]
            for x, y in zip(states, states[1:]):
                assert not (x == y == "inactive"), "two free neighbours were not merged"
        # reserved = allocated + pending + cached free
        live_bytes = sum(size for _, _, size, _, _ in self.live.values())
        pending = sum(b["size"] for s in snap for b in s["blocks"] if b["state"] == "active_pending_free")
        cached = sum(b["size"] for s in snap for b in s["blocks"] if b["state"] == "inactive")
        assert self.alloc.memory_reserved() == live_bytes + pending + cached
        assert self.alloc.memory_allocated() == live_bytes
        assert {(p, sz) for _, p, sz, _, _ in self.live.values()} == {
            (b["address"], b["size"]) for s in snap for b in s["blocks"] if b["state"] == "active_allocated"}

    @invariant()
    def stats_match_a_recount(self):
        stats = self.alloc.memory_stats()
        counts = recount(self.alloc.snapshot())
        for k, v in counts.items():
            self.peaks[k] = max(self.peaks[k], v)
            assert stats[f"{k}.current"] == v, k
            if k.startswith("inactive_split"):
                # one process_events call may cache several pending blocks, one after the other: the
                # states in between are real (PyTorch counts them too) but the model cannot see them
                assert stats[f"{k}.peak"] >= self.peaks[k], k
                self.peaks[k] = stats[f"{k}.peak"]
            else:
                assert stats[f"{k}.peak"] == self.peaks[k], k
            assert stats[f"{k}.allocated"] - stats[f"{k}.freed"] == v, k
        assert stats["allocation.all.allocated"] == stats["active.all.allocated"] == self.mallocs
        assert stats["allocated_bytes.all.allocated"] == self.malloc_bytes
        assert stats["num_ooms"] == self.ooms
        assert stats["num_alloc_retries"] == self.retries
        assert stats["num_segment_allocs"] == self.backend.num_mallocs
        assert stats["num_segment_frees"] == self.backend.num_frees
        assert stats["num_cache_hits"] == self.mallocs - self.backend.num_mallocs

    @invariant()
    def waiting_blocks_stay_pending(self):
        snap = self.alloc.snapshot()
        blocks = {b["address"]: b for s in snap for b in s["blocks"]}
        for ptr, size, _ in self.waiting:  # its events are not complete: it cannot be back in the pool
            assert (blocks[ptr]["size"], blocks[ptr]["state"]) == (size, "active_pending_free")
        if not any(b["state"] == "active_pending_free" for b in blocks.values()):
            assert self.backend.num_live_events == 0  # every event was destroyed once it completed

    def teardown(self):
        if not hasattr(self, "alloc"):
            return
        for block, *_ in self.live.values():
            self.alloc.free(block)
        self.backend.complete_all()
        self.alloc.empty_cache()
        assert self.backend.live == {} and self.backend.num_live_events == 0
        stats = self.alloc.memory_stats()
        assert all(stats[f"{k}.current"] == 0 for k in recount([]))


AllocatorMachine.TestCase.settings = settings(
    max_examples=50, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_allocator_state_machine = AllocatorMachine.TestCase
