"""The trigger-word prefilter never changes the findings: it only skips files in which no
enabled rule can report."""

import os
from pathlib import Path

import pytest

from torchleaklint.config import Settings
from torchleaklint.engine.parallel import check_files
from torchleaklint.engine.prefilter import trigger_words
from torchleaklint.rules import ALL_RULES

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def all_findings(files, settings=None, prefilter=True, jobs=1):
    out = []
    for checked in check_files(files, settings or Settings(), jobs=jobs, prefilter=prefilter):
        assert not checked.internal_errors
        out.extend((d.path, d.code, d.start.line, d.start.col, d.message) for d in checked.diagnostics)
    return sorted(out)


def python_files(folder: Path):
    return sorted(str(p) for p in folder.rglob("*.py"))


@pytest.mark.parametrize("rule", sorted({cls.code for cls in ALL_RULES if (FIXTURES / cls.code).is_dir()}))
def test_fixtures_same_findings_with_and_without_prefilter(rule):
    files = python_files(FIXTURES / rule)
    settings = Settings(extend_select=(rule,))  # opt-in rules run only when named
    with_filter = all_findings(files, settings)
    assert with_filter == all_findings(files, settings, prefilter=False)
    assert with_filter  # the positive fixtures do report


@pytest.mark.parametrize("select", [("TLL005",), ("TLL003",), ("TLL008",)])
def test_single_rule_selection_same_findings(select):
    # Other rules' fixtures: files a one-rule selection may skip, next to ones it may not.
    files = python_files(FIXTURES / "TLL003") + python_files(FIXTURES / "TLL005") + python_files(FIXTURES / "TLL008")
    settings = Settings(select=select)
    assert all_findings(files, settings) == all_findings(files, settings, prefilter=False)


def test_figure_helper_in_another_file_is_not_skipped(tmp_path):
    (tmp_path / "plots.py").write_text(
        "import matplotlib.pyplot as plt\n\ndef draw(xs):\n    fig = plt.figure()\n"
        "    plt.plot(xs)\n    return fig\n")
    (tmp_path / "loop.py").write_text(  # no matplotlib, no torch: only the helper's name
        "from plots import draw\n\ndef report(runs):\n    for xs in runs:\n        draw(xs)\n")
    files = python_files(tmp_path)
    found = all_findings(files)
    assert found == all_findings(files, prefilter=False)
    assert any(path.endswith("loop.py") and code == "TLL005" for path, code, *_ in found)


def test_file_without_triggers_still_reports_syntax_errors(tmp_path):
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    (tmp_path / "plain.py").write_text("def g():\n    return [1, 2]\n")
    found = all_findings(python_files(tmp_path))
    assert [(Path(p).name, c) for p, c, *_ in found] == [("broken.py", "TLL000")]


def test_words_of_relative_imports_come_from_the_package():
    assert "transformers" in trigger_words("from .utils import x\n", "transformers.models.bert.modeling")
    assert trigger_words("from .utils import x\n", "mypkg.mod") == frozenset()


def test_words_fold_identifiers_like_python():
    text = "import \uff54orch\n"  # a fullwidth letter: Python reads it as `import torch`
    assert "torch" in trigger_words(text)


def _corpus_slice():
    root = os.environ.get("TORCHLEAKLINT_CORPUS")
    if not root:
        return []
    src = Path(root) / "src"
    files = []
    for package in ("pytorch_lightning", "torchvision", "d2l", "stable_baselines3"):
        files += python_files(src / package)[:120]
    return files


@pytest.mark.skipif(not _corpus_slice(), reason="set TORCHLEAKLINT_CORPUS to a corpus built by bench/corpus.py")
def test_corpus_slice_same_findings_with_and_without_prefilter():
    files = _corpus_slice()
    assert all_findings(files, jobs=2) == all_findings(files, prefilter=False, jobs=2)
