"""DistributedDataParallel: one model replica per rank, gradients averaged over the ranks during backward.

Note [buckets and overlap]: the parameters are packed, in reverse registration order (roughly the order
backward produces their gradients), into buckets of at most ``bucket_cap_mb`` per dtype and device. Each
parameter's post-accumulate-grad hook counts down its bucket; the hook that completes a bucket copies the
bucket's gradients into its flat buffer and starts a non-blocking all-reduce (MPI Iallreduce, AVG), so the
communication of the last layers runs while backward computes the first ones. The first hook of a pass
queues a callback at the end of backward (``autograd.engine.queue_callback``) that waits for every bucket
and writes the averages back into ``.grad`` (nothing to write with ``gradient_as_bucket_view``, where each
``.grad`` is a view of its bucket).
"""

from __future__ import annotations

import contextlib

import autograd as ag
import autograd.distributed as dist
from autograd import engine as _engine

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class _Bucket:
    __slots__ = ("params", "offsets", "flat", "pending", "work", "index")

    def __init__(self, params, index):
        self.params = params
        self.index = index
        self.offsets = []
        n = 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        p0 = params[0]
        self.flat = ag.zeros(n, dtype=p0.dtype, device=p0.device)
        self.pending = len(params)
        self.work = None

    def view(self, i):
        p, off = self.params[i], self.offsets[i]
        return self.flat[off:off + p.numel()].view(p.shape)


def _tensors_in(obj, out):
    if isinstance(obj, ag.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


def _reachable_leaves(outputs):
    """ids of the leaf tensors whose gradient the graph of ``outputs`` computes."""
    seen, leaves = set(), set()
    stack = [t.grad_fn for t in _tensors_in(outputs, []) if t.grad_fn is not None]
    for t in _tensors_in(outputs, []):
        if t.grad_fn is None and t.requires_grad:
            leaves.add(id(t))
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        var = getattr(n, "variable", None)
        if var is not None:
            leaves.add(id(var))
        stack.extend(nxt for nxt, _ in n.next_functions)
    return leaves


class DistributedDataParallel(Module):
    """Wrap ``module`` so that ``backward`` averages its gradients over the ranks of ``process_group``
    (PyTorch's arguments). ``overlap=False`` (ours) starts every all-reduce only at the end of backward."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, *, overlap=True):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be an nn.Module, got {type(module).__name__}")
        if not dist.is_initialized():
            raise RuntimeError("DistributedDataParallel: the default process group is not initialized. Hint: call "
                               "autograd.distributed.init_process_group('mpi') first")
        cap = 25.0 if bucket_cap_mb is None else float(bucket_cap_mb)
        if cap <= 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got {bucket_cap_mb!r}")
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int(cap * 1024 * 1024)
        self._overlap = overlap
        self._expect = False     # a forward with sync on ran: its backward reduces
        self._queued = False     # the end-of-backward callback is queued for this pass
        self._early_launches = 0  # all-reduces started inside backward (the overlap; tests read it)
        self._inflight = []       # their Work handles, oldest first, polled from the hooks
        self._group_size = dist.get_world_size(process_group)
        self._sync_states(module)
        self._params = [p for p in module.parameters() if p.requires_grad]
        self._buckets, self._where = self._make_buckets(self._params)
        for i, p in enumerate(self._params):
            p.register_post_accumulate_grad_hook(self._make_hook(i))

    # ---------------------------------------------------------------------------------------- set-up
    def _sync_states(self, module):
        """Every rank starts from rank 0's parameters and buffers (PyTorch's _sync_module_states)."""
        src = self._src()
        with ag.no_grad():
            for t in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(t, src, group=self.process_group)

    def _src(self):
        g = self.process_group
        return 0 if g is None else g.ranks[0]

    def _make_buckets(self, params):
        buckets, where, cur, size, key = [], {}, [], 0, None
        for i in reversed(range(len(params))):
            p = params[i]
            k = (str(p.dtype), str(p.device))
            nbytes = p.numel() * p.dtype.itemsize
            if cur and (k != key or size + nbytes > self.bucket_bytes_cap):
                buckets.append(_Bucket([params[j] for j in cur], len(buckets)))
                cur, size = [], 0
            cur.append(i)
            size += nbytes
            key = k
        if cur:
            buckets.append(_Bucket([params[j] for j in cur], len(buckets)))
        for b in buckets:
            for j, p in enumerate(b.params):
                where[id(p)] = (b, j)
        if self.gradient_as_bucket_view:
            with ag.no_grad():
                for b in buckets:
                    for j, p in enumerate(b.params):
                        v = b.view(j)
                        if p.grad is not None:
                            v.copy_(p.grad)
                        p.grad = v
        return buckets, where

    # -------------------------------------------------------------------------------------- forward
    def forward(self, *inputs, **kwargs):
        sync = ag.is_grad_enabled() and self.require_backward_grad_sync
        if sync and self.broadcast_buffers:
            with ag.no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b, self._src(), group=self.process_group)
        out = self.module(*inputs, **kwargs)
        if sync:
            self._prepare(out)
        return out

    def _prepare(self, out):
        for b in self._buckets:
            b.pending = len(b.params)
            b.work = None
        self._expect = True
        self._queued = False
        self._inflight = []
        if self.find_unused_parameters:
            used = _reachable_leaves(out)
            for p in self._params:
                if id(p) not in used:
                    b, _ = self._where[id(p)]
                    b.pending -= 1

    # ------------------------------------------------------------------------------------- backward
    def _make_hook(self, i):
        p_id = id(self._params[i])

        def hook(p):
            if not self._expect:
                return  # no_sync(), or a backward of a forward that was not ours: local accumulation only
            if not self._queued:
                self._queued = True
                _engine.queue_callback(self._finish)
            b, _ = self._where[p_id]
            b.pending -= 1
            if b.pending == 0 and self._overlap:
                self._launch(b)
                self._early_launches += 1
                self._inflight.append(b.work)
            elif self._inflight:
                # MPI moves a message only inside MPI calls (no progress thread): one Test per hook keeps the
                # in-flight buckets going while backward computes
                if self._inflight[0].is_completed():
                    self._inflight.pop(0)
        return hook

    def _launch(self, b):
        with ag.no_grad():
            for j, p in enumerate(b.params):
                g = p.grad
                v = b.view(j)
                if g is None:
                    v.zero_()  # unused here (find_unused_parameters): counts as zero in the average
                elif self.gradient_as_bucket_view and g._data._storage is b.flat._data._storage:
                    continue  # already in place
                else:
                    v.copy_(g)
                    if self.gradient_as_bucket_view:
                        p.grad = v
        b.work = dist.all_reduce(b.flat, op=dist.ReduceOp.AVG, group=self.process_group, async_op=True)

    def _finish(self):
        self._expect = False
        self._inflight = []
        missing = [b for b in self._buckets if b.pending > 0]
        if missing:
            names = {id(p): n for n, p in self.module.named_parameters()}
            left = [names.get(id(p), "?") for b in missing for p in b.params if p.grad is None][:8]
            raise RuntimeError(f"DistributedDataParallel: backward finished but {sum(b.pending for b in missing)} "
                               f"parameter(s) received no gradient (e.g. {left}), so their buckets were never "
                               f"reduced. Hint: pass find_unused_parameters=True when some parameters are not "
                               f"used in every forward")
        for b in self._buckets:
            if b.work is None:
                self._launch(b)
        with ag.no_grad():
            for b in self._buckets:
                b.work.wait()
                b.work = None
                for j, p in enumerate(b.params):
                    v = b.view(j)
                    g = p.grad
                    if g is None:
                        p.grad = v.clone()
                    elif g._data._storage is not b.flat._data._storage:
                        g.copy_(v)

    @contextlib.contextmanager
    def no_sync(self):
        """Gradients of the backward passes inside accumulate locally; the first one after reduces them all."""
        prev = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = prev
