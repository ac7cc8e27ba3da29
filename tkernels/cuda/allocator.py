"""The caching allocator for device memory: PyTorch's CUDACachingAllocator semantics, in Python.

Design note
===========

Layering (as CuPy's memory pool): a *raw backend* hands out whole segments (``cuMemAlloc`` on a GPU,
host buffers in interpreted mode, fake pointers in unit tests; see ``raw_backends.py``). This module
carves those segments into blocks, caches freed blocks and never gives memory back to the backend unless
asked to (``empty_cache``) or forced to (the OOM path). It imports nothing from tkernels: a backend is any
object with ``malloc/free/mem_get_info`` and the event calls, and a failed raw allocation is any
``MemoryError`` (``raw_backends.RawOutOfMemory`` is one).

Rounding. Requests are rounded up to a multiple of 512 B. A 0-byte request gets a real 512 B block
(``requested_size == 0``), like PyTorch's ``round_size(0)``: every Block then has a distinct valid
pointer and the same lifetime rules, and the stats count it like any other allocation.

Pools. Rounded sizes <= 1 MiB are served from the *small pool*, whose segments are 2 MiB; larger ones from
the *large pool*: requests under 10 MiB are carved from 20 MiB segments, bigger requests get a segment of
their own, rounded up to 2 MiB. A block never moves between pools.

Best fit. Each pool keeps, per stream, the free blocks as two parallel lists sorted by the integer key
``size << 64 | ptr`` (keys and Blocks); ``bisect`` finds the smallest free block of at least the asked
size, the lowest address among equal sizes. Looking up, inserting or removing is a binary search plus a
``memmove``-speed ``list.insert``/``del``: with hundreds of cached blocks that beats any tree in Python.

Splitting and merging. A block bigger than the request is split when the remainder is >= 512 B (small
pool) or > 1 MiB (large pool); the remainder stays cached. Blocks of one segment form a doubly linked list
in address order (``prev``/``next``); on free a block merges with a free neighbour on either side, so
a segment whose blocks are all free becomes one block again. The lower-address Block object survives a
merge, so the head Block of a segment is the same object for the segment's life. With
``max_split_size`` set (PyTorch's ``max_split_size_mb``) large blocks of that size or more are never
split and are not used for requests below it.

Streams. A block belongs to the stream it was allocated on and is reused only by requests on that
stream: work queued on one stream runs in order, so a block freed on stream S can be handed out again on
S at once even if kernels using it are still queued. Using a block on another stream is the caller's
business: ``record_stream(block, other)`` notes it, and when the block is freed an event is recorded on
every such stream; the block returns to the pool only after all those events complete. Pending events
are polled at the start of every ``malloc`` and in ``empty_cache``/``process_events`` (per usage stream,
oldest first, stopping at the first incomplete one: events on one stream complete in order).

OOM path. On a cache miss a new segment is asked from the backend. If that fails (the backend raises
``MemoryError``, or the segment would take the memory reserved by this allocator past the limit set with
``set_memory_fraction``/``set_memory_limit``): 1) pending events are polled and the smallest cached
unsplit segment big enough for the new one is released, then the allocation is retried; 2) every cached
unsplit segment is released and it is retried again; 3) ``OutOfMemoryError`` is raised, saying what was
asked, the device's capacity and free memory, what this allocator has allocated and reserved but not
allocated, the largest free cached block, the limit, and what to try. Split segments are never released:
live blocks sit in them (that is fragmentation, and the message shows it).

Graph pools. A CUDA graph bakes the pointers of the blocks its kernels used into its nodes, so those blocks
must stay its own for as long as it lives (PyTorch's graph memory pools). A graph captures on a stream of its
own, so the per-stream rule above already keeps its blocks from every other request; ``hold_stream(s)`` adds
that cached free blocks of ``s`` are never released to the backend either (``empty_cache``, the OOM path) until
``release_stream(s)``, which the graph calls when it is reset or collected.

Stats. ``memory_stats()`` returns PyTorch's flat dict: for ``allocation``, ``segment``, ``active``,
``inactive_split`` (counts) and ``allocated_bytes``, ``reserved_bytes``, ``active_bytes``,
``inactive_split_bytes``, ``requested_bytes``, keys ``<stat>.<all|small_pool|large_pool>.<current|peak|
allocated|freed>``; plus ``num_alloc_retries`` (mallocs that had to release cached memory and retry),
``num_ooms``, ``num_cache_hits`` (mallocs served from a cached block), ``num_segment_allocs`` /
``num_segment_frees`` (raw allocations and frees; PyTorch's ``num_device_alloc``/``num_device_free`` are
the same numbers) and ``max_split_size``. *allocated* counts blocks the user holds; *active* adds blocks
freed by the user whose ``record_stream`` events are pending; *inactive_split* counts free blocks inside
segments that are split (memory ``empty_cache`` cannot return); *reserved* is all segments. So at any
time: reserved = allocated + pending + cached free. The byte counts use block sizes (rounded),
``requested_bytes`` the sizes asked for.

Hot path. A cache hit runs under one ``threading.Lock`` (acquire/release, not ``with``: half the cost):
a bisect, a couple of list edits, and inline counter updates on flat lists of ints; the "freed" totals
and the active stats are derived from other counters rather than kept, and ``num_cache_hits`` is
mallocs minus segment allocations. Blocks use ``__slots__``; a split makes one Block, nothing else
allocates. Peaks are exact, including the moments inside one ``process_events`` call when several
pending blocks return to the pool one after the other.

Double free. ``free`` of a block that is not allocated raises ``ValueError``. The Block object handed
out may be handed out again after it is freed (it may become the cached free block), so, as with any
allocator, a stale second ``free`` after the memory was reused cannot be told apart: Arrays free their
block from a refcount, never by hand.
"""

from __future__ import annotations

import operator
import threading
from bisect import bisect_left
from collections import deque

__all__ = [
    "Block",
    "CachingAllocator",
    "OutOfMemoryError",
    "format_size",
    "round_size",
    "allocation_size",
    "MIN_BLOCK_SIZE",
    "SMALL_SIZE",
    "SMALL_BUFFER",
    "LARGE_BUFFER",
    "MIN_LARGE_ALLOC",
    "ROUND_LARGE",
]

MIN_BLOCK_SIZE = 512  # every size is rounded up to this
SMALL_SIZE = 1 << 20  # requests up to 1 MiB go to the small pool
SMALL_BUFFER = 2 << 20  # small-pool segments are 2 MiB
LARGE_BUFFER = 20 << 20  # requests of 1-10 MiB are carved from 20 MiB segments
MIN_LARGE_ALLOC = 10 << 20  # from this size on a request gets a segment of its own...
ROUND_LARGE = 2 << 20  # ... rounded up to 2 MiB

# Block states.
FREE = 0  # cached in a pool's free list
ALLOCATED = 1  # held by the user
PENDING = 2  # freed by the user, waiting for record_stream events

# Stats: one flat list of ints per scope (all, small pool, large pool); stat t uses 4 slots:
# t + 0 current, t + 1 peak, t + 2 allocated (sum of increases), t + 3 base. freed is derived:
# freed = base + allocated - current (base is the current value at the last accumulated-stats reset).
# active/active_bytes are derived too, to keep the hot path short: their "current" slot holds only the
# pending part (active - allocated: blocks waiting for events) and their "allocated" total is the one of
# allocation/allocated_bytes (both grow only in malloc); their peak slot is a real peak.
_STAT_NAMES = (
    "allocation", "segment", "active", "inactive_split",
    "allocated_bytes", "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes",
)
_ALLOCATION, _SEGMENT, _ACTIVE, _ISPLIT, _ABYTES, _RBYTES, _ACTBYTES, _ISPLITBYTES, _REQBYTES = (
    4 * i for i in range(len(_STAT_NAMES)))
_NSLOTS = 4 * len(_STAT_NAMES)
_SHIFT = 64  # free-list key = size << 64 | ptr


def _stat(st, t):
    """(current, peak, allocated, base) of stat ``t`` in the scope list ``st``, derived ones included."""
    if t == _ACTIVE or t == _ACTBYTES:
        src = _ALLOCATION if t == _ACTIVE else _ABYTES
        return st[src] + st[t], st[t + 1], st[src + 2], st[t + 3]
    return st[t], st[t + 1], st[t + 2], st[t + 3]


class OutOfMemoryError(RuntimeError):
    """The caching allocator could not get memory, even after releasing its cached segments."""


def round_size(nbytes: int) -> int:
    """The block size a request of ``nbytes`` gets: a multiple of 512, at least 512."""
    if nbytes < 0:
        raise ValueError(f"malloc: nbytes must be >= 0, got {nbytes}")
    return ((nbytes + MIN_BLOCK_SIZE - 1) // MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE or MIN_BLOCK_SIZE


def allocation_size(size: int) -> int:
    """The size of the segment created for a (rounded) request that missed the cache."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


def format_size(nbytes: int) -> str:
    """Human units, as PyTorch prints: ``"512 bytes"``, ``"2.50 KiB"``, ``"20.00 MiB"``, ``"1.50 GiB"``."""
    if nbytes <= 1024:
        return f"{nbytes} bytes"
    if nbytes <= 1 << 20:
        return f"{nbytes / 1024:.2f} KiB"
    if nbytes <= 1 << 30:
        return f"{nbytes / (1 << 20):.2f} MiB"
    return f"{nbytes / (1 << 30):.2f} GiB"


class Block:
    """A piece of a segment: ``ptr``, ``size`` (rounded), ``requested_size``, ``stream``, ``state``.

    ``malloc`` returns one; hand it back to ``free``. ``prev``/``next`` link the blocks of a segment in
    address order.
    """

    __slots__ = ("ptr", "size", "requested_size", "stream", "pool", "prev", "next", "state",
                 "stream_uses", "event_count")

    def __init__(self, ptr, size, stream, pool, prev=None, nxt=None):
        self.ptr = ptr
        self.size = size
        self.requested_size = 0
        self.stream = stream
        self.pool = pool
        self.prev = prev
        self.next = nxt
        self.state = FREE
        self.stream_uses = None  # set of other streams that used the block (record_stream)
        self.event_count = 0  # events still pending before the block can be cached

    @property
    def is_split(self) -> bool:
        return self.prev is not None or self.next is not None

    def __repr__(self):
        state = ("free", "allocated", "pending")[self.state]
        return (f"Block(ptr=0x{self.ptr:x}, size={self.size}, requested_size={self.requested_size}, "
                f"stream={self.stream!r}, {self.pool.name} pool, {state})")


class _Pool:
    """The blocks of one pool: free lists per stream, each a pair [sorted keys, Blocks]; stats."""

    __slots__ = ("name", "is_small", "free", "stats")

    def __init__(self, name, is_small):
        self.name = name
        self.is_small = is_small
        self.free = {}  # stream -> [keys, blocks]
        self.stats = [0] * _NSLOTS


class _Segment:
    __slots__ = ("ptr", "size", "stream", "pool", "head")

    def __init__(self, ptr, size, stream, pool, head):
        self.ptr = ptr
        self.size = size
        self.stream = stream
        self.pool = pool
        self.head = head


def _remove_free(pool, block):
    keys, blocks = pool.free[block.stream]
    i = bisect_left(keys, block.size << _SHIFT | block.ptr)
    del keys[i]
    del blocks[i]


class CachingAllocator:
    """Caches device memory taken from ``backend`` (see the module docstring for the design).

    >>> alloc = CachingAllocator(FakeBackend())        # doctest: +SKIP
    >>> b = alloc.malloc(1000, stream=0); b.size       # doctest: +SKIP
    1024
    >>> alloc.free(b)                                  # doctest: +SKIP
    """

    __slots__ = ("backend", "device_index", "max_split_size", "_lock", "_small", "_large", "_all",
                 "_segments", "_pending", "_limit", "_num_alloc_retries", "_num_ooms",
                 "_num_segment_allocs", "_num_segment_frees", "_held")

    def __init__(self, backend, device_index: int = 0, *, max_split_size: int | None = None):
        self.backend = backend
        self.device_index = device_index
        if max_split_size is not None and max_split_size <= SMALL_SIZE:
            raise ValueError(f"CachingAllocator: max_split_size must be > 1 MiB, got {max_split_size}")
        self.max_split_size = max_split_size
        self._lock = threading.Lock()
        self._small = _Pool("small", True)
        self._large = _Pool("large", False)
        self._all = [0] * _NSLOTS
        self._segments = {}  # base ptr -> _Segment
        self._pending = {}  # usage stream -> deque of (event, Block), oldest first
        self._limit = None
        self._num_alloc_retries = 0
        self._num_ooms = 0
        self._num_segment_allocs = 0
        self._num_segment_frees = 0
        self._held = {}  # stream -> holds: streams whose cached blocks belong to a live CUDA graph

    # ------------------------------------------------------------------ malloc / free (hot path)

    def malloc(self, nbytes: int, stream=0) -> Block:
        """A Block of at least ``nbytes`` bytes for use on ``stream`` (any hashable stream id)."""
        if type(nbytes) is not int:
            nbytes = operator.index(nbytes)  # numpy ints would overflow the << 64 keys
        size = (nbytes + 511) & -512
        if size <= 0:
            size = round_size(nbytes)  # 0 -> 512; raises on negative sizes
        # acquire/try/finally: half the cost of `with lock:` on CPython 3.11 (230 vs 470 ns measured)
        lock = self._lock
        lock.acquire()
        try:
            if self._pending:
                self._process_events()
            pool = self._small if size <= 1048576 else self._large
            fl = pool.free.get(stream)
            block = None
            if fl is not None:
                keys = fl[0]
                i = bisect_left(keys, size << 64)
                if i < len(keys):
                    if self.max_split_size is not None and not pool.is_small:
                        i = self._check_oversize(keys, i, size)
                    if i >= 0:
                        del keys[i]
                        block = fl[1].pop(i)
            if block is None:
                block = self._new_segment(size, pool, stream)
                fl = pool.free.get(stream)  # the OOM path may have dropped the old free list
            a = self._all
            p = pool.stats
            remaining = block.size - size
            nxt = block.next
            was_split = nxt is not None or block.prev is not None
            if remaining >= 512 and (pool.is_small or (
                    remaining > 1048576 and (self.max_split_size is None or size < self.max_split_size))):
                rest = Block(block.ptr + size, remaining, stream, pool, block, nxt)
                if nxt is not None:
                    nxt.prev = rest
                block.next = rest
                block.size = size
                if fl is None:
                    fl = pool.free[stream] = [[], []]
                keys = fl[0]
                k = remaining << 64 | rest.ptr
                i = bisect_left(keys, k)
                keys.insert(i, k)
                fl[1].insert(i, rest)
                if was_split:  # a free split block shrank by size bytes
                    a[_ISPLITBYTES] -= size
                    p[_ISPLITBYTES] -= size
                else:  # a free split block of remaining bytes appeared
                    for st in (a, p):
                        c = st[_ISPLIT] + 1
                        st[_ISPLIT] = c
                        st[_ISPLIT + 2] += 1
                        if c > st[_ISPLIT + 1]:
                            st[_ISPLIT + 1] = c
                        c = st[_ISPLITBYTES] + remaining
                        st[_ISPLITBYTES] = c
                        st[_ISPLITBYTES + 2] += remaining
                        if c > st[_ISPLITBYTES + 1]:
                            st[_ISPLITBYTES + 1] = c
            else:
                size = block.size
                if was_split:  # a free split block became active
                    a[_ISPLIT] -= 1
                    a[_ISPLITBYTES] -= size
                    p[_ISPLIT] -= 1
                    p[_ISPLITBYTES] -= size
            block.requested_size = nbytes
            block.state = 1
            for st in (a, p):
                c = st[0] + 1  # allocation
                st[0] = c
                st[2] += 1
                if c > st[1]:
                    st[1] = c
                    if c > st[9]:  # active >= allocation, so only then can active peak
                        st[9] = c
                c = st[16] + size  # allocated_bytes
                st[16] = c
                st[18] += size
                if c > st[17]:
                    st[17] = c
                    if c > st[25]:  # active_bytes
                        st[25] = c
                c = st[32] + nbytes  # requested_bytes
                st[32] = c
                st[34] += nbytes
                if c > st[33]:
                    st[33] = c
            if self._pending:  # blocks waiting for events: active exceeds allocation
                for st in (a, p):
                    if st[0] + st[8] > st[9]:
                        st[9] = st[0] + st[8]
                    if st[16] + st[24] > st[25]:
                        st[25] = st[16] + st[24]
            return block
        finally:
            lock.release()

    def free(self, block: Block) -> None:
        """Give ``block`` back: cached at once, or once its ``record_stream`` events complete."""
        lock = self._lock
        lock.acquire()
        try:
            try:
                pool = block.pool
                bad = block.state != 1 or (pool is not self._small and pool is not self._large)
            except AttributeError:
                bad = True
            if bad:
                self._bad_free(block)
            size = block.size
            req = block.requested_size
            a = self._all
            p = pool.stats
            a[0] -= 1
            a[16] -= size
            a[32] -= req
            p[0] -= 1
            p[16] -= size
            p[32] -= req
            if block.stream_uses:
                self._insert_events(block)
            else:
                self._cache_block(block, False)
        finally:
            lock.release()

    def segment_of(self, block: Block) -> tuple[int, int]:
        """``(base pointer, size)`` of the raw segment that holds ``block`` (what a CUDA IPC handle names)."""
        with self._lock:
            head = block
            while head.prev is not None:
                head = head.prev
            seg = self._segments[head.ptr]
            return seg.ptr, seg.size

    def record_stream(self, block: Block, stream) -> None:
        """Note that ``block`` is used on ``stream`` too: its reuse waits for that stream's queued work."""
        with self._lock:
            if block.state != ALLOCATED:
                raise ValueError(f"record_stream: {block!r} is not allocated")
            if stream == block.stream:
                return
            if block.stream_uses is None:
                block.stream_uses = {stream}
            else:
                block.stream_uses.add(stream)

    # ------------------------------------------------------------------ internals (lock held)

    @staticmethod
    def _bump(st, t, n):
        c = st[t] + n
        st[t] = c
        if n > 0:
            st[t + 2] += n
            if c > st[t + 1]:
                st[t + 1] = c

    def _bad_free(self, block):
        if not isinstance(block, Block):
            raise TypeError(f"free: expected a Block, got {type(block).__name__}")
        if block.pool is not self._small and block.pool is not self._large:
            raise ValueError(f"free: {block!r} was not allocated by this allocator (device "
                             f"{self.device_index})")
        what = "is waiting for record_stream events" if block.state == PENDING else "is free"
        raise ValueError(f"free: double free of the block at 0x{block.ptr:x}: the block {what} "
                         f"({block!r})")

    def _check_oversize(self, keys, i, size):
        """PyTorch's get_free_block rules for ``max_split_size``: -1 if the best fit may not be used."""
        msplit = self.max_split_size
        bsize = keys[i] >> _SHIFT
        if size < msplit <= bsize:
            return -1  # do not split an oversize block for a request below max_split_size
        if size >= msplit and bsize >= size + LARGE_BUFFER:
            return -1  # do not hand out an oversize block much bigger than asked
        return i

    def _cache_block(self, block, was_pending):
        """Merge a block the user is done with (events completed) with its free neighbours; cache it."""
        pool = block.pool
        size = block.size
        block.state = 0
        fl = pool.free.get(block.stream)
        if fl is None:
            fl = pool.free[block.stream] = [[], []]
        keys, blocks = fl
        dn = db = 0  # change in the number and bytes of inactive split blocks
        prev = block.prev
        if prev is not None and not prev.state:
            psize = prev.size
            i = bisect_left(keys, psize << 64 | prev.ptr)
            del keys[i]
            del blocks[i]
            prev.size = psize + size
            nxt = prev.next = block.next
            if nxt is not None:
                nxt.prev = prev
            dn = -1
            db = -psize
            block = prev
        nxt = block.next
        if nxt is not None and not nxt.state:
            nsize = nxt.size
            i = bisect_left(keys, nsize << 64 | nxt.ptr)
            del keys[i]
            del blocks[i]
            block.size += nsize
            nn = block.next = nxt.next
            if nn is not None:
                nn.prev = block
            dn -= 1
            db -= nsize
        k = block.size << 64 | block.ptr
        i = bisect_left(keys, k)
        keys.insert(i, k)
        blocks.insert(i, block)
        if block.prev is not None or block.next is not None:
            dn += 1
            db += block.size
        for st in (self._all, pool.stats):
            if was_pending:  # it leaves active now (a block freed without events left it in free())
                st[_ACTIVE] -= 1
                st[_ACTBYTES] -= size
            if dn:
                c = st[_ISPLIT] + dn
                st[_ISPLIT] = c
                if dn > 0:
                    st[_ISPLIT + 2] += dn
                    if c > st[_ISPLIT + 1]:
                        st[_ISPLIT + 1] = c
            if db:
                c = st[_ISPLITBYTES] + db
                st[_ISPLITBYTES] = c
                if db > 0:
                    st[_ISPLITBYTES + 2] += db
                    if c > st[_ISPLITBYTES + 1]:
                        st[_ISPLITBYTES + 1] = c

    def _insert_events(self, block):
        uses = block.stream_uses
        block.stream_uses = None
        block.state = PENDING
        for st in (self._all, block.pool.stats):  # allocation fell in free(); active stays, as pending
            st[_ACTIVE] += 1
            st[_ACTBYTES] += block.size
        backend = self.backend
        for s in uses:
            event = backend.create_event()
            backend.record_event(event, s)
            q = self._pending.get(s)
            if q is None:
                q = self._pending[s] = deque()
            q.append((event, block))
            block.event_count += 1

    def _process_events(self):
        backend = self.backend
        for s in list(self._pending):
            q = self._pending[s]
            while q:
                event, block = q[0]
                if not backend.event_query(event):
                    break  # later events on this stream cannot have completed before this one
                q.popleft()
                backend.destroy_event(event)
                block.event_count -= 1
                if block.event_count == 0:
                    self._cache_block(block, True)
            if not q:
                del self._pending[s]

    def _new_segment(self, size, pool, stream):
        """A fresh unsplit segment for a request of ``size`` (rounded) bytes; the OOM path lives here."""
        seg_size = allocation_size(size)
        ptr = self._raw_malloc(seg_size)
        if ptr is None:
            if self._pending:
                self._process_events()
            retried = False
            if self._release_one_segment(seg_size):
                retried = True
                ptr = self._raw_malloc(seg_size)
            if ptr is None and self._release_segments():
                retried = True
                ptr = self._raw_malloc(seg_size)
            if retried:
                self._num_alloc_retries += 1
            if ptr is None:
                self._num_ooms += 1
                raise OutOfMemoryError(self._oom_message(size, seg_size))
        block = Block(ptr, seg_size, stream, pool)
        self._segments[ptr] = _Segment(ptr, seg_size, stream, pool, block)
        self._num_segment_allocs += 1
        for st in (self._all, pool.stats):
            self._bump(st, _SEGMENT, 1)
            self._bump(st, _RBYTES, seg_size)
        return block

    def _raw_malloc(self, seg_size):
        if self._limit is not None and self._all[_RBYTES] + seg_size > self._limit:
            return None
        try:
            return self.backend.malloc(seg_size)
        except MemoryError:  # raw_backends.RawOutOfMemory, or a plain MemoryError from the host
            return None

    def _release_block(self, block):
        """Give the cached unsplit segment that ``block`` spans back to the backend."""
        pool = block.pool
        _remove_free(pool, block)
        seg = self._segments.pop(block.ptr)
        self.backend.free(block.ptr)
        self._num_segment_frees += 1
        for st in (self._all, pool.stats):
            self._bump(st, _SEGMENT, -1)
            self._bump(st, _RBYTES, -seg.size)

    def _cached_unsplit(self):
        held = self._held
        return [b for pool in (self._small, self._large) for s, fl in pool.free.items() if s not in held
                for b in fl[1] if b.prev is None and b.next is None]

    def _release_one_segment(self, min_size):
        """Release the smallest cached unsplit segment of at least ``min_size`` bytes (any pool/stream)."""
        fits = [b for b in self._cached_unsplit() if b.size >= min_size]
        if not fits:
            return False
        self._release_block(min(fits, key=lambda b: (b.size, b.ptr)))
        return True

    def _release_segments(self):
        """Release every cached unsplit segment; True if any was released."""
        blocks = self._cached_unsplit()
        for b in blocks:
            self._release_block(b)
        for pool in (self._small, self._large):
            for s in [s for s, fl in pool.free.items() if not fl[0]]:
                del pool.free[s]
        return bool(blocks)

    def _largest_free_block(self):
        return max((fl[0][-1] >> _SHIFT for pool in (self._small, self._large)
                    for fl in pool.free.values() if fl[0]), default=0)

    def _oom_message(self, size, seg_size):
        try:
            dev_free, dev_total = self.backend.mem_get_info()
            device = (f"Device {self.device_index} has a total capacity of {format_size(dev_total)} of which "
                      f"{format_size(dev_free)} is free.")
        except Exception as e:  # a broken driver must not hide the OOM itself
            device = f"Device {self.device_index}: free/total memory unknown ({type(e).__name__}: {e})."
        allocated = self._all[_ABYTES]
        reserved = self._all[_RBYTES]
        pending = self._all[_ACTBYTES]
        msg = (f"CUDA out of memory. Tried to allocate {format_size(size)}"
               + (f" (a new {format_size(seg_size)} segment)" if seg_size != size else "")
               + f". {device} Of the memory this allocator reserved ({format_size(reserved)}), "
               f"{format_size(allocated)} is allocated and {format_size(reserved - allocated)} is reserved "
               f"but unallocated")
        if pending:
            msg += f" ({format_size(pending)} of it waiting for record_stream events)"
        msg += f"; the largest free cached block is {format_size(self._largest_free_block())}."
        if self._limit is not None:
            msg += (f" This allocator is limited to {format_size(self._limit)} "
                    f"(set_memory_fraction / set_memory_limit).")
        msg += (" Hint: free arrays you no longer need, call empty_cache() to return cached memory, "
                "raise the limit with set_per_process_memory_fraction(), or reduce the batch size.")
        return msg

    # ------------------------------------------------------------------ cache control

    def process_events(self) -> None:
        """Poll pending ``record_stream`` events; blocks whose events all completed become reusable."""
        with self._lock:
            if self._pending:
                self._process_events()

    def hold_stream(self, stream) -> None:
        """Keep the blocks cached for ``stream`` (a CUDA graph's private stream) out of ``empty_cache`` and the
        OOM path until a matching ``release_stream``: the graph's nodes point into them."""
        with self._lock:
            self._held[stream] = self._held.get(stream, 0) + 1

    def release_stream(self, stream) -> None:
        """Undo one ``hold_stream``; the stream's cached blocks become releasable again."""
        with self._lock:
            n = self._held.get(stream, 0)
            if n <= 0:
                raise ValueError(f"release_stream: stream {stream!r} is not held")
            if n == 1:
                del self._held[stream]
            else:
                self._held[stream] = n - 1

    def empty_cache(self) -> None:
        """Release every cached, unsplit, event-free segment to the raw backend."""
        with self._lock:
            if self._pending:
                self._process_events()
            self._release_segments()

    def set_memory_limit(self, nbytes: int | None) -> None:
        """Cap the memory this allocator reserves at ``nbytes`` (None: no cap); past it, malloc fails."""
        if nbytes is not None and nbytes < 0:
            raise ValueError(f"set_memory_limit: nbytes must be >= 0 or None, got {nbytes}")
        with self._lock:
            self._limit = None if nbytes is None else int(nbytes)

    def set_memory_fraction(self, fraction: float) -> None:
        """Cap reserved memory at ``fraction`` of the device's total memory (``mem_get_info``)."""
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"set_memory_fraction: fraction must be in [0, 1], got {fraction}")
        _, total = self.backend.mem_get_info()
        self.set_memory_limit(int(fraction * total))

    set_per_process_memory_fraction = set_memory_fraction

    @property
    def memory_limit(self) -> int | None:
        return self._limit

    # ------------------------------------------------------------------ stats

    def memory_stats(self) -> dict:
        """PyTorch's flat stats dict (``"allocated_bytes.all.current"``...), plus our counters."""
        with self._lock:
            out = {}
            for name, t in zip(_STAT_NAMES, range(0, _NSLOTS, 4)):
                for scope, st in (("all", self._all), ("large_pool", self._large.stats),
                                  ("small_pool", self._small.stats)):
                    cur, peak, alloc, base = _stat(st, t)
                    out[f"{name}.{scope}.current"] = cur
                    out[f"{name}.{scope}.peak"] = peak
                    out[f"{name}.{scope}.allocated"] = alloc
                    out[f"{name}.{scope}.freed"] = base + alloc - cur
            out["num_alloc_retries"] = self._num_alloc_retries
            out["num_ooms"] = self._num_ooms
            # every successful malloc either hit the cache or made exactly one segment
            out["num_cache_hits"] = self._all[_ALLOCATION + 2] - self._num_segment_allocs
            out["num_segment_allocs"] = out["num_device_alloc"] = self._num_segment_allocs
            out["num_segment_frees"] = out["num_device_free"] = self._num_segment_frees
            out["max_split_size"] = -1 if self.max_split_size is None else self.max_split_size
            return dict(sorted(out.items()))

    def memory_allocated(self) -> int:
        return self._all[_ABYTES]

    def max_memory_allocated(self) -> int:
        return self._all[_ABYTES + 1]

    def memory_reserved(self) -> int:
        return self._all[_RBYTES]

    def max_memory_reserved(self) -> int:
        return self._all[_RBYTES + 1]

    def reset_peak_memory_stats(self) -> None:
        """Set every peak to the current value."""
        with self._lock:
            for st in (self._all, self._small.stats, self._large.stats):
                for t in range(0, _NSLOTS, 4):
                    st[t + 1] = _stat(st, t)[0]

    def reset_accumulated_memory_stats(self) -> None:
        """Zero the allocated/freed totals and the event counters (retries, OOMs, hits, segments)."""
        with self._lock:
            for st in (self._all, self._small.stats, self._large.stats):
                for t in range(0, _NSLOTS, 4):
                    st[t + 3] = _stat(st, t)[0]
                for t in range(0, _NSLOTS, 4):
                    st[t + 2] = 0
            self._num_alloc_retries = self._num_ooms = 0
            self._num_segment_allocs = self._num_segment_frees = 0

    def snapshot(self) -> list[dict]:
        """The segments, by address, each with its blocks: for tests and debugging."""
        states = ("inactive", "active_allocated", "active_pending_free")
        with self._lock:
            out = []
            for ptr in sorted(self._segments):
                seg = self._segments[ptr]
                blocks = []
                b = seg.head
                while b is not None:
                    blocks.append({"address": b.ptr, "size": b.size, "requested_size": b.requested_size,
                                   "state": states[b.state], "stream": b.stream})
                    b = b.next
                out.append({
                    "device": self.device_index,
                    "address": ptr,
                    "total_size": seg.size,
                    "stream": seg.stream,
                    "segment_type": seg.pool.name,
                    "allocated_size": sum(x["size"] for x in blocks if x["state"] == "active_allocated"),
                    "active_size": sum(x["size"] for x in blocks if x["state"] != "inactive"),
                    "requested_size": sum(x["requested_size"] for x in blocks
                                          if x["state"] == "active_allocated"),
                    "blocks": blocks,
                })
            return out

    def memory_summary(self) -> str:
        """A readable table of the stats, like ``torch.cuda.memory_summary()``."""
        s = self.memory_stats()
        width = 89  # "| label (22) |" + 4 value cells of 15 + "|" each

        def cells(*texts):  # one line of centred cells that together span the table
            inner = width - 1 - len(texts)
            sizes = [inner // len(texts) + (i < inner % len(texts)) for i in range(len(texts))]
            return "|" + "|".join(t.center(n) for t, n in zip(texts, sizes)) + "|"

        def row(label, cols):
            return f"| {label:<22}|" + "|".join(f" {c:>13} " for c in cols) + "|"

        rule, dbl = "|" + "-" * (width - 2) + "|", "|" + "=" * (width - 2) + "|"
        lines = [dbl, cells(f"tkernels caching allocator summary, device {self.device_index}"), rule,
                 cells(f"OOMs: {s['num_ooms']}", f"alloc retries: {s['num_alloc_retries']}",
                       f"cache hits: {s['num_cache_hits']}"),
                 cells(f"segment allocs: {s['num_segment_allocs']}",
                       f"segment frees: {s['num_segment_frees']}"),
                 dbl, row("Metric", ("Cur Usage", "Peak Usage", "Tot Alloc", "Tot Freed"))]
        sections = (
            ("Allocated memory", "allocated_bytes", format_size),
            ("Active memory", "active_bytes", format_size),
            ("Requested memory", "requested_bytes", format_size),
            ("Reserved memory", "reserved_bytes", format_size),
            ("Non-releasable memory", "inactive_split_bytes", format_size),
            ("Allocations", "allocation", str),
            ("Active allocs", "active", str),
            ("Reserved segments", "segment", str),
            ("Non-releasable allocs", "inactive_split", str),
        )
        for label, name, fmt in sections:
            lines.append(rule)
            for lab, scope in ((label, "all"), ("      from large pool", "large_pool"),
                               ("      from small pool", "small_pool")):
                lines.append(row(lab, [fmt(s[f"{name}.{scope}.{f}"])
                                       for f in ("current", "peak", "allocated", "freed")]))
        limit = "none" if self._limit is None else format_size(self._limit)
        lines += [rule, f"| {'Memory limit':<22}| {limit:<{width - 28}} |", dbl]
        return "\n".join(lines)
