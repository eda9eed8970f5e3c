"""Applying fixes and writing files: encodings, newline styles, file modes, atomic
writes, files that cannot be decoded or parsed, and the Python API."""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

import pytest

import torchleaklint
from torchleaklint.config import Settings
from torchleaklint.diagnostics import SAFE, Diagnostic, Edit, Fix, Position
from torchleaklint.engine import fix as fix_engine
from torchleaklint.engine.fix import apply_fixes, atomic_write, fix_source
from torchleaklint.engine.source import SourceText, decode_source
from torchleaklint.runner import run

from .snippets import NAME_ONLY_SRC, TLL001_FIXED, TLL001_SRC, TLL002_FIXED, TLL002_SRC


def leftovers(folder: Path):
    return [p.name for p in folder.iterdir() if p.name.startswith(".torchleaklint-") or p.suffix == ".tmp"]


# --- newline styles and encodings -------------------------------------------------------

def test_crlf_stays_crlf(cli, tmp_path):
    path = tmp_path / "a.py"
    data = TLL001_SRC.replace("\n", "\r\n").encode()
    path.write_bytes(data)
    assert cli("--diff", "a.py").exit_code == 1
    assert path.read_bytes() == data
    result = cli("--fix", "a.py")
    assert result.exit_code == 0, result.output
    out = path.read_bytes()
    assert out == TLL001_FIXED.replace("\n", "\r\n").encode()
    assert out.count(b"\n") == out.count(b"\r\n") == TLL001_SRC.count("\n")
    assert cli("--fix", "a.py").exit_code == 0
    assert path.read_bytes() == out


def test_crlf_json_positions(cli, tmp_path):
    import json

    (tmp_path / "a.py").write_bytes(TLL001_SRC.replace("\n", "\r\n").encode())
    data = json.loads(cli("--output-format", "json", "a.py").stdout)
    assert data[0]["location"] == {"row": 7, "column": 5}
    assert data[0]["fix"]["edits"][0]["location"] == {"row": 7, "column": 23}


def test_utf8_bom_is_kept(cli, tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(codecs.BOM_UTF8 + TLL001_SRC.encode())
    result = cli("a.py")
    assert "a.py:7:5: TLL001" in result.stdout  # the BOM does not shift columns
    assert cli("--fix", "a.py").exit_code == 0
    out = path.read_bytes()
    assert out == codecs.BOM_UTF8 + TLL001_FIXED.encode()
    assert not out[3:].startswith(codecs.BOM_UTF8)


def test_bom_and_crlf_together(cli, tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(codecs.BOM_UTF8 + TLL002_SRC.replace("\n", "\r\n").encode())
    assert cli("--fix", "a.py").exit_code == 0
    assert path.read_bytes() == codecs.BOM_UTF8 + TLL002_FIXED.replace("\n", "\r\n").encode()


def test_latin1_with_coding_cookie(cli, tmp_path):
    header = "# -*- coding: latin-1 -*-\n# café naïve ¡olé!\n"
    src = header + TLL001_SRC
    path = tmp_path / "a.py"
    data = src.encode("latin-1")
    path.write_bytes(data)
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    result = cli("a.py")
    assert result.exit_code == 1
    assert "a.py:9:5: TLL001" in result.stdout
    assert cli("--fix", "a.py").exit_code == 0
    out = path.read_bytes()
    assert out == (header + TLL001_FIXED).encode("latin-1")
    assert b"caf\xe9" in out
    assert cli("a.py").exit_code == 0


def test_utf8_non_ascii_comment_and_columns(cli, tmp_path):
    src = TLL001_SRC.replace("    losses.append(loss)", "    ß = 'ü'; losses.append(loss)  # größe")
    path = tmp_path / "a.py"
    path.write_text(src, encoding="utf-8")
    result = cli("a.py")
    assert f"a.py:7:{len('    ß = ' + repr('ü') + '; ') + 1}: TLL001" in result.stdout
    assert cli("--fix", "a.py").exit_code == 0
    assert path.read_text(encoding="utf-8") == src.replace("losses.append(loss)", "losses.append(loss.item())")


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600])
def test_file_mode_is_kept(cli, tmp_path, mode):
    path = tmp_path / "a.py"
    path.write_text(TLL001_SRC)
    os.chmod(path, mode)
    assert cli("--fix", "a.py").exit_code == 0
    assert path.read_text() == TLL001_FIXED
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    assert leftovers(tmp_path) == []


def test_fix_replaces_atomically(cli, tmp_path):
    """The fixed file is a new inode put in place by a rename (no partial writes)."""
    path = tmp_path / "a.py"
    path.write_text(TLL001_SRC)
    before = os.stat(path).st_ino
    keep = open(path, "rb")  # a reader holding the old file still sees the old content
    try:
        assert cli("--fix", "a.py").exit_code == 0
        assert keep.read().decode() == TLL001_SRC
    finally:
        keep.close()
    assert path.read_text() == TLL001_FIXED
    assert os.stat(path).st_ino != before
    assert leftovers(tmp_path) == []


def test_fix_through_symlink_keeps_the_link(cli, tmp_path):
    target = tmp_path / "real.py"
    target.write_text(TLL001_SRC)
    link = tmp_path / "link.py"
    link.symlink_to(target.name)
    result = cli("--fix", "link.py")
    assert link.is_symlink()
    assert target.read_text() in (TLL001_SRC, TLL001_FIXED)
    if target.read_text() == TLL001_SRC:
        assert result.exit_code == 1  # not fixed: it must be reported


# --- atomic_write -----------------------------------------------------------------------

def test_atomic_write_keeps_mode_and_cleans_up(tmp_path):
    path = tmp_path / "f.py"
    path.write_bytes(b"old\n")
    os.chmod(path, 0o604)
    atomic_write(str(path), b"new\r\n")
    assert path.read_bytes() == b"new\r\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o604
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.py"]


def test_atomic_write_failure_leaves_original(tmp_path, monkeypatch):
    path = tmp_path / "f.py"
    path.write_bytes(b"old\n")

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fix_engine.os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write(str(path), b"new\n")
    assert path.read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.py"]


def test_write_failure_is_reported_not_raised(cli, tmp_path, monkeypatch):
    path = tmp_path / "a.py"
    path.write_text(TLL001_SRC)

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fix_engine.os, "replace", boom)
    result = cli("--fix", "a.py")
    assert result.exit_code in (1, 2)
    assert path.read_text() == TLL001_SRC
    assert leftovers(tmp_path) == []
    assert "No space left on device" in result.output


# --- files that cannot be decoded or parsed ---------------------------------------------

BAD_SYNTAX = "import torch\n\ndef f(:\n    pass\n"


def test_syntax_error_is_tll000_and_never_modified(cli, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(BAD_SYNTAX + TLL001_SRC)
    good = tmp_path / "good.py"
    good.write_text(TLL001_SRC)
    before = bad.read_bytes()
    result = cli("bad.py", "good.py")
    assert result.exit_code == 1
    assert "bad.py:3:" in result.stdout and "TLL000" in result.stdout
    assert "good.py:7:5: TLL001" in result.stdout
    fixed = cli("--fix", "bad.py", "good.py")
    assert fixed.exit_code == 1
    assert bad.read_bytes() == before
    assert good.read_text() == TLL001_FIXED
    assert "bad.py:3:" in fixed.stdout and "TLL000" in fixed.stdout
    assert "good.py:7:5" not in fixed.stdout
    diff = cli("--diff", "bad.py")
    assert "+++" not in diff.stdout
    assert bad.read_bytes() == before


def test_syntax_error_is_reported_whatever_is_selected(cli, tmp_path):
    (tmp_path / "bad.py").write_text(BAD_SYNTAX)
    result = cli("--select", "TLL002", "bad.py")
    assert result.exit_code == 1
    assert "TLL000" in result.stdout


def test_syntax_error_message_and_json(cli, tmp_path):
    import json

    (tmp_path / "bad.py").write_text(BAD_SYNTAX)
    data = json.loads(cli("--output-format", "json", "bad.py").stdout)
    assert len(data) == 1
    assert data[0]["code"] == "TLL000"
    assert data[0]["location"]["row"] == 3
    assert data[0]["location"]["column"] >= 1
    assert "syntax" in data[0]["message"].lower()
    assert data[0]["fix"] is None


@pytest.mark.parametrize("data, line", [
    (b"import torch\nx = 1\ny = '\xff\xfe'\n", 3),          # invalid UTF-8, no cookie
    (b"\xff\xfe\nimport torch\n", 1),                      # invalid UTF-8 on line 1
    (b"# -*- coding: no-such-codec -*-\nx = '\xe9'\n", 1),  # unknown encoding, and not UTF-8 either
    (b"import torch\nx = 1\x00\n", 2),                      # NUL byte
])
def test_undecodable_files_are_tll000(cli, tmp_path, data, line):
    bad = tmp_path / "bad.py"
    bad.write_bytes(data)
    good = tmp_path / "good.py"
    good.write_text(TLL002_SRC)
    result = cli("bad.py", "good.py")
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    tll000 = [l for l in result.stdout.splitlines() if l.startswith("bad.py:") and "TLL000" in l]
    assert len(tll000) == 1, result.stdout
    assert tll000[0].startswith(f"bad.py:{line}:")
    assert "good.py:7:5: TLL002" in result.stdout
    fixed = cli("--fix", "bad.py", "good.py")
    assert fixed.exit_code == 1
    assert bad.read_bytes() == data
    assert good.read_text() == TLL002_FIXED


def test_nul_byte_message(cli, tmp_path):
    (tmp_path / "bad.py").write_bytes(b"x = 1\x00\n")
    result = cli("bad.py")
    assert "TLL000" in result.stdout
    assert "NUL" in result.stdout or "null" in result.stdout.lower()


def test_decode_source_reports_encoding_and_bom():
    s = decode_source(codecs.BOM_UTF8 + b"x = 1\r\n")
    assert (s.text, s.encoding, s.bom) == ("x = 1\r\n", "utf-8", True)
    assert s.encode(s.text) == codecs.BOM_UTF8 + b"x = 1\r\n"
    s = decode_source("# coding: latin-1\ns = 'é'\n".encode("latin-1"))
    assert s.encoding.replace("_", "-").lower() in ("latin-1", "iso-8859-1", "iso8859-1")
    assert "é" in s.text
    assert s.encode(s.text) == "# coding: latin-1\ns = 'é'\n".encode("latin-1")


# --- the fix engine ---------------------------------------------------------------------

def _insert(line, col, content, applicability=SAFE):
    pos = Position(line, col)
    return Fix(applicability, "insert", (Edit(pos, pos, content),))


def test_apply_fixes_skips_overlapping_edits():
    source = SourceText("a = b\nc = d\n")
    replace_b = Fix(SAFE, "b", (Edit(Position(1, 4), Position(1, 5), "B"),))
    replace_b_again = Fix(SAFE, "b2", (Edit(Position(1, 4), Position(1, 5), "X"),))
    replace_d = Fix(SAFE, "d", (Edit(Position(2, 4), Position(2, 5), "D"),))
    text, count = apply_fixes(source, [replace_d, replace_b, replace_b_again])
    assert count == 2
    assert text in ("a = B\nc = D\n", "a = X\nc = D\n")


def test_apply_fixes_multi_edit_fix_is_all_or_nothing():
    source = SourceText("f(x)\ng(y)\n")
    wrap = Fix(SAFE, "wrap", (Edit(Position(1, 2), Position(1, 2), "("), Edit(Position(1, 3), Position(1, 3), ")")))
    # Replaces "(x" on line 1, which strictly contains the insertion point of "(".
    clash = Fix(SAFE, "clash", (Edit(Position(1, 1), Position(1, 3), "[z"), Edit(Position(2, 2), Position(2, 3), "w")))
    text, count = apply_fixes(source, [wrap, clash])
    assert count == 1
    assert text in ("f((x))\ng(y)\n", "f[z)\ng(w)\n")


def test_apply_fixes_crlf_offsets():
    source = SourceText("a = 1\r\nb = loss\r\n")
    text, count = apply_fixes(source, [_insert(2, 8, ".item()")])
    assert (text, count) == ("a = 1\r\nb = loss.item()\r\n", 1)


class _FakeSession:
    """Reports one diagnostic with the given fix until the text contains ``done``."""

    def __init__(self, fix, done):
        self.fix = fix
        self.done = done
        self.texts = []

    def lint_text(self, source, path):
        class R:
            pass

        r = R()
        r.diagnostics = [] if self.done in source.text else [
            Diagnostic("TLL001", "m", path, Position(1, 0), Position(1, 1), self.fix)]
        return r

    def set_text(self, path, text):
        self.texts.append(text)


def test_fix_that_breaks_the_syntax_is_not_applied():
    source = SourceText("x = loss\n")
    outcome = fix_source(_FakeSession(_insert(1, 8, " +"), done="never"), "f.py", source, unsafe=False)
    assert outcome.text == "x = loss\n"
    assert outcome.applied == 0
    assert outcome.error and "parse" in outcome.error


def test_fix_passes_are_capped():
    source = SourceText("x = loss\n")
    outcome = fix_source(_FakeSession(_insert(1, 8, "+0"), done="never"), "f.py", source, unsafe=False)
    assert outcome.applied == fix_engine.MAX_PASSES
    assert outcome.text == "x = loss" + "+0" * fix_engine.MAX_PASSES + "\n"


def test_fix_repeats_until_stable():
    source = SourceText("x = loss\n")
    session = _FakeSession(_insert(1, 8, ".item()"), done=".item()")
    outcome = fix_source(session, "f.py", source, unsafe=False)
    assert outcome.text == "x = loss.item()\n"
    assert outcome.applied == 1
    assert outcome.diagnostics == []
    assert outcome.error is None


def test_unsafe_fix_only_with_unsafe():
    source = SourceText("x = loss\n")
    fix = _insert(1, 8, ".item()", applicability="unsafe")
    assert fix_source(_FakeSession(fix, done=".item()"), "f.py", source, unsafe=False).text == "x = loss\n"
    assert fix_source(_FakeSession(fix, done=".item()"), "f.py", source, unsafe=True).text == "x = loss.item()\n"


def test_runner_fix_and_diff(tmp_path):
    a = tmp_path / "a.py"
    a.write_text(TLL001_SRC)
    diff = run([str(a)], Settings(), diff=True)
    assert diff.changed_files == [str(a)] and diff.fixed == 1
    assert a.read_text() == TLL001_SRC
    fixed = run([str(a)], Settings(), fix=True)
    assert fixed.fixed == 1 and fixed.diagnostics == []
    assert a.read_text() == TLL001_FIXED
    again = run([str(a)], Settings(), fix=True)
    assert again.fixed == 0 and again.changed_files == []


# --- the Python API ---------------------------------------------------------------------

def test_lint_source_returns_diagnostics():
    diags = torchleaklint.lint_source(TLL001_SRC)
    assert [(d.code, d.start.line, d.start.col) for d in diags] == [("TLL001", 7, 4)]
    assert diags[0].fix is not None and diags[0].fix.is_safe
    assert diags[0].evidence
    both = torchleaklint.lint_source(TLL001_SRC + TLL002_SRC.replace("import torch\n", "", 1))
    assert {d.code for d in both} == {"TLL001", "TLL002"}
    assert torchleaklint.lint_source(TLL001_FIXED) == []


def test_lint_source_settings():
    diags = torchleaklint.lint_source(TLL001_SRC, settings=Settings(select=("TLL002",)))
    assert diags == []


def test_lint_source_syntax_error():
    diags = torchleaklint.lint_source("def f(:\n")
    assert [d.code for d in diags] == ["TLL000"]


def test_fix_source_returns_fixed_code():
    assert torchleaklint.fix_source(TLL001_SRC) == TLL001_FIXED
    assert torchleaklint.fix_source(TLL002_SRC) == TLL002_FIXED
    assert torchleaklint.fix_source(TLL001_FIXED) == TLL001_FIXED
    bad = "def f(:\n"
    assert torchleaklint.fix_source(bad) == bad


def test_fix_source_unsafe():
    src = NAME_ONLY_SRC
    assert torchleaklint.fix_source(src) == src
    assert torchleaklint.fix_source(src, unsafe=True) == src.replace("append(loss)", "append(loss.item())")
    assert torchleaklint.fix_source(src, settings=Settings(unsafe_fixes=True)) == src.replace(
        "append(loss)", "append(loss.item())")


# --- unusual line breaks and columns ----------------------------------------------------

def test_lone_cr_newlines_are_kept(cli, tmp_path):
    path = tmp_path / "a.py"
    data = TLL001_SRC.replace("\n", "\r").encode()
    path.write_bytes(data)
    assert "a.py:7:5: TLL001" in cli("a.py").stdout
    assert cli("--fix", "a.py").exit_code == 0
    assert path.read_bytes() == TLL001_FIXED.replace("\n", "\r").encode()


@pytest.mark.parametrize("odd", ["\x0c", "\u2028", "\x0b", "\x85"])
def test_odd_characters_do_not_shift_lines(cli, tmp_path, odd):
    """Form feeds and Unicode line separators in comments are not line breaks for Python."""
    src = TLL001_SRC.replace("losses = []\n", f"losses = []  # odd{odd}char\n")
    path = tmp_path / "a.py"
    path.write_text(src, encoding="utf-8", newline="")
    assert "a.py:7:5: TLL001" in cli("a.py").stdout
    assert cli("--fix", "a.py").exit_code == 0
    assert path.read_bytes() == src.replace("append(loss)", "append(loss.item())").encode("utf-8")


def test_syntax_error_column_counts_characters(cli, tmp_path):
    import json

    (tmp_path / "bad.py").write_text('x = "ééé" + ) 2\n', encoding="utf-8")
    data = json.loads(cli("--output-format", "json", "bad.py").stdout)
    assert data[0]["code"] == "TLL000"
    assert data[0]["location"] == {"row": 1, "column": 13}
    assert "bad.py:1:13: TLL000" in cli("bad.py").stdout
