"""The VALID/INVALID examples embedded in every rule are tests too (Fixit's habit)."""

from __future__ import annotations

import textwrap

import pytest

from torchleaklint import fix_source, lint_source
from torchleaklint.config import Settings
from torchleaklint.rules import ALL_RULES
from torchleaklint.rules.base import DOC_SECTIONS

VALID = [(rule, i, code) for rule in ALL_RULES for i, code in enumerate(rule.VALID)]
INVALID = [(rule, i, case) for rule in ALL_RULES for i, case in enumerate(rule.INVALID)]


@pytest.mark.parametrize("rule,i,code", VALID, ids=lambda v: getattr(v, "code", str(v)) if not isinstance(v, str) else "")
def test_valid_examples_are_quiet(rule, i, code):
    diags = lint_source(textwrap.dedent(code), settings=Settings(select=(rule.code,)))
    assert [d for d in diags if d.code == rule.code] == []


@pytest.mark.parametrize("rule,i,case", INVALID, ids=lambda v: getattr(v, "code", str(v)) if not isinstance(v, str) else "")
def test_invalid_examples_are_reported_and_fixed(rule, i, case):
    settings = Settings(select=(rule.code,))
    code = textwrap.dedent(case.code)
    diags = [d for d in lint_source(code, settings=settings) if d.code == rule.code]
    assert len(diags) == case.count
    if case.fixed is not None:
        fixed = fix_source(code, settings=settings, unsafe=True)
        assert fixed == textwrap.dedent(case.fixed)
        assert fix_source(fixed, settings=settings, unsafe=True) == fixed


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_docs_have_every_section(rule):
    sections = rule.doc_sections()
    for heading in DOC_SECTIONS:
        assert sections.get(heading), f"{rule.code} lacks '{heading}'"
    assert rule.name and rule.summary and rule.code.startswith("TLL")


def test_readme_rules_table_matches_the_registry():
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    for rule in ALL_RULES:
        assert f"| {rule.code} | {rule.name} | {rule.fix_availability} | {rule.summary} |" in readme
