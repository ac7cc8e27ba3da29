"""What runs inside a DataLoader worker process: ``WorkerInfo``/``get_worker_info``, the fetchers (shared with
the single-process loader), the exception wrapper that carries a worker's traceback home, and the worker loop.

A worker reads tasks ``(epoch, send_idx, index)`` from its own index queue, fetches and collates the batch, and
puts ``pickle((epoch, send_idx, worker_id, payload))`` on the shared result queue, where payload is
``("ok", pack(...))``, ``("err", ExceptionWrapper)`` or ``("stop", worker_id)`` (its iterable dataset is
exhausted). ``None`` tells it to exit. Tasks of an epoch older than the pool's current one are skipped.
"""

from __future__ import annotations

import os
import pickle
import queue
import random
import signal
import sys
import traceback

import numpy as np

import tkernels.random as _rnd

from . import _shm

_POLL_S = 0.5  # how often an idle worker checks that its parent is still alive


class WorkerInfo:
    """Inside a worker: ``id``, ``num_workers``, ``seed`` (= base_seed + id) and ``dataset`` (this worker's
    copy). Read-only."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(key, val)

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__keys if k != "dataset")
        return f"{type(self).__name__}({body}, dataset={type(self.dataset).__name__})"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """This worker's ``WorkerInfo`` inside a DataLoader worker process; ``None`` in the main process.

    >>> info = get_worker_info()  # in IterableDataset.__iter__: yield items[info.id::info.num_workers]
    """
    return _worker_info


class _KeyErrorMessage(str):
    """KeyError puts its argument through repr(); this keeps the traceback's newlines readable."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception and its formatted traceback, picklable, to be re-raised in another process."""

    def __init__(self, exc_info=None, where: str = "in background"):
        exc_type, exc, tb = exc_info if exc_info is not None else sys.exc_info()
        self.exc_type = exc_type
        self.exc_name = exc_type.__name__
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def __reduce__(self):
        try:
            pickle.dumps(self.exc_type)
            exc_type = self.exc_type
        except Exception:  # noqa: BLE001 - a class local to a function: re-raised as RuntimeError
            exc_type = None
        return (_rebuild_wrapper, (exc_type, self.exc_name, self.exc_msg, self.where))

    def reraise(self):
        msg = f"Caught {self.exc_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is None:
            raise RuntimeError(msg)
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - constructors that need other arguments
            raise RuntimeError(msg) from None
        raise exception


def _rebuild_wrapper(exc_type, exc_name, exc_msg, where):
    w = ExceptionWrapper.__new__(ExceptionWrapper)
    w.exc_type, w.exc_name, w.exc_msg, w.where = exc_type, exc_name, exc_msg, where
    return w


# --------------------------------------------------------------------------------------------- fetchers
class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn
        get_many = getattr(dataset, "__getitems__", None)
        self._get_many = get_many if callable(get_many) else None
        # a TensorDataset with the default collate: one gather per tensor gives exactly the stacked rows
        # (default_collate turns the samples' tuples into a list of stacked tensors)
        import autograd as ag

        from .collate import default_collate
        from .dataset import TensorDataset

        self._gather = (type(dataset) is TensorDataset and collate_fn is default_collate and auto_collation
                        and all(isinstance(t, ag.Tensor) and t.device.type == "cpu" for t in dataset.tensors))

    def fetch(self, index):
        if self._gather and index:
            import numpy as np

            import autograd as ag

            idx = ag.tensor(np.asarray(index, dtype=np.int64))
            return [t[idx] for t in self.dataset.tensors]
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self._get_many is not None:
            return self.collate_fn(self._get_many(index))
        return self.collate_fn([self.dataset[i] for i in index])


class _IterableFetcher:
    """Pulls ``len(index)`` items (a batch of ``None`` placeholders) from the dataset's iterator; raises
    ``StopIteration`` once it is exhausted (a short last batch first, unless ``drop_last``)."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.it = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.it))
        data = []
        for _ in index:
            try:
                data.append(next(self.it))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    return (_IterableFetcher if iterable else _MapFetcher)(dataset, auto_collation, collate_fn, drop_last)


def seed_worker(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global RNG and the tkernels/autograd generator with ``seed``."""
    random.seed(seed)
    np.random.seed([seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF])
    _rnd.seed(seed)


# ------------------------------------------------------------------------------------------- worker loop
def _worker_loop(iterable, dataset, index_queue, result_queue, epoch_value, auto_collation, collate_fn,
                 drop_last, base_seed, init_fn, worker_id, num_workers, shm_prefix, parent_pid):
    # Ctrl-C reaches the whole process group; the main process handles it and shuts the workers down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _worker_info
    seed = base_seed + worker_id
    seed_worker(seed)
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    where = f"in DataLoader worker process {worker_id}"
    init_error = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
    except Exception:  # noqa: BLE001 - re-raised in the main process
        init_error = ExceptionWrapper(where=where)
    fetcher, fetcher_epoch, seq = None, None, 0
    while True:
        try:
            task = index_queue.get(timeout=_POLL_S)
        except queue.Empty:
            if os.getppid() != parent_pid:  # the main process died without telling us
                result_queue.cancel_join_thread()
                return
            continue
        if task is None:
            return
        epoch, send_idx, index = task
        if epoch != epoch_value.value:
            continue  # that epoch's iterator is gone; its result would be thrown away
        name = None
        if init_error is not None:
            payload = ("err", init_error)
        else:
            try:
                if fetcher is None or (iterable and fetcher_epoch != epoch):
                    fetcher, fetcher_epoch = None, epoch
                    fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                data = fetcher.fetch(index)
                name = f"{shm_prefix}{worker_id}_{seq}"
                seq += 1
                payload = ("ok", _shm.pack(data, name))
                del data
            except StopIteration:
                payload = ("stop", worker_id) if iterable else ("err", ExceptionWrapper(where=where))
            except Exception:  # noqa: BLE001 - re-raised in the main process
                payload = ("err", ExceptionWrapper(where=where))
        try:
            msg = pickle.dumps((epoch, send_idx, worker_id, payload), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001
            msg = pickle.dumps((epoch, send_idx, worker_id, ("err", ExceptionWrapper(where=where))))
        try:
            result_queue.put(msg)
        except BaseException:
            if payload[0] == "ok":
                _shm.release(payload[1][1])
            raise
