"""From per-step samples to growth figures and a verdict.

A run of N steps and a run of 2N steps of the same program give two estimates of growth:
the least-squares slope over the second half of the long run (after warm-up: lazy
initialisation, allocator caches and bounded buffers filling up), and what the extra N
steps added: the long run's rise from its first sample to its last, less the short run's,
divided by N. Each run is measured from its own first sample because the two are separate
processes whose levels can differ by a constant (start-up allocations landing differently
left 135 KiB between two runs of the same flat program, read as 17 KiB/step of growth when
the last samples were compared directly). A signal grows when both estimates reach its
noise floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

KIB = 1024


def kib(value: float) -> str:
    """A signed byte amount in KiB, as every harness and watcher report prints it."""
    return f"{value / KIB:+,.1f} KiB"

# Smallest growth per step we call growth. Counts are exact; bytes include the Python
# objects a step leaves behind (a float, a list slot), which stay far below 16 KiB/step.
NOISE_FLOORS: Dict[str, float] = {
    "nodes": 0.5,
    "figures": 0.5,
    "tensors": 0.5,
    "bytes": 16 * KIB,
}
# A transient peak (TLL003's deep copy) is a level, not a rate: the fixed program's peak
# per step must drop by at least this fraction of the original's. The repro's copy is half
# of its original peak (the clone's own weights are the other half); measured drops are
# 48-53 %, so a quarter leaves room for page-level noise and still fails a fix that does
# nothing.
PEAK_FLOOR = 256 * KIB
PEAK_DROP = 0.25

RESULT_RTOL = 1e-5
RESULT_ATOL = 1e-7


def bytes_key(device: str, samples: Sequence[dict]) -> Optional[str]:
    """The byte signal to trust on this device: the allocator's counter on CUDA, glibc's
    in-use bytes on Linux, else the resident size."""
    if device.startswith("cuda"):
        return "cuda_allocated"
    if samples and samples[0].get("heap") is not None:
        return "heap"
    return "rss"


def peak_key(device: str) -> str:
    return "cuda_step_peak" if device.startswith("cuda") else "step_peak"


def _values(samples: Sequence[dict], key: str) -> Optional[List[float]]:
    values = [s.get(key) for s in samples]
    if not values or any(v is None for v in values):
        return None
    return [float(v) for v in values]


def slope(ys: Sequence[float]) -> float:
    n = len(ys)
    if n < 2:
        return 0.0
    mean_x = (n - 1) / 2
    mean_y = sum(ys) / n
    num = sum((i - mean_x) * (y - mean_y) for i, y in enumerate(ys))
    den = sum((i - mean_x) ** 2 for i in range(n))
    return num / den


@dataclass
class Growth:
    """How one signal behaved over the N-step and 2N-step runs of one program."""

    signal: str
    per_step: Optional[float]  # slope over the second half of the 2N run
    span: Optional[float]  # (rise over the 2N run - rise over the N run) / N
    level: Optional[float] = None  # median over the second half (for peaks)

    def grows(self, floor: float) -> bool:
        return (self.per_step is not None and self.span is not None
                and self.per_step >= floor and self.span >= floor)

    def flat(self, floor: float) -> bool:
        return (self.per_step is not None and self.span is not None
                and self.per_step < floor and self.span < floor)


def growth(signal: str, key: Optional[str], short: Sequence[dict], long: Sequence[dict]) -> Growth:
    if key is None:
        return Growth(signal, None, None)
    a, b = _values(short, key), _values(long, key)
    if not a or not b:
        return Growth(signal, None, None)
    tail = b[len(b) // 2:]
    steps = len(b) - len(a)
    span = ((b[-1] - b[0]) - (a[-1] - a[0])) / steps if steps > 0 else None
    ordered = sorted(tail)
    return Growth(signal, slope(tail), span, level=ordered[len(ordered) // 2])


def results_match(before, after) -> Optional[str]:
    """None when the two plain results agree within tolerance, else where they differ."""
    return _compare(before, after, "result")


def _compare(a, b, where: str) -> Optional[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            problem = _compare(a[key], b[key], f"{where}[{key!r}]")
            if problem:
                return problem
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            problem = _compare(x, y, f"{where}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(a, float) and isinstance(b, float):
        if math.isclose(a, b, rel_tol=RESULT_RTOL, abs_tol=RESULT_ATOL) or (math.isnan(a) and math.isnan(b)):
            return None
        return f"{where}: {a!r} != {b!r}"
    return None if a == b else f"{where}: {a!r} != {b!r}"
