"""The options a ruff user reaches for, in ruff's spelling: -o/--output-file,
--exclude/--extend-exclude, -V, --show-files, --show-settings, `rule CODE`, `version`, the
warning on a folder without Python files, `rules` whole in a pipe, and standalone
configuration files (torchleaklint.toml, .torchleaklint.toml, --config with a
[tool.torchleaklint] table)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from torchleaklint import __version__
from torchleaklint.rules import ALL_RULES

from .snippets import CLEAN_SRC, TLL001_SRC, TLL002_SRC
from .test_config_files import findings, one_line_error, write


# --- -o / --output-file ----------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["sarif", "json", "gitlab", "junit", "text"])
def test_output_file_gets_the_report_and_stdout_stays_empty(cli, tmp_path, fmt):
    write(tmp_path / "train.py", TLL001_SRC)
    piped = cli("--output-format", fmt, "--no-cache", "train.py")
    result = cli("--output-format", fmt, "-o", "reports/out.txt", "--no-cache", "train.py")
    assert result.exit_code == 1
    assert result.stdout == ""
    written = (tmp_path / "reports" / "out.txt").read_text()
    assert written == piped.stdout
    assert "TLL001" in written
    if fmt == "sarif":
        assert json.loads(written)["runs"][0]["results"][0]["ruleId"] == "TLL001"
    long_form = cli("--output-format", fmt, "--output-file", "long.txt", "--no-cache", "train.py")
    assert long_form.exit_code == 1 and (tmp_path / "long.txt").read_text() == written


def test_output_file_with_statistics_and_a_clean_run(cli, tmp_path):
    write(tmp_path / "train.py", TLL001_SRC)
    result = cli("--statistics", "-o", "stats.txt", "train.py")
    assert result.exit_code == 1 and result.stdout == ""
    assert "TLL001" in (tmp_path / "stats.txt").read_text()
    write(tmp_path / "clean.py", CLEAN_SRC)
    result = cli("-o", "clean.txt", "clean.py")
    assert result.exit_code == 0
    assert (tmp_path / "clean.txt").read_text() == "All checks passed!\n"


def test_output_file_that_cannot_be_written_is_one_line(cli, tmp_path):
    write(tmp_path / "train.py", TLL001_SRC)
    (tmp_path / "adir").mkdir()
    one_line_error(cli("-o", "adir", "train.py"), "adir", "cannot write the report")
    write(tmp_path / "afile", "x")
    one_line_error(cli("-o", "afile/report.json", "train.py"), "afile/report.json", "cannot write the report")
    assert [p.name for p in (tmp_path / "adir").iterdir()] == []  # no temporary file left behind


# --- --exclude / --extend-exclude --------------------------------------------------------

def test_extend_exclude_adds_to_the_configured_list(cli, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.torchleaklint]\nextend-exclude = ["legacy"]\n')
    for name in ("src/a.py", "legacy/b.py", "generated/c.py", "generated_d.py"):
        write(tmp_path / name, TLL001_SRC)
    result = cli("--extend-exclude", "generated,generated_*.py", ".")
    assert findings(result.stdout) == [("src/a.py", 7, "TLL001")]


def test_exclude_replaces_the_default_list(cli, tmp_path):
    write(tmp_path / "build/a.py", TLL001_SRC)
    write(tmp_path / "src/b.py", TLL001_SRC)
    assert findings(cli(".").stdout) == [("src/b.py", 7, "TLL001")]  # build/ is excluded by default
    result = cli("--exclude", "src", ".")
    assert findings(result.stdout) == [("build/a.py", 7, "TLL001")]


def test_exclude_applies_to_named_files_with_force_exclude(cli, tmp_path):
    write(tmp_path / "gen/a.py", TLL001_SRC)
    assert cli("--extend-exclude", "gen", "gen/a.py").exit_code == 1  # a named file is linted
    result = cli("--extend-exclude", "gen", "--force-exclude", "gen/a.py")
    assert result.exit_code == 0 and findings(result.stdout) == []


# --- -V, version, rule, rules ------------------------------------------------------------

@pytest.mark.parametrize("args", [["-V"], ["--version"], ["version"], ["check", "-V"]])
def test_version_spellings(cli, args):
    result = cli(*args)
    assert result.exit_code == 0
    assert result.stdout == f"torchleaklint {__version__}\n"


def test_rule_is_explain(cli):
    rule = cli("rule", "TLL002")
    assert rule.exit_code == 0
    assert rule.stdout == cli("explain", "TLL002").stdout
    assert "graph-tensor-accumulated" in rule.stdout
    one_line_error(cli("rule", "TLL999"), "TLL999")


def test_rules_is_never_cut_in_a_pipe(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "torchleaklint", "rules"], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "COLUMNS": "40"})
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout
    for rule in ALL_RULES:
        line = next(line for line in proc.stdout.splitlines() if line.startswith(rule.code))
        assert rule.name in line and rule.summary in line and rule.fix_availability in line


# --- no Python files -------------------------------------------------------------------------

def test_empty_folder_warns_in_ruffs_words(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    write(tmp_path / "empty/README.md", "# nothing\n")
    result = cli("empty")
    assert result.exit_code == 0
    assert result.stderr.strip() == "torchleaklint: warning: No Python files found under the given path(s)"
    assert "All checks passed" not in result.stdout
    assert cli("-q", "empty").stderr == ""
    write(tmp_path / "empty/a.py", CLEAN_SRC)
    result = cli("empty")
    assert "No Python files" not in result.stderr and "All checks passed!" in result.stdout


# --- --show-files / --show-settings -----------------------------------------------------------

def test_show_files_lists_what_would_be_checked(cli, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.torchleaklint]\nextend-exclude = ["legacy"]\n')
    for name in ("src/a.py", "src/b.ipynb", "legacy/c.py", ".venv/d.py", "notes.txt"):
        write(tmp_path / name, "x = 1\n")
    result = cli("--show-files", ".")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [str(tmp_path / "src/a.py"), str(tmp_path / "src/b.ipynb")]


def test_show_settings_names_the_file_and_its_configuration(cli, tmp_path):
    config = write(tmp_path / "pkg/torchleaklint.toml",
                   'ignore = ["TLL004"]\nmodel-names = ["learner"]\n[tll004]\nhistory-maxlen = 50\n')
    write(tmp_path / "pkg/train.py", TLL001_SRC)
    result = cli("--show-settings", "--extend-exclude", "gen", "pkg")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == f'Resolved settings for: "{tmp_path / "pkg/train.py"}"'
    assert lines[1] == f'Settings path: "{config}"'
    assert 'ignore = ["TLL004"]' in lines and 'model-names = ["learner"]' in lines
    assert 'extend-exclude = ["gen"]' in lines
    assert "max-file-size-mb = 4" in lines
    assert "history-maxlen = 50" in lines
    assert any(line.startswith("# enabled rules:") and "TLL004" not in line and "TLL001" in line for line in lines)


# --- standalone configuration files -------------------------------------------------------------

@pytest.mark.parametrize("name", ["torchleaklint.toml", ".torchleaklint.toml"])
def test_standalone_config_file_governs_its_folder(cli, tmp_path, name):
    write(tmp_path / "pkg" / name, 'select = ["TLL002"]\n')
    write(tmp_path / "pkg/a.py", TLL001_SRC)
    write(tmp_path / "pkg/b.py", TLL002_SRC)
    write(tmp_path / "other/c.py", TLL001_SRC)
    result = cli(".")
    assert findings(result.stdout) == [("other/c.py", 7, "TLL001"), ("pkg/b.py", 7, "TLL002")]


def test_standalone_files_take_precedence_as_in_ruff(cli, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.torchleaklint]\nselect = ["TLL001"]\n')
    write(tmp_path / "torchleaklint.toml", 'select = ["TLL002"]\n')
    write(tmp_path / "a.py", TLL001_SRC)
    write(tmp_path / "b.py", TLL002_SRC)
    assert findings(cli(".").stdout) == [("b.py", 7, "TLL002")]
    write(tmp_path / ".torchleaklint.toml", 'select = ["TLL001"]\n')
    assert findings(cli(".").stdout) == [("a.py", 7, "TLL001")]


def test_config_flag_reads_a_tool_table_from_any_file(cli, tmp_path):
    write(tmp_path / "other.toml", '[tool.torchleaklint]\nselect = ["TLL002"]\n')
    write(tmp_path / "a.py", TLL001_SRC)
    write(tmp_path / "b.py", TLL002_SRC)
    result = cli("--config", "other.toml", ".")
    assert result.exit_code == 1, result.stderr
    assert findings(result.stdout) == [("b.py", 7, "TLL002")]
    write(tmp_path / "top.toml", 'select = ["TLL001"]\n')
    assert findings(cli("--config", "top.toml", ".").stdout) == [("a.py", 7, "TLL001")]
    # shaped like a pyproject.toml: the other tables are not ours to read
    write(tmp_path / "cfg/shared.toml", '[project]\nname = "x"\n[tool.black]\nline-length = 99\n'
                                         '[tool.torchleaklint]\nselect = ["TLL002"]\n')
    assert findings(cli("--config", "cfg/shared.toml", ".").stdout) == [("b.py", 7, "TLL002")]


@pytest.mark.parametrize("body, needles", [
    ('select = ["TLL001"]\n[tool.torchleaklint]\nignore = ["TLL002"]\n', ["mixed.toml", "select"]),
    ('line-length = 1\n[tool.torchleaklint]\nselect = ["TLL001"]\n', ["mixed.toml", "line-length"]),
    ('[tool]\ntorchleaklint = 3\n', ["mixed.toml", "must be a table"]),
    ('[tool.torchleaklint]\nselekt = ["TLL001"]\n', ["mixed.toml", "selekt", "unknown option"]),
])
def test_standalone_config_mistakes_are_one_line(cli, tmp_path, body, needles):
    write(tmp_path / "mixed.toml", body)
    write(tmp_path / "a.py", TLL001_SRC)
    one_line_error(cli("--config", "mixed.toml", "a.py"), *needles)
    write(tmp_path / "pkg/torchleaklint.toml", body)
    write(tmp_path / "pkg/a.py", TLL001_SRC)
    one_line_error(cli("pkg"), "torchleaklint.toml", needles[1])


def test_output_file_with_standard_input(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "torchleaklint", *args], input=TLL001_SRC, capture_output=True,
                              text=True, cwd=tmp_path, env={**os.environ, "NO_COLOR": "1"})

    proc = run("--stdin-filename", "train.py", "--output-format", "json", "-o", "out.json", "-")
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    assert [d["code"] for d in json.loads((tmp_path / "out.json").read_text())] == ["TLL001"]
    proc = run("--fix", "--unsafe-fixes", "--stdin-filename", "train.py", "-o", "left.txt", "-")
    assert proc.returncode == 0 and "losses.append(loss.item())" in proc.stdout
    assert (tmp_path / "left.txt").read_text() == ""
