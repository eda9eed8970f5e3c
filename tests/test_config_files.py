"""Configuration beyond one pyproject.toml: the nearest table per file, force-exclude,
model/loss names, one-line errors; suppressions (skip-file, TLL100, --add-noqa); and the
CLI options around fixing (--show-fixes, --exit-non-zero-on-fix), colours and progress."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

from torchleaklint.engine.noqa import add_noqa

from .snippets import BOTH_SRC, CLEAN_SRC, LINE_RE, TLL001_SRC


def findings(out):
    return sorted((m["path"], int(m["row"]), m["code"]) for m in map(LINE_RE.match, out.splitlines()) if m)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def one_line_error(result, *needles):
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("torchleaklint: error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


# --- the nearest configuration --------------------------------------------------------

def test_nearest_table_governs_each_file(cli, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.torchleaklint]\nselect = ["TLL001"]\n')
    write(tmp_path / "a.py", BOTH_SRC)
    write(tmp_path / "sub" / "pyproject.toml", '[tool.torchleaklint]\nselect = ["TLL002"]\n')
    write(tmp_path / "sub" / "b.py", BOTH_SRC)
    # A pyproject.toml without a [tool.torchleaklint] table does not stop the search.
    write(tmp_path / "other" / "pyproject.toml", '[project]\nname = "other"\n')
    write(tmp_path / "other" / "c.py", BOTH_SRC)
    expected = [("a.py", 8, "TLL001"), ("other/c.py", 8, "TLL001"), ("sub/b.py", 9, "TLL002")]
    assert findings(cli(".").stdout) == expected
    assert findings(cli("sub/b.py", "a.py").stdout) == [("a.py", 8, "TLL001"), ("sub/b.py", 9, "TLL002")]
    # --config governs every file; command-line options go on top of each file's table.
    write(tmp_path / "conf.toml", 'select = ["TLL002"]\n')
    assert findings(cli("--config", "conf.toml", ".").stdout) == [("a.py", 9, "TLL002"), ("other/c.py", 9, "TLL002"),
                                                                  ("sub/b.py", 9, "TLL002")]
    assert findings(cli("--ignore", "TLL001,TLL002", ".").stdout) == []


def test_per_file_ignores_are_relative_to_the_config(cli, tmp_path):
    write(tmp_path / "pkg" / "pyproject.toml",
          '[tool.torchleaklint.per-file-ignores]\n"scripts/*" = ["TLL001"]\n')
    write(tmp_path / "pkg" / "scripts" / "t.py", BOTH_SRC)
    assert findings(cli("pkg").stdout) == [("pkg/scripts/t.py", 9, "TLL002")]


def test_force_exclude_applies_to_named_files(cli, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.torchleaklint]\nextend-exclude = ["generated", "legacy/*.py"]\n')
    write(tmp_path / "generated" / "g.py", TLL001_SRC)
    write(tmp_path / "legacy" / "l.py", TLL001_SRC)
    assert findings(cli(".").stdout) == []
    assert findings(cli("generated/g.py").stdout) == [("generated/g.py", 7, "TLL001")]
    result = cli("--force-exclude", "generated/g.py", "legacy/l.py")
    assert result.exit_code == 0 and findings(result.stdout) == []
    write(tmp_path / "pyproject.toml", '[tool.torchleaklint]\nextend-exclude = ["generated"]\nforce-exclude = true\n')
    assert cli("generated/g.py").exit_code == 0
    assert cli("--no-force-exclude", "generated/g.py").exit_code == 1


def test_configured_model_and_loss_names_make_findings(cli, tmp_path):
    src = (
        "import torch\n"
        "outputs = []\n"
        "for x, y in loader:\n"
        "    out = learner(x)\n"
        "    outputs.append(out)  # expect: TLL001\n"
        "    err = my_crit(out, y)\n"
        "    history.append(err)  # expect: TLL001\n"
        "    reg = out.pow(2).mean()\n"
        "    reg.backward()\n"
        "history = []\n"
    )
    write(tmp_path / "a.py", src.replace("history = []\n", "").replace("outputs = []\n", "outputs = []\nhistory = []\n"))
    assert findings(cli("a.py").stdout) == []
    write(tmp_path / "pyproject.toml", '[tool.torchleaklint]\nmodel-names = ["learner"]\n')
    got = findings(cli("a.py").stdout)
    assert got == [("a.py", 6, "TLL001")]
    write(tmp_path / "pyproject.toml", '[tool.torchleaklint]\nmodel-names = ["learner"]\nloss-names = ["my_crit"]\n')
    assert findings(cli("a.py").stdout) == [("a.py", 6, "TLL001"), ("a.py", 8, "TLL001")]
    # Evidence by configured name is naming convention: the fix is unsafe.
    assert "[*]" not in cli("a.py").stdout.split("Found")[0]


@pytest.mark.parametrize("body, needles", [
    ('[tool.torchleaklint.tll999]\nx = 1\n', ["tll999", "unknown rule code TLL999"]),
    ('[tool.torchleaklint]\nrespect-gitignore = "no"\n', ["respect-gitignore", "true or false"]),
    ('[tool.torchleaklint]\nforce-exclude = 1\n', ["force-exclude"]),
    ('[tool.torchleaklint]\nexclude = 3\n', ["exclude", "list of strings"]),
    ('[tool.torchleaklint]\nper-file-ignores = ["a"]\n', ["per-file-ignores"]),
    ('[tool.torchleaklint.per-file-ignores]\n"*.py" = ["TLL777"]\n', ["per-file-ignores", "TLL777"]),
    ('[tool.torchleaklint.tll004]\nhistory-maxlen = "big"\n', ["history-maxlen", "int"]),
    ('[tool.torchleaklint]\nmodel-names = ["not an identifier"]\n', ["model-names", "identifier"]),
    ('[tool.torchleaklint]\nloss-names = 3\n', ["loss-names"]),
    ('[tool.torchleaklint]\nextend-select = ["TLL2"]\n', ["extend-select", "TLL2"]),
    ('tool = 3\n', []),
])
def test_config_errors_are_one_line_naming_file_and_key(cli, tmp_path, body, needles):
    write(tmp_path / "pyproject.toml", body)
    write(tmp_path / "a.py", BOTH_SRC)
    result = cli("a.py")
    if not needles:  # not our table: ignored
        assert result.exit_code == 1
        return
    one_line_error(result, "pyproject.toml", *needles)


def test_config_errors_in_a_nested_config(cli, tmp_path):
    write(tmp_path / "sub" / "pyproject.toml", '[tool.torchleaklint]\nselcet = ["TLL001"]\n')
    write(tmp_path / "sub" / "a.py", BOTH_SRC)
    one_line_error(cli("."), "sub/pyproject.toml", "selcet", "unknown option")


# --- suppressions -----------------------------------------------------------------------

def test_skip_file(cli, tmp_path):
    path = write(tmp_path / "a.py", "# torchleaklint: skip-file\n" + BOTH_SRC)
    assert cli("a.py").exit_code == 0
    assert cli("--fix", "a.py").exit_code == 0
    assert path.read_text() == "# torchleaklint: skip-file\n" + BOTH_SRC
    write(tmp_path / "b.py", 'NOTE = "# torchleaklint: skip-file"\n' + BOTH_SRC)
    assert cli("b.py").exit_code == 1


def test_unused_noqa_only_when_selected(cli, tmp_path):
    src = CLEAN_SRC.replace("losses.append(loss.item())",
                            "losses.append(loss.item())  # noqa: TLL001, E501, TLL999") + \
        "x = 1  # noqa: TLL002\ny = 2  # noqa\nz = 3  # noqa: TLL007\n"
    path = write(tmp_path / "a.py", src)
    assert cli("a.py").exit_code == 0
    result = cli("--extend-select", "TLL100", "--ignore", "TLL007", "a.py")
    assert findings(result.stdout) == [("a.py", 7, "TLL100"), ("a.py", 9, "TLL100")]
    assert "unused: `TLL001`; unknown: `TLL999`" in result.stdout
    assert cli("--extend-select", "TLL100", "--ignore", "TLL007", "--fix", "a.py").exit_code == 0
    text = path.read_text()
    assert "losses.append(loss.item())  # noqa: E501\n" in text
    assert "x = 1\n" in text and "y = 2  # noqa\n" in text and "z = 3  # noqa: TLL007\n" in text
    # A noqa that suppresses a finding is used.
    write(tmp_path / "b.py", TLL001_SRC.replace("losses.append(loss)", "losses.append(loss)  # noqa: TLL001"))
    assert cli("--extend-select", "TLL100", "b.py").exit_code == 0
    # From the configuration too.
    write(tmp_path / "pyproject.toml", '[tool.torchleaklint]\nextend-select = ["TLL100"]\n')
    assert findings(cli("a.py").stdout) == [("a.py", 11, "TLL100")]  # TLL007 is enabled now


def test_add_noqa_then_clean_and_idempotent(cli, tmp_path):
    path = write(tmp_path / "a.py", BOTH_SRC.replace("total += loss", "total += loss  # noqa: E501"))
    result = cli("--add-noqa", ".")
    assert result.exit_code == 0
    assert "Added 2 noqa directives in 1 file." in result.stderr
    text = path.read_text()
    assert "losses.append(loss)  # noqa: TLL001\n" in text
    assert "total += loss  # noqa: E501, TLL002\n" in text
    assert cli("a.py").exit_code == 0
    assert "Added 0 noqa directives" in cli("--add-noqa", ".").stderr
    assert path.read_text() == text
    one_line_error(cli("--add-noqa", "--fix", "."), "--add-noqa")


def test_add_noqa_never_writes_inside_a_string():
    text = 'x = f("""a\nb""")\ny = 1\n'
    new, count = add_noqa(text, {1: {"TLL001"}, 3: {"TLL002"}})
    assert count == 1 and new == 'x = f("""a\nb""")\ny = 1  # noqa: TLL002\n'
    new, count = add_noqa("y = g(1,\n      2)\n", {1: {"TLL001"}})
    assert count == 1 and new == "y = g(1,  # noqa: TLL001\n      2)\n"


# --- fixing options -------------------------------------------------------------------

def test_show_fixes_and_exit_non_zero_on_fix(cli, tmp_path):
    path = write(tmp_path / "a.py", BOTH_SRC)
    shown = cli("--show-fixes", "a.py")
    assert "= fix: Append `.item()`" in shown.stdout
    result = cli("--fix", "--show-fixes", "--exit-non-zero-on-fix", "a.py")
    assert result.exit_code == 1
    assert "Fixed 2 errors:\n- a.py:\n    1 × TLL001 (graph-tensor-stored)\n    1 × TLL002 (graph-tensor-accumulated)" \
        in result.stdout
    assert cli("--fix", "--exit-non-zero-on-fix", "a.py").exit_code == 0  # nothing changed the second time
    assert "losses.append(loss.item())" in path.read_text()


# --- terminals: colours and the progress bar ---------------------------------------------

def run_on_terminal(args, cwd, env_extra=None, stream="stdout"):
    """Run the CLI with one stream attached to a pseudo-terminal; return (tty output, other)."""
    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120")
    env.pop("NO_COLOR", None)
    env.update(env_extra or {})
    kwargs = {"stdout": slave, "stderr": subprocess.PIPE} if stream == "stdout" else \
        {"stdout": subprocess.PIPE, "stderr": slave}
    proc = subprocess.Popen([sys.executable, "-m", "torchleaklint", *args], cwd=cwd, env=env, **kwargs)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    out, err = proc.communicate(timeout=120)
    other = err if stream == "stdout" else out
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace"), other.decode("utf-8", "replace")


def test_colours_only_on_a_terminal_and_never_with_no_color(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.other]\n")
    write(tmp_path / "a.py", TLL001_SRC)
    tty, _ = run_on_terminal(["a.py"], tmp_path)
    assert "\x1b[" in tty and "TLL001" in tty
    tty, _ = run_on_terminal(["a.py"], tmp_path, {"NO_COLOR": "1"})
    assert "\x1b[" not in tty and "TLL001" in tty
    tty, _ = run_on_terminal(["--no-color", "a.py"], tmp_path)
    assert "\x1b[" not in tty


def test_progress_bar_on_a_terminal_only(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.other]\n")
    for i in range(30):
        write(tmp_path / f"m{i:02d}.py", CLEAN_SRC)
    tty_err, out = run_on_terminal(["."], tmp_path, stream="stderr")
    assert "Linting" in tty_err and "All checks passed!" in out
    piped = subprocess.run([sys.executable, "-m", "torchleaklint", "."], cwd=tmp_path, capture_output=True, text=True,
                           timeout=120)
    assert piped.stderr == "" and "All checks passed!" in piped.stdout
