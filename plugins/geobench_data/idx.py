"""The IDX file format of MNIST and Fashion-MNIST (LeCun et al.), plain or gzipped.

An IDX file is a 4-byte magic number ``0x00 0x00 <type> <ndim>``, then ``ndim`` big-endian
uint32 dimension sizes, then the values in C order (big-endian for multi-byte types).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


class IdxError(ValueError):
    """A file that is not a well-formed IDX file."""


def read_idx(path: Path) -> np.ndarray:
    """The array stored in the IDX file ``path`` (``.gz``: gunzipped first)."""
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in TYPES:
        raise IdxError(f"{path}: not an IDX file (magic bytes {raw[:4].hex() or 'missing'})")
    ndim, dtype = raw[3], np.dtype(TYPES[raw[2]])
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise IdxError(f"{path}: truncated header ({len(raw)} bytes, {ndim} dimensions)")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", ndim, offset=4))
    count = int(np.prod(shape, dtype=np.int64))
    if len(raw) != header + count * dtype.itemsize:
        raise IdxError(f"{path}: {len(raw) - header} data bytes, but shape {shape} of "
                       f"{dtype.name} needs {count * dtype.itemsize}")
    values = np.frombuffer(raw, dtype, count, offset=header).reshape(shape)
    return values.astype(dtype.newbyteorder("="))


def write_idx(path: Path, array: np.ndarray) -> None:
    """Write ``array`` as an IDX file (gzipped when ``path`` ends in ``.gz``)."""
    code = next((c for c, t in TYPES.items() if np.dtype(t).kind == array.dtype.kind
                 and np.dtype(t).itemsize == array.dtype.itemsize), None)
    if code is None:
        raise IdxError(f"IDX has no type for {array.dtype}")
    body = (bytes([0, 0, code, array.ndim]) + np.asarray(array.shape, ">u4").tobytes()
            + np.ascontiguousarray(array, TYPES[code]).tobytes())
    path.write_bytes(gzip.compress(body) if path.suffix == ".gz" else body)
