"""The watcher's arguments, checked when it is created: a bad value is a ``ValueError`` there,
never an error inside the training loop that the watch wraps."""

from __future__ import annotations

import math
import numbers
import re
from typing import Optional, Tuple

DEVICE = re.compile(r"(cpu|mps|cuda(:\d+)?)")


def _count(name: str, value: object, minimum: int, optional: bool = False) -> Optional[int]:
    if value is None and optional:
        return None
    # bool is an int to Python, and 1.0 is not a step count: both are refused.
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"watch: {name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"watch: {name} must be >= {minimum}, got {value!r}")
    return int(value)


def every(value: object) -> Optional[int]:
    return _count("every", value, 1, optional=True)


def census_every(value: object) -> Optional[int]:
    return _count("census_every", value, 1, optional=True)


def warmup(value: object) -> int:
    return _count("warmup", value, 0)


def budget(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) \
            or not 0 < value <= 1:
        raise ValueError(f"watch: budget must be a fraction of the loop's time in (0, 1], got {value!r}")
    return float(value)


def label(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"watch: label must be a non-empty string, got {value!r}")
    return value


def track_types(value: object) -> Tuple[str, ...]:
    if isinstance(value, str):
        raise ValueError(f"watch: track_types must be a list of class names, got the string {value!r}")
    try:
        names = tuple(value)
    except TypeError:
        raise ValueError(f"watch: track_types must be a list of class names, got {value!r}") from None
    for name in names:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"watch: track_types must hold class names, got {name!r}")
    return names


def trace_sites(value: object):
    if not (value is True or value is False or (isinstance(value, str) and value == "auto")):
        raise ValueError(f"watch: trace_sites must be True, False or 'auto', got {value!r}")
    return value


def device(value: object) -> Optional[str]:
    """None (CUDA when available, else the CPU), 'cpu', 'mps', 'cuda' or 'cuda:N'."""
    if value is None:
        return None
    text = str(value) if type(value).__name__ == "device" else value  # a torch.device
    if not isinstance(text, str) or not DEVICE.fullmatch(text):
        raise ValueError(f"watch: device must be 'cpu', 'mps', 'cuda' or 'cuda:N', got {value!r}")
    if text.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"watch: device {text!r} was asked for but CUDA is not available")
    return text
