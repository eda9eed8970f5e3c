"""Build a corpus of real PyTorch code from published wheels (never committed).

``python bench/corpus.py [--dest DIR] [--set main|extra|all]`` downloads the pinned wheels
with ``pip download --no-deps`` into ``DIR/wheels`` and unzips their ``.py`` files into
``DIR/src/<package>/``. Re-running reuses what is already there. The default folder is
``$TORCHLEAKLINT_CORPUS`` or ``~/.cache/torchleaklint-corpus``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Dict, List

# The corpus the speed and fix-safety benchmarks use: large, real training/model code.
MAIN = ["transformers==4.57.6", "timm==1.0.31", "torchvision==0.29.1", "pytorch-lightning==2.6.6"]
# Training-loop heavy libraries: more loops, losses, histories and figures per line.
EXTRA = [
    "torchrl==0.14.1", "speechbrain==1.1.2", "d2l==1.0.3", "deepchem==2.8.0", "pytorch-tabnet==4.1.0",
    "stable-baselines3==2.9.2", "flair==0.15.1", "avalanche-lib==0.6.0", "lightly==1.6.0",
    "pykeen==1.11.1", "pytorch-ignite==0.5.5", "mmengine==0.10.7", "tianshou==2.0.1", "skorch==1.4.0",
    "pytorch-metric-learning==2.9.0",
]
SETS: Dict[str, List[str]] = {"main": MAIN, "extra": EXTRA, "all": MAIN + EXTRA}


def default_dest() -> Path:
    return Path(os.environ.get("TORCHLEAKLINT_CORPUS") or Path.home() / ".cache" / "torchleaklint-corpus")


def _wheel_for(wheels: Path, requirement: str) -> Path | None:
    name, _, version = requirement.partition("==")
    stem = name.replace("-", "_").lower()
    for wheel in sorted(wheels.glob("*.whl")):
        dist, _, rest = wheel.name.partition("-")
        if dist.lower() == stem and rest.startswith(version + "-"):
            return wheel
    return None


def download(requirement: str, wheels: Path) -> Path:
    wheel = _wheel_for(wheels, requirement)
    if wheel is None:
        wheels.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary=:all:", "--dest", str(wheels), requirement], check=True)
        wheel = _wheel_for(wheels, requirement)
    if wheel is None:
        raise SystemExit(f"corpus: error: no wheel found for {requirement} after download")
    return wheel


def unpack(wheel: Path, src: Path) -> Path:
    """Unzip the wheel's Python files into ``src/<dist>``; returns that folder."""
    target = src / wheel.name.partition("-")[0].lower()
    marker = target / ".complete"
    if marker.exists():
        return target
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.filename.endswith(".py") and ".dist-info/" not in info.filename:
                zf.extract(info, target)
    marker.write_text(wheel.name + "\n")
    return target


def build(dest: Path, requirements: List[str]) -> List[Path]:
    return [unpack(download(req, dest / "wheels"), dest / "src") for req in requirements]


def count_lines(folders: List[Path]) -> tuple:
    files = lines = 0
    for folder in folders:
        for path in folder.rglob("*.py"):
            files += 1
            with open(path, "rb") as fh:
                lines += sum(1 for _ in fh)
    return files, lines


def main(argv: List[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=default_dest())
    parser.add_argument("--set", choices=sorted(SETS), default="main")
    args = parser.parse_args(argv)
    folders = build(args.dest, SETS[args.set])
    files, lines = count_lines(folders)
    for folder in folders:
        print(folder)
    print(f"{files} files, {lines} lines", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
