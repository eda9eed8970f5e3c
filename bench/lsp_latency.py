"""What a keystroke costs in the language server, side by side with the CLI's standard
input path, on one file of a real package.

    python bench/lsp_latency.py [--package DIR] [--file REL] [--runs 7]

The package (default: the largest package under ``$TORCHLEAKLINT_CORPUS`` or
``~/.cache/torchleaklint-corpus/src``, built by ``bench/corpus.py``) is copied to a
temporary folder with an empty ``torchleaklint.toml``, so that it is one project. Measured
in the same process, in turn, run after run (a shared machine's load weighs on them alike),
each the median of ``--runs``:

- ``server first``: the server's first lint of the buffer (project discovery, pass 1 of
  every file into a fresh cache);
- ``server keystroke``: the buffer edited (one line appended) and linted again, as on
  each ``didChange``;
- ``stdin``: ``lint_code(..., neighbours=True)``, what ``--stdin-filename`` does (the
  file's folder only, no cache).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torchleaklint.config import Settings  # noqa: E402
from torchleaklint.engine.stdin import lint_code  # noqa: E402
from torchleaklint.server.project import Projects  # noqa: E402


def largest_package(corpus: Path) -> Path:
    packages = [p for p in corpus.iterdir() if p.is_dir()]
    if not packages:
        sys.exit(f"no packages under {corpus}: run bench/corpus.py first")
    return max(packages, key=lambda p: sum(f.stat().st_size for f in p.rglob("*.py")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    corpus = Path(os.environ.get("TORCHLEAKLINT_CORPUS", Path.home() / ".cache" / "torchleaklint-corpus")) / "src"
    parser.add_argument("--package", type=Path, default=None)
    parser.add_argument("--file", default=None, help="the buffer, relative to the package (default: its largest file)")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    package = args.package or largest_package(corpus)
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / package.name
        shutil.copytree(package, project)
        (project / "torchleaklint.toml").write_text("")
        files = sorted(project.rglob("*.py"))
        buffer = project / args.file if args.file else max(files, key=lambda f: f.stat().st_size)
        text = buffer.read_text(encoding="utf-8")
        lines = sum(f.read_text(encoding="utf-8", errors="replace").count("\n") for f in files)
        print(f"project: {package.name}, {len(files)} files, {lines} lines; buffer: "
              f"{buffer.relative_to(project)} ({text.count(chr(10))} lines); {args.runs} runs, median")
        os.environ["TORCHLEAKLINT_CACHE_DIR"] = str(Path(tmp) / "cache")
        times = {"server first": [], "server keystroke": [], "stdin": []}
        path = str(buffer)
        for run in range(args.runs):
            shutil.rmtree(Path(tmp) / "cache", ignore_errors=True)
            projects = Projects([str(project)])
            start = time.perf_counter()
            first = projects.lint(path, text, {path: text})
            times["server first"].append(time.perf_counter() - start)
            projects.save_caches()
            edited = text + f"\nx_{run} = 1\n"
            start = time.perf_counter()
            again = projects.lint(path, edited, {path: edited})
            times["server keystroke"].append(time.perf_counter() - start)
            start = time.perf_counter()
            alone = lint_code(text, path, Settings(origin=str(project / "torchleaklint.toml")), neighbours=True)
            times["stdin"].append(time.perf_counter() - start)
        print(f"findings: server {len(first.diagnostics)} (after the edit {len(again.diagnostics)}), "
              f"stdin {len(alone.diagnostics)}")
        for name, values in times.items():
            print(f"{name:>17}: {statistics.median(values) * 1000:8.1f} ms")
        print(f"keystroke / stdin: {statistics.median(times['server keystroke']) / statistics.median(times['stdin']):.2f}")


if __name__ == "__main__":
    main()
