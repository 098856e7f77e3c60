"""The device a cell trains on: resolving ``device: auto`` and waiting for queued work."""

from __future__ import annotations

import torch


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work, so that a clock reading covers it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
