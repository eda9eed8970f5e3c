"""Timing for the benchmarks: wall time and peak RSS of whole commands, measured in turn
so that the load of a shared machine weighs on every command of a comparison alike."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Dict, List, Optional


@dataclass
class Measure:
    tool: str
    command: str
    walls: List[float]
    rss_mb: float

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)


def run_timed(cmd: List[str], env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None):
    """Wall seconds and peak RSS (MB, largest process of the tree) of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.stderr.close()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"speed: error: {' '.join(cmd[:3])}… exited {proc.returncode}: {err.strip()[-500:]}")
    return wall, usage.ru_maxrss / 1024


def measure(tool: str, cmd: List[str], runs: int, env=None, cwd=None, before=None) -> Measure:
    walls, rss = [], 0.0
    for _ in range(runs):
        if before is not None:
            before()
        wall, peak = run_timed(cmd, env, cwd)
        walls.append(wall)
        rss = max(rss, peak)
        print(f"  {tool}: {wall:.2f} s, {peak:.0f} MB", file=sys.stderr, flush=True)
    return Measure(tool, " ".join(cmd), walls, rss)


def measure_in_turn(tools: List[tuple], runs: int) -> List[Measure]:
    """Several (tool, cmd, env[, cwd]) measured in turn, run after run, so that the load of
    a shared machine weighs on all alike: their ratios are the ones the targets are about."""
    found = {tool[0]: Measure(tool[0], " ".join(tool[1]), [], 0.0) for tool in tools}
    for _ in range(runs):
        for tool, cmd, env, *cwd in tools:
            m = measure(tool, cmd, 1, env, cwd[0] if cwd else None)
            found[tool].walls.extend(m.walls)
            found[tool].rss_mb = max(found[tool].rss_mb, m.rss_mb)
    return [found[tool[0]] for tool in tools]
