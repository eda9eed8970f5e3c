"""The rule pages and the README's rules table are generated from the rule modules; they
must match the code (regenerate with `python -m torchleaklint.report.rule_docs`)."""

from __future__ import annotations

from pathlib import Path

from torchleaklint.report.rule_docs import TABLE_BEGIN, pages, readme_with_table
from torchleaklint.rules import ALL_RULES
from torchleaklint.rules.base import DOC_SECTIONS

ROOT = Path(__file__).resolve().parents[1]
REGENERATE = "out of date: run `python -m torchleaklint.report.rule_docs`"


def test_rule_pages_match_the_rule_modules():
    folder = ROOT / "docs" / "rules"
    expected = pages()
    assert sorted(p.name for p in folder.glob("*.md")) == sorted(expected), REGENERATE
    for name, text in expected.items():
        assert (folder / name).read_text(encoding="utf-8") == text, f"docs/rules/{name} {REGENERATE}"


def test_every_page_has_the_fixed_sections():
    for rule in ALL_RULES:
        page = pages()[f"{rule.code}.md"]
        assert page.startswith(f"# {rule.code}: {rule.name}\n")
        for section in DOC_SECTIONS:
            assert f"## {section}" in page, (rule.code, section)


def test_readme_rules_table_matches_the_code():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert TABLE_BEGIN in readme
    assert readme_with_table(readme) == readme, f"README rules table {REGENERATE}"
    for rule in ALL_RULES:
        assert f"[{rule.code}.md](docs/rules/{rule.code}.md)" in readme


def test_readme_shows_the_integration_snippets():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert lines[2:4] == ["```bash", "pip install -e . && torchleaklint examples/leaky_training --show-evidence"]
    assert lines[4].endswith("&& python -m pytest")
    assert "- id: torchleaklint" in readme and "rev:" in readme  # pre-commit
    assert "--output-format github" in readme and "upload-sarif" in readme  # GitHub Actions
    for fmt in ("json-lines", "gitlab", "sarif", "junit", "full"):
        assert f"`{fmt}`" in readme


def test_readme_set_up_installs_what_ci_installs():
    """The README's second command, its Development section and .ci/run install the same
    extras (the language-server tests need `lsp`)."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    extras = re.findall(r"-e '\.\[([\w,]+)\]'", readme)
    ci_extras = re.findall(r"-e '\.\[([\w,]+)\]'", ci)
    assert ci_extras == ["dev,harness,lsp"]
    assert extras and set(extras) == set(ci_extras)
    assert readme.splitlines()[4].startswith(f"pip install 'torch==2.13.0' -e '.[{ci_extras[0]}]'")
