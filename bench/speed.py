"""Side-by-side speed of torchleaklint, its peers and a bare libcst parse on real code.

    python bench/speed.py [--corpus DIR] [--peers-venv DIR] [--tool-venv DIR] [--jobs 2] [--runs 3]
                          [--lines-per-package 6000] [--cache-lines-per-package 60000] [--smoke]
                          [--lightning GIT_DIR] [--examples GIT_DIR] [--reference REV] [--repos-only]

The corpus is built from published wheels by ``bench/corpus.py`` (``--corpus`` or
``$TORCHLEAKLINT_CORPUS``, default ``~/.cache/torchleaklint-corpus``); the same slice of it
(the first files of each package of the main set, in sorted order, up to
``--lines-per-package`` lines each) is given to every tool. The peers, torch-preflight
0.5.0 and TorchFix 0.7.0, are installed with pip into a separate virtual environment
outside the repository (``--peers-venv``); torchleaklint is installed from this checkout
the way users get it, a regular byte-compiled install in a virtual environment of its own
(``--tool-venv``), whose libcst also runs the bare parse. Every tool runs with the same
number of worker processes (``--jobs``); each measurement is the median wall time of
``--runs`` runs, and peak RSS is the largest resident set of any process of the run
(``wait4``). Runs whose ratio is a target (cold and bare parse; cold and warm) are made in
turn, run after run, so that a shared machine's load weighs on them alike.

Two tables. Against the peers (their speed bounds the slice: torch-preflight needs
minutes for 80 k lines here): torchleaklint cold (``--no-cache``), a bare
``libcst.parse_module`` pass, torch-preflight, TorchFix. Cache: on a larger slice
(``--cache-lines-per-package``), torchleaklint cold, warm (cache primed, nothing changed)
and after one file changed, plus the libcst pass again. The ratios the project promises
are printed under the tables. ``--smoke`` runs small slices once, without peers.

Whole repositories (``bench/repos.py``), given as local git directories (a clone or a
mirror of Lightning-AI/pytorch-lightning and of pytorch/examples): the lightning tree cold
against ruff (installed in the peers' environment), warm inside and outside a git work
tree, the examples cold against the peers, each with the engine's parse counter and a
comparison of findings (cold against warm, and against commit ``--reference`` installed
on its own). ``--repos-only`` skips the corpus slices.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402  (bench/corpus.py)
import repos  # noqa: E402  (bench/repos.py)
from timing import Measure, measure, measure_in_turn, run_timed  # noqa: E402  (bench/timing.py)

REPO = Path(__file__).resolve().parent.parent
PEERS = {"torch-preflight": "torch-preflight==0.5.0", "torchfix": "torchfix==0.7.0", "ruff": "ruff==0.17.6"}

# A bare parse with the same process count as the linters: the floor for a libcst tool.
LIBCST_PASS = r"""
import sys
from multiprocessing import Pool
import libcst

def parse(path):
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        libcst.parse_module(data)
    except Exception:
        return 1
    return 0

if __name__ == "__main__":
    files = [line.rstrip("\n") for line in open(sys.argv[1])]
    jobs = int(sys.argv[2])
    if jobs == 1:
        failed = sum(map(parse, files))
    else:
        with Pool(jobs) as pool:
            failed = sum(pool.imap_unordered(parse, files, chunksize=8))
    print(f"{len(files)} files, {failed} not parsed", file=sys.stderr)
"""


def slice_files(folders: List[Path], lines_per_package: int) -> List[Path]:
    chosen: List[Path] = []
    for folder in folders:
        total = 0
        for path in sorted(folder.rglob("*.py")):
            if total >= lines_per_package:
                break
            chosen.append(path)
            total += count_lines(path)
    return chosen


def count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return fh.read().count(b"\n")


def peers_venv(folder: Path) -> Path:
    """A virtual environment with the peers, outside the repository; reused when present."""
    python = folder / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    missing = [spec for name, spec in PEERS.items() if not (folder / "bin" / name).exists()]
    if missing:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *missing], check=True)
    return folder / "bin"


def tool_venv(folder: Path, source: Path = REPO) -> Path:
    """torchleaklint as users install it: a regular (not editable) install of this checkout
    (or of ``source``) in its own virtual environment, byte-compiled by pip like the peers'
    installs. It is reinstalled on every run of the benchmark, so that it measures the code
    checked out."""
    python = folder / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "libcst>=1.1", "click>=8.1", "rich>=13"], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps", str(source)],
                   check=True)
    return python


def reference_tool(rev: str, folder: Path) -> Path:
    """The console script of commit ``rev`` of this repository, installed on its own."""
    source = folder / "source"
    shutil.rmtree(source, ignore_errors=True)
    source.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    return tool_venv(folder / "venv", source).parent / "torchleaklint"


def stage(files: List[Path], root: Path, dest: Path) -> None:
    """Copy the slice (keeping package folders) so every tool sees exactly these files.
    Modification times are kept, as in a checkout: files copied a moment ago would count as
    just edited, which the cache hashes again instead of trusting their stat."""
    for path in files:
        target = dest / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=corpus.default_dest())
    parser.add_argument("--peers-venv", type=Path,
                        default=Path.home() / ".cache" / "torchleaklint-bench" / "peers")
    parser.add_argument("--tool-venv", type=Path,
                        default=Path.home() / ".cache" / "torchleaklint-bench" / "tool",
                        help="where this checkout is installed (reinstalled on every run)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lines-per-package", type=int, default=6000)
    parser.add_argument("--cache-lines-per-package", type=int, default=60000)
    parser.add_argument("--no-peers", action="store_true", help="measure torchleaklint and libcst only")
    parser.add_argument("--smoke", action="store_true", help="a small slice, one run, no peers")
    parser.add_argument("--lightning", help="git directory of pytorch-lightning (a clone or a mirror)")
    parser.add_argument("--examples", help="git directory of pytorch/examples (a clone or a mirror)")
    parser.add_argument("--reference", help="a commit of this repository whose findings the repositories' must equal")
    parser.add_argument("--repos-only", action="store_true", help="measure the repositories, not the corpus slices")
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "torchleaklint-bench" / "work",
                        help="where the repositories are exported and the reference is installed (kept)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs, args.lines_per_package, args.cache_lines_per_package, args.no_peers = 1, 1500, 3000, True

    python = tool_venv(args.tool_venv)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"load {', '.join(f'{x:.1f}' for x in os.getloadavg())}, Python {platform.python_version()}; "
          f"{args.jobs} worker processes per tool; median of {args.runs} runs")
    same = True
    if args.lightning or args.examples:
        tool = python.parent / "torchleaklint"
        reference = reference_tool(args.reference, args.work / "reference") if args.reference else None
        if args.lightning:
            same &= repos.lightning(args.lightning, args.work, tool, peers_venv(args.peers_venv) / "ruff",
                                    args.jobs, args.runs, reference)
        if args.examples:
            same &= repos.examples(args.examples, args.work, tool, peers_venv(args.peers_venv), args.jobs,
                                   args.runs, reference)
        print(f"\nload at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.repos_only:
        return 0 if same else 1
    folders = corpus.build(args.corpus, corpus.MAIN)
    src = args.corpus / "src"
    work = Path(tempfile.mkdtemp(prefix="tll-speed-"))
    (work / "libcst_pass.py").write_text(LIBCST_PASS)
    try:
        peers = Slice(work / "peers", slice_files(folders, args.lines_per_package), src, args.jobs, python)
        rows = measure_in_turn([("torchleaklint (cold)", peers.tll + ["--no-cache"], peers.env),
                                ("libcst.parse_module only", peers.libcst, None)], args.runs)
        if not args.no_peers:
            bin_dir = peers_venv(args.peers_venv)
            jobs = str(args.jobs)
            rows.append(measure("torch-preflight 0.5.0", [str(bin_dir / "torch-preflight"), "check",
                                                          str(peers.tree), "-q", "--no-color", "-j", jobs], args.runs))
            rows.append(measure("TorchFix 0.7.0", [str(bin_dir / "torchfix"), "--select", "ALL", "-j", jobs,
                                                   str(peers.tree)], args.runs))
        report("Against the peers", rows, peers, args)

        big = Slice(work / "cache", slice_files(folders, args.cache_lines_per_package), src, args.jobs, python)
        run_timed(big.tll, big.env)  # prime the cache (a cold run never touches it)
        rows = measure_in_turn([("torchleaklint (cold)", big.tll + ["--no-cache"], big.env),
                                ("torchleaklint (warm)", big.tll, big.env),
                                ("libcst.parse_module only", big.libcst, None)], args.runs)
        bare = rows.pop()
        touched = big.tree / big.files[len(big.files) // 2].relative_to(src)
        original = touched.read_bytes()

        def touch():
            touched.write_bytes(original + f"\n# edit {time.time_ns()}\n".encode())

        rows.append(measure("torchleaklint (1 file changed)", big.tll, args.runs, big.env, before=touch))
        touched.write_bytes(original)
        rows.append(bare)
        report("Cache", rows, big, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if same else 1


class Slice:
    """A copy of some corpus files (package folders kept) and the commands over it."""

    def __init__(self, folder: Path, files: List[Path], src: Path, jobs: int, python: Path) -> None:
        self.files = files
        self.lines = sum(count_lines(p) for p in files)
        self.tree = folder / "code"
        stage(files, src, self.tree)
        listing = folder / "files.txt"
        listing.write_text("".join(f"{self.tree / p.relative_to(src)}\n" for p in files))
        self.env = dict(os.environ, TORCHLEAKLINT_CACHE_DIR=str(folder / "cache"), NO_COLOR="1")
        # The console script, as users run it (the peers are run through theirs too).
        self.tll = [str(python.parent / "torchleaklint"), "check", str(self.tree), "-q", "--exit-zero",
                    "-j", str(jobs)]
        self.libcst = [str(python), str(folder.parent / "libcst_pass.py"), str(listing), str(jobs)]
        print(f"{folder.name}: {len(files)} files, {self.lines} lines", file=sys.stderr)


def report(title: str, rows: List[Measure], part: Slice, args) -> None:
    by = {m.tool: m for m in rows}
    files, lines = len(part.files), part.lines
    print(f"\n### {title}: {files} files, {lines} lines\n")
    print("| tool | files | lines | wall (median) | lines/s | peak RSS |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for m in rows:
        print(f"| {m.tool} | {files} | {lines} | {m.wall:.2f} s | {lines / m.wall:,.0f} | {m.rss_mb:.0f} MB |")
    cold = by["torchleaklint (cold)"].wall
    print()
    bare = by["libcst.parse_module only"]
    each = ", ".join(f"{c / b:.2f}" for c, b in zip(by["torchleaklint (cold)"].walls, bare.walls))
    print(f"- torchleaklint cold / libcst.parse_module only (target <= 2): {cold / bare.wall:.2f} "
          f"(run by run, measured in turn: {each})")
    if "torchleaklint (warm)" in by:
        print(f"- cold / warm (target >= 50): {cold / by['torchleaklint (warm)'].wall:.1f}x")
        print(f"- cold / one file changed: {cold / by['torchleaklint (1 file changed)'].wall:.1f}x")
    if "torch-preflight 0.5.0" in by:
        print(f"- torch-preflight / torchleaklint cold (target >= 10): {by['torch-preflight 0.5.0'].wall / cold:.1f}x")
    if "TorchFix 0.7.0" in by:
        print(f"- TorchFix / torchleaklint cold (target >= 15): {by['TorchFix 0.7.0'].wall / cold:.1f}x")
    print("\nCommands (paths shortened):")
    for m in rows:
        print(f"- {m.tool}: `{m.command.replace(str(part.tree.parent), '$SLICE')}`")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
