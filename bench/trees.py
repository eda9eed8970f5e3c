"""Whole repositories for the speed bench, exported from a local git directory.

    python bench/trees.py GIT_DIR DEST [--commit REV]

``GIT_DIR`` is a bare clone or a ``.git`` folder (a mirror, say, of
Lightning-AI/pytorch-lightning); ``DEST`` receives the source files of ``REV`` (default
``HEAD``): Python files, notebooks, ``.gitignore`` files and the small text files that
tools read for their configuration. Objects absent from a partial mirror (large binary
files) are skipped. The same files are then made a git checkout of their own
(``DEST/git``) and a plain folder (``DEST/plain``), so that a run inside a work tree and a
run outside one can be measured on identical files.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

KEPT_SUFFIXES = (".py", ".pyi", ".ipynb", ".gitignore", ".toml", ".cfg", ".ini")


def listed_blobs(git_dir: str, rev: str) -> List[Tuple[str, str]]:
    """(object id, path) of the kept files of ``rev``."""
    out = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", rev],
                         check=True, capture_output=True).stdout.decode("utf-8", "surrogateescape")
    found = []
    for record in out.split("\0"):
        if not record:
            continue
        meta, path = record.split("\t", 1)
        mode, kind, oid = meta.split()
        if kind == "blob" and mode != "120000" and path.endswith(KEPT_SUFFIXES):
            found.append((oid, path))
    return found


def export(git_dir: str, rev: str, dest: Path) -> int:
    """Write the kept files of ``rev`` under ``dest``; returns how many were written."""
    blobs = listed_blobs(git_dir, rev)
    batch = subprocess.Popen(["git", "--git-dir", git_dir, "cat-file", "--batch"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    written = 0
    try:
        for oid, path in blobs:
            batch.stdin.write(oid.encode() + b"\n")
            batch.stdin.flush()
            header = batch.stdout.readline().split()
            if len(header) < 3 or header[1] != b"blob":  # "<oid> missing"
                continue
            data = batch.stdout.read(int(header[2]))
            batch.stdout.read(1)  # the newline after the contents
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            written += 1
    finally:
        batch.stdin.close()
        batch.wait()
    return written


def prepare(git_dir: str, dest: Path, rev: str = "HEAD") -> Tuple[Path, Path]:
    """``dest/plain`` (no git anywhere above it is assumed) and ``dest/git`` (the same
    files, committed in a repository of their own); made once, reused after."""
    plain, checkout = dest / "plain", dest / "git"
    if not (checkout / ".git").exists():
        shutil.rmtree(dest, ignore_errors=True)
        export(git_dir, rev, plain)
        shutil.copytree(plain, checkout, copy_function=shutil.copy2)
        env = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@localhost",
                   GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@localhost")
        for cmd in (["init", "-q"], ["add", "-A", "-f", "."], ["commit", "-q", "-m", f"export of {rev}"]):
            subprocess.run(["git", "-C", str(checkout), *cmd], check=True, env=env)
    return plain, checkout


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("git_dir")
    parser.add_argument("dest", type=Path)
    parser.add_argument("--commit", default="HEAD")
    args = parser.parse_args(argv)
    plain, checkout = prepare(args.git_dir, args.dest, args.commit)
    print(f"{plain}\n{checkout}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
