"""Lint a rule's reproduction, apply the real autofix, measure both programs, give a verdict.

For each rule: the reproduction must be reported by that rule; ``fix_source`` (with unsafe
fixes, limited to that rule so the verdict belongs to its fix) gives the fixed program;
the original and the fixed program each run for N and for 2N steps in fresh processes.
CONFIRMED means: the original grows on the rule's signal (above the noise floor, in both
growth estimates), the fixed program is flat on that signal and on bytes, and both
programs compute the same results.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from .. import fix_source, lint_source
from ..config import Settings
from ..rules import ALL_RULES
from . import growth as g
from .probes import child_environment

REPROS = Path(__file__).with_name("repros")
VARIANTS = ("before", "after")


@dataclass
class Reproduction:
    code: str
    name: str
    path: Path
    source: str
    signal: str  # nodes | bytes | figures | peak
    lint_options: Dict[str, Dict[str, object]]

    def settings(self) -> Settings:
        return Settings(select=(self.code,), unsafe_fixes=True, rule_options=self.lint_options)


def _constant(tree: ast.Module, name: str, default):
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    return default


def reproductions(codes: Optional[Sequence[str]] = None) -> List[Reproduction]:
    found = []
    for rule in ALL_RULES:
        if rule.repro is None or (codes and rule.code not in codes):
            continue
        path = REPROS / f"{rule.repro}.py"
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        found.append(Reproduction(rule.code, rule.name, path, source, _constant(tree, "SIGNAL", "nodes"),
                                  _constant(tree, "LINT_OPTIONS", {})))
    return found


@dataclass
class RuleVerdict:
    code: str
    name: str
    signal: str
    device: str = "?"
    confirmed: bool = False
    reason: str = ""
    findings_before: int = 0
    findings_after: int = 0
    fixed_source: str = ""
    growth: Dict[str, Dict[str, g.Growth]] = field(default_factory=dict)  # variant -> signal -> Growth
    runs: Dict[str, dict] = field(default_factory=dict)  # "before-12" -> child document

    def to_dict(self) -> dict:
        return {
            "code": self.code, "name": self.name, "signal": self.signal, "device": self.device,
            "verdict": "CONFIRMED" if self.confirmed else "NOT CONFIRMED", "reason": self.reason,
            "findings_before": self.findings_before, "findings_after": self.findings_after,
            "growth": {variant: {name: vars(gr) for name, gr in signals.items()}
                       for variant, signals in self.growth.items()},
            "runs": self.runs,
        }


def run_child(program: Path, steps: int, device: str, timeout: float) -> dict:
    """One measured run in a fresh interpreter; failures come back as ``{"error": ...}``."""
    out = program.with_name(f"{program.stem}-{steps}.json")
    cmd = [sys.executable, "-m", "torchleaklint.harness.child", str(program), "--steps", str(steps),
           "--device", device, "--out", str(out)]
    try:
        proc = subprocess.run(cmd, cwd=program.parent, env=child_environment(), capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:g} s"}
    try:
        document = json.loads(out.read_text())
    except (OSError, ValueError):
        tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return {"error": f"crashed (exit code {proc.returncode}): {tail}"}
    if proc.returncode != 0 and not document.get("error"):
        document["error"] = f"exit code {proc.returncode}"
    return document


def prepare(repro: Reproduction, verdict: RuleVerdict) -> bool:
    """Lint the reproduction and fix it; False (with the reason set) when that fails."""
    settings = repro.settings()
    filename = repro.path.name
    before = [d for d in lint_source(repro.source, filename, settings) if d.code == repro.code]
    verdict.findings_before = len(before)
    if not before:
        verdict.reason = f"the linter does not report {repro.code} on {filename}"
        return False
    fixed = fix_source(repro.source, filename, settings, unsafe=True)
    verdict.fixed_source = fixed
    verdict.findings_after = sum(1 for d in lint_source(fixed, filename, settings) if d.code == repro.code)
    if fixed == repro.source:
        verdict.reason = f"the autofix does not change {filename}"
        return False
    return True


def judge(repro: Reproduction, verdict: RuleVerdict, steps: int) -> None:
    runs = verdict.runs
    errors = [f"{label}: {doc['error']}" for label, doc in runs.items() if doc.get("error")]
    if errors:
        verdict.reason = errors[0]
        return
    device = runs[f"before-{steps}"]["device"]
    verdict.device = device
    keys = {"nodes": "nodes", "figures": "figures", "tensors": "tensors",
            "bytes": g.bytes_key(device, runs[f"before-{steps}"]["samples"]), "peak": g.peak_key(device)}
    for variant in VARIANTS:
        short, long = runs[f"{variant}-{steps}"]["samples"], runs[f"{variant}-{2 * steps}"]["samples"]
        verdict.growth[variant] = {name: g.growth(name, key, short, long) for name, key in keys.items()}
    before, after = verdict.growth["before"], verdict.growth["after"]
    signal = repro.signal
    if signal == "peak":
        level_before, level_after = before["peak"].level or 0.0, after["peak"].level or 0.0
        if level_before < g.PEAK_FLOOR:
            verdict.reason = f"the original's peak per step is {g.kib(level_before)} (floor {g.kib(g.PEAK_FLOOR)})"
            return
        if level_after > level_before * (1 - g.PEAK_DROP):
            verdict.reason = f"the fix does not lower the peak per step: {g.kib(level_before)} -> {g.kib(level_after)}"
            return
    else:
        floor = g.NOISE_FLOORS[signal]
        if not before[signal].grows(floor):
            verdict.reason = f"the original does not grow: {describe(before[signal])} (floor {_floor(signal)})"
            return
        if not after[signal].flat(floor):
            verdict.reason = f"the fixed program still grows: {describe(after[signal])}"
            return
    if not after["bytes"].flat(g.NOISE_FLOORS["bytes"]):
        verdict.reason = f"the fixed program still grows: {describe(after['bytes'])}"
        return
    mismatch = g.results_match(runs[f"before-{steps}"]["result"], runs[f"after-{steps}"]["result"])
    if mismatch:
        verdict.reason = f"the fix changes the program's results: {mismatch}"
        return
    verdict.confirmed = True
    verdict.reason = "the original grows and the fixed program does not; same results"


def describe(gr: g.Growth) -> str:
    if gr.per_step is None:
        return f"{gr.signal}: not measured"
    if gr.signal == "bytes" or gr.signal == "peak":
        return f"{g.kib(gr.per_step)}/step (N..2N: {g.kib(gr.span or 0.0)}/step)"
    return f"{gr.per_step:+.1f} {gr.signal}/step (N..2N: {gr.span or 0.0:+.1f})"


def _floor(signal: str) -> str:
    value = g.NOISE_FLOORS[signal]
    return f"{g.kib(value)}/step" if signal == "bytes" else f"{value:g} {signal}/step"


def verify(repros: Sequence[Reproduction], steps: int = 12, device: str = "cpu", timeout: float = 300.0,
           jobs: int = 2, on_run_done: Optional[Callable[[str], None]] = None) -> List[RuleVerdict]:
    verdicts = [RuleVerdict(r.code, r.name, r.signal) for r in repros]
    with tempfile.TemporaryDirectory(prefix="torchleaklint-verify-") as tmp:
        work = []
        for repro, verdict in zip(repros, verdicts):
            if not prepare(repro, verdict):
                continue
            folder = Path(tmp) / repro.code
            folder.mkdir()
            programs = {"before": folder / "before.py", "after": folder / "after.py"}
            programs["before"].write_text(repro.source, encoding="utf-8")
            programs["after"].write_text(verdict.fixed_source, encoding="utf-8")
            for variant in VARIANTS:
                for n in (steps, 2 * steps):
                    work.append((verdict, f"{variant}-{n}", programs[variant], n))

        def one(item):
            verdict, label, program, n = item
            document = run_child(program, n, device, timeout)
            if on_run_done is not None:
                on_run_done(f"{verdict.code} {label}")
            return verdict, label, document

        with ThreadPoolExecutor(max_workers=max(jobs, 1)) as pool:
            for verdict, label, document in pool.map(one, work):
                verdict.runs[label] = document
    by_code = {r.code: r for r in repros}
    for verdict in verdicts:
        if verdict.runs:
            judge(by_code[verdict.code], verdict, steps)
    return verdicts


def child_runs(repros: Sequence[Reproduction]) -> int:
    """How many child processes ``verify`` will start (for a progress bar)."""
    return 2 * len(VARIANTS) * len(repros)
