"""The CI-sized slice of real published training code (d2l, pytorch-tabnet), fetched once
with ``pip download --no-deps`` by ``bench/corpus.py`` into the corpus folder
(``$TORCHLEAKLINT_CORPUS`` or ``~/.cache/torchleaklint-corpus``), never into the repo."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load_bench(name: str):
    """A module of ``bench/`` (``fix_safety``, ``corpus``) by its file name."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def slice_folders() -> List[Path]:
    """One unpacked folder per package of the slice; skips the test when offline."""
    fix_safety = load_bench("fix_safety")
    try:
        return fix_safety.corpus.build(fix_safety.corpus.default_dest(), fix_safety.SLICE)
    except (subprocess.CalledProcessError, SystemExit, OSError) as exc:
        pytest.skip(f"the slice's wheels could not be downloaded: {exc}")
