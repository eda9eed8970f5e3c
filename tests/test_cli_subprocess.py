"""The real program: ``python -m torchleaklint`` in a subprocess (entry point, exit codes
as the shell sees them, stdout/stderr separation, files on disk)."""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .snippets import TLL001_FIXED, TLL001_SRC, TLL002_FIXED, TLL002_SRC


@pytest.fixture
def tll(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.other]\nx = 1\n")
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    env["TERM"] = "xterm-256color"  # colours must still be off: stdout is a pipe
    env.pop("FORCE_COLOR", None)

    def run(*args, cwd=None):
        proc = subprocess.run([sys.executable, "-m", "torchleaklint", *map(str, args)], cwd=cwd or tmp_path,
                              capture_output=True, text=True, env=env, timeout=60)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    return run


def test_version(tll):
    from torchleaklint import __version__

    proc = tll("--version")
    assert proc.returncode == 0
    assert "torchleaklint" in proc.stdout and __version__ in proc.stdout


def test_exit_codes(tll, tmp_path):
    (tmp_path / "clean.py").write_text(TLL001_FIXED)
    (tmp_path / "leak.py").write_text(TLL001_SRC)
    clean = tll("clean.py")
    assert clean.returncode == 0
    assert "All checks passed!" in clean.stdout
    leak = tll("leak.py")
    assert leak.returncode == 1
    assert "leak.py:7:5: TLL001 [*] " in leak.stdout
    # One finding is one line, however long (no wrapping at the pipe's default width).
    line = [l for l in leak.stdout.splitlines() if l.startswith("leak.py:7:5:")][0]
    assert len(line) > 100 and "losses" in line and line.rstrip().endswith("alive")
    assert "Found 1 error." in leak.stdout
    assert "\x1b[" not in leak.stdout
    assert tll("--exit-zero", "leak.py").returncode == 0


def test_unknown_select_is_one_line_exit_2(tll, tmp_path):
    (tmp_path / "leak.py").write_text(TLL001_SRC)
    proc = tll("--select", "TLL999", "leak.py")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "TLL999" in lines[0]
    assert proc.stdout == ""


def test_missing_path_exit_2(tll):
    proc = tll("no/such/dir")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no/such/dir" in lines[0]


def test_json_output_is_pure_json_on_stdout(tll, tmp_path):
    (tmp_path / "a.py").write_text(TLL001_SRC)
    (tmp_path / "b.py").write_text(TLL002_SRC)
    proc = tll("--output-format", "json", ".")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert sorted((Path(d["filename"]).name, d["code"], d["location"]["row"]) for d in data) == [
        ("a.py", "TLL001", 7), ("b.py", "TLL002", 7)]
    assert all(d["evidence"] for d in data)
    assert all(d["fix"]["applicability"] == "safe" for d in data)


def test_noqa(tll, tmp_path):
    (tmp_path / "a.py").write_text(TLL001_SRC.replace("append(loss)", "append(loss)  # noqa: TLL001"))
    (tmp_path / "b.py").write_text(TLL001_SRC.replace("append(loss)", "append(loss)  # noqa: TLL002"))
    proc = tll("a.py", "b.py")
    assert proc.returncode == 1
    assert "b.py:7:5: TLL001" in proc.stdout
    assert "a.py:" not in proc.stdout


def test_diff_writes_nothing(tll, tmp_path):
    path = tmp_path / "a.py"
    path.write_text(TLL001_SRC)
    proc = tll("--diff", "a.py")
    assert proc.returncode == 1
    assert "-    losses.append(loss)\n" in proc.stdout
    assert "+    losses.append(loss.item())\n" in proc.stdout
    assert path.read_text() == TLL001_SRC
    path.write_text(TLL001_FIXED)
    clean = tll("--diff", "a.py")
    assert clean.returncode == 0 and "+++" not in clean.stdout


def test_fix_is_idempotent_and_keeps_crlf_and_bom(tll, tmp_path):
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(TLL001_SRC.replace("\n", "\r\n").encode())
    bom = tmp_path / "bom.py"
    bom.write_bytes(codecs.BOM_UTF8 + TLL002_SRC.encode())
    first = tll("--fix", ".")
    assert first.returncode == 0, first.stdout + first.stderr
    assert crlf.read_bytes() == TLL001_FIXED.replace("\n", "\r\n").encode()
    assert bom.read_bytes() == codecs.BOM_UTF8 + TLL002_FIXED.encode()
    snapshot = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    second = tll("--fix", ".")
    assert second.returncode == 0
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == snapshot
    for p in (crlf, bom):
        compile(p.read_bytes(), str(p), "exec")


def test_syntax_error_file_untouched_others_fixed(tll, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"import torch\nfor x in y\n    pass\n")
    good = tmp_path / "good.py"
    good.write_text(TLL001_SRC)
    proc = tll("--fix", ".")
    assert proc.returncode == 1
    assert "bad.py:2:" in proc.stdout and "TLL000" in proc.stdout
    assert bad.read_bytes() == b"import torch\nfor x in y\n    pass\n"
    assert good.read_text() == TLL001_FIXED


def test_rules_and_explain(tll):
    rules = tll("rules")
    assert rules.returncode == 0
    assert "TLL001" in rules.stdout and "TLL002" in rules.stdout
    explain = tll("explain", "TLL002")
    assert explain.returncode == 0
    for section in ("What it does", "Why is this bad", "Example", "Use instead", "Fix safety", "Memory impact"):
        assert section in explain.stdout
    unknown = tll("explain", "TLL999")
    assert unknown.returncode == 2
    assert len(unknown.stderr.strip().splitlines()) == 1 and "TLL999" in unknown.stderr


def test_bad_config_exit_2(tll, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.torchleaklint]\nwat = true\n")
    (tmp_path / "a.py").write_text(TLL001_SRC)
    proc = tll("a.py")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "wat" in lines[0]


def test_console_script_if_installed(tmp_path):
    """The ``torchleaklint`` console script next to this interpreter behaves the same."""
    script = Path(sys.executable).with_name("torchleaklint")
    if not script.exists():
        pytest.skip("console script not installed next to the interpreter")
    (tmp_path / "pyproject.toml").write_text("[tool.other]\nx = 1\n")
    (tmp_path / "a.py").write_text(TLL002_SRC)
    proc = subprocess.run([str(script), "a.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "a.py:7:5: TLL002" in proc.stdout
