"""A minimal safetensors reader/writer for traced modules (header JSON + raw little-endian bytes; validated
read, atomic write; no pickle). ``nn.save`` has the full one, but autograd may not import nn."""

from __future__ import annotations

import json
import os
import struct
import tempfile

import ml_dtypes
import numpy as np

_CODES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64", "int32": "I32",
          "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL", "uint16": "U16", "uint32": "U32",
          "uint64": "U64"}
_NP = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16, "I64": np.int64,
       "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_, "U16": np.uint16,
       "U32": np.uint32, "U64": np.uint64}
_MAX_HEADER = 100 * 2**20


def write(path, arrays: dict, metadata: dict) -> None:
    """Write ``arrays`` (name -> NumPy array) and string ``metadata`` to ``path`` atomically."""
    header, offset, blobs = {"__metadata__": metadata}, 0, []
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        code = _CODES.get(str(a.dtype))
        if code is None:
            raise TypeError(f"autograd.jit.save: tensor {name!r} has dtype {a.dtype}, which safetensors cannot store")
        b = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": code, "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(head)))
            f.write(head)
            for b in blobs:
                f.write(b)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def read(path) -> tuple[dict, dict]:
    """``(arrays, metadata)`` from a safetensors file; a truncated or inconsistent file is refused."""
    with open(path, "rb") as f:
        blob = f.read()
    where = f"autograd.jit.load({os.fspath(path)!r})"
    if len(blob) < 8:
        raise ValueError(f"{where}: the file is {len(blob)} bytes, too short for a safetensors header")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > _MAX_HEADER or 8 + n > len(blob):
        raise ValueError(f"{where}: header length {n} does not fit the file ({len(blob)} bytes); truncated or "
                         f"not a safetensors file")
    try:
        header = json.loads(blob[8:8 + n])
    except ValueError as e:
        raise ValueError(f"{where}: the header is not valid JSON ({e}); the file is corrupt") from None
    meta = header.pop("__metadata__", {}) or {}
    data, arrays, end = memoryview(blob)[8 + n:], {}, 0
    for name, e in header.items():
        code, shape, (b, f) = e.get("dtype"), e.get("shape"), e.get("data_offsets", (None, None))
        if code not in _NP or not isinstance(shape, list) or not (isinstance(b, int) and isinstance(f, int)):
            raise ValueError(f"{where}: bad entry for tensor {name!r}: {e}")
        dt = np.dtype(_NP[code])
        if f < b or f > len(data) or int(np.prod(shape, dtype=np.int64)) * dt.itemsize != f - b:
            raise ValueError(f"{where}: tensor {name!r} (dtype {code}, shape {shape}) has byte range [{b}, {f}) that "
                             f"does not match its size or the file ({len(data)} data bytes); the file is corrupt")
        arrays[name] = np.frombuffer(data[b:f], dtype=dt.newbyteorder("<")).astype(dt).reshape(shape)
        end = max(end, f)
    if end != len(data):
        raise ValueError(f"{where}: {len(data) - end} trailing bytes after the last tensor; the file is corrupt")
    return arrays, meta
