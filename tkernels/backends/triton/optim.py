"""Fused optimizer steps on cuda: ONE launch of ``adam_kernel`` / ``sgd_kernel`` (tkernels/kernels/optim.py) per
call, whatever the number, sizes and dtypes of the tensors.

Per call the host packs the step's scalars (float64 bit patterns) and a row per tensor (addresses, numel, dtype
code) into one int64 buffer and uploads it (one asynchronous host-to-device copy, its host buffer kept alive
until the copy ran); the tile table (tensor index, start of each program's block) depends only on the sizes and
is uploaded once per size list and cached. Tensors that are not contiguous (rare: parameters and their state are
allocated contiguous) are updated through contiguous copies written back after the launch.
"""

from __future__ import annotations

import numpy as np

from ... import dtypes as _dt
from ...array import Array
from ...dispatch import register
from ...kernels import optim as ko
from ._launch import INTERPRETED, launch
from .memory import copy_, to_device

BLOCK = 4096 if INTERPRETED else 1024  # the interpreter costs ~0.5 ms per program: few, large blocks
_CODE = {_dt.float32: ko.DT_F32, _dt.float16: ko.DT_F16, _dt.bfloat16: ko.DT_BF16, _dt.float64: ko.DT_F64}
_TILES: dict = {}  # (device, sizes) -> device int64 array of (tensor, start) pairs
_TILES_MAX = 64
_PACKED: dict = {}  # (device, packed bytes) -> device int64 array (capturable Adam: see _packed)


def _tiles(device, sizes: tuple) -> tuple:
    """The cached device tile table for ``sizes`` and its number of programs."""
    key = (device, sizes)
    hit = _TILES.get(key)
    if hit is None:
        counts = np.array([-(-n // BLOCK) for n in sizes], np.int64)
        total = int(counts.sum())
        first = np.repeat(np.cumsum(counts) - counts, counts)
        table = np.empty((total, 2), np.int64)
        table[:, 0] = np.repeat(np.arange(len(sizes), dtype=np.int64), counts)
        table[:, 1] = (np.arange(total, dtype=np.int64) - first) * BLOCK
        if len(_TILES) >= _TILES_MAX:
            _TILES.pop(next(iter(_TILES)))
        hit = _TILES[key] = (to_device(Array._wrap(table.reshape(-1)), device), total)
    return hit


def _run(kernel, flag: str, flag_value: bool, columns, header, ints, steps=None, **constexprs) -> None:
    """Pack and launch: ``columns`` are lists of Arrays (None: an unused column), ``header`` float scalars,
    ``ints`` 0/1 flags (header slots 8...); ``steps``: capturable Adam's float32 step counts (info column 7),
    incremented by ``adam_count_kernel`` first, and the packed tables kept on the device (see ``_packed``)."""
    params = columns[0]
    t = len(params)
    device = params[0]._device
    buf = np.zeros(ko.HDR_SLOTS + ko.INFO_COLS * t, np.int64)
    buf[: len(header)].view(np.float64)[:] = header
    buf[8: 8 + len(ints)] = ints
    info = buf[ko.HDR_SLOTS:].reshape(t, ko.INFO_COLS)
    write_back = []
    copies = []  # contiguous copies must live until the launch is queued (then the allocator's stream order holds)
    sizes = []
    aligned = True
    for j, col in enumerate(columns):
        if col is None:
            continue
        for i, x in enumerate(col):
            if not x.is_contiguous():
                c = x.contiguous()
                copies.append(c)
                if j != 1:  # grads are only read
                    write_back.append((x, c))
                x = c
            ptr = x.data_ptr()
            aligned = aligned and ptr % 16 == 0
            info[i, j] = ptr
    for i, p in enumerate(params):
        n = p.size
        sizes.append(n)
        info[i, 5] = n
        info[i, 6] = _CODE[p._dtype]
    if steps is not None:
        for i, k in enumerate(steps):
            info[i, 7] = k.data_ptr()
    tiles, programs = _tiles(device, tuple(sizes))
    if steps is not None:
        args = _packed(device, buf) if not copies else to_device(Array._wrap(buf), device, non_blocking=True)
        launch(ko.adam_count_kernel, (t,), args[ko.HDR_SLOTS:])
    elif programs:
        args = to_device(Array._wrap(buf), device, non_blocking=True)
    if programs:
        launch(kernel, (programs,), args[: ko.HDR_SLOTS], args[ko.HDR_SLOTS:], tiles,
               **{flag: flag_value}, **constexprs, ALIGNED=aligned, BLOCK=BLOCK)
    for x, c in write_back:
        copy_(x, c)


def _packed(device, buf):
    """The device copy of the packed tables ``buf``, uploaded once per content (its addresses and scalars) and
    cached: a capturable step repeated on the same arrays (a captured graph's replay, a training loop) uploads
    nothing, so the stream capture of a CUDA graph sees only its two kernels."""
    key = (device, buf.tobytes())
    hit = _PACKED.get(key)
    if hit is None:
        if len(_PACKED) >= _TILES_MAX:
            _PACKED.pop(next(iter(_PACKED)))
        hit = _PACKED[key] = to_device(Array._wrap(buf), device)
    return hit


@register("adam_step", "triton")
def adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, w1, beta2, w2, eps, weight_decay, decay,
              step_size, bc2_sqrt, maximize) -> None:
    _run(ko.adam_kernel, "AMSGRAD", max_exp_avg_sqs is not None,
         (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs),
         (w1, beta2, w2, eps, weight_decay, decay, step_size, bc2_sqrt), (int(maximize),), CAPTURABLE=False)


@register("adam_step_capturable", "triton")
def adam_step_capturable(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, w1, beta1, beta2, w2, eps,
                         weight_decay, decay, lr, maximize) -> None:
    _run(ko.adam_kernel, "AMSGRAD", max_exp_avg_sqs is not None,
         (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs),
         (w1, beta2, w2, eps, weight_decay, decay, lr, beta1), (int(maximize),), steps=steps, CAPTURABLE=True)


@register("sgd_step", "triton")
def sgd_step(params, grads, momentum_buffers, lr, momentum, damp_w, weight_decay, nesterov, maximize,
             first_step) -> None:
    _run(ko.sgd_kernel, "MOMENTUM", momentum_buffers is not None, (params, grads, momentum_buffers),
         (lr, momentum, damp_w, weight_decay), (int(maximize), int(nesterov), int(first_step)))
