"""Standard input for editors (``--stdin-filename NAME -``), through the real program."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .snippets import BOTH_SRC, CLEAN_SRC, TLL001_FIXED, TLL001_SRC

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "leaky_training"


@pytest.fixture
def tll(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.other]\nx = 1\n")
    env = dict(os.environ, NO_COLOR="1")

    def run(*args, stdin="", cwd=None):
        proc = subprocess.run([sys.executable, "-m", "torchleaklint", *map(str, args)], cwd=cwd or tmp_path,
                              input=stdin.encode("utf-8") if isinstance(stdin, str) else stdin,
                              capture_output=True, env=env, timeout=120)
        assert b"Traceback" not in proc.stderr, proc.stderr.decode()
        return proc

    return run


def test_findings_are_reported_under_the_given_name(tll):
    proc = tll("--stdin-filename", "src/train.py", "-", stdin=TLL001_SRC)
    assert proc.returncode == 1
    assert proc.stdout.decode().startswith("src/train.py:7:5: TLL001 [*] ")
    clean = tll("--stdin-filename", "src/train.py", "-", stdin=CLEAN_SRC)
    assert clean.returncode == 0 and b"All checks passed!" in clean.stdout


def test_dash_alone_reads_stdin(tll):
    proc = tll("-", stdin=TLL001_SRC)
    assert proc.returncode == 1 and b"TLL001" in proc.stdout


def test_fix_writes_the_fixed_code_to_stdout(tll, tmp_path):
    proc = tll("--fix", "--stdin-filename", "train.py", "-", stdin=TLL001_SRC)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == TLL001_FIXED
    assert not (tmp_path / "train.py").exists()
    # Remaining findings go to stderr; stdout stays pure code.
    proc = tll("--fix", "--stdin-filename", "train.py", "-", stdin=BOTH_SRC.replace("total += loss", "total += loss  # noqa"))
    assert proc.stdout.decode().count("losses.append(loss.item())") == 1
    clean = tll("--fix", "--stdin-filename", "train.py", "-", stdin=CLEAN_SRC)
    assert clean.returncode == 0 and clean.stdout.decode() == CLEAN_SRC


def test_fix_keeps_encoding_and_newlines(tll):
    src = ("# -*- coding: latin-1 -*-\r\n" + TLL001_SRC.replace("\n", "\r\n") + "# caf\xe9\r\n").encode("latin-1")
    proc = tll("--fix", "--stdin-filename", "train.py", "-", stdin=src)
    assert proc.returncode == 0
    assert proc.stdout == src.replace(b"losses.append(loss)", b"losses.append(loss.item())")


def test_unparsable_stdin_is_tll000_and_echoed_unchanged_by_fix(tll):
    proc = tll("--stdin-filename", "bad.py", "-", stdin="def f(:\n")
    assert proc.returncode == 1 and b"bad.py:1:7: TLL000" in proc.stdout
    fixed = tll("--fix", "--stdin-filename", "bad.py", "-", stdin="def f(:\n")
    assert fixed.stdout == b"def f(:\n"


def test_diff_and_json(tll):
    diff = tll("--diff", "--stdin-filename", "train.py", "-", stdin=TLL001_SRC)
    assert diff.returncode == 1
    assert b"+    losses.append(loss.item())" in diff.stdout and b"--- a/train.py" in diff.stdout
    data = json.loads(tll("--output-format", "json", "--stdin-filename", "train.py", "-", stdin=TLL001_SRC).stdout)
    assert [(d["code"], d["location"]["row"]) for d in data] == [("TLL001", 7)]


def test_stdin_sees_the_helpers_next_to_the_file(tll, tmp_path):
    shutil.copytree(EXAMPLE, tmp_path / "proj", ignore=shutil.ignore_patterns("__pycache__"))
    on_disk = tll("--output-format", "json", "proj")
    expected = sorted((d["code"], d["location"]["row"]) for d in json.loads(on_disk.stdout)
                      if d["filename"].endswith("train.py"))
    assert ("TLL002", 46) in expected  # found only through AverageMeter in meters.py
    text = (tmp_path / "proj" / "train.py").read_text()
    piped = tll("--output-format", "json", "--stdin-filename", "proj/train.py", "-", stdin=text)
    assert sorted((d["code"], d["location"]["row"]) for d in json.loads(piped.stdout)) == expected


def test_configuration_of_the_named_file_applies(tll, tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text(
        '[tool.torchleaklint]\nextend-exclude = ["generated"]\n[tool.torchleaklint.per-file-ignores]\n"legacy_*.py" = ["TLL001"]\n')
    assert tll("--stdin-filename", "pkg/legacy_train.py", "-", stdin=TLL001_SRC).returncode == 0
    assert tll("--stdin-filename", "pkg/train.py", "-", stdin=TLL001_SRC).returncode == 1
    # An excluded name with --force-exclude: nothing reported, --fix echoes the input.
    assert tll("--stdin-filename", "pkg/generated/x.py", "-", stdin=TLL001_SRC).returncode == 1
    excluded = tll("--force-exclude", "--fix", "--stdin-filename", "pkg/generated/x.py", "-", stdin=TLL001_SRC)
    assert excluded.returncode == 0 and excluded.stdout.decode() == TLL001_SRC


def test_stdin_notebook(tll):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook()
    nb.cells = [new_code_cell(TLL001_SRC)]
    proc = tll("--fix", "--stdin-filename", "train.ipynb", "-", stdin=nbformat.writes(nb))
    assert proc.returncode == 0
    fixed = nbformat.reads(proc.stdout.decode(), as_version=4)
    assert fixed.cells[0].source == TLL001_FIXED


def test_stdin_with_paths_is_a_usage_error(tll):
    proc = tll("--stdin-filename", "a.py", "other.py", stdin=TLL001_SRC)
    assert proc.returncode == 2
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("torchleaklint: error: ")
