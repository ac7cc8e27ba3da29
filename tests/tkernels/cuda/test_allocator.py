"""Caching allocator tests, on the fake raw backend (pointers only) and the host backend (real memory)."""

from __future__ import annotations

import ast
import ctypes
import importlib
import importlib.util
import pathlib
import sys
import threading
import types

import numpy as np
import pytest


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
CachingAllocator = allocator.CachingAllocator
OutOfMemoryError = allocator.OutOfMemoryError
FakeBackend = raw.FakeBackend
HostBackend = raw.HostBackend

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def make(capacity=1 * GiB, **kw):
    backend = FakeBackend(capacity)
    return CachingAllocator(backend, **kw), backend


def blocks_of(alloc):
    """[(segment address, [(address, size, state), ...]), ...] from the snapshot."""
    return [(s["address"], [(b["address"], b["size"], b["state"]) for b in s["blocks"]])
            for s in alloc.snapshot()]


def check_stats(stats, **expected):
    """Assert stats[key] == value for each key written with '__' for '.' (allocation__all__current)."""
    got = {k: stats[k.replace("__", ".")] for k in expected}
    assert got == expected


# ---------------------------------------------------------------- sizes and pools


@pytest.mark.parametrize("nbytes, size", [(0, 512), (1, 512), (511, 512), (512, 512), (513, 1024),
                                          (1000, 1024), (MiB, MiB), (MiB + 1, MiB + 512)])
def test_round_size(nbytes, size):
    alloc, _ = make()
    assert allocator.round_size(nbytes) == size
    b = alloc.malloc(nbytes)
    assert (b.size, b.requested_size) == (size, nbytes)


def test_negative_size_rejected():
    alloc, _ = make()
    with pytest.raises(ValueError, match="nbytes must be >= 0"):
        alloc.malloc(-1)


def test_numpy_integer_size():
    alloc, _ = make()
    b = alloc.malloc(np.int64(1000))
    assert type(b.size) is int and b.size == 1024 and type(b.requested_size) is int


@pytest.mark.parametrize("size, seg", [(512, 2 * MiB), (MiB, 2 * MiB), (MiB + 512, 20 * MiB),
                                       (10 * MiB - 512, 20 * MiB), (10 * MiB, 10 * MiB),
                                       (11 * MiB + 512, 12 * MiB), (12 * MiB, 12 * MiB)])
def test_allocation_size(size, seg):
    assert allocator.allocation_size(size) == seg


@pytest.mark.parametrize("nbytes, pool, seg", [(1, "small", 2 * MiB), (MiB, "small", 2 * MiB),
                                               (MiB + 1, "large", 20 * MiB), (9 * MiB, "large", 20 * MiB),
                                               (10 * MiB, "large", 10 * MiB), (21 * MiB, "large", 22 * MiB)])
def test_pool_and_segment_choice(nbytes, pool, seg):
    alloc, backend = make()
    b = alloc.malloc(nbytes)
    (s,) = alloc.snapshot()
    assert (s["segment_type"], s["total_size"], s["address"]) == (pool, seg, b.ptr)
    assert backend.live == {b.ptr: seg}
    assert b.pool.name == pool


def test_zero_size_gets_distinct_512_byte_blocks():
    alloc, _ = make()
    a, b = alloc.malloc(0), alloc.malloc(0)
    assert (a.size, b.size, a.requested_size) == (512, 512, 0)
    assert b.ptr == a.ptr + 512
    check_stats(alloc.memory_stats(), allocated_bytes__all__current=1024, requested_bytes__all__current=0,
                allocation__all__current=2)
    alloc.free(a)
    alloc.free(b)
    assert alloc.memory_allocated() == 0


# ---------------------------------------------------------------- best fit, split, merge


def test_best_fit_picks_smallest_big_enough_block():
    alloc, _ = make()
    # one small segment: [a 4K][x][b 8K][y][c 2K][z][d 4K][w][rest]
    sizes = (4 * KiB, 512, 8 * KiB, 512, 2 * KiB, 512, 4 * KiB, 512)
    a, x, b, y, c, z, d, w = (alloc.malloc(n) for n in sizes)
    assert [blk.ptr - a.ptr for blk in (x, b, y, c, z, d, w)] == [4096, 4608, 12800, 13312, 15360, 15872,
                                                                   19968]
    for blk in (a, b, c, d):
        alloc.free(blk)
    assert alloc.malloc(2000).ptr == c.ptr  # exact 2K fit, not the first or the biggest hole
    e = alloc.malloc(3000)  # 3K: the 4K holes are the best fit, the lower address first
    assert (e.ptr, e.size) == (a.ptr, 3072)
    f = alloc.malloc(4096)  # 4K: the other 4K hole (a's hole has only 1K left)
    assert f.ptr == d.ptr
    g = alloc.malloc(1024)  # 1K: the 1K left of a's hole
    assert g.ptr == a.ptr + 3072
    assert alloc.malloc(5000).ptr == b.ptr
    assert len(alloc.snapshot()) == 1


def test_split_then_merge_with_both_neighbours():
    alloc, backend = make()
    a, b, c = alloc.malloc(1000), alloc.malloc(2000), alloc.malloc(3000)
    base = a.ptr
    assert (b.ptr, c.ptr) == (base + 1024, base + 3072)
    rest = 2 * MiB - 6144
    assert blocks_of(alloc) == [(base, [(base, 1024, "active_allocated"),
                                        (base + 1024, 2048, "active_allocated"),
                                        (base + 3072, 3072, "active_allocated"),
                                        (base + 6144, rest, "inactive")])]
    alloc.free(a)  # next is allocated: no merge
    alloc.free(c)  # merges with the free tail
    assert blocks_of(alloc) == [(base, [(base, 1024, "inactive"), (base + 1024, 2048, "active_allocated"),
                                        (base + 3072, rest + 3072, "inactive")])]
    check_stats(alloc.memory_stats(), inactive_split__all__current=2,
                inactive_split_bytes__all__current=rest + 4096)
    alloc.free(b)  # merges with both neighbours: the segment is one free block again
    assert blocks_of(alloc) == [(base, [(base, 2 * MiB, "inactive")])]
    check_stats(alloc.memory_stats(), inactive_split__all__current=0, inactive_split_bytes__all__current=0,
                segment__all__current=1)
    assert backend.num_mallocs == 1 and backend.num_frees == 0


def test_merge_with_previous_only():
    alloc, _ = make()
    a, b, c = alloc.malloc(512), alloc.malloc(512), alloc.malloc(512)
    alloc.free(a)
    alloc.free(b)  # merges into a's free block, c still holds the tail apart
    base = a.ptr
    assert blocks_of(alloc)[0][1][:3] == [(base, 1024, "inactive"), (base + 1024, 512, "active_allocated"),
                                          (base + 1536, 2 * MiB - 1536, "inactive")]
    assert c.ptr == base + 1024


def test_small_pool_splits_down_to_512_bytes():
    alloc, _ = make()
    a = alloc.malloc(MiB)
    b = alloc.malloc(MiB - 512)
    c = alloc.malloc(512)  # the last 512 B of the same segment
    assert (b.ptr, c.ptr) == (a.ptr + MiB, a.ptr + 2 * MiB - 512)
    assert len(alloc.snapshot()) == 1
    check_stats(alloc.memory_stats(), inactive_split__all__current=0,
                allocated_bytes__small_pool__current=2 * MiB)


def test_large_pool_splits_only_when_remainder_exceeds_1_mib():
    alloc, _ = make()
    a = alloc.malloc(19 * MiB)  # 1 MiB left: not split, the block keeps the whole segment
    assert a.size == 20 * MiB and a.requested_size == 19 * MiB
    b = alloc.malloc(18 * MiB + 512 * KiB)  # 1.5 MiB left: split
    assert b.size == 18 * MiB + 512 * KiB
    (s1, s2) = alloc.snapshot()
    assert [blk["size"] for blk in s2["blocks"]] == [18 * MiB + 512 * KiB, 1536 * KiB]
    check_stats(alloc.memory_stats(), allocated_bytes__large_pool__current=20 * MiB + 18 * MiB + 512 * KiB,
                requested_bytes__large_pool__current=37 * MiB + 512 * KiB)


def test_cached_large_block_is_reused_and_split():
    alloc, backend = make()
    a = alloc.malloc(12 * MiB)  # a 12 MiB segment of its own
    alloc.free(a)
    b = alloc.malloc(4 * MiB)  # best fit is the cached 12 MiB block: split, 8 MiB stays cached
    assert b.ptr == a.ptr and b.size == 4 * MiB and backend.num_mallocs == 1
    c = alloc.malloc(8 * MiB)
    assert c.ptr == a.ptr + 4 * MiB and backend.num_mallocs == 1


def test_max_split_size():
    alloc, backend = make(max_split_size=16 * MiB)
    a = alloc.malloc(40 * MiB)
    alloc.free(a)
    b = alloc.malloc(12 * MiB)  # below max_split_size: the 40 MiB oversize block is not split for it
    assert b.ptr != a.ptr and backend.num_mallocs == 2
    c = alloc.malloc(32 * MiB)  # oversize request: the 40 MiB block fits (< 32 + 20 MiB), and is not split
    assert (c.ptr, c.size) == (a.ptr, 40 * MiB)
    alloc.free(c)
    d = alloc.malloc(17 * MiB)  # 40 >= 18 + 20 MiB: too big to hand out, a new segment
    assert d.ptr != a.ptr and backend.num_mallocs == 3
    assert alloc.memory_stats()["max_split_size"] == 16 * MiB
    with pytest.raises(ValueError, match="max_split_size"):
        CachingAllocator(FakeBackend(), max_split_size=MiB)


# ---------------------------------------------------------------- streams


def test_block_freed_on_one_stream_is_not_reused_on_another():
    alloc, backend = make()
    a = alloc.malloc(4096, stream=1)
    alloc.free(a)
    b = alloc.malloc(4096, stream=2)
    assert b.stream == 2 and not (a.ptr <= b.ptr < a.ptr + 2 * MiB)  # a segment of stream 2's own
    assert backend.num_mallocs == 2
    c = alloc.malloc(4096, stream=1)
    assert (c.ptr, c.stream) == (a.ptr, 1)
    assert {s["address"]: s["stream"] for s in alloc.snapshot()} == {a.ptr: 1, b.ptr: 2}
    assert alloc.memory_stats()["num_cache_hits"] == 1


def test_record_stream_delays_reuse_until_events_complete():
    alloc, backend = make()
    a = alloc.malloc(4096, stream=1)
    alloc.record_stream(a, 2)
    backend.complete_stream(2)  # work queued before the free does not count: the event is recorded at free
    alloc.free(a)
    assert backend.num_live_events == 1
    check_stats(alloc.memory_stats(), allocation__all__current=0, allocated_bytes__all__current=0,
                active__all__current=1, active_bytes__all__current=4096, active__all__peak=1)
    assert blocks_of(alloc)[0][1][0] == (a.ptr, 4096, "active_pending_free")
    b = alloc.malloc(4096, stream=1)
    assert b.ptr != a.ptr, "allocation re-used too soon"
    check_stats(alloc.memory_stats(), active__all__current=2, active__all__peak=2,
                active_bytes__all__peak=8192, allocation__all__peak=1)
    alloc.empty_cache()  # the pending block's segment is kept
    assert backend.num_frees == 0
    backend.complete_stream(2)
    c = alloc.malloc(4096, stream=1)
    assert c.ptr == a.ptr
    assert backend.num_live_events == 0
    check_stats(alloc.memory_stats(), active__all__current=2, allocation__all__current=2)


def test_record_stream_on_two_streams_waits_for_both():
    alloc, backend = make()
    a = alloc.malloc(4096, stream=0)
    alloc.record_stream(a, 1)
    alloc.record_stream(a, 2)
    alloc.record_stream(a, 0)  # its own stream: nothing to wait for
    alloc.free(a)
    assert backend.num_live_events == 2
    backend.complete_stream(1)
    alloc.process_events()
    assert blocks_of(alloc)[0][1][0][2] == "active_pending_free"
    backend.complete_stream(2)
    alloc.process_events()
    assert blocks_of(alloc) == [(a.ptr, [(a.ptr, 2 * MiB, "inactive")])]
    assert alloc.malloc(4096, stream=0).ptr == a.ptr
    assert backend.num_live_events == 0


def test_record_stream_on_own_stream_is_free_to_reuse():
    alloc, backend = make()
    a = alloc.malloc(4096, stream=3)
    alloc.record_stream(a, 3)
    alloc.free(a)
    assert backend.num_live_events == 0 and alloc.malloc(4096, stream=3).ptr == a.ptr


def test_record_stream_requires_allocated_block():
    alloc, _ = make()
    a = alloc.malloc(10)
    alloc.free(a)
    with pytest.raises(ValueError, match="not allocated"):
        alloc.record_stream(a, 1)


# ---------------------------------------------------------------- stats


def test_stats_accounting():
    alloc, backend = make()
    a = alloc.malloc(1000)  # small: new 2 MiB segment, split
    b = alloc.malloc(3 * MiB)  # large: new 20 MiB segment, split
    s = alloc.memory_stats()
    check_stats(
        s,
        allocation__all__current=2, allocation__all__peak=2, allocation__all__allocated=2,
        allocation__all__freed=0, allocation__small_pool__current=1, allocation__large_pool__current=1,
        allocated_bytes__all__current=1024 + 3 * MiB, allocated_bytes__small_pool__current=1024,
        allocated_bytes__large_pool__current=3 * MiB, allocated_bytes__all__allocated=1024 + 3 * MiB,
        requested_bytes__all__current=1000 + 3 * MiB,
        reserved_bytes__all__current=22 * MiB, reserved_bytes__small_pool__current=2 * MiB,
        reserved_bytes__large_pool__current=20 * MiB, reserved_bytes__all__peak=22 * MiB,
        segment__all__current=2, segment__small_pool__current=1, segment__large_pool__current=1,
        active__all__current=2, active_bytes__all__current=1024 + 3 * MiB,
        inactive_split__all__current=2, inactive_split__small_pool__current=1,
        inactive_split_bytes__all__current=(2 * MiB - 1024) + 17 * MiB,
        inactive_split_bytes__large_pool__current=17 * MiB,
        num_alloc_retries=0, num_ooms=0, num_cache_hits=0, num_segment_allocs=2, num_segment_frees=0,
        num_device_alloc=2,
    )
    alloc.free(a)
    c = alloc.malloc(2000)  # a cache hit in the small segment (while b still holds 3 MiB: a new peak)
    alloc.free(b)
    s = alloc.memory_stats()
    check_stats(
        s,
        allocation__all__current=1, allocation__all__peak=2, allocation__all__allocated=3,
        allocation__all__freed=2, allocation__small_pool__allocated=2, allocation__small_pool__freed=1,
        allocation__large_pool__current=0, allocation__large_pool__freed=1,
        allocated_bytes__all__current=2048, allocated_bytes__all__peak=2048 + 3 * MiB,
        allocated_bytes__all__allocated=3072 + 3 * MiB, allocated_bytes__all__freed=1024 + 3 * MiB,
        allocated_bytes__small_pool__current=2048, allocated_bytes__small_pool__peak=2048,
        requested_bytes__all__current=2000, requested_bytes__all__freed=1000 + 3 * MiB,
        active_bytes__all__current=2048, active_bytes__all__freed=1024 + 3 * MiB,
        reserved_bytes__all__current=22 * MiB, reserved_bytes__all__freed=0,
        inactive_split__all__current=1, inactive_split__large_pool__current=0,
        inactive_split__large_pool__freed=1, inactive_split_bytes__small_pool__current=2 * MiB - 2048,
        inactive_split_bytes__large_pool__current=0,
        num_cache_hits=1, num_segment_allocs=2,
    )
    assert (alloc.memory_allocated(), alloc.max_memory_allocated()) == (2048, 2048 + 3 * MiB)
    assert (alloc.memory_reserved(), alloc.max_memory_reserved()) == (22 * MiB, 22 * MiB)
    alloc.empty_cache()  # the large segment is unsplit and free; the small one holds c
    assert (alloc.memory_reserved(), alloc.max_memory_reserved()) == (2 * MiB, 22 * MiB)
    check_stats(alloc.memory_stats(), segment__all__current=1, segment__large_pool__freed=1,
                reserved_bytes__large_pool__freed=20 * MiB, num_segment_frees=1, num_device_free=1)
    alloc.reset_peak_memory_stats()
    assert (alloc.max_memory_allocated(), alloc.max_memory_reserved()) == (2048, 2 * MiB)
    check_stats(alloc.memory_stats(), allocation__all__peak=1, active_bytes__all__peak=2048,
                inactive_split__large_pool__peak=0)
    alloc.reset_accumulated_memory_stats()
    check_stats(alloc.memory_stats(), allocation__all__allocated=0, allocation__all__freed=0,
                allocation__all__current=1, num_segment_allocs=0, num_cache_hits=0)
    alloc.free(c)
    check_stats(alloc.memory_stats(), allocation__all__freed=1, allocated_bytes__all__freed=2048,
                active__all__freed=1, allocation__all__current=0)
    assert backend.num_mallocs == 2 and backend.num_frees == 1


def test_stats_keys_are_pytorch_names():
    alloc, _ = make()
    s = alloc.memory_stats()
    for stat in ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
                 "active_bytes", "inactive_split_bytes", "requested_bytes"):
        for pool in ("all", "small_pool", "large_pool"):
            for field in ("current", "peak", "allocated", "freed"):
                assert s[f"{stat}.{pool}.{field}"] == 0
    assert s["num_alloc_retries"] == s["num_ooms"] == 0


def test_steady_state_loop_makes_no_raw_allocations():
    alloc, backend = make()
    sizes = [1000, 64 * KiB, 3 * MiB, 12 * MiB, 300, 700 * KiB]
    for step in range(20):
        held = [alloc.malloc(n) for n in sizes]
        for blk in reversed(held):
            alloc.free(blk)
        if step == 1:
            mallocs = backend.num_mallocs
    assert backend.num_mallocs == mallocs
    assert alloc.memory_stats()["num_cache_hits"] == 20 * len(sizes) - mallocs


# ---------------------------------------------------------------- limits and OOM


def test_memory_limit_counts_as_oom():
    alloc, backend = make(64 * MiB)
    alloc.set_memory_limit(4 * MiB)
    a, b = alloc.malloc(MiB, stream=0), alloc.malloc(MiB, stream=1)  # two 2 MiB segments
    assert alloc.memory_reserved() == 4 * MiB
    with pytest.raises(OutOfMemoryError, match="limited to 4.00 MiB") as err:
        alloc.malloc(3 * MiB)
    assert "Tried to allocate 3.00 MiB (a new 20.00 MiB segment)" in str(err.value)
    check_stats(alloc.memory_stats(), num_ooms=1, num_alloc_retries=0)
    assert backend.num_failed_mallocs == 0  # the limit refused it before the backend was asked
    alloc.set_memory_fraction(0.5)
    assert alloc.memory_limit == 32 * MiB
    c = alloc.malloc(3 * MiB)  # raising the limit recovers
    assert alloc.memory_reserved() == 24 * MiB
    alloc.set_memory_limit(None)
    assert alloc.memory_limit is None
    for blk in (a, b, c):
        alloc.free(blk)
    with pytest.raises(ValueError):
        alloc.set_memory_fraction(1.5)
    alloc.set_per_process_memory_fraction(0.25)
    assert alloc.memory_limit == 16 * MiB


def test_oom_frees_one_big_enough_cached_segment_and_retries():
    alloc, backend = make(24 * MiB)
    a = alloc.malloc(3 * MiB, stream=1)  # 20 MiB large segment (on stream 1: no cache hit below)
    s = alloc.malloc(1000)  # 2 MiB small segment
    alloc.free(a)
    alloc.free(s)
    b = alloc.malloc(12 * MiB)  # 22 + 12 > 24: release the cached 20 MiB segment (big enough), retry
    assert b.size == 12 * MiB
    check_stats(alloc.memory_stats(), num_alloc_retries=1, num_ooms=0, num_segment_frees=1,
                num_segment_allocs=3, segment__all__current=2, reserved_bytes__all__current=14 * MiB)
    assert sorted(backend.live.values()) == [2 * MiB, 12 * MiB]  # the small segment stayed


def test_oom_frees_all_cached_segments_and_retries():
    alloc, backend = make(10 * MiB)
    blocks = [alloc.malloc(1000, stream=s) for s in range(3)]  # three 2 MiB segments
    for blk in blocks:
        alloc.free(blk)
    b = alloc.malloc(10 * MiB)  # no single cached segment is big enough: all three go, then it fits
    assert b.size == 10 * MiB
    check_stats(alloc.memory_stats(), num_alloc_retries=1, num_ooms=0, num_segment_frees=3,
                segment__all__current=1, segment__small_pool__current=0)
    assert backend.live == {b.ptr: 10 * MiB}


def test_oom_retry_after_free_like_pytorch():
    alloc, _ = make(64 * MiB)
    a = alloc.malloc(32 * MiB)
    with pytest.raises(OutOfMemoryError):
        alloc.malloc(34 * MiB)
    alloc.free(a)
    b = alloc.malloc(34 * MiB)
    check_stats(alloc.memory_stats(), num_ooms=1, num_alloc_retries=1)
    assert b.size == 34 * MiB


def test_oom_message_says_what_was_asked_and_what_is_held():
    alloc, backend = make(64 * MiB)
    held = alloc.malloc(40 * MiB)  # its own segment
    small = alloc.malloc(512 * KiB)  # a 2 MiB small segment, 1.5 MiB of it cached
    with pytest.raises(OutOfMemoryError) as err:
        alloc.malloc(30 * MiB)
    msg = str(err.value)
    assert isinstance(err.value, RuntimeError)
    for part in ("CUDA out of memory. Tried to allocate 30.00 MiB.",
                 "Device 0 has a total capacity of 64.00 MiB of which 22.00 MiB is free.",
                 "reserved (42.00 MiB)", "40.50 MiB is allocated", "1.50 MiB is reserved but unallocated",
                 "the largest free cached block is 1.50 MiB", "empty_cache()",
                 "set_per_process_memory_fraction", "batch size"):
        assert part in msg
    check_stats(alloc.memory_stats(), num_ooms=1, num_alloc_retries=0, allocation__all__current=2)
    # the allocator still works after an OOM
    assert alloc.malloc(1000).ptr == small.ptr + 512 * KiB
    alloc.free(held)
    with pytest.raises(OutOfMemoryError, match="Tried to allocate 800000000.00 GiB"):
        alloc.malloc(800000000 * GiB)
    # on the way it released the cached 40 MiB segment and retried; the split small one stays
    assert backend.live == {small.ptr: 2 * MiB}
    check_stats(alloc.memory_stats(), num_ooms=2, num_alloc_retries=1, num_segment_frees=1)


def test_oom_message_survives_a_broken_mem_get_info():
    alloc, backend = make(4 * MiB)

    def broken():
        raise RuntimeError("driver gone")

    backend.mem_get_info = broken
    with pytest.raises(OutOfMemoryError, match="free/total memory unknown"):
        alloc.malloc(8 * MiB)


# ---------------------------------------------------------------- freeing and the cache


def test_double_free_is_detected():
    alloc, _ = make()
    a, b = alloc.malloc(100), alloc.malloc(100)
    alloc.free(a)
    with pytest.raises(ValueError, match="double free"):
        alloc.free(a)
    alloc.free(b)  # b merges into a's free block
    with pytest.raises(ValueError, match="double free"):
        alloc.free(b)
    c = alloc.malloc(100, stream=1)
    alloc.record_stream(c, 2)
    alloc.free(c)
    with pytest.raises(ValueError, match="waiting for record_stream"):
        alloc.free(c)
    other, _ = make()
    d = other.malloc(100)
    with pytest.raises(ValueError, match="not allocated by this allocator"):
        alloc.free(d)
    with pytest.raises(TypeError, match="expected a Block"):
        alloc.free(12345)
    check_stats(alloc.memory_stats(), allocation__all__current=0, active__all__current=1)


def test_empty_cache_releases_exactly_the_unsplit_free_segments():
    alloc, backend = make()
    free_small = alloc.malloc(1000, stream=0)  # segment 1: freed below -> released
    kept_small = alloc.malloc(1000, stream=0)  # same segment 1 ... so allocate it on another stream
    alloc.free(kept_small)
    kept_small = alloc.malloc(1000, stream=1)  # segment 2 (stream 1): stays allocated -> kept
    free_large = alloc.malloc(5 * MiB)  # segment 3: freed -> released
    pending = alloc.malloc(5 * MiB, stream=1)  # segment 4: pending events -> kept
    alloc.record_stream(pending, 7)
    own = alloc.malloc(12 * MiB, stream=2)  # segment 5 (stream 2): freed -> released
    for blk in (free_small, free_large, pending, own):
        alloc.free(blk)
    seg = {s["address"]: s["total_size"] for s in alloc.snapshot()}
    assert len(seg) == 5
    alloc.empty_cache()
    assert backend.live == {kept_small.ptr: 2 * MiB, pending.ptr: 20 * MiB}
    check_stats(alloc.memory_stats(), num_segment_frees=3, segment__all__current=2,
                reserved_bytes__all__current=22 * MiB)
    backend.complete_all()
    alloc.empty_cache()
    assert backend.live == {kept_small.ptr: 2 * MiB}
    alloc.free(kept_small)
    alloc.empty_cache()
    assert backend.live == {} and backend.num_live_events == 0
    assert alloc.memory_reserved() == 0 and alloc.snapshot() == []


def test_memory_summary_shows_the_numbers():
    alloc, _ = make()
    a = alloc.malloc(3 * MiB)
    alloc.malloc(1000)
    alloc.free(a)
    text = alloc.memory_summary()
    lines = {ln.split("|")[1].strip(): ln for ln in text.splitlines() if ln.count("|") >= 6}
    assert "1024 bytes" in lines["Allocated memory"] and "3.00 MiB" in lines["Allocated memory"]
    assert "22.00 MiB" in lines["Reserved memory"]
    assert [c.strip() for c in lines["Allocations"].split("|")[2:6]] == ["1", "2", "2", "1"]
    assert [c.strip() for c in lines["Reserved segments"].split("|")[2:6]] == ["2", "2", "2", "0"]
    assert "OOMs: 0" in text and "cache hits: 0" in text and "segment allocs: 2" in text
    assert "device 0" in text
    widths = {len(ln) for ln in text.splitlines()}
    assert len(widths) == 1, "the table's lines have one width"


def test_snapshot_lists_segments_and_blocks():
    alloc, _ = make()
    a = alloc.malloc(1000, stream=5)
    (seg,) = alloc.snapshot()
    assert seg["stream"] == 5 and seg["segment_type"] == "small" and seg["allocated_size"] == 1024
    assert seg["requested_size"] == 1000 and seg["active_size"] == 1024
    assert seg["blocks"][0] == {"address": a.ptr, "size": 1024, "requested_size": 1000,
                                "state": "active_allocated", "stream": 5}


def test_threads_share_the_allocator():
    alloc, backend = make()
    errors = []

    def work(stream):
        try:
            for i in range(300):
                blks = [alloc.malloc(512 * (1 + (i + k) % 7), stream=stream) for k in range(5)]
                for blk in blks:
                    alloc.free(blk)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t % 2,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    check_stats(alloc.memory_stats(), allocation__all__current=0, allocation__all__allocated=4 * 300 * 5,
                inactive_split__all__current=0)
    alloc.empty_cache()
    assert backend.live == {}


# ---------------------------------------------------------------- raw backends


def test_fake_backend_tracks_allocations_and_events():
    backend = FakeBackend(4096, alignment=512)
    p = backend.malloc(1000)
    q = backend.malloc(100)
    assert q == p + 1024 and backend.live == {p: 1000, q: 100} and backend.mem_get_info() == (2996, 4096)
    with pytest.raises(raw.RawOutOfMemory):
        backend.malloc(3000)
    assert isinstance(raw.RawOutOfMemory(), MemoryError)
    backend.free(p)
    with pytest.raises(raw.RawBackendError, match="double free"):
        backend.free(p)
    e1, e2 = backend.create_event(), backend.create_event()
    assert backend.event_query(e1)  # never recorded: complete
    backend.record_event(e1, "s1")
    backend.record_event(e2, "s2")
    assert not backend.event_query(e1) and not backend.event_query(e2)
    backend.complete_stream("s1")
    assert backend.event_query(e1) and not backend.event_query(e2)
    e3 = backend.create_event()
    backend.record_event(e3, "s1")  # queued after the completion
    assert not backend.event_query(e3)
    backend.complete_all()
    assert backend.event_query(e2) and backend.event_query(e3)
    for e in (e1, e2, e3):
        backend.destroy_event(e)
    assert backend.num_live_events == 0
    with pytest.raises(raw.RawBackendError):
        backend.event_query(e1)
    assert isinstance(backend, raw.RawBackend)


def test_host_backend_gives_real_writable_memory():
    backend = HostBackend()
    alloc = CachingAllocator(backend)
    a, b = alloc.malloc(4096), alloc.malloc(3 * MiB)
    assert a.ptr % 512 == 0 and b.ptr % 512 == 0
    va = np.ctypeslib.as_array((ctypes.c_uint8 * a.size).from_address(a.ptr))
    vb = np.ctypeslib.as_array((ctypes.c_uint8 * b.size).from_address(b.ptr))
    va[:] = np.arange(a.size) % 251
    vb[:] = 7
    c = alloc.malloc(1000)  # next to a in the same segment: writing it must not touch a
    vc = np.ctypeslib.as_array((ctypes.c_uint8 * c.size).from_address(c.ptr))
    vc[:] = 255
    again = np.frombuffer(ctypes.string_at(a.ptr, a.size), dtype=np.uint8)
    np.testing.assert_array_equal(again, np.arange(a.size) % 251)
    assert int(vb.sum()) == 7 * b.size
    del va, vb, vc
    for blk in (a, b, c):
        alloc.free(blk)
    assert len(backend.live) == 2
    free, total = backend.mem_get_info()
    assert 0 <= free <= total and total > 0
    alloc.empty_cache()
    assert backend.live == {} and backend.used == 0
    assert backend.event_query(backend.create_event())


def test_host_backend_capacity_gives_oom():
    alloc = CachingAllocator(HostBackend(capacity=4 * MiB))
    alloc.malloc(MiB)
    with pytest.raises(OutOfMemoryError, match="total capacity of 4.00 MiB of which 2.00 MiB is free"):
        alloc.malloc(3 * MiB)


class _FakeDriver:
    """Stands in for ``cuda.bindings.driver``: returns (CUresult, *out) tuples like the real bindings."""

    class CUresult:
        CUDA_SUCCESS = 0
        CUDA_ERROR_OUT_OF_MEMORY = 2
        CUDA_ERROR_INVALID_VALUE = 1
        CUDA_ERROR_NOT_READY = 600

    CUevent_flags = types.SimpleNamespace(CU_EVENT_DISABLE_TIMING=2)

    def __init__(self):
        self.calls = []
        self.free_bytes = 8 * MiB

    def cuMemAlloc(self, n):
        self.calls.append(("alloc", n))
        if n > self.free_bytes:
            return (self.CUresult.CUDA_ERROR_OUT_OF_MEMORY, 0)
        self.free_bytes -= n
        return (self.CUresult.CUDA_SUCCESS, 0x1000 * (len(self.calls)))

    def cuMemFree(self, ptr):
        self.calls.append(("free", ptr))
        return (self.CUresult.CUDA_ERROR_INVALID_VALUE if ptr == 0xBAD else self.CUresult.CUDA_SUCCESS,)

    def cuMemGetInfo(self):
        return (self.CUresult.CUDA_SUCCESS, self.free_bytes, 16 * MiB)

    def cuEventCreate(self, flags):
        self.calls.append(("event", flags))
        return (self.CUresult.CUDA_SUCCESS, "ev")

    def cuEventRecord(self, ev, stream):
        self.calls.append(("record", ev, stream))
        return (self.CUresult.CUDA_SUCCESS,)

    def cuEventQuery(self, ev):
        return (self.CUresult.CUDA_ERROR_NOT_READY if ev == "busy" else self.CUresult.CUDA_SUCCESS,)

    def cuEventDestroy(self, ev):
        return (self.CUresult.CUDA_SUCCESS,)

    def cuGetErrorName(self, err):
        return (self.CUresult.CUDA_SUCCESS, b"CUDA_ERROR_INVALID_VALUE")

    def cuGetErrorString(self, err):
        return (self.CUresult.CUDA_SUCCESS, b"invalid argument")


def test_cuda_backend_maps_driver_results(monkeypatch):
    drv = _FakeDriver()
    monkeypatch.setattr(raw, "_driver", lambda: drv)
    backend = raw.CudaBackend(0)
    alloc = CachingAllocator(backend)
    with pytest.raises(OutOfMemoryError, match="total capacity of 16.00 MiB of which 8.00 MiB is free"):
        alloc.malloc(3 * MiB)  # wants a 20 MiB segment: CUDA_ERROR_OUT_OF_MEMORY -> RawOutOfMemory
    b = alloc.malloc(1000)
    assert drv.calls[-1] == ("alloc", 2 * MiB) and b.ptr == 0x1000 * len(drv.calls)
    assert backend.mem_get_info() == (6 * MiB, 16 * MiB)
    with pytest.raises(raw.RawBackendError, match="CUDA_ERROR_INVALID_VALUE: invalid argument"):
        backend.free(0xBAD)
    ev = backend.create_event()
    assert drv.calls[-1] == ("event", 2)
    backend.record_event(ev, 5)
    backend.record_event(ev, types.SimpleNamespace(handle=9))
    assert drv.calls[-2:] == [("record", "ev", 5), ("record", "ev", 9)]
    assert backend.event_query("ev") and not backend.event_query("busy")
    backend.destroy_event(ev)
    alloc.free(b)
    alloc.empty_cache()
    assert drv.calls[-1] == ("free", b.ptr)


def test_modules_import_nothing_from_tkernels():
    for mod in (allocator, raw):
        tree = ast.parse(pathlib.Path(mod.__file__).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0 and not node.module.startswith("tkernels"), ast.dump(node)
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("tkernels") for a in node.names), ast.dump(node)


def test_a_held_stream_keeps_its_cached_blocks_until_released():
    """A CUDA graph's private stream (tkernels/graphs.py): its cached blocks survive empty_cache and the OOM path
    while held; other streams' blocks are released as usual."""
    alloc, backend = make(capacity=64 * MiB)
    graph_block = alloc.malloc(30 * MiB, stream=9)
    other = alloc.malloc(20 * MiB, stream=0)
    alloc.hold_stream(9)
    alloc.hold_stream(9)  # holds count: two graphs may share nothing, but a stream may be held twice
    alloc.free(graph_block)
    alloc.free(other)
    alloc.empty_cache()
    assert backend.live == {graph_block.ptr: 30 * MiB}
    with pytest.raises(OutOfMemoryError):  # the OOM path may not take the held segment either
        alloc.malloc(40 * MiB, stream=0)
    assert backend.live == {graph_block.ptr: 30 * MiB}
    alloc.release_stream(9)
    alloc.empty_cache()
    assert backend.live == {graph_block.ptr: 30 * MiB}  # still held once
    alloc.release_stream(9)
    b = alloc.malloc(40 * MiB, stream=0)  # now the OOM path releases it and the request fits
    assert backend.live == {b.ptr: 40 * MiB}
    with pytest.raises(ValueError, match="not held"):
        alloc.release_stream(9)
