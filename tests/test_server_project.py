"""The language server's view of a project (torchleaklint/server/project.py), in process:
what it keeps between keystrokes must never outlive the bytes it was made from."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from torchleaklint.server.project import Projects

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "leaky_training"
HELPER_LINE = "self.sum += val * n"


def codes(result):
    return sorted((d.code, d.start.line) for d in result.diagnostics)


def test_kept_parses_follow_the_helpers_bytes(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHLEAKLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "proj"
    shutil.copytree(EXAMPLE, root)
    (root / "torchleaklint.toml").write_text("")
    train = str(root / "train.py")
    text = Path(train).read_text()
    projects = Projects([str(root)])
    leaky = codes(projects.lint(train, text, {train: text}))
    assert ("TLL002", 46) in leaky
    assert projects._parsed  # the helpers parsed for cross-file questions are kept
    edited = text + "\n# typing\n"
    assert codes(projects.lint(train, edited, {train: edited})) == leaky

    meters = root / "meters.py"
    meters.write_text(meters.read_text().replace(HELPER_LINE, "self.sum += n"))
    later = time.time() + 5  # a new modification time, whatever the file system's clock tick
    os.utime(meters, (later, later))
    assert ("TLL002", 46) not in codes(projects.lint(train, edited, {train: edited}))
    meters.write_text(meters.read_text().replace("self.sum += n", HELPER_LINE))
    os.utime(meters, (later + 5, later + 5))
    assert codes(projects.lint(train, edited, {train: edited})) == leaky


def test_excluded_and_non_python_buffers_are_not_linted(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHLEAKLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "proj"
    shutil.copytree(EXAMPLE, root)
    (root / "torchleaklint.toml").write_text('extend-exclude = ["gen"]\n')
    text = (root / "train.py").read_text()
    projects = Projects([str(root)])
    (root / "gen").mkdir()
    generated = str(root / "gen" / "train.py")
    assert projects.lint(generated, text, {generated: text}).diagnostics == []
    notebook = str(root / "train.ipynb")
    assert projects.lint(notebook, "{}", {notebook: "{}"}).diagnostics == []
    assert projects.lint(str(root / "train.py"), text, {}).diagnostics
