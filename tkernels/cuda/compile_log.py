"""Where a cold start goes: one line per Triton compilation, when ``TKERNELS_COMPILE_LOG=<file>`` is set.

Every ``@triton.jit`` specialization compiled in this process (``JITFunction._do_compile``: Triton's front end,
LLVM and ptxas, or a load from Triton's disk cache; the same method on every supported Triton) appends one JSON
line ``{"kernel", "seconds", "ok", "error", "pid"}`` to the file. Lines are short single writes in append
mode, so several processes (test workers) may share one file. ``bench.gpu_check`` gives each of its parts a
file and reports compile time apart from run time, and lists any kernel that failed to compile.
"""

from __future__ import annotations

import json
import os
import time

__all__ = ["ENV", "install_from_env", "read"]

ENV = "TKERNELS_COMPILE_LOG"
_installed = False


def _write(path: str, record: dict) -> None:
    line = (json.dumps(record) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def install_from_env() -> bool:
    """Wrap Triton's per-specialization compile when ``TKERNELS_COMPILE_LOG`` is set (once); True when logging."""
    global _installed
    path = os.environ.get(ENV)
    if not path:
        return False
    if _installed:
        return True
    from triton.runtime.jit import JITFunction

    original = JITFunction._do_compile

    def _do_compile(self, *args, **kwargs):
        name = getattr(self.fn, "__name__", repr(self))
        t0 = time.perf_counter()
        try:
            kernel = original(self, *args, **kwargs)
        except BaseException as e:
            _write(path, {"kernel": name, "seconds": round(time.perf_counter() - t0, 4), "ok": False,
                          "error": f"{type(e).__name__}: {e}"[:2000], "pid": os.getpid()})
            raise
        _write(path, {"kernel": name, "seconds": round(time.perf_counter() - t0, 4), "ok": True, "error": None,
                      "pid": os.getpid()})
        return kernel

    JITFunction._do_compile = _do_compile
    _installed = True
    return True


def read(path) -> dict:
    """Totals of a log: ``{"count", "seconds", "errors": [{"kernel", "error"}...]}`` (an absent file: nothing)."""
    count, seconds, errors = 0, 0.0, []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line cut by a killed process
        count += 1
        seconds += float(rec.get("seconds", 0.0))
        if not rec.get("ok", True):
            errors.append({"kernel": rec.get("kernel", "?"), "error": rec.get("error") or ""})
    return {"count": count, "seconds": round(seconds, 2), "errors": errors}
