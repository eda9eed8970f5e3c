"""Every fixture: positives report exactly their marked lines, negatives stay quiet, and
``--fix --unsafe-fixes`` reproduces the golden output, compiles, and is idempotent."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from torchleaklint.config import Settings
from torchleaklint.runner import run

from .fixture_cases import by_rule, cases

ALL_CASES = cases()


def lint_case(case, code=None, tmp_path=None):
    settings = Settings(select=(code or case.code,))
    result = run([str(case.path)], settings)
    return {(Path(d.path).name, d.start.line, d.code) for d in result.diagnostics}, result


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_findings_match_marks(case):
    found, result = lint_case(case)
    assert not result.internal_errors
    expected = case.expected()
    if case.kind == "negative":
        assert expected == set(), "negative fixtures carry no marks"
    assert found == expected


@pytest.mark.parametrize("case", [c for c in ALL_CASES if c.kind == "positive"], ids=lambda c: c.id)
def test_fix_matches_golden_and_is_idempotent(case, tmp_path):
    work = tmp_path / case.path.name
    if case.path.is_dir():
        shutil.copytree(case.path, work)
    else:
        shutil.copy(case.path, work)
    settings = Settings(select=(case.code,))
    first = run([str(work)], settings, fix=True, unsafe=True)
    assert not first.internal_errors
    golden = case.golden()
    assert golden.exists(), f"missing golden {golden.name}"
    files = sorted(work.rglob("*.py")) if work.is_dir() else [work]
    for file in files:
        text = file.read_text(encoding="utf-8")
        compile(text, str(file), "exec")
        expected_file = golden / file.relative_to(work) if work.is_dir() else golden
        assert text == expected_file.read_text(encoding="utf-8"), f"{file.name} differs from its golden"
    second = run([str(work)], settings, fix=True, unsafe=True)
    assert second.fixed == 0 and not second.changed_files


def test_each_rule_has_enough_fixtures():
    for code, rule_cases in by_rule().items():
        positives = [c for c in rule_cases if c.kind == "positive"]
        negatives = [c for c in rule_cases if c.kind == "negative"]
        assert len(positives) >= 15, code
        assert len(negatives) >= 15, code
