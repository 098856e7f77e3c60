"""The float32 precision of a block of GPU work: full IEEE or TF32."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def fp32_matmuls(kind: str) -> Iterator[None]:
    """float32 matmuls and cuDNN convolutions in full precision (``ieee``) or in TF32
    (``tf32``, on GPUs with TF32 units) inside the block; the previous settings after it.

    torch's defaults (which ``precision: fp32`` trains with) are TF32 convolutions and
    full-precision matmuls; metrics run under ``ieee``, so that their convolutions on an
    Ampere-or-later GPU do not round inputs to 10 mantissa bits. The CPU has no TF32: there
    both settings compute the same. Matmuls are set through
    ``torch.backends.cuda.matmul.fp32_precision`` (readable whichever API set it),
    convolutions through ``torch.backends.cudnn.allow_tf32`` (what inductor reads).
    """
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    saved = matmul.fp32_precision, cudnn.allow_tf32
    matmul.fp32_precision, cudnn.allow_tf32 = kind, kind == "tf32"
    try:
        yield
    finally:
        matmul.fp32_precision, cudnn.allow_tf32 = saved
