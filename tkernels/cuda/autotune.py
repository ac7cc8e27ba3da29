"""Autotuning without torch, remembered across runs; and Triton's scratch allocator on our caching allocator.

``autotune(configs, key)`` is ``triton.autotune`` with three differences (DESIGN.md §5):

- on a GPU, configs are timed with ``triton_driver.event_bench`` (CUDA events on our stream; Triton's own
  ``do_bench`` needs torch);
- when interpreted (``TKERNELS_INTERPRET=1``), only the FIRST config is kept and nothing is timed: the
  interpreter's timings mean nothing, and Triton cannot benchmark there anyway. Put the config that suits
  small inputs first. ``TKERNELS_AUTOTUNE=first`` does the same on a GPU (quick starts, reproducible
  configs; ``bench.gpu_check`` on the fake driver, where timings mean nothing either). (An explicit
  ``do_bench=`` overrides both and tunes all configs, for tests.);
- the chosen config is kept on disk per kernel and tuning key, in a JSON file per GPU name and Triton
  version, under ``$TKERNELS_CACHE_DIR/autotune`` (default ``~/.cache/tkernels/autotune``). The next process
  loads it instead of benchmarking. A file whose kernel source changed, or an entry whose config is no longer
  among the configs, is ignored; files are replaced atomically, so readers never see half a file.

The tuning key is Triton's: the values of the ``key`` arguments, then the dtype name of every argument that
has one.

``set_triton_allocator()`` makes our caching allocator serve the global scratch memory that some kernels
ask for at launch (device-side tensor descriptors). Triton keeps the allocator in a ContextVar, so every
thread needs it once: ``ensure_triton_allocator()`` is the cheap per-launch check for the launch helper.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import re
import tempfile
import threading
from pathlib import Path

from ..validation import OpValueError

__all__ = ["autotune", "cache_dir", "cache_file", "set_triton_allocator", "ensure_triton_allocator",
           "triton_scratch_allocator"]

_CACHE_VERSION = 1


def cache_dir() -> Path:
    """Where tuning results live: ``$TKERNELS_CACHE_DIR/autotune``, else ``~/.cache/tkernels/autotune``."""
    root = os.environ.get("TKERNELS_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "tkernels") / "autotune"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text).strip("_") or "unknown"


def _device_identity() -> tuple[str, str]:
    """(GPU name, Triton version) of the current device: what a tuning result is valid for."""
    import triton

    from . import current_device, get_device_name

    return get_device_name(current_device()), triton.__version__


def cache_file(kernel_name: str, gpu_name: str | None = None, triton_version: str | None = None) -> Path:
    """The JSON file holding ``kernel_name``'s tuning results for a GPU and Triton version (default: current)."""
    if gpu_name is None or triton_version is None:
        gpu, version = _device_identity()
        gpu_name = gpu if gpu_name is None else gpu_name
        triton_version = version if triton_version is None else triton_version
    return cache_dir() / _slug(gpu_name) / f"triton-{_slug(triton_version)}" / f"{_slug(kernel_name)}.json"


def _config_dict(config) -> dict:
    """A config's launch parameters as JSON-safe values (what identifies it on disk)."""
    return {k: v if isinstance(v, bool | int | float | str) or v is None else repr(v)
            for k, v in sorted(config.all_kwargs().items())}


def _atomic_write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read_json(path: Path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):  # missing, unreadable or corrupt: as if not tuned yet
        return None


def _source_hash(fn) -> str:
    """Hash of the kernel's source: Triton's ``cache_key`` (source and called jit functions) when it has one,
    else the Python source (interpreted kernels); ``fn`` may be wrapped (heuristics)."""
    while True:
        key = getattr(fn, "cache_key", None)
        if isinstance(key, str):
            break
        if inspect.isfunction(fn) or not hasattr(fn, "fn"):
            try:
                key = inspect.getsource(fn)
            except (OSError, TypeError):
                key = getattr(fn, "__qualname__", repr(fn))
            break
        fn = fn.fn
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _make_autotuner_class():
    from triton.runtime.autotuner import Autotuner

    class TkAutotuner(Autotuner):
        """``triton``'s Autotuner plus a disk cache of the chosen config per tuning key."""

        def _init_disk_cache(self, enabled: bool) -> None:
            base = self.base_fn
            self.kernel_name = f"{base.__module__}.{base.__qualname__}"
            self._disk_enabled = enabled
            self._disk_lock = threading.Lock()
            self._disk_path = None
            self._disk_entries = None  # tuning key (JSON text) -> entry, loaded on first need
            self._resolved = False

        def _tuning_key(self, args, kwargs) -> tuple:
            # the same key as Autotuner.run (Triton 3.6 and 3.9)
            all_args = {**dict(zip(self.arg_names, args)), **kwargs}
            named = {k: v for k, v in all_args.items() if k in self.arg_names}
            key = [named[k] for k in self.keys if k in named]
            key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
            return tuple(key)

        def _load(self) -> dict:
            if self._disk_entries is None:
                gpu, version = _device_identity()
                self._disk_path = cache_file(self.kernel_name, gpu, version)
                self._meta = {"version": _CACHE_VERSION, "kernel": self.kernel_name, "gpu": gpu,
                              "triton": version, "source": _source_hash(self.fn)}
                data = _read_json(self._disk_path)
                ok = isinstance(data, dict) and all(data.get(k) == v for k, v in self._meta.items())
                self._disk_entries = dict(data.get("entries", {})) if ok else {}
            return self._disk_entries

        def _lookup(self, key: tuple):
            entry = self._load().get(json.dumps(key, default=repr))
            if not isinstance(entry, dict):
                return None
            for config in self.configs:
                if _config_dict(config) == entry.get("config"):
                    return config
            return None  # the configs changed since: tune again

        def _store(self, key: tuple, config) -> None:
            timings = getattr(self, "configs_timings", None) or {}
            entry = {"config": _config_dict(config),
                     "timings_ms": {json.dumps(_config_dict(c)): t for c, t in timings.items()
                                    if isinstance(t, list | tuple | float | int)}}
            with self._disk_lock:
                entries = self._load()
                entries[json.dumps(key, default=repr)] = entry
                on_disk = _read_json(self._disk_path)  # merge what other processes wrote meanwhile
                if isinstance(on_disk, dict) and all(on_disk.get(k) == v for k, v in self._meta.items()):
                    entries = {**on_disk.get("entries", {}), **entries}
                    self._disk_entries = entries
                try:
                    _atomic_write_json(self._disk_path, {**self._meta, "entries": entries})
                except OSError:  # a read-only or full disk costs a re-tune next time, nothing else
                    pass

        def _resolve_mode(self) -> None:
            # at the first launch, not at decoration: importing a kernel module must not initialize CUDA
            from . import is_interpreted

            self._resolved = True
            if self._do_bench is None:
                if is_interpreted() or os.environ.get("TKERNELS_AUTOTUNE") == "first":
                    self.configs = self.configs[:1]
                else:
                    from .triton_driver import event_bench

                    self._do_bench = event_bench

        def run(self, *args, **kwargs):
            if not self._resolved:
                self._resolve_mode()
            if not self._disk_enabled or len(self.configs) <= 1:
                return super().run(*args, **kwargs)
            key = self._tuning_key(args, kwargs)
            known = key in self.cache
            if not known:
                config = self._lookup(key)
                if config is not None:
                    self.cache[key] = config
                    known = True
            out = super().run(*args, **kwargs)
            if not known and key in self.cache:
                self._store(key, self.cache[key])
            return out

    return TkAutotuner


_autotuner_class = None


def autotune(configs, key, *, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
             post_hook=None, do_bench=None, cache: bool = True):
    """Decorator like ``triton.autotune`` (same arguments); see the module docstring for what differs.

    ``do_bench``: a benchmark ``(kernel_call, quantiles) -> [ms, ...]`` (default: ``event_bench`` on a GPU;
    none, and the first config only, when interpreted). ``cache``: keep results on disk.
    """
    global _autotuner_class
    if _autotuner_class is None:
        _autotuner_class = _make_autotuner_class()
    configs = list(configs)
    if not configs:
        raise OpValueError("autotune: configs must hold at least one triton.Config")

    def decorator(fn):
        tuner = _autotuner_class(fn, fn.arg_names, configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                                 post_hook=post_hook, prune_configs_by=prune_configs_by, do_bench=do_bench)
        tuner._init_disk_cache(cache)
        return tuner

    return decorator


# ----------------------------------------------------------------------------------- scratch allocator
def triton_scratch_allocator(size: int, alignment: int, stream):
    """Triton's allocator protocol: ``size`` bytes aligned to ``alignment`` on ``stream`` (raw handle; None:
    the current stream), as a cuda uint8 Array (``data_ptr()``) of the current device. The memory returns
    to the pool when Triton drops it after the launch; it belongs to the launch's stream, so later work on
    that stream is ordered after the kernel that used it."""
    from .. import dtypes as _dt
    from ..array import Array
    from ..backends.triton.memory import DeviceStorage
    from ..device import Device
    from . import caching_allocator, current_device, current_stream

    index = current_device()
    alloc = caching_allocator(index)
    handle = current_stream(index).handle if stream is None else int(stream)
    pad = alignment if alignment > 512 else 0  # blocks are 512-byte aligned already
    block = alloc.malloc(max(size + pad, 1), handle)
    device = Device("cuda", index)
    offset = (-block.ptr) % alignment if pad else 0
    return Array(DeviceStorage(block, alloc, device), (size,), (1,), offset, _dt.uint8, device)


def set_triton_allocator() -> None:
    """Make ``triton_scratch_allocator`` Triton's allocator in the calling thread (context)."""
    import triton

    triton.set_allocator(triton_scratch_allocator)


try:  # Triton >= 3.6 keeps the allocator in this ContextVar (a private name: fall back to setting it once)
    from triton.runtime._allocation import NullAllocator as _NullAllocator
    from triton.runtime._allocation import _allocator as _allocator_var
except ImportError:  # pragma: no cover - other Triton layouts
    _allocator_var = None
    _NullAllocator = None
_tls = threading.local()


def ensure_triton_allocator() -> None:
    """Install our scratch allocator in this thread unless one is set (ours or the user's). Cheap: call it
    before every launch."""
    if _allocator_var is not None:
        current = _allocator_var.get()
        if current is triton_scratch_allocator or not isinstance(current, _NullAllocator):
            return
    elif getattr(_tls, "done", False):
        return
    set_triton_allocator()
    _tls.done = True
