"""A CI-sized slice of ``bench/fix_safety.py``: two small published packages of real
training code (d2l, pytorch-tabnet), fixed as they are and with leaks planted into copies
of their files; no crash, every rewritten file compiles, a second fix changes nothing.

The wheels are fetched once (see ``tests/real_code.py``), never into the repo. The full
run is ``python bench/fix_safety.py --set main``.
"""

from __future__ import annotations

import random

import pytest

from .real_code import load_bench, slice_folders as real_code_folders


@pytest.fixture(scope="module")
def bench():
    return load_bench("fix_safety")


@pytest.fixture(scope="module")
def slice_folders():
    return real_code_folders()


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
