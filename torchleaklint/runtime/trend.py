"""Fitting growth per step from the watcher's samples, per phase, and naming what grows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ..harness.growth import KIB, NOISE_FLOORS, kib
from .holders import Site, rule_for, source_line

UNEXPLAINED_MEMORY_FLOOR = 64 * KIB
JUDGED_AFTER = 3  # samples after the warm-up before a phase is called stable
TREND_SIGNALS = ("nodes", "tensors", "tensor_bytes", "heap", "rss", "figures", "cuda_allocated")


@dataclass
class WatchSample:
    step: int
    phase: str
    probes: dict
    nodes_by_site: Dict[Optional[Site], int] = field(default_factory=dict)
    tensors_by_site: Dict[Optional[Site], Tuple[int, int]] = field(default_factory=dict)
    lists: Dict[int, int] = field(default_factory=dict)  # id -> length, for long lists
    instances: Dict[str, int] = field(default_factory=dict)
    traced: bool = False  # creation sites were being recorded when this sample was taken
    census: bool = False  # every object was scanned: lists, instances, census_nodes/tensors


@dataclass
class GrowthFinding:
    kind: str  # graph | tensors | list | figures | instances | memory
    per_step: float
    unit: str
    what: str
    site: Optional[Site] = None
    line: str = ""
    rule: Optional[str] = None
    rule_line: Optional[int] = None
    bytes_per_step: Optional[float] = None  # Python objects kept per step, for lists
    kept_in: str = ""  # the container that holds the growing tensors, for graphs and tensors

    def message(self) -> str:
        amount = kib(self.per_step) if self.unit == "bytes" else f"{self.per_step:+.1f} {self.unit}"
        text = f"{self.what} grows {amount}/step"
        if self.bytes_per_step is not None:
            text += f" (~{self.bytes_per_step:,.0f} bytes/step of Python objects)"
        if self.site is not None:
            where = f"{self.site[0]}:{self.site[1]}"
            verb = "appended at" if self.kind == "list" else "created at"
            text += f", {verb} {where}" + (f" `{self.line}`" if self.line else "")
        if self.kept_in:
            text += f", kept in {self.kept_in}"
        if self.rule:
            text += f" — see {self.rule}" + (f" (line {self.rule_line})" if self.rule_line else "")
        return text


@dataclass
class PhaseTrend:
    phase: str
    steps: int
    samples: int
    per_step: Dict[str, Optional[float]]
    findings: List[GrowthFinding]
    needs_steps: int = 0  # more steps before enough samples follow the warm-up; 0 once judged

    @property
    def judged(self) -> bool:
        return self.needs_steps == 0

    @property
    def growing(self) -> bool:
        return bool(self.findings)


@dataclass
class WatchReport:
    label: str
    steps: int
    warmup: int
    phases: List[PhaseTrend]
    samples: List[dict]

    @property
    def growing(self) -> bool:
        return any(p.growing for p in self.phases)

    @property
    def findings(self) -> List[GrowthFinding]:
        return [f for p in self.phases for f in p.findings]

    def to_dict(self) -> dict:
        return {"label": self.label, "steps": self.steps, "warmup": self.warmup,
                "growing": self.growing, "phases": [asdict(p) for p in self.phases], "samples": self.samples}


def rate(samples: Sequence[WatchSample], phase: Optional[str], warmup: int, get,
         need_traced: bool = False) -> Optional[float]:
    """Growth per step charged to ``phase``: the change since the previous sample, summed over
    the phase's samples after the warm-up, divided by the steps they cover. Growth made while
    another phase ran is charged to that phase (seed 002's question: which phase leaks?)."""
    change = steps = 0.0
    intervals = rising = 0
    for previous, current in zip(samples, samples[1:]):
        if current.step <= warmup or (phase is not None and current.phase != phase):
            continue
        if need_traced and not (previous.traced and current.traced):
            continue
        a, b = get(previous), get(current)
        if a is None or b is None:
            return None
        change += b - a
        steps += current.step - previous.step
        intervals += 1
        rising += b > a
    if steps < 3:
        return None
    # Growth is sustained: a one-time jump (a buffer filling up, a lazily built cache) is not
    # a leak, and neither is noise that rises in fewer than half of the intervals.
    return change / steps if rising * 2 >= intervals else 0.0


def phase_trend(phase: str, samples: Sequence[WatchSample], warmup: int, steps: int,
                track_types: Sequence[str], steps_to_judge: Callable[[int], int]) -> PhaseTrend:
    """The phase's growth; ``steps_to_judge(n)`` says how many more steps ``n`` more samples take."""
    per_step = {name: rate(samples, phase, warmup, lambda s, n=name: s.probes.get(n)) for name in TREND_SIGNALS}
    findings = _findings(samples, phase, warmup, per_step, track_types)
    in_phase = sum(1 for s in samples if s.phase == phase)
    after_warmup = sum(1 for s in samples if s.phase == phase and s.step > warmup)
    needs = 0 if after_warmup >= JUDGED_AFTER else max(steps_to_judge(JUDGED_AFTER - after_warmup), 1)
    return PhaseTrend(phase, steps, in_phase, per_step, findings, needs)


def _grows(value: Optional[float], floor: float) -> bool:
    return value is not None and value >= floor


def _findings(samples: Sequence[WatchSample], phase: str, warmup: int, per_step: Dict[str, Optional[float]],
              track_types: Sequence[str]) -> List[GrowthFinding]:
    findings: List[GrowthFinding] = []
    last = samples[-1] if samples else None
    if last is None:
        return findings

    def site_rate(get):
        return rate(samples, phase, warmup, get, need_traced=True)

    if _grows(per_step["nodes"], NOISE_FLOORS["nodes"]):
        for site in last.nodes_by_site:
            growth = site_rate(lambda s, k=site: s.nodes_by_site.get(k, 0))
            if site is not None and _grows(growth, NOISE_FLOORS["nodes"]):
                findings.append(_attributed("graph", growth, "autograd nodes", "autograd graph", site))
        if not any(f.kind == "graph" for f in findings):
            findings.append(GrowthFinding("graph", per_step["nodes"], "autograd nodes", "autograd graph"))
    for site in last.tensors_by_site:
        size = site_rate(lambda s, k=site: s.tensors_by_site.get(k, (0, 0))[1])
        count = site_rate(lambda s, k=site: s.tensors_by_site.get(k, (0, 0))[0])
        if site is None:
            continue
        if _grows(size, NOISE_FLOORS["bytes"]):
            findings.append(_attributed("tensors", size, "bytes", "tensors without a graph", site))
        elif _grows(count, NOISE_FLOORS["tensors"]):
            findings.append(_attributed("tensors", count, "tensors", "tensors without a graph", site))
    if not findings and _grows(per_step["tensors"], NOISE_FLOORS["tensors"]):
        findings.append(GrowthFinding("tensors", per_step["tensors"], "tensors", "live tensors"))
    # The census sees what the torch function mode cannot (C++ code, other threads).
    censuses = [s for s in samples if s.census]
    census_nodes = rate(censuses, phase, warmup, lambda s: s.probes.get("census_nodes"))
    if not any(f.kind == "graph" for f in findings) and _grows(census_nodes, NOISE_FLOORS["nodes"]):
        findings.append(GrowthFinding("graph", census_nodes, "autograd nodes",
                                      "autograd graph (made outside the watched torch calls)"))
    for list_id in last.lists:
        # A list is followed from the first sample in which it was long enough.
        growth = rate([s for s in samples if list_id in s.lists], phase, warmup, lambda s, k=list_id: s.lists[k])
        if _grows(growth, 0.5):
            findings.append(GrowthFinding("list", growth, "items", f"list {list_id}"))
    if _grows(per_step["figures"], NOISE_FLOORS["figures"]):
        findings.append(GrowthFinding("figures", per_step["figures"], "figures", "open pyplot figures",
                                      rule="TLL005"))
    for name in track_types:
        growth = rate(censuses, phase, warmup, lambda s, n=name: s.instances.get(n, 0))
        if _grows(growth, 0.5):
            findings.append(GrowthFinding("instances", growth, "instances", f"live `{name}` instances"))
    memory = per_step["heap"] if per_step["heap"] is not None else per_step["rss"]
    # The watch's own records grow by a few KiB per sample: unexplained memory needs more.
    if not findings and _grows(memory, UNEXPLAINED_MEMORY_FLOOR):
        findings.append(GrowthFinding("memory", memory, "bytes",
                                      "process memory (no tensor, graph, list or figure accounts for it)"))
    return findings


def _attributed(kind: str, rate: float, unit: str, what: str, site: Optional[Site]) -> GrowthFinding:
    finding = GrowthFinding(kind, rate, unit, what, site=site, line=source_line(site))
    match = rule_for(site, kind)
    if match:
        finding.rule, finding.rule_line = match
    return finding
