"""``DataLoader`` (like ``torch.utils.data.DataLoader``): batches from a dataset, in the main process or in
worker processes that hand batches back through shared memory (see ``_shm`` and ``_worker``)."""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import pickle
import queue
import secrets
import signal
import time
import warnings
import weakref
from multiprocessing import resource_tracker

import autograd as ag
import tkernels.cuda as _cuda

from . import _shm, _worker
from .collate import default_collate, default_convert, pin_memory
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _draw_seed

__all__ = ["DataLoader"]

_POLL_S = 0.1  # how long the main process waits on the result queue before checking that workers are alive
_JOIN_S = 1.0  # how long shutdown lets workers finish their current item before terminating them


class _InfiniteConstantSampler(Sampler):
    """The 'indices' of an IterableDataset: ``None`` forever (the dataset's iterator decides the end)."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterate over ``dataset`` in batches.

    ``batch_size`` samples (from ``sampler``, or a shuffled/sequential one) are merged by ``collate_fn``
    (default ``default_collate``; ``batch_size=None`` turns batching off and uses ``default_convert``).
    ``batch_sampler`` yields whole index lists instead. With ``num_workers > 0`` the batches are made in worker
    processes (``multiprocessing_context``: default start method, 'fork' on Linux; 'spawn' works when the
    dataset and functions pickle), ``prefetch_factor`` batches in flight per worker, delivered in order; each
    worker seeds ``random``, NumPy and the autograd generator with ``base_seed + worker_id`` where ``base_seed``
    comes from ``generator`` (or the global generator, so ``ag.manual_seed`` makes runs repeat), then calls
    ``worker_init_fn(worker_id)``. ``timeout`` (seconds, 0 = forever) bounds each wait for a worker;
    ``persistent_workers`` keeps the workers between epochs; ``pin_memory`` returns page-locked cpu tensors
    (when a CUDA device exists).

    >>> loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True, num_workers=2)
    >>> for xb, yb in loader: ...
    """

    _frozen = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")
    __initialized = False

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True):
        # (in_order=False lets PyTorch hand out worker batches as they finish; here they always come in order,
        # which that allows; pin_memory_device names the device of pinned batches, cuda's here either way)
        self.pin_memory_device, self.in_order = pin_memory_device, bool(in_order)
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers option should be a non-negative int; use num_workers=0 to "
                             f"disable multiprocessing (got num_workers={num_workers!r})")
        if not isinstance(timeout, int | float) or timeout < 0:
            raise ValueError(f"DataLoader: timeout option should be non-negative, got timeout={timeout!r}")
        if timeout > 0 and num_workers == 0:
            raise ValueError(f"DataLoader: timeout={timeout} needs num_workers > 0 (it bounds the wait for a "
                             f"worker)")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("DataLoader: prefetch_factor option could only be specified in multiprocessing; let "
                             "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and (isinstance(prefetch_factor, bool) or not isinstance(prefetch_factor, int)
                                            or prefetch_factor < 1):
            raise ValueError(f"DataLoader: prefetch_factor option should be a positive int, got "
                             f"{prefetch_factor!r}")
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
        if generator is not None and not isinstance(generator, ag.Generator):
            raise TypeError(f"DataLoader: generator must be an ag.Generator, got {type(generator).__name__}")

        if isinstance(dataset, IterableDataset):
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None option disables auto-batching and is mutually exclusive "
                             "with drop_last")
        if sampler is None:
            if isinstance(dataset, IterableDataset):
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None else default_convert)
        self.pin_memory = pin_memory
        if pin_memory and not _cuda.is_available():
            warnings.warn("DataLoader: 'pin_memory' argument is set as true but no accelerator is found, then "
                          "device pinned memory won't be used.", stacklevel=2)
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self._pool: _WorkerPool | None = None
        self.__initialized = True

    # --------------------------------------------------------------------------------------- attributes
    def __setattr__(self, attr, val):
        if self.__initialized and attr in self._frozen:
            raise ValueError(f"DataLoader: {attr} attribute should not be set after DataLoader is initialized")
        super().__setattr__(attr, val)

    @property
    def multiprocessing_context(self):
        return self.__mp_ctx

    @multiprocessing_context.setter
    def multiprocessing_context(self, ctx):
        if ctx is not None:
            if self.num_workers == 0:
                raise ValueError(f"DataLoader: multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(ctx, str):
                methods = mp.get_all_start_methods()
                if ctx not in methods:
                    raise ValueError(f"DataLoader: multiprocessing_context option should specify a valid start "
                                     f"method in {methods!r}, but got multiprocessing_context={ctx!r}")
                ctx = mp.get_context(ctx)
            elif not isinstance(ctx, mp.context.BaseContext):
                raise TypeError(f"DataLoader: multiprocessing_context option should be a valid context object or "
                                f"a string specifying the start method, but got {ctx!r}")
        self.__mp_ctx = ctx

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    @property
    def _pin(self) -> bool:
        return bool(self.pin_memory) and _cuda.is_available()

    # ---------------------------------------------------------------------------------------- iteration
    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # TypeError when the stream has no length, as in PyTorch
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)

    def __repr__(self) -> str:
        return (f"DataLoader(dataset={type(self.dataset).__name__}, batch_size={self.batch_size}, "
                f"num_workers={self.num_workers})")


class _BaseIter:
    def __init__(self, loader: DataLoader):
        self._loader = loader
        self._iterable = isinstance(loader.dataset, IterableDataset)
        # drawn first, as in PyTorch: the shuffle order then comes from the next values of the same generator
        self._base_seed = _draw_seed(loader.generator)
        self._sampler_iter = iter(loader._index_sampler)
        self._pin = loader._pin

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._loader)


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = _worker.make_fetcher(self._iterable, loader.dataset, loader._auto_collation,
                                             loader.collate_fn, loader.drop_last)

    def __next__(self):
        index = next(self._sampler_iter)
        data = self._fetcher.fetch(index)
        return pin_memory(data) if self._pin else data


class _WorkerPool:
    """The worker processes of one loader and their queues; ``shutdown`` leaves no process or segment behind."""

    def __init__(self, loader: DataLoader, base_seed: int):
        ctx = loader.multiprocessing_context or mp.get_context()
        resource_tracker.ensure_running()  # before forking, so workers and main share one tracker
        self.prefix = f"nnd{os.getpid():x}_{secrets.token_hex(3)}_"
        self.num_workers = loader.num_workers
        self.closed = False
        self.result_queue = ctx.Queue()
        self.epoch = ctx.Value("q", 0, lock=False)
        self.index_queues, self.workers = [], []
        iterable = isinstance(loader.dataset, IterableDataset)
        try:
            for wid in range(loader.num_workers):
                iq = ctx.Queue()
                iq.cancel_join_thread()  # never block interpreter exit on indices a dead worker will not read
                w = ctx.Process(target=_worker._worker_loop, daemon=True, name=f"DataLoaderWorker-{wid}",
                                args=(iterable, loader.dataset, iq, self.result_queue, self.epoch,
                                      loader._auto_collation, loader.collate_fn, loader.drop_last, base_seed,
                                      loader.worker_init_fn, wid, loader.num_workers, self.prefix, os.getpid()))
                w.start()
                self.index_queues.append(iq)
                self.workers.append(w)
        except BaseException:
            self.shutdown()
            raise

    def new_epoch(self) -> int:
        self.epoch.value += 1
        return self.epoch.value

    def check_alive(self) -> None:
        """RuntimeError (after shutting down) if a worker died."""
        for wid, w in enumerate(self.workers):
            code = w.exitcode
            if code is None:
                continue
            if code < 0:
                try:
                    how = f"killed by signal {signal.Signals(-code).name}"
                except ValueError:
                    how = f"killed by signal {-code}"
            else:
                how = f"exit code {code}"
            self.shutdown()
            raise RuntimeError(f"DataLoader worker {wid} (pid {w.pid}) exited unexpectedly ({how}). If it was "
                               f"killed for memory (SIGKILL), try fewer workers or smaller batches.")

    def _drain(self, timeout: float) -> None:
        """Read (and release the segments of) whatever is in the result queue."""
        while True:
            try:
                msg = self.result_queue.get(timeout=timeout)
            except (queue.Empty, OSError, ValueError, EOFError):
                return
            try:
                payload = pickle.loads(msg)[3]
            except Exception:  # noqa: BLE001 - unreadable: the prefix sweep unlinks its segment
                continue
            if payload[0] == "ok":
                _shm.release(payload[1][1])

    def shutdown(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            for q in self.index_queues:
                try:
                    q.put(None)
                except (OSError, ValueError):
                    pass
            deadline = time.monotonic() + _JOIN_S
            while time.monotonic() < deadline and any(w.is_alive() for w in self.workers):
                self._drain(0.01)  # keeps workers' feeder threads from blocking on a full pipe
        finally:
            for w in self.workers:
                if w.is_alive():
                    w.terminate()
                    w.join(_JOIN_S)
                if w.is_alive():
                    w.kill()
                w.join()
            self._drain(0)
            for q in (*self.index_queues, self.result_queue):
                q.cancel_join_thread()
                q.close()
            _shm.sweep(self.prefix)


class _MultiProcessIter(_BaseIter):
    def __init__(self, loader: DataLoader):
        super().__init__(loader)
        pool = loader._pool
        if pool is None or pool.closed:
            pool = _WorkerPool(loader, self._base_seed)
            if loader.persistent_workers:
                loader._pool = pool
                weakref.finalize(loader, pool.shutdown)
        self._pool = pool
        self._epoch = pool.new_epoch()
        self._persistent = loader.persistent_workers
        if not self._persistent:
            weakref.finalize(self, pool.shutdown)  # early break, garbage collection, interpreter exit
        n = loader.num_workers
        self._timeout = loader.timeout
        self._max_tasks = loader.prefetch_factor * n
        self._active = [True] * n
        self._cycle = itertools.cycle(range(n))
        self._task_info: dict[int, tuple] = {}  # send_idx -> (worker_id,) or (worker_id, result)
        self._send_idx = self._rcvd_idx = self._outstanding = 0
        self._done = False
        for _ in range(self._max_tasks):
            self._try_put_index()

    def _try_put_index(self) -> None:
        if self._outstanding >= self._max_tasks:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(len(self._active)):
            wid = next(self._cycle)
            if self._active[wid]:
                break
        else:
            return  # every worker's stream has ended
        self._pool.index_queues[wid].put((self._epoch, self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._outstanding += 1
        self._send_idx += 1

    def _get(self):
        """The next message of this epoch: (send_idx, worker_id, payload); payload batches already unpacked."""
        pool = self._pool
        while True:
            deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
            while True:
                wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - time.monotonic()))
                try:
                    msg = pool.result_queue.get(timeout=wait)
                    break
                except queue.Empty:
                    pool.check_alive()
                    if deadline is not None and time.monotonic() >= deadline:
                        raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None
            epoch, send_idx, wid, payload = pickle.loads(msg)
            if payload[0] == "ok":
                if epoch != self._epoch:
                    _shm.release(payload[1][1])  # a result of an abandoned epoch (persistent workers)
                    continue
                try:
                    payload = ("ok", _shm.unpack(payload[1]))
                except Exception:  # noqa: BLE001 - reported like a worker error, for this batch only
                    payload = ("err", _worker.ExceptionWrapper(
                        where=f"in the main process while unpacking a batch of DataLoader worker process {wid}"))
            elif epoch != self._epoch:
                continue
            return send_idx, wid, payload

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info[self._rcvd_idx]
                if len(info) == 2 or self._active[info[0]]:
                    break
                del self._task_info[self._rcvd_idx]  # a task its ended worker will never answer
                self._rcvd_idx += 1
            else:
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                return self._process(self._task_info.pop(self._rcvd_idx)[1])
            idx, wid, payload = self._get()
            self._outstanding -= 1
            if payload[0] == "stop":
                self._active[wid] = False
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (payload,)
            else:
                del self._task_info[idx]
                return self._process(payload)

    def _process(self, payload):
        self._rcvd_idx += 1
        self._try_put_index()
        return payload

    def __next__(self):
        if self._done:
            raise StopIteration
        if self._pool.closed or self._pool.epoch.value != self._epoch:
            raise RuntimeError("DataLoader: this iterator's workers are gone (it stopped at an error, or a newer "
                               "iter(loader) took over the persistent workers); start a new iter(loader)")
        try:
            kind, data = self._next_data()
        except StopIteration:
            self._done = True
            if not self._persistent:
                self._pool.shutdown()
            raise
        except BaseException:  # timeout, dead worker, KeyboardInterrupt: nothing may leak
            self._pool.shutdown()
            raise
        if kind == "err":
            # Unlike PyTorch, an error ends the iteration: the workers are gone even while the exception (whose
            # traceback holds this iterator) is kept alive, e.g. by a notebook.
            self._pool.shutdown()
            data.reraise()
        return pin_memory(data) if self._pin else data

    def _shutdown_workers(self) -> None:
        """Stop this iterator's workers now (also those of a persistent loader, which then starts new ones)."""
        self._pool.shutdown()
