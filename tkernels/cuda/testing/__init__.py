"""``tkernels.cuda.testing``: a stand-in CUDA driver library, so the real-driver code paths run without a GPU.

``build_fake_libcuda(folder)`` compiles ``fake_libcuda.c`` (beside this file; needs ``gcc``) into
``folder/libcuda.so.1`` (and a ``libcuda.so`` link, which Triton links its launcher against) and returns the
folder. ``fake_driver_env(folder)`` gives the environment variables that make cuda-python and Triton load it.
``FakeDriverStats`` reads its counters of live objects and calls in a process that loaded it.

What the fake driver models and what it does not is written at the top of ``fake_libcuda.c``: contexts per
thread (a call that needs one fails without one, as on a GPU), host memory as device memory, streams and
events as checked handles, modules and launches (logged, never run). Kernels' results come from the
interpreter (``TKERNELS_INTERPRET=1``) or a real GPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["SOURCE", "build_fake_libcuda", "fake_driver_env", "FakeDriverStats"]

SOURCE = Path(__file__).with_name("fake_libcuda.c")


def build_fake_libcuda(folder) -> Path:
    """Compile the fake driver into ``folder`` (reused when the source did not change); returns the folder."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise RuntimeError("build_fake_libcuda: no C compiler (gcc or cc) on PATH; hint: install gcc (Triton "
                           "needs it too, to build its launcher)")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    lib, stamp = out / "libcuda.so.1", out / "libcuda.so.1.sha256"
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    if not (lib.exists() and stamp.exists() and stamp.read_text() == digest):
        tmp = out / f".libcuda.so.1.{os.getpid()}"
        r = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-Wall", "-o", str(tmp), str(SOURCE), "-ldl",
                            "-lpthread"], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"build_fake_libcuda: {cc} failed (exit {r.returncode}):\n{r.stderr[-4000:]}")
        os.replace(tmp, lib)  # atomic: a concurrent build (another test worker) never sees half a library
        stamp.write_text(digest)
    link = out / "libcuda.so"
    if not link.is_symlink():
        if link.exists():
            link.unlink()
        link.symlink_to("libcuda.so.1")
    return out


def fake_driver_env(folder, base=None) -> dict:
    """``base`` (default ``os.environ``) with the fake driver first on the library path, for a child process:
    cuda-python finds it through ``LD_LIBRARY_PATH``, Triton through ``TRITON_LIBCUDA_PATH``; cuda is not
    interpreted there."""
    folder = str(Path(folder).resolve())
    env = dict(os.environ if base is None else base)
    env.pop("TRITON_INTERPRET", None)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (folder, env.get("LD_LIBRARY_PATH")) if p)
    env["TRITON_LIBCUDA_PATH"] = folder
    env["TKERNELS_INTERPRET"] = "0"
    return env


class FakeDriverStats:
    """The fake driver's counters (live allocations, streams, events, modules; launches; calls refused for want
    of a current context), read from the copy this process loaded."""

    def __init__(self, folder=None):
        path = (Path(folder) / "libcuda.so.1") if folder is not None else "libcuda.so.1"
        # RTLD_NOLOAD semantics through the loader: the library is already mapped when cuda-python loaded it
        self._lib = ctypes.CDLL(str(path))
        self._lib.fake_cuda_stats.restype = ctypes.c_int
        self._lib.fake_cuda_stat_name.restype = ctypes.c_char_p
        self._n = self._lib.fake_cuda_stats(None, 0)

    def read(self) -> dict:
        buf = (ctypes.c_longlong * self._n)()
        self._lib.fake_cuda_stats(buf, self._n)
        return {self._lib.fake_cuda_stat_name(i).decode(): int(buf[i]) for i in range(self._n)}
