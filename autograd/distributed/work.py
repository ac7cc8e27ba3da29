"""Work handles of collectives: MPI requests polled against the process group's deadline, so that a dead or
diverging rank ends in an error naming it and the collective, never in a hang.

Note [failure detection]: every wait polls its requests (``Test``) and, between polls, the group's notice
channel, where a rank that dies of an exception posts its rank and error (see ``_notify_peers``), and, about
once a second, the pids of the ranks on this host (exchanged at ``init_process_group``): a killed rank is
named within a second. When the deadline passes with every rank alive, the error says that some rank is
busy elsewhere or called another collective (AUTOGRAD_DISTRIBUTED_DEBUG=DETAIL checks that before each one).
"""

from __future__ import annotations

import os
import time

__all__ = ["Work", "DistError", "DistBackendError", "DistTimeoutError"]


class DistError(RuntimeError):
    """A collective failed (like ``torch.distributed.DistError``)."""


class DistBackendError(DistError):
    """Another rank failed or the communication library reported an error."""


class DistTimeoutError(DistError):
    """A collective did not finish within the process group's timeout."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # an exited child not yet reaped by its launcher is a zombie: dead too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


class Work:
    """The handle of a collective started with ``async_op=True``: ``wait()`` blocks until it is done (or fails
    within the group's timeout), ``is_completed()`` polls. ``finish`` runs once after completion (copies a
    staged buffer back, divides an average...)."""

    def __init__(self, group, requests, what: str, finish=None, result=None, keep=(), status=None):
        self._group = group
        self._requests = list(requests)
        self._keep = keep  # buffers MPI reads or writes until the requests complete
        self._statuses = None if status is None else [status]
        self._what = what
        self._finish = finish
        self._result = result
        self._done = not self._requests
        self._exc = None
        if self._done:
            self._complete()

    def _complete(self):
        self._done = True
        self._keep = ()
        fin, self._finish = self._finish, None
        if fin is not None:
            fin()

    def is_completed(self) -> bool:
        """True when the operation finished (polls without blocking)."""
        if self._done:
            return True
        mpi = self._group._MPI
        try:
            if mpi.Request.Testall(self._requests, self._statuses):
                self._complete()
        except mpi.Exception as e:
            self._fail(e)
        return self._done

    def _fail(self, e):
        g = self._group
        dead = g._dead_ranks()
        who = f"rank {dead[0][0]} (pid {dead[0][1]}) is no longer running" if dead else "MPI reported an error"
        raise DistBackendError(f"{self._what} on rank {g._global_rank}: {who}: {e}. Hint: look at that rank's "
                               f"output for its error") from e

    def wait(self, timeout=None) -> bool:
        """Block until done; raise DistBackendError when another rank failed, DistTimeoutError past the
        timeout (default: the process group's)."""
        if self._done:
            return True
        g = self._group
        limit = g._timeout_s if timeout is None else (timeout.total_seconds() if hasattr(timeout, "total_seconds")
                                                      else float(timeout))
        mpi = g._MPI
        testall = mpi.Request.Testall
        reqs = self._requests
        sts = self._statuses
        start = time.monotonic()
        next_check = start + 0.05
        spins = 0
        nap = 0.0
        try:
            while not testall(reqs, sts):
                spins += 1
                if spins < 2000:
                    continue  # MPI progresses only inside Test; the clock is read every 64 polls only
                if spins & 63 == 0 or nap:
                    now = time.monotonic()
                    if now >= next_check:
                        g._check_peers(self._what)
                        if now - start > limit:
                            raise DistTimeoutError(
                                f"{self._what} on rank {g._global_rank} timed out after {limit:g} s (the process "
                                f"group's timeout); every rank of the group is still running, so one is busy "
                                f"elsewhere or called a different collective. Hint: set "
                                f"AUTOGRAD_DISTRIBUTED_DEBUG=DETAIL to check each collective's op, shape and "
                                f"dtype across ranks")
                        next_check = now + (0.05 if now - start < 1 else 0.5)
                    if now - start > 1.0:  # a straggler (or a dead peer): stop burning a core; 200 us naps
                        nap = min(2e-4, max(nap * 2, 2e-5))  # cost a transfer this long (>1 s) little
                if nap:
                    time.sleep(nap)
                # else spin, as MPI's own blocking calls do: yielding the core (sleep(0): the kernel's ~50 us
                # timer slack; sched_yield: another process's timeslice on a shared box) measured 640 us and
                # 119 us per 16 KiB all-reduce instead of 28 (2 ranks, 2 cores)
        except mpi.Exception as e:
            self._fail(e)
        self._complete()
        return True

    def result(self):
        """The output tensors of the operation (after ``wait``)."""
        self.wait()
        return self._result

    def source_rank(self) -> int:
        """The sender of a completed ``irecv`` (a global rank)."""
        self.wait()
        return self._result
