"""A CI-sized slice of ``bench/fix_safety.py``: two small published packages of real
training code (d2l, pytorch-tabnet), fixed as they are and with leaks planted into copies
of their files; no crash, every rewritten file compiles, a second fix changes nothing.

The wheels are fetched once with ``pip download --no-deps`` into the corpus folder
(``$TORCHLEAKLINT_CORPUS`` or ``~/.cache/torchleaklint-corpus``), never into the repo.
The full run is ``python bench/fix_safety.py --set main``.
"""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load_bench():
    spec = importlib.util.spec_from_file_location("fix_safety", BENCH / "fix_safety.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return load_bench()


@pytest.fixture(scope="module")
def slice_folders(bench):
    try:
        return bench.corpus.build(bench.corpus.default_dest(), bench.SLICE)
    except (subprocess.CalledProcessError, SystemExit, OSError) as exc:
        pytest.skip(f"the slice's wheels could not be downloaded: {exc}")


def test_real_code_slice_is_fixed_safely(bench, slice_folders, tmp_path):
    total_corpus, total_planted = bench.Report(), bench.Report()
    for src in slice_folders:
        whole, planted = bench.check_package(src, tmp_path, plant_files=4, seed=1)
        total_corpus.add(whole)
        total_planted.add(planted)
    assert total_corpus.failures == [] and total_planted.failures == []
    assert total_corpus.lines > 10_000
    assert total_planted.planted["files"] == 8
    # The planted leaks were really fixed: real code with fixes applied, not a no-op.
    assert total_planted.rewritten >= 6 and total_planted.fixes >= 8, total_planted


def test_planting_keeps_code_valid_and_varied(bench, slice_folders):
    """The planting itself: indentation matches, every style still compiles."""
    rng = random.Random(3)
    fixtures = bench.positive_fixtures()
    styles = set()
    files = [p for folder in slice_folders for p in sorted(folder.rglob("*.py")) if p.name != "__init__.py"]
    planted = 0
    for path in files * 2:
        result = bench.plant(path.read_text(encoding="utf-8"), rng, fixtures)
        if result is None:
            continue
        text, _ = result
        assert bench.compiles(text.encode(), path.name) is None
        for kind in bench.PERTURBATIONS:
            styled, encoding, bom = bench.perturb(text, kind)
            data = (b"\xef\xbb\xbf" if bom else b"") + styled.encode(encoding, errors="replace")
            if bench.compiles(data, path.name) is None:
                styles.add(kind)
        planted += 1
    assert planted >= 20
    assert styles == set(bench.PERTURBATIONS)


def test_checks_catch_damage(bench):
    """The checks the run relies on do fail on damaged output."""
    before = b"import torch\r\nx = 1  # keep\r\n"
    assert bench.check_rewritten("a.py", before, b"import torch\r\nx = 1  # keep\r\ny = (\r\n")
    assert bench.check_rewritten("a.py", before, b"import torch\r\nx = 1\r\n")  # comment lost
    assert bench.check_rewritten("a.py", before, b"import torch\nx = 1  # keep\n")  # newlines changed
    assert bench.check_rewritten("a.py", before, b"\xef\xbb\xbfimport torch\r\nx = 1  # keep\r\n")  # BOM added
    assert bench.check_rewritten("a.py", before, b"import torch\r\nx = 2  # keep\r\n") == []
    changed, problems = bench.compare_trees({"a.py": b"x\n", "b.py": b"y\n"}, {"a.py": b"x\n", "c.py": b""}, "t")
    assert changed == set() and len(problems) == 2
    _, problems = bench.compare_trees({"a.py": b"x = 1\n"}, {"a.py": b"x = 2\n"}, "t", expected=set())
    assert any("--diff" in p for p in problems)
