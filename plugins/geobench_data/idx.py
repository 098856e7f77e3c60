"""Reading the IDX file format of MNIST and Fashion-MNIST (LeCun et al.), plain or gzipped
(told apart by gzip's magic bytes, whatever the file's name).

An IDX file is a 4-byte magic number ``0x00 0x00 <type> <ndim>``, then ``ndim`` big-endian
uint32 dimension sizes, then the values in C order (big-endian for multi-byte types).
"""

from __future__ import annotations

import gzip
import math
import zlib
from pathlib import Path

import numpy as np

GZIP_MAGIC = b"\x1f\x8b"
TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


class IdxError(ValueError):
    """A file that is not a well-formed IDX file."""


def read_idx(path: Path) -> np.ndarray:
    """The array stored in the IDX file ``path`` (a gzipped one is unpacked first)."""
    raw = path.read_bytes()
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise IdxError(f"{path}: not a readable gzip file ({e})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in TYPES:
        raise IdxError(f"{path}: not an IDX file (magic bytes {raw[:4].hex() or 'missing'})")
    ndim, dtype = raw[3], np.dtype(TYPES[raw[2]])
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise IdxError(f"{path}: truncated header ({len(raw)} bytes, {ndim} dimensions)")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", ndim, offset=4))
    count = math.prod(shape)
    if len(raw) != header + count * dtype.itemsize:
        raise IdxError(f"{path}: {len(raw) - header} data bytes, but shape {shape} of "
                       f"{dtype.name} needs {count * dtype.itemsize}")
    values = np.frombuffer(raw, dtype, count, offset=header).reshape(shape)
    return values.astype(dtype.newbyteorder("="))

