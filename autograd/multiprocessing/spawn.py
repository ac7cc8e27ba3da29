"""``spawn(fn, args, nprocs)``: run ``fn(i, *args)`` in ``nprocs`` processes and report the first failure
(``torch.multiprocessing.spawn``'s contract)."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback

__all__ = ["spawn", "start_processes", "ProcessContext", "SpawnContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException"]


class ProcessException(Exception):
    """A process started by ``spawn`` failed: ``error_index`` (its i) and ``pid``."""

    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """The process raised an exception; the message ends with the child's traceback."""


class ProcessExitedException(ProcessException):
    """The process exited with a non-zero code or was killed by a signal (``exit_code``, ``signal_name``)."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_file):
    """The child's entry: ``fn(i, *args)``; an exception's traceback goes to ``error_file`` for the parent."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is tearing the group down (SIGINT): not this process's error
    except Exception:  # SystemExit keeps its exit code (ProcessExitedException)
        with open(error_file + ".tmp", "w") as f:
            f.write(traceback.format_exc())
        os.replace(error_file + ".tmp", error_file)  # the parent never reads half a traceback
        sys.exit(1)


class ProcessContext:
    """The processes of one ``spawn(..., join=False)``: ``join()`` until it returns True; ``pids()``."""

    def __init__(self, processes, error_files, tmpdir=None):
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}
        self._tmpdir = tmpdir

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None, grace_period: float = 5.0) -> bool:
        """Wait for the processes; True when all exited cleanly, False on timeout while some still run. On the
        first failure the others are terminated (SIGTERM, then SIGKILL after ``grace_period`` seconds) and
        ProcessRaisedException or ProcessExitedException is raised."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            i = self.sentinels.pop(sentinel)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0 and failed is None:
                failed = i
        if failed is None:
            if self.sentinels:
                return False
            self._cleanup()
            return True
        self._terminate_others(grace_period)
        p = self.processes[failed]
        try:
            path = self.error_files[failed]
            if os.path.exists(path):
                with open(path) as f:
                    trace = f.read()
                raise ProcessRaisedException(f"\n\n-- spawn: process {failed} (pid {p.pid}) raised:\n{trace}", failed,
                                             p.pid)
            if p.exitcode < 0:
                name = _signal_name(-p.exitcode)
                raise ProcessExitedException(f"spawn: process {failed} (pid {p.pid}) terminated with signal {name}",
                                             failed, p.pid, p.exitcode, name)
            raise ProcessExitedException(f"spawn: process {failed} (pid {p.pid}) terminated with exit code "
                                         f"{p.exitcode}", failed, p.pid, p.exitcode)
        finally:
            self._cleanup()

    def _terminate_others(self, grace_period):
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        deadline = time.monotonic() + grace_period
        for p in self.processes:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in self.processes:
            if p.is_alive():
                p.kill()
                p.join()
        self.sentinels.clear()

    def _cleanup(self):
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None


SpawnContext = ProcessContext  # PyTorch's older name


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)``; join them (True) or return their ProcessContext."""
    if not callable(fn):
        raise TypeError(f"spawn: fn must be callable, got {type(fn).__name__}")
    if not isinstance(nprocs, int) or isinstance(nprocs, bool) or nprocs < 1:
        raise ValueError(f"spawn: nprocs must be a positive int, got {nprocs!r}")
    if not isinstance(args, tuple):
        raise TypeError(f"spawn: args must be a tuple (fn is called as fn(i, *args)), got {type(args).__name__}; "
                        f"hint: args=(x,) for one argument")
    methods = multiprocessing.get_all_start_methods()
    if start_method not in methods:
        raise ValueError(f"spawn: unknown start_method {start_method!r}; this platform has {', '.join(methods)}")
    ctx = multiprocessing.get_context(start_method)
    tmpdir = tempfile.mkdtemp(prefix="autograd-spawn-")
    error_files, processes = [], []
    try:
        for i in range(nprocs):
            error_files.append(os.path.join(tmpdir, f"error-{i}"))
            p = ctx.Process(target=_wrap, args=(fn, i, args, error_files[-1]), daemon=daemon)
            p.start()
            processes.append(p)
    except BaseException:
        for p in processes:
            p.kill()
            p.join()
        shutil.rmtree(tmpdir, ignore_errors=True)
        raise
    context = ProcessContext(processes, error_files, tmpdir)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    """Run ``fn(i, *args)`` for i in range(nprocs), each in its own process (``torch.multiprocessing.spawn``)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
