"""``nn.modules.batchnorm``: PyTorch's module path for the batch norm layers (1d/2d are defined in
``normalization.py``); ``BatchNorm3d`` and ``SyncBatchNorm`` here."""

from __future__ import annotations

import sys
import warnings

from tkernels.validation import OpValueError

from .normalization import BatchNorm1d, BatchNorm2d, _BatchNorm

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]


class BatchNorm3d(_BatchNorm):
    """Batch norm over ``(N, C, D, H, W)``."""

    _dims = (5,)


class SyncBatchNorm(_BatchNorm):
    """Batch norm over ``(N, C, *)`` whose statistics PyTorch computes over all processes of ``process_group``.

    Here it is the one-process form: the statistics are those of this process's batch. Under
    ``autograd.distributed`` with a world size above 1 it warns once and keeps per-process statistics (what a
    DistributedDataParallel model with plain BatchNorm computes)."""

    _dims = tuple(range(2, 33))
    _warned = False

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None, *,
                 bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def forward(self, input):
        if input.dim() < 2:
            raise OpValueError(f"SyncBatchNorm: expected at least 2D input (N, C, *), got {input.dim()}D input of "
                               f"shape {list(input.shape)}")
        if self.training and not SyncBatchNorm._warned:
            dist = sys.modules.get("autograd.distributed")  # initialised only if a script imported it
            if dist is not None and dist.is_initialized() and dist.get_world_size(self.process_group) > 1:
                SyncBatchNorm._warned = True
                warnings.warn("SyncBatchNorm: statistics are not synchronised across processes (one-process "
                              "implementation); each rank normalises with its own batch statistics", UserWarning,
                              stacklevel=2)
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*d replaced by a ``SyncBatchNorm`` holding the same parameters and
        buffers (the module itself if it is one)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            out.running_mean, out.running_var = module.running_mean, module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.train(module.training)
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
