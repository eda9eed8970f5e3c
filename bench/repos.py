"""Whole repositories for ``bench/speed.py``: pytorch-lightning and pytorch/examples.

Each tree is exported from a local git directory (``bench/trees.py``) into a folder of the
benchmark's own, once as a git checkout and once as a plain folder with the same files.

- pytorch-lightning: torchleaklint cold (``--no-cache``) against ruff
  (``check --select ALL --no-cache``, the compiled reference), and warm runs (cache primed,
  nothing changed) inside the git checkout and in the plain folder, all four in turn.
- pytorch/examples: torchleaklint cold against torch-preflight 0.5.0 and TorchFix 0.7.0.

For each tree, one more cold run prints the engine's counters (files, parses, processes;
``TORCHLEAKLINT_STATS``), and the findings of the cold run are compared with the warm
run's and, with ``--reference REV``, with those of that commit of torchleaklint installed
on its own (the same files, the same options).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import trees
from timing import Measure, measure_in_turn, run_timed


class Tree:
    """One repository, exported as a git checkout and as a plain folder."""

    def __init__(self, name: str, git_dir: str, work: Path, tool: Path, jobs: int) -> None:
        self.name = name
        self.plain, self.checkout = trees.prepare(git_dir, work / "trees" / name)
        files = [p for p in self.checkout.rglob("*.py") if ".git" not in p.parts]
        self.files = len(files)
        self.lines = sum(p.read_bytes().count(b"\n") for p in files)
        self.tool = tool
        self.jobs = jobs
        self.env = {where: dict(os.environ, NO_COLOR="1", TORCHLEAKLINT_CACHE_DIR=str(work / f"cache-{name}-{where}"))
                    for where in ("git", "plain")}
        print(f"{name}: {self.files} files, {self.lines} lines", file=sys.stderr)

    def tll(self, *extra: str, tool: Optional[Path] = None) -> List[str]:
        return [str(tool or self.tool), "check", ".", "-q", "--exit-zero", "-j", str(self.jobs), *extra]

    def counters(self) -> str:
        """The engine's counters of one cold run in the checkout."""
        env = dict(self.env["git"], TORCHLEAKLINT_STATS="1")
        proc = subprocess.run(self.tll("--no-cache"), cwd=self.checkout, env=env, capture_output=True, text=True)
        lines = [line for line in proc.stderr.splitlines() if line.startswith("torchleaklint stats:")]
        return lines[-1].split(":", 1)[1].strip() if lines else "(no counters printed)"

    def findings(self, where: str = "git", cached: bool = False, tool: Optional[Path] = None) -> list:
        cmd = self.tll("--output-format", "json", *(() if cached else ("--no-cache",)), tool=tool)
        folder = self.checkout if where == "git" else self.plain
        out = subprocess.run(cmd, cwd=folder, env=self.env[where], capture_output=True, text=True, check=True).stdout
        return sorted(json.dumps(item, sort_keys=True) for item in json.loads(out))


def lightning(git_dir: str, work: Path, tool: Path, ruff: Path, jobs: int, runs: int,
              reference: Optional[Path]) -> bool:
    tree = Tree("pytorch-lightning", git_dir, work, tool, jobs)
    for where, folder in (("git", tree.checkout), ("plain", tree.plain)):
        run_timed(tree.tll(), tree.env[where], cwd=str(folder))  # prime the cache
    rows = measure_in_turn([
        ("torchleaklint cold", tree.tll("--no-cache"), tree.env["git"], str(tree.checkout)),
        ("ruff (--select ALL --no-cache)", [str(ruff), "check", "--select", "ALL", "--no-cache", "-q",
                                            "--exit-zero", "."], None, str(tree.checkout)),
        ("torchleaklint warm, git checkout", tree.tll(), tree.env["git"], str(tree.checkout)),
        ("torchleaklint warm, same files without .git", tree.tll(), tree.env["plain"], str(tree.plain)),
    ], runs)
    cold, ruff_run, warm_git, warm_plain = rows
    table(tree, rows)
    print(f"- torchleaklint cold / ruff (target <= 4): {ratio(cold, ruff_run)}")
    print(f"- cold / warm (target >= 50): {ratio(cold, warm_git)}")
    print(f"- warm without .git / warm in git (target <= 2): {ratio(warm_plain, warm_git)}")
    print(f"- counters of a cold run: {tree.counters()}")
    return same_findings(tree, reference)


def examples(git_dir: str, work: Path, tool: Path, peers: Path, jobs: int, runs: int,
             reference: Optional[Path]) -> bool:
    tree = Tree("pytorch-examples", git_dir, work, tool, jobs)
    rows = measure_in_turn([
        ("torchleaklint cold", tree.tll("--no-cache"), tree.env["git"], str(tree.checkout)),
        ("torch-preflight 0.5.0", [str(peers / "torch-preflight"), "check", ".", "-q", "--no-color", "-j",
                                   str(jobs)], None, str(tree.checkout)),
        ("TorchFix 0.7.0", [str(peers / "torchfix"), "--select", "ALL", "-j", str(jobs), "."], None,
         str(tree.checkout)),
    ], runs)
    cold, preflight, torchfix = rows
    table(tree, rows)
    print(f"- torch-preflight / torchleaklint cold (target >= 20): {ratio(preflight, cold)}")
    print(f"- TorchFix / torchleaklint cold (target >= 20): {ratio(torchfix, cold)}")
    print(f"- counters of a cold run: {tree.counters()}")
    return same_findings(tree, reference)


def same_findings(tree: Tree, reference: Optional[Path]) -> bool:
    """Cold and warm runs, and the reference commit's cold run, report the same."""
    cold = tree.findings()
    checks = [("warm run", tree.findings(cached=True))]
    if reference is not None:
        checks.append(("reference commit", tree.findings(tool=reference)))
    ok = True
    for what, other in checks:
        if other == cold:
            print(f"- findings: {len(cold)} in the cold run, identical in the {what}")
        else:
            ok = False
            print(f"- findings: DIFFERENT in the {what}: {len(set(cold) - set(other))} only in the cold run, "
                  f"{len(set(other) - set(cold))} only in the {what}")
    sys.stdout.flush()
    return ok


def ratio(a: Measure, b: Measure) -> str:
    each = ", ".join(f"{x / y:.2f}" for x, y in zip(a.walls, b.walls))
    return f"**{a.wall / b.wall:.2f}** (run by run, measured in turn: {each})"


def table(tree: Tree, rows: List[Measure]) -> None:
    print(f"\n### {tree.name}: {tree.files} files, {tree.lines} lines\n")
    print("| run | wall (median) | runs | peak RSS |")
    print("| --- | ---: | --- | ---: |")
    for m in rows:
        print(f"| {m.tool} | {m.wall:.3f} s | {', '.join(f'{w:.2f}' for w in m.walls)} | {m.rss_mb:.0f} MB |")
    print()
    sys.stdout.flush()
