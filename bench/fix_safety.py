"""Fix safety on real code: ``--fix --unsafe-fixes`` over published packages never damages a file.

    python bench/fix_safety.py [--set main|extra|all|slice] [--dest DIR] [--plant N] [--seed S]

Two phases per package of the corpus (built by ``bench/corpus.py`` from pinned wheels
with ``pip download --no-deps``; never committed):

1. **corpus**: copy the package's tree, run ``torchleaklint --fix --unsafe-fixes`` on the
   copy, and check: no crash or traceback; every rewritten file still compiles, keeps its
   encoding, BOM, newline style and comments; every other file is byte-identical and no
   file appears or disappears; a second run changes nothing.
2. **planted**: real code rarely leaks, so leaks are planted into copies of up to N real
   files: whole positive fixtures (``fixtures/TLL*/positive``) inserted at a statement
   boundary of a real module, function, class or loop body with that body's indentation,
   or a leaking training step inserted into a real loop. Some files are then rewritten
   with CRLF, lone CR or mixed newlines, tab indentation, a BOM, a latin-1 coding cookie,
   trailing blanks or no final newline. The same checks run, plus: ``--diff`` writes
   nothing and names exactly the files that ``--fix`` then rewrites.

Prints files, lines, fixes applied and failures; exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import ast
import codecs
import io
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import corpus  # noqa: E402  (bench/corpus.py: the pinned wheels and their download)

# A small set for CI: training-loop heavy packages with small wheels.
SLICE = ["d2l==1.0.3", "pytorch-tabnet==4.1.0"]
SETS = dict(corpus.SETS, slice=SLICE)
FIXTURES = REPO / "fixtures"
NEUTRAL_CONFIG = "[tool.other]\nx = 1\n"
PERTURBATIONS = ["none", "none", "crlf", "cr", "mixed", "tabs", "bom", "latin1", "trailing", "no-final-newline"]
SUMMARY_RE = re.compile(r"\((\d+) fixed, (\d+) remaining\)")
FIX_PROBLEM_RE = re.compile(r"^(?P<path>.+?):\d+:\d+: TLL000 (?P<msg>(a fix produced|not fixed:).*)$", re.M)


@dataclass
class Report:
    files: int = 0
    lines: int = 0
    rewritten: int = 0
    fixes: int = 0
    seconds: float = 0.0
    failures: List[str] = field(default_factory=list)
    planted: Counter = field(default_factory=Counter)

    def add(self, other: "Report") -> None:
        self.files += other.files
        self.lines += other.lines
        self.rewritten += other.rewritten
        self.fixes += other.fixes
        self.seconds += other.seconds
        self.failures += other.failures
        self.planted.update(other.planted)


# --- running the linter -----------------------------------------------------------------

def run_cli(args: List[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "torchleaklint", "--no-color", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, errors="replace")


def crash_problems(proc: subprocess.CompletedProcess, what: str) -> List[str]:
    out = []
    if "Traceback" in proc.stderr or "Traceback" in proc.stdout:
        out.append(f"{what}: traceback: {proc.stderr.strip().splitlines()[-1:]}")
    if proc.returncode not in (0, 1):
        out.append(f"{what}: exit {proc.returncode}: {' | '.join(proc.stderr.strip().splitlines()[:5])}")
    for m in FIX_PROBLEM_RE.finditer(proc.stdout):
        out.append(f"{what}: {m.group('path')}: {m.group('msg')}")
    return out


def fixes_applied(proc: subprocess.CompletedProcess) -> int:
    m = SUMMARY_RE.search(proc.stdout)
    return int(m.group(1)) if m else 0


# --- trees and checks -------------------------------------------------------------------

def snapshot(root: Path) -> Dict[str, bytes]:
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def newline_kinds(data: bytes) -> Set[bytes]:
    kinds = set()
    if b"\r\n" in data:
        kinds.add(b"\r\n")
    if re.search(rb"\r(?!\n)", data):
        kinds.add(b"\r")
    if re.search(rb"(?<!\r)\n", data):
        kinds.add(b"\n")
    return kinds


def comments(text: str) -> Counter:
    found: Counter = Counter()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if tok.type == tokenize.COMMENT:
                found[tok.string.strip()] += 1
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def compiles(data: bytes, name: str) -> Optional[str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, name, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def check_rewritten(rel: str, before: bytes, after: bytes) -> List[str]:
    """A rewritten file must compile and keep its encoding, BOM, newlines and comments."""
    from torchleaklint.engine.source import SourceDecodeError, decode_source

    problems = []
    problem = compiles(after, rel)
    if problem:
        problems.append(f"{rel}: the fixed file does not compile: {problem}")
    try:
        old, new = decode_source(before), decode_source(after)
    except SourceDecodeError as exc:
        return problems + [f"{rel}: the fixed file cannot be decoded: {exc}"]
    if (old.encoding, old.bom) != (new.encoding, new.bom):
        problems.append(f"{rel}: encoding/BOM changed from {(old.encoding, old.bom)} to {(new.encoding, new.bom)}")
    if not newline_kinds(after) <= newline_kinds(before) | ({b"\n"} if not newline_kinds(before) else set()):
        problems.append(f"{rel}: new newline style {newline_kinds(after)} (was {newline_kinds(before)})")
    lost = comments(old.text) - comments(new.text)
    if lost:
        problems.append(f"{rel}: comments lost: {[c[:80] for c in list(lost)[:3]]}")
    return problems


def compare_trees(before: Dict[str, bytes], after: Dict[str, bytes], what: str,
                  expected: Optional[Set[str]] = None) -> Tuple[Set[str], List[str]]:
    """Files rewritten between two snapshots, and what is wrong with the change."""
    problems = []
    for rel in sorted(set(before) ^ set(after)):
        state = "appeared" if rel in after else "disappeared"
        problems.append(f"{what}: {rel} {state}")
    changed = {rel for rel in set(before) & set(after) if before[rel] != after[rel]}
    for rel in sorted(changed):
        if not rel.endswith(".py"):
            problems.append(f"{what}: {rel}: a file that is not Python was modified")
            continue
        problems.extend(f"{what}: {p}" for p in check_rewritten(rel, before[rel], after[rel]))
    if expected is not None and changed != expected:
        problems.append(f"{what}: rewritten files differ from what --diff announced: "
                        f"unexpected {sorted(changed - expected)[:5]}, missing {sorted(expected - changed)[:5]}")
    return changed, problems


def diff_targets(proc: subprocess.CompletedProcess) -> Set[str]:
    return {os.path.normpath(line[6:]).replace(os.sep, "/") for line in proc.stdout.splitlines()
            if line.startswith("+++ b/")}


def fix_twice(root: Path, what: str, diff_first: bool) -> Report:
    """``--fix --unsafe-fixes`` on ``root`` (after ``--diff`` when asked), then once more."""
    report = Report()
    original = snapshot(root)
    py = [rel for rel in original if rel.endswith(".py")]
    report.files = len(py)
    report.lines = sum(original[rel].count(b"\n") or original[rel].count(b"\r") for rel in py)
    expected = None
    started = time.perf_counter()
    if diff_first:
        proc = run_cli(["--diff", "--unsafe-fixes", "."], root)
        report.failures += crash_problems(proc, f"{what} --diff")
        _, problems = compare_trees(original, snapshot(root), f"{what} --diff")
        report.failures += [p + " (--diff must write nothing)" for p in problems]
        expected = diff_targets(proc)
    proc = run_cli(["--fix", "--unsafe-fixes", "."], root)
    report.failures += crash_problems(proc, f"{what} --fix")
    report.fixes = fixes_applied(proc)
    fixed = snapshot(root)
    changed, problems = compare_trees(original, fixed, f"{what} --fix", expected)
    report.failures += problems
    report.rewritten = len(changed)
    if report.fixes and not changed:
        report.failures.append(f"{what}: {report.fixes} fixes reported but no file was rewritten")
    again = run_cli(["--fix", "--unsafe-fixes", "."], root)
    report.failures += crash_problems(again, f"{what} second --fix")
    changed_again, problems = compare_trees(fixed, snapshot(root), f"{what} second --fix")
    report.failures += problems
    if changed_again or fixes_applied(again):
        report.failures.append(f"{what}: a second --fix changed {sorted(changed_again)[:5]} "
                               f"({fixes_applied(again)} fixes): fixing is not idempotent")
    report.seconds = time.perf_counter() - started
    return report


def copy_tree(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(".complete"))
    (dst / "pyproject.toml").write_text(NEUTRAL_CONFIG)


# --- planting leaks into real code ------------------------------------------------------

def positive_fixtures() -> List[str]:
    """Single-file positive fixtures, without ``from __future__`` lines (they must come first)."""
    out = []
    for path in sorted(FIXTURES.glob("TLL*/positive/*.py")):
        if path.name.endswith(".fixed.py"):
            continue
        text = path.read_text(encoding="utf-8")
        out.append("".join(l for l in text.splitlines(keepends=True) if not l.startswith("from __future__")))
    return out


# A leaking training step for a real loop body, in a few formatting styles.
STEP_BEFORE_LOOP = [
    "planted_model = torch.nn.Linear(8, 1)\nplanted_losses = []\nplanted_total = 0.0\n",
    "planted_model = torch.nn.Linear(8, 1)  # probe\nplanted_losses, planted_total = [], 0.0\n",
]
STEP_IN_LOOP = [
    "planted_loss = torch.nn.functional.mse_loss(planted_model(planted_x), planted_y)\n"
    "planted_loss.backward()\n"
    "planted_losses.append(planted_loss)\n"
    "planted_total += planted_loss\n",
    "planted_loss = torch.nn.functional.mse_loss(\n"
    "    planted_model(planted_x),  # prediction\n"
    "    planted_y)\n"
    "planted_loss.backward() ; planted_losses.append( planted_loss )   # history\n"
    "planted_total = planted_total + \\\n"
    "    planted_loss\n",
    # Values that are a tensor on one branch only: a safe fix may touch the tensor branch
    # alone (`planted_loss.item() if ... else 0`); `or`/`and` get unsafe fixes.
    "planted_loss = torch.nn.functional.mse_loss(planted_model(planted_x), planted_y)\n"
    "planted_loss.backward()\n"
    "planted_total += planted_loss if len(planted_losses) % 2 == 0 else 0\n"
    "planted_losses.append(planted_loss if planted_total else 0.0)\n"
    "planted_total = planted_total + (planted_loss or 0)\n",
]


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", [])
    return min([stmt.lineno] + [d.lineno for d in decorators])


def insertion_points(tree: ast.Module, lines: List[str]) -> List[Tuple[int, str, bool]]:
    """(1-based line, indentation, inside a loop) before which a statement may be inserted."""
    points = []
    body_start = 0
    for i, stmt in enumerate(tree.body):
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__" or (
                i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            body_start = i + 1

    def visit(body: List[ast.stmt], in_loop: bool, start: int = 0) -> None:
        for stmt in body[start:]:
            line = _first_line(stmt)
            text = lines[line - 1] if line - 1 < len(lines) else ""
            indent = text[: len(text) - len(text.lstrip(" \t"))]
            prev = lines[line - 2] if line >= 2 else ""
            # Only where the statement starts its own line (not `if x: y`, not after `a; `).
            starts_line = len(indent) == stmt.col_offset or (line != stmt.lineno and text[len(indent):][:1] == "@")
            is_elif = text[len(indent):].startswith("elif")
            if starts_line and not is_elif and not prev.rstrip("\r\n").endswith("\\"):
                points.append((line, indent, in_loop))
            for name in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, name, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    visit(inner, in_loop or (name == "body" and isinstance(stmt, (ast.For, ast.While))))
            for handler in getattr(stmt, "handlers", []):
                visit(handler.body, in_loop)

    visit(tree.body, False, body_start)
    return points


def loops_in_functions(tree: ast.Module, lines: List[str]) -> List[Tuple[int, str, int, str]]:
    """(loop line, loop indentation, body line, body indentation) for loops inside functions."""
    out = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for loop in ast.walk(func):
            if not isinstance(loop, (ast.For, ast.While)) or loop.body[0].lineno == loop.lineno:
                continue
            first = loop.body[0]
            loop_text, body_text = lines[loop.lineno - 1], lines[_first_line(first) - 1]
            loop_indent = loop_text[: loop.col_offset]
            body_indent = body_text[: len(body_text) - len(body_text.lstrip(" \t"))]
            if loop_indent.strip() or len(body_indent) != first.col_offset:
                continue
            if lines[loop.lineno - 2].rstrip("\r\n").endswith("\\") if loop.lineno >= 2 else False:
                continue
            out.append((loop.lineno, loop_indent, _first_line(first), body_indent))
    return out


def _indent(block: str, indent: str) -> List[str]:
    return [indent + l if l.strip() else l for l in block.splitlines(keepends=True)]


def plant(text: str, rng: random.Random, fixtures: List[str]) -> Optional[Tuple[str, str]]:
    """Plant one leak into ``text``; (new text, description) or None when no place fits."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = text.splitlines(keepends=True)
    imports_torch = any(isinstance(s, ast.Import) and any(a.name == "torch" and a.asname is None for a in s.names)
                        for s in tree.body)
    loops = loops_in_functions(tree, [l.rstrip("\r\n") for l in lines]) if imports_torch else []
    if loops and rng.random() < 0.4:
        loop_line, loop_indent, body_line, body_indent = rng.choice(loops)
        before = _indent(rng.choice(STEP_BEFORE_LOOP), loop_indent)
        step = _indent(rng.choice(STEP_IN_LOOP), body_indent)
        new = lines[: loop_line - 1] + before + lines[loop_line - 1: body_line - 1] + step + lines[body_line - 1:]
        return "".join(new), "training step in a real loop"
    points = insertion_points(tree, [l.rstrip("\r\n") for l in lines])
    if not points:
        return None
    line, indent, in_loop = rng.choice(points)
    fixture = rng.choice(fixtures)
    new = lines[: line - 1] + _indent(fixture, indent) + lines[line - 1:]
    where = "in a loop" if in_loop else ("at module level" if not indent else "in a block")
    return "".join(new), f"fixture {where}"


def perturb(text: str, kind: str) -> Tuple[str, str, bool]:
    """(text, encoding, bom) of ``text`` rewritten in an unusual but valid style."""
    if kind == "crlf":
        return text.replace("\r\n", "\n").replace("\n", "\r\n"), "utf-8", False
    if kind == "cr":
        return text.replace("\r\n", "\n").replace("\n", "\r"), "utf-8", False
    if kind == "mixed":
        parts = text.splitlines(keepends=True)
        return "".join(p.rstrip("\r\n") + "\r\n" if i % 2 and p.endswith("\n") else p
                       for i, p in enumerate(parts)), "utf-8", False
    if kind == "tabs":
        out = []
        for line in text.splitlines(keepends=True):
            stripped = line.lstrip(" ")
            n = len(line) - len(stripped)
            out.append("\t" * (n // 4) + " " * (n % 4) + stripped)
        return "".join(out), "utf-8", False
    if kind == "bom":
        return text, "utf-8", True
    if kind == "latin1":
        lines = text.splitlines(keepends=True)
        at = 1 if lines and lines[0].startswith("#!") else 0
        if any(re.match(r"^[ \t\f]*#.*coding[:=]", l) for l in lines[:2]):
            return text, "utf-8", False
        lines.insert(at, "# -*- coding: latin-1 -*-\n")
        return "".join(lines), "latin-1", False
    if kind == "trailing":
        return "".join(l.rstrip("\r\n") + "  \t" + l[len(l.rstrip("\r\n")):] if i % 3 == 0 and
                       not l.rstrip("\r\n").endswith("\\") else l
                       for i, l in enumerate(text.splitlines(keepends=True))), "utf-8", False
    if kind == "no-final-newline":
        return text.rstrip("\r\n"), "utf-8", False
    return text, "utf-8", False


def planted_tree(src: Path, dst: Path, count: int, rng: random.Random, fixtures: List[str]) -> Counter:
    """Copy up to ``count`` real files of ``src`` into ``dst`` (with their packages'
    ``__init__.py``), each with a planted leak in an unusual style."""
    stats: Counter = Counter()
    candidates = sorted(p for p in src.rglob("*.py") if p.name != "__init__.py")
    rng.shuffle(candidates)
    for path in candidates:
        if stats["files"] >= count:
            break
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
        planted = plant(text, rng, fixtures)
        if planted is None:
            continue
        new_text, how = planted
        kind = rng.choice(PERTURBATIONS)
        styled, encoding, bom = perturb(new_text, kind)
        try:
            data = (codecs.BOM_UTF8 if bom else b"") + styled.encode(encoding)
        except UnicodeEncodeError:
            styled, encoding, bom, kind = new_text, "utf-8", False, "none"
            data = new_text.encode("utf-8")
        if compiles(data, path.name) is not None:
            if compiles(new_text.encode("utf-8"), path.name) is not None:
                stats["skipped: planted code does not compile"] += 1
                continue
            data, kind = new_text.encode("utf-8"), "none"
        rel = path.relative_to(src)
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        folder = path.parent
        while folder != src and folder.is_relative_to(src):
            init = folder / "__init__.py"
            if init.exists() and not (dst / init.relative_to(src)).exists():
                shutil.copyfile(init, dst / init.relative_to(src))
            folder = folder.parent
        stats["files"] += 1
        stats[how] += 1
        stats[f"style {kind}"] += 1
    (dst / "pyproject.toml").write_text(NEUTRAL_CONFIG)
    return stats


# --- the run ----------------------------------------------------------------------------

def check_package(src: Path, work: Path, plant_files: int, seed: int, corpus_phase: bool = True) -> Tuple[Report, Report]:
    name = src.name
    whole = Report()
    if corpus_phase:
        copy = work / "corpus" / name
        copy_tree(src, copy)
        whole = fix_twice(copy, f"{name} (corpus)", diff_first=False)
        shutil.rmtree(copy)
    planted = Report()
    if plant_files:
        rng = random.Random(f"{seed}:{name}")
        dst = work / "planted" / name
        dst.mkdir(parents=True)
        stats = planted_tree(src, dst, plant_files, rng, positive_fixtures())
        planted = fix_twice(dst, f"{name} (planted)", diff_first=True)
        planted.planted = stats
        shutil.rmtree(dst)
    return whole, planted


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=corpus.default_dest(), help="corpus folder (wheels, src)")
    parser.add_argument("--set", choices=sorted(SETS), default="main")
    parser.add_argument("--plant", type=int, default=300, help="files per package to plant leaks into (0: none)")
    parser.add_argument("--no-corpus", action="store_true", help="only the planted phase")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one)")
    args = parser.parse_args(argv)
    folders = corpus.build(args.dest, SETS[args.set])
    work = Path(args.work or tempfile.mkdtemp(prefix="tll-fix-safety-"))
    total_corpus, total_planted = Report(), Report()
    try:
        for src in folders:
            whole, planted = check_package(src, work, args.plant, args.seed, not args.no_corpus)
            for label, rep in (("corpus", whole), ("planted", planted)):
                if rep.files:
                    print(f"{src.name:<28} {label:<8} {rep.files:>6} files {rep.lines:>9} lines "
                          f"{rep.rewritten:>5} rewritten {rep.fixes:>6} fixes {len(rep.failures):>3} failures "
                          f"{rep.seconds:7.1f} s", flush=True)
                for failure in rep.failures[:20]:
                    print(f"    FAIL {failure}", flush=True)
            total_corpus.add(whole)
            total_planted.add(planted)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print()
    for label, rep in (("corpus", total_corpus), ("planted", total_planted)):
        print(f"{label}: {rep.files} files, {rep.lines} lines, {rep.rewritten} files rewritten, "
              f"{rep.fixes} fixes applied, {len(rep.failures)} failures, {rep.seconds:.1f} s")
    if total_planted.planted:
        print("planted:", ", ".join(f"{k}: {v}" for k, v in sorted(total_planted.planted.items()) if k != "files"))
    failures = len(total_corpus.failures) + len(total_planted.failures)
    print(f"total: {total_corpus.files + total_planted.files} files, {total_corpus.lines + total_planted.lines} "
          f"lines, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
