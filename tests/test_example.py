"""The example the README's first command runs: its seeded leaks are found, `--fix`
leaves no safe-fixable finding, and the rewritten files compile."""

from __future__ import annotations

import shutil
from pathlib import Path

from torchleaklint.config import Settings
from torchleaklint.runner import run

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "leaky_training"


def test_example_reports_the_seeded_leaks():
    result = run([str(EXAMPLE)], Settings())
    found = sorted((Path(d.path).name, d.start.line, d.code) for d in result.diagnostics)
    assert found == [("train.py", 27, "TLL001"), ("train.py", 28, "TLL001"),
                     ("train.py", 46, "TLL002"), ("train.py", 47, "TLL002")]


def test_example_fix_leaves_no_safe_finding_and_compiles(tmp_path):
    work = tmp_path / "leaky_training"
    shutil.copytree(EXAMPLE, work)
    first = run([str(work)], Settings(), fix=True)
    assert first.fixed == 3
    again = run([str(work)], Settings())
    assert [d for d in again.diagnostics if d.fix is not None and d.fix.is_safe] == []
    for file in work.glob("*.py"):
        compile(file.read_text(encoding="utf-8"), str(file), "exec")
    text = (work / "train.py").read_text(encoding="utf-8")
    assert "actor_losses.append(actor_loss.item())" in text
    assert "total_loss += loss.item()" in text
