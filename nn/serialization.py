"""Checkpoints: ``save(obj, path)`` / ``load(path, map_location=None)`` in the safetensors format.

Note [file layout]. A safetensors file is an 8-byte little-endian u64 ``N``, ``N`` bytes of UTF-8 JSON
padded with spaces to a multiple of 8, then the data buffer. The JSON maps each tensor name to
``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets into the buffer, C order, little-endian) and
may hold ``"__metadata__"``, a str -> str map. We write tensors in the reference implementation's order
(dtype descending in its enum order, then name), so a flat dict of arrays gives the same bytes as
``safetensors.numpy.save`` with the same metadata; either side reads the other's files.

Note [structure]. ``obj`` may be any nesting of dicts, lists and tuples holding tensors and JSON values
(a module or optimizer state dict). Each tensor is stored under its dotted path (``state.0.exp_avg``;
``#1``, ``#2``... appended when two paths collide), and the whole tree -- containers, keys with their
types, scalars, and ``{"tensor": name}`` leaves -- is one JSON string in ``__metadata__["nn.structure"]``,
so ``load`` rebuilds the same structure and types (int keys, tuples, a 0-d tensor vs a float; a leaf saved
from a NumPy array or a tkernels Array says so with ``"as": "numpy"`` / ``"array"`` and loads as one). Files
without that entry (written by other tools) load as a flat ``{name: Tensor}`` dict.

Note [shared tensors]. Values that are the *same view* of the same memory (same storage, offset, shape,
strides, dtype: tied weights, one tensor under two keys) are written once and load as one Tensor object
under both keys, as ``torch.load`` restores sharing; a reader without our structure sees the first name
only. Partial overlaps (two different views of one storage) are written as two independent copies.

Note [safety]. Nothing here can run code from a file: the header and the structure are parsed with
``json`` and every field is checked (lengths, dtypes, shapes, offsets covering the buffer exactly, the
structure's references) before any tensor is built, so a corrupt file raises ``CheckpointError`` and
never yields a half-filled result. ``save`` writes a temporary file next to the target, fsyncs it and
renames it over the target, so a failure mid-save leaves the old file intact and no temporary behind; a
process killed mid-save does leave its temporary, which the next save to that target removes (Note
[temporaries], at ``_atomic_write``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import stat
import struct
import sys

import numpy as np

try:
    import fcntl
except ImportError:  # not POSIX: no flock, and stale temporaries are left alone
    fcntl = None

from autograd import Tensor, from_numpy
from tkernels import cuda as _tkcuda
from tkernels import dtypes as _dt
from tkernels.array import Array
from tkernels.device import Device

from . import _pickled
from ._pickled import WeightsOnlyError, add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = ["save", "load", "CheckpointError", "WeightsOnlyError", "add_safe_globals", "safe_globals",
           "get_safe_globals", "clear_safe_globals"]

STRUCTURE_KEY = "nn.structure"
FORMAT_VERSION = 1
MAX_HEADER_BYTES = 100_000_000  # the reference reader's limit; a larger N means a corrupt length field
MAX_DEPTH = 100  # containers nested deeper than this are refused by save (json's own limit is near 500)

# safetensors dtype tag <-> our dtypes. _ST_ORDER is the reference's Dtype enum order (its files sort
# tensors by that order, descending, then by name); the tags we cannot hold are named in errors.
_ST_TO_DT = {"BOOL": _dt.bool, "U8": _dt.uint8, "I8": _dt.int8, "I16": _dt.int16, "F16": _dt.float16,
             "BF16": _dt.bfloat16, "I32": _dt.int32, "F32": _dt.float32, "F64": _dt.float64, "I64": _dt.int64,
             "U16": _dt.uint16, "U32": _dt.uint32, "U64": _dt.uint64}
_ST_TO_DT["C64"] = _dt.complex64
_DT_TO_ST = {d: tag for tag, d in _ST_TO_DT.items()}
# safetensors has C64 but no complex128 tag: complex128 tensors are written as F64 with a trailing dimension of
# 2 (real, imaginary: the bytes of complex128), their names listed in __metadata__[COMPLEX128_KEY] (a JSON list),
# so the reference reader (safetensors.numpy / torch) loads them as that float64 pair and nn.load as complex128
_DT_TO_ST[_dt.complex128] = "F64"
COMPLEX128_KEY = "nn.complex128"
_ST_ORDER = ("BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "I16", "U16",
             "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64")
_ST_RANK = {tag: i for i, tag in enumerate(_ST_ORDER)}

_LITTLE = sys.byteorder == "little"


class CheckpointError(ValueError):
    """A checkpoint file that is not a valid safetensors file (or not a valid nn checkpoint)."""


class _NotPlain(TypeError):
    """``obj`` holds something other than containers, scalars and tensors: it is saved pickled (Note [objects]
    in ``nn/_pickled.py``)."""


# ----------------------------------------------------------------------------------------------- save
class _Entry:
    """One tensor to write: where it came from, its name in the file, and its layout."""

    __slots__ = ("value", "path", "name", "dtype", "shape", "nbytes", "device", "begin")

    def __init__(self, value, path, dtype, shape, device):
        self.value, self.path, self.dtype, self.shape, self.device = value, path, dtype, shape, device
        self.nbytes = math.prod(shape) * dtype.itemsize
        self.name = self.begin = None


def _describe(value, where, path):
    """(dtype, shape, device, identity key) of a tensor-like value, without touching its data."""
    if isinstance(value, Tensor):
        value = value._data
    if isinstance(value, Array):
        key = (id(value._storage), value._offset, value._shape, value._strides, value._dtype.name, str(value._device))
        return value._dtype, tuple(value._shape), str(value._device), key
    try:
        dtype = _dt.as_dtype(value.dtype.newbyteorder("="))
    except TypeError:
        raise TypeError(f"{where}: the array at {path} has dtype {value.dtype}, which checkpoints cannot hold; "
                        f"convert it to one of {', '.join(d.name for d in _DT_TO_ST)}") from None
    key = ("numpy", value.__array_interface__["data"][0], value.shape, value.strides, value.dtype.str)
    return dtype, tuple(value.shape), "cpu", key


def _plan(obj, where):
    """Walk ``obj``: its structure as JSON-able nodes, and the tensors to write (each once, see the note)."""
    entries, by_identity, used_names, active = [], {}, {"__metadata__"}, set()

    def name_for(parts):
        base, i = ".".join(parts), 0
        name = base
        while name in used_names:
            i += 1
            name = f"{base}#{i}"
        used_names.add(name)
        return name

    def walk(value, parts, path):
        if value is None or isinstance(value, bool | int | float | str):
            if isinstance(value, str):
                _check_utf8(value, where, path)
            return value
        if isinstance(value, np.generic) and not isinstance(value, np.void):
            return walk(value.item(), parts, path)  # NumPy scalars come back as Python scalars
        if isinstance(value, Tensor | Array | np.ndarray):
            dtype, shape, device, key = _describe(value, where, path)
            entry = by_identity.get(key) if math.prod(shape) else None
            if entry is None:
                entry = _Entry(value, path, dtype, shape, device)
                entry.name = name_for(parts)
                _check_utf8(entry.name, where, path)
                entries.append(entry)
                if math.prod(shape):
                    by_identity[key] = entry
            node = {"tensor": entry.name}
            if device != "cpu":
                node["device"] = device
            if not isinstance(value, Tensor):  # load gives back the kind that was saved
                node["as"] = "numpy" if isinstance(value, np.ndarray) else "array"
            return node
        if isinstance(value, dict | list | tuple):
            if id(value) in active:
                raise ValueError(f"{where}: {path} contains itself; a checkpoint must be a tree")
            if len(active) >= MAX_DEPTH:
                raise ValueError(f"{where}: {path} is nested more than {MAX_DEPTH} containers deep")
            active.add(id(value))
            try:
                if isinstance(value, dict):
                    items = []
                    for k, v in value.items():
                        if not (k is None or isinstance(k, bool | int | float | str)):
                            raise _NotPlain(f"{where}: dict key {k!r} at {path} has type {type(k).__name__}; "
                                            f"checkpoint dict keys must be str, int, float, bool or None")
                        if isinstance(k, str):
                            _check_utf8(k, where, path)
                        items.append([k, walk(v, parts + [str(k)], f"{path}[{k!r}]")])
                    return {"dict": items}
                nodes = [walk(v, parts + [str(i)], f"{path}[{i}]") for i, v in enumerate(value)]
                return {"list" if isinstance(value, list) else "tuple": nodes}
            finally:
                active.discard(id(value))
        raise _NotPlain(f"{where}: the value at {path} has type {type(value).__module__}.{type(value).__name__}, "
                        f"which checkpoints cannot hold; they hold tensors (autograd.Tensor, tkernels Array, "
                        f"numpy.ndarray), dicts, lists, tuples, str, int, float, bool and None (never pickle)")

    root = walk(obj, [], "obj")
    return root, entries


def _check_utf8(s, where, path):
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{where}: the string {s!r} at {path} is not valid Unicode (lone surrogate); "
                         f"safetensors headers are UTF-8") from None


def _header(root, entries, where):
    """The padded header bytes; assigns each entry its offset in the reference's order."""
    entries.sort(key=lambda e: (-_ST_RANK[_DT_TO_ST[e.dtype]], e.name))
    structure = json.dumps({"version": FORMAT_VERSION, "root": root}, separators=(",", ":"), ensure_ascii=False)
    header = {"__metadata__": {STRUCTURE_KEY: structure}}
    pairs = sorted(e.name for e in entries if e.dtype is _dt.complex128)
    if pairs:
        header["__metadata__"][COMPLEX128_KEY] = json.dumps(pairs, separators=(",", ":"), ensure_ascii=False)
    offset = 0
    for e in entries:
        e.begin = offset
        pair = [2] if e.dtype is _dt.complex128 else []
        header[e.name] = {"dtype": _DT_TO_ST[e.dtype], "shape": list(e.shape) + pair,
                          "data_offsets": [offset, offset + e.nbytes]}
        offset += e.nbytes
    raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    if len(raw) > MAX_HEADER_BYTES:
        raise ValueError(f"{where}: the header would be {len(raw)} bytes, over the format's limit of "
                         f"{MAX_HEADER_BYTES}; store large numeric data as tensors, not Python lists")
    return struct.pack("<Q", len(raw)) + raw


def _host_bytes(entry) -> np.ndarray:
    """The entry's data as a flat uint8 array: on the host, C-contiguous, little-endian."""
    value = entry.value
    if isinstance(value, Tensor):
        value = value.detach()._data
    nd = value.numpy() if isinstance(value, Array) else value
    if nd.dtype.byteorder == ">" or (nd.dtype.byteorder == "=" and not _LITTLE):
        nd = nd.astype(nd.dtype.newbyteorder("<"))
    if not nd.flags.c_contiguous:  # (np.ascontiguousarray would turn a 0-d array into 1-d)
        nd = nd.copy(order="C")
    if nd.shape != entry.shape:  # the value changed between planning and writing
        raise RuntimeError(f"nn.save: {entry.path} changed shape while saving ({entry.shape} -> {nd.shape})")
    return nd.reshape(-1).view(np.uint8)


def _write(f, head, entries):
    f.write(head)
    for e in entries:
        if e.nbytes:
            f.write(memoryview(_host_bytes(e)))


def save(obj, f) -> None:
    """Write ``obj`` (a state dict, or any nesting of dicts/lists/tuples of tensors and JSON values) to ``f``
    (a path, or a binary file object) in the safetensors format, atomically for paths.

    Example: ``nn.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, "ckpt.safetensors")``

    Any other object (``nn.save(model, path)``, as ``torch.save`` does) is pickled around its tensors, whose
    data stays in safetensors entries; ``load`` then needs the classes allowed or ``weights_only=False``.
    """
    where = f"nn.save({f!r})" if hasattr(f, "write") else f"nn.save({os.fspath(f)!r})"
    try:
        root, entries = _plan(obj, where)
    except _NotPlain:  # a whole object (a Module...): pickled around its tensors (Note [objects])
        text, tensors = _pickled.dumps(obj, where)
        tensor_root, entries = _plan(tensors, where)
        root = {"pickle": text, "tensors": tensor_root}
    head = _header(root, entries, where)
    if hasattr(f, "write"):
        _write(f, head, entries)
        return
    _atomic_write(os.path.realpath(os.fspath(f)), lambda out: _write(out, head, entries))


# Note [temporaries]. A save writes ``.<target name>.<pid>.<random>.tmp`` beside the target and holds an
# exclusive flock on it until the rename. A process killed mid-save (SIGKILL, OOM killer, power loss) leaves
# that file behind; the next save to the same target removes such files, but only ours (that exact pattern,
# for this target, a regular file of our user), only when the writer's pid is gone (os.kill(pid, 0) raises
# ProcessLookupError) and only when nobody holds the flock (a writer on another host or in another pid
# namespace). A file that fails any check is left alone: a live writer's temporary is never removed.
def _temp_pattern(name):
    return re.compile(rf"\.{re.escape(name)}\.([1-9][0-9]{{0,9}})\.[0-9a-f]{{12}}\.tmp")


def _lock(fd, blocking):
    """An exclusive flock on ``fd``: True when held (False: another holder, or no flock on this platform)."""
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except OSError:
        return False
    return True


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # PermissionError: another user's live process; not a pid: keep the file
        return True
    return True


def _remove_stale_temporaries(path):
    """Remove the temporaries that killed saves to ``path`` left (see Note [temporaries]); never raises."""
    if os.name != "posix" or fcntl is None:  # (os.kill(pid, 0) would signal the process on Windows)
        return
    directory, name = os.path.split(path)
    pattern = _temp_pattern(name)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for entry in names:
        m = pattern.fullmatch(entry)
        if m is None or int(m.group(1)) == os.getpid() or _pid_alive(int(m.group(1))):
            continue
        full = os.path.join(directory, entry)
        try:
            fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and _lock(fd, blocking=False):
                now = os.stat(full, follow_symlinks=False)
                if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):  # still the file we checked
                    os.unlink(full)
        except OSError:
            pass
        finally:
            os.close(fd)


def _atomic_write(path, body):
    """Write through a temporary file in the target's directory: fsync, rename over the target, fsync the dir
    (Note [temporaries]: the ones killed saves to this target left are removed first)."""
    directory = os.path.dirname(path)
    _remove_stale_temporaries(path)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        _lock(fd, blocking=True)  # released when the file is closed
        with os.fdopen(fd, "wb") as out:
            body(out)
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileNotFoundError):  # keep the mode of the file we replace
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


# ----------------------------------------------------------------------------------------------- load
def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _no_duplicates(where):
    def hook(pairs):
        out = {}
        for k, v in pairs:
            if k in out:
                raise CheckpointError(f"{where}: the header has the key {k!r} twice")
            out[k] = v
        return out
    return hook


def _read_header(src, start, size, where):
    """Validate the header and the layout; returns ([(name, dtype, shape, begin, end)], metadata)."""
    if size < 8:
        raise CheckpointError(f"{where}: the file is {size} bytes, shorter than the 8-byte header length; "
                              f"it is empty or truncated")
    src.seek(start)
    (n,) = struct.unpack("<Q", _read_exact(src, 8, where, "the header length"))
    if n > MAX_HEADER_BYTES:
        raise CheckpointError(f"{where}: the header length field says {n} bytes, over the limit of "
                              f"{MAX_HEADER_BYTES}; this is not a safetensors file or its first 8 bytes are corrupt")
    if n > size - 8:
        raise CheckpointError(f"{where}: the header length field says {n} bytes but only {size - 8} follow it; "
                              f"the file is truncated or not a safetensors file")
    raw = _read_exact(src, n, where, "the header")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CheckpointError(f"{where}: the header is not UTF-8 ({e}); not a safetensors file") from None
    if not text.startswith("{"):
        raise CheckpointError(f"{where}: the header does not start with '{{' (starts with {text[:16]!r}); "
                              f"not a safetensors file")

    def no_constants(c):
        raise CheckpointError(f"{where}: the header contains {c}, which is not JSON")

    try:
        header = json.loads(text, object_pairs_hook=_no_duplicates(where), parse_constant=no_constants)
    except (json.JSONDecodeError, RecursionError) as e:
        raise CheckpointError(f"{where}: the header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{where}: the header is JSON {type(header).__name__}, expected an object")

    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and
                                     all(isinstance(v, str) for v in metadata.values())):
        raise CheckpointError(f"{where}: __metadata__ must be an object of strings to strings, got {metadata!r:.200}")

    buffer_len = size - 8 - n
    entries = []
    for name, info in header.items():
        at = f"{where}: tensor {name!r}"
        if not isinstance(info, dict):
            raise CheckpointError(f"{at}: its entry is {info!r:.100}, expected an object with dtype, shape, "
                                  f"data_offsets")
        missing = [k for k in ("dtype", "shape", "data_offsets") if k not in info]
        if missing:
            raise CheckpointError(f"{at}: its entry lacks {', '.join(missing)} (has {sorted(info)})")
        tag, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
        if tag not in _ST_TO_DT:
            if tag in _ST_RANK:
                raise CheckpointError(f"{at}: dtype {tag} is valid safetensors but tkernels has no such type; "
                                      f"supported: {', '.join(_ST_TO_DT)}")
            raise CheckpointError(f"{at}: unknown dtype {tag!r}; safetensors dtypes are {', '.join(_ST_ORDER)}")
        if not (isinstance(shape, list) and all(_is_int(s) and s >= 0 for s in shape)):
            raise CheckpointError(f"{at}: shape {shape!r:.100} is not a list of non-negative ints")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_int(o) for o in offsets)
                and 0 <= offsets[0] <= offsets[1]):
            raise CheckpointError(f"{at}: data_offsets {offsets!r:.100} is not [begin, end] with "
                                  f"0 <= begin <= end")
        dtype = _ST_TO_DT[tag]
        begin, end = offsets
        expected = math.prod(shape) * dtype.itemsize
        if end - begin != expected:
            raise CheckpointError(f"{at}: data_offsets [{begin}, {end}] span {end - begin} bytes but shape "
                                  f"{shape} of {tag} needs {expected}")
        if end > buffer_len:
            raise CheckpointError(f"{at}: data_offsets [{begin}, {end}] run past the end of the data buffer "
                                  f"({buffer_len} bytes); the file is truncated or the offsets are wrong")
        entries.append((name, dtype, tuple(shape), begin, end))

    # The reference requires the ranges, in order, to tile the buffer exactly: no overlap, no gap.
    covered = 0
    for name, _, _, begin, end in sorted(entries, key=lambda e: (e[3], e[4])):
        if begin < covered:
            raise CheckpointError(f"{where}: tensor {name!r}: data_offsets [{begin}, {end}] overlap the "
                                  f"previous tensor's bytes (which end at {covered})")
        if begin > covered:
            raise CheckpointError(f"{where}: tensor {name!r}: data_offsets [{begin}, {end}] leave a gap of "
                                  f"{begin - covered} bytes after offset {covered} that no tensor covers")
        covered = end
    if covered != buffer_len:
        raise CheckpointError(f"{where}: the tensors cover {covered} bytes of the {buffer_len}-byte data buffer; "
                              f"{buffer_len - covered} trailing bytes belong to no tensor")
    return entries, metadata or {}


def _complex128_names(metadata, entries, where) -> set:
    """The tensors that ``__metadata__[COMPLEX128_KEY]`` names: each must be F64 with a last dimension of 2."""
    text = metadata.get(COMPLEX128_KEY)
    if text is None:
        return set()
    try:
        names = json.loads(text)
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{where}: __metadata__[{COMPLEX128_KEY!r}] is not valid JSON ({e})") from None
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise CheckpointError(f"{where}: __metadata__[{COMPLEX128_KEY!r}] must be a JSON list of tensor names")
    kinds = {name: (dtype, shape) for name, dtype, shape, *_ in entries}
    for n in names:
        if n not in kinds or kinds[n][0] is not _dt.float64 or not kinds[n][1] or kinds[n][1][-1] != 2:
            raise CheckpointError(f"{where}: __metadata__[{COMPLEX128_KEY!r}] names {n!r}, which is not an F64 "
                                  f"tensor whose last dimension is 2 (a complex128 stored as real pairs)")
    return set(names)


def _read_exact(src, n, where, what):
    data = src.read(n)
    if len(data) != n:
        raise CheckpointError(f"{where}: the file ended while reading {what} ({len(data)} of {n} bytes); "
                              f"it is truncated")
    return data


def _parse_structure(text, names, where):
    """Validate the structure JSON against the tensors in the file; returns its root node."""
    def bad(msg):
        return CheckpointError(f"{where}: __metadata__[{STRUCTURE_KEY!r}] {msg}")

    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise bad(f"is not valid JSON ({e})") from None
    if not (isinstance(doc, dict) and set(doc) == {"version", "root"}):
        raise bad("is not an object with 'version' and 'root'")
    if doc["version"] != FORMAT_VERSION:
        raise bad(f"has version {doc['version']!r}; this reader knows version {FORMAT_VERSION}")
    seen = set()

    def check(node, path):
        if node is None or isinstance(node, bool | int | float | str):
            return
        if isinstance(node, dict) and len(node) == 1 and set(node) <= {"dict", "list", "tuple"}:
            (kind, items), = node.items()
            if not isinstance(items, list):
                raise bad(f"at {path}: {kind} items must be a list")
            if kind != "dict":
                for i, v in enumerate(items):
                    check(v, f"{path}[{i}]")
                return
            keys = set()
            for item in items:
                if not (isinstance(item, list) and len(item) == 2 and
                        (item[0] is None or isinstance(item[0], bool | int | float | str))):
                    raise bad(f"at {path}: dict item {item!r:.100} is not [scalar key, value]")
                if item[0] in keys:
                    raise bad(f"at {path}: dict key {item[0]!r} appears twice")
                keys.add(item[0])
                check(item[1], f"{path}[{item[0]!r}]")
            return
        if isinstance(node, dict) and "tensor" in node and set(node) <= {"tensor", "device", "as"}:
            if node.get("as", "numpy") not in ("numpy", "array"):
                raise bad(f"at {path}: 'as' must be 'numpy' or 'array', got {node['as']!r:.50}")
            if node["tensor"] not in names:
                raise bad(f"at {path}: refers to tensor {node['tensor']!r}, which is not in the file")
            if "device" in node:
                try:
                    Device(node["device"])
                except (TypeError, ValueError) as e:
                    raise bad(f"at {path}: bad device ({e})") from None
            seen.add(node["tensor"])
            return
        raise bad(f"at {path}: {node!r:.100} is not a scalar, a tensor reference or a container")

    root = doc["root"]
    try:
        if isinstance(root, dict) and set(root) == {"pickle", "tensors"}:  # a pickled object (Note [objects])
            if not isinstance(root["pickle"], str):
                raise bad("at obj: 'pickle' must be a base64 string")
            if not (isinstance(root["tensors"], dict) and set(root["tensors"]) == {"list"}):
                raise bad("at obj: 'tensors' must be a list of tensor references")
            check(root["tensors"], "obj.tensors")
        else:
            check(root, "obj")
    except RecursionError:
        raise bad("is nested too deeply") from None
    unused = [n for n in names if n not in seen]
    if unused:
        raise bad(f"does not mention tensors {unused[:5]} that are in the file; the header was edited or mixed up")
    return doc["root"]


def _build(node, tensors, memo=None):
    """The loaded object for a structure node; ``memo`` makes a NumPy leaf written once load as one array."""
    if node is None or isinstance(node, bool | int | float | str):
        return node
    memo = {} if memo is None else memo
    if "tensor" in node:
        key = node["tensor"], node.get("device", "cpu")
        kind = node.get("as")
        if kind == "numpy":
            if key not in memo:
                memo[key] = tensors[key].detach().cpu().numpy().copy()  # its own memory, as np.load gives
            return memo[key]
        return tensors[key]._data if kind == "array" else tensors[key]
    if "dict" in node:
        return {k: _build(v, tensors, memo) for k, v in node["dict"]}
    items = [_build(v, tensors, memo) for v in node.get("list", node.get("tuple"))]
    return items if "list" in node else tuple(items)


def _locations(root):
    """Each stored tensor's saved device, from the structure (a tensor aliased on one device only)."""
    out = {}

    def walk(node):
        if isinstance(node, dict):
            if "tensor" in node:
                out.setdefault(node["tensor"], set()).add(node.get("device", "cpu"))
            for v in node.get("dict", ()):
                walk(v[1])
            for v in node.get("list", node.get("tuple", ())):
                walk(v)
            if "pickle" in node:
                walk(node["tensors"])
    walk(root)
    return out


def _target_for(map_location, location, where):
    """The device a tensor saved on ``location`` loads to (None: leave it to a callable)."""
    if callable(map_location):
        return None
    if map_location is None:
        target = location
    elif isinstance(map_location, dict):
        target = location
        for k, v in map_location.items():
            try:
                key = Device(k) if not isinstance(k, Device) else k
            except (TypeError, ValueError) as e:
                raise ValueError(f"{where}: map_location key {k!r}: {e}") from None
            if str(key) == location or (key.index is None and Device(location).type == key.type):
                target = v
                break
    else:
        target = map_location
    try:
        dev = target if isinstance(target, Device) else Device(target)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: map_location {map_location!r} gives device {target!r}: {e}") from None
    if dev.type == "cuda" and not (_tkcuda.is_available() and (dev.index or 0) < _tkcuda.device_count()):
        raise RuntimeError(f"{where}: a tensor saved on {location} would load to {dev}, which this machine "
                           f"does not have; pass map_location='cpu' (or a dict like {{{location!r}: 'cuda:0'}})")
    return dev


def load(f, map_location=None, weights_only: bool = True):
    """Read a checkpoint written by ``save`` (or any safetensors file) from ``f`` (a path or a binary file).

    ``map_location`` (like ``torch.load``): None puts each tensor back on the device it was saved from
    (files from other tools: cpu); a device or "cpu"/"cuda"/"cuda:0" puts all there; a dict such as
    ``{"cuda:0": "cpu"}`` remaps saved devices; a callable ``fn(tensor_on_cpu, saved_location)`` returns
    the tensor to use (or None for the default). Returns the saved structure with ``autograd.Tensor``
    leaves (requires_grad False); a file without our structure gives a flat ``{name: Tensor}`` dict.
    Raises ``CheckpointError`` (a ValueError) naming the file, the tensor and the problem when the file is
    corrupt, truncated or inconsistent; nothing is built before all of it has been checked.

    ``weights_only`` (default True, as in PyTorch >= 2.6) matters for files holding a whole object: only
    allow-listed classes are loaded (``add_safe_globals``, ``safe_globals``); others raise
    ``WeightsOnlyError`` naming the class. ``weights_only=False`` loads any object: it runs code named by the
    file, so use it only for files you trust.
    """
    is_file = hasattr(f, "read")
    where = f"nn.load({f!r})" if is_file else f"nn.load({os.fspath(f)!r})"
    if not (map_location is None or callable(map_location) or isinstance(map_location, str | Device | dict)):
        raise TypeError(f"{where}: map_location must be None, a device, a str, a dict or a callable, got "
                        f"{type(map_location).__name__}")
    with contextlib.ExitStack() as stack:
        src = f if is_file else stack.enter_context(open(f, "rb"))
        start = src.tell() if is_file else 0
        size = src.seek(0, os.SEEK_END) - start
        entries, metadata = _read_header(src, start, size, where)
        names = {e[0] for e in entries}
        pairs = _complex128_names(metadata, entries, where)
        structured = STRUCTURE_KEY in metadata
        root = _parse_structure(metadata[STRUCTURE_KEY], names, where) if structured else None
        saved = _locations(root) if structured else {name: {"cpu"} for name in names}
        targets = {(name, loc): _target_for(map_location, loc, where)
                   for name, locs in saved.items() for loc in sorted(locs)}
        data_start = src.tell()
        arrays = {}
        for name, dtype, shape, begin, end in sorted(entries, key=lambda e: e[3]):
            nd = np.empty(shape, dtype.numpy)
            if end > begin:
                src.seek(data_start + begin)
                got = src.readinto(memoryview(nd.reshape(-1).view(np.uint8)))
                if got != end - begin:
                    raise CheckpointError(f"{where}: tensor {name!r}: the file ended after {got} of its "
                                          f"{end - begin} bytes; it is truncated (or changed while loading)")
            if not _LITTLE and dtype.itemsize > 1:
                nd = nd.byteswap().view(nd.dtype)
            if dtype == _dt.bool and nd.size and nd.view(np.uint8).max() > 1:
                raise CheckpointError(f"{where}: tensor {name!r}: BOOL data holds bytes other than 0 and 1")
            if name in pairs:  # an F64 (..., 2) pair that was complex128 (see COMPLEX128_KEY)
                nd = nd.view(np.complex128).reshape(shape[:-1])
            arrays[name] = nd
    tensors = {}
    for (name, location), dev in targets.items():
        t = from_numpy(arrays[name])
        if dev is None:  # a callable decides; None from it means "where it was saved", as in torch
            moved = map_location(t, location)
            if moved is not None and not isinstance(moved, Tensor):
                raise TypeError(f"{where}: map_location returned {type(moved).__name__} for tensor {name!r}; "
                                f"expected an autograd.Tensor or None")
            dev = Device(location) if moved is None else None
            t = t if moved is None else moved
        if dev is not None and dev.type != "cpu":
            t = t.to(dev)
        tensors[name, location] = t
    if not structured:
        return {name: tensors[name, "cpu"] for name, *_ in entries}
    if isinstance(root, dict) and "pickle" in root:
        return _pickled.loads(root["pickle"], _build(root["tensors"], tensors), weights_only, where,
                              CheckpointError)
    return _build(root, tensors)
