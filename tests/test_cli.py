"""The command line through click's CliRunner: exit codes, output formats, noqa,
rule selection, --diff, --fix, discovery, and the ``rules``/``explain`` commands."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest


from .snippets import BOTH_SRC, CLEAN_SRC, LINE_RE, NAME_ONLY_SRC, TLL001_FIXED, TLL001_SRC, TLL002_FIXED, TLL002_SRC

# --- helpers ----------------------------------------------------------------------------


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def finding_lines(out: str):
    return [m.groupdict() for m in map(LINE_RE.match, out.splitlines()) if m]


def codes_of(out: str):
    return sorted((f["path"], int(f["row"]), f["code"]) for f in finding_lines(out))


def one_line_error(result, *needles):
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0]
    assert "Traceback" not in result.output


def apply_json_edits(text: str, edits) -> str:
    """Apply ruff-style edits (1-based rows and columns, in characters) to ``text``."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(loc):
        return starts[loc["row"] - 1] + loc["column"] - 1

    spans = sorted(((offset(e["location"]), offset(e["end_location"]), e["content"]) for e in edits), reverse=True)
    for start, end, content in spans:
        text = text[:start] + content + text[end:]
    return text


# --- exit codes -------------------------------------------------------------------------

def test_clean_file_exits_0(cli, tmp_path):
    write(tmp_path, "a.py", CLEAN_SRC)
    result = cli("a.py")
    assert result.exit_code == 0, result.output
    assert finding_lines(result.stdout) == []
    assert "All checks passed!" in result.stdout


def test_findings_exit_1(cli, tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    result = cli("a.py")
    assert result.exit_code == 1, result.output
    assert codes_of(result.stdout) == [("a.py", 7, "TLL001")]


def test_explicit_check_subcommand_is_the_same(cli, tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    result = cli("check", "a.py")
    assert result.exit_code == 1
    assert codes_of(result.stdout) == [("a.py", 7, "TLL001")]


def test_default_path_is_current_folder(cli, tmp_path):
    write(tmp_path, "pkg/a.py", TLL001_SRC)
    result = cli()
    assert result.exit_code == 1
    assert codes_of(result.stdout) == [("pkg/a.py", 7, "TLL001")]


@pytest.mark.parametrize("args", [["--select", "TLL999"], ["--select", "TLL001,TLL999"],
                                  ["--ignore", "TLL999"], ["--extend-select", "TLL999"]])
def test_unknown_code_exits_2_with_one_line(cli, tmp_path, args):
    write(tmp_path, "a.py", TLL001_SRC)
    result = cli(*args, "a.py")
    one_line_error(result, "TLL999")
    assert finding_lines(result.stdout) == []


def test_nonexistent_path_exits_2(cli, tmp_path):
    result = cli("missing_dir/nope.py")
    one_line_error(result, "missing_dir/nope.py")


def test_exit_zero(cli, tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    result = cli("--exit-zero", "a.py")
    assert result.exit_code == 0
    assert codes_of(result.stdout) == [("a.py", 7, "TLL001")]


def test_unknown_option_is_a_usage_error(cli, tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    result = cli("--no-such-option", "a.py")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


# --- text output ------------------------------------------------------------------------

def test_text_line_format_and_summary(cli, tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    write(tmp_path, "b.py", TLL002_SRC)
    result = cli("a.py", "b.py")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    a = [line for line in lines if line.startswith("a.py:")]
    b = [line for line in lines if line.startswith("b.py:")]
    assert len(a) == 1 and len(b) == 1
    assert re.match(r"^a\.py:7:5: TLL001 \[\*\] \S", a[0]), a[0]
    assert re.match(r"^b\.py:7:5: TLL002 \[\*\] \S", b[0]), b[0]
    assert "loss" in a[0] and "losses" in a[0]
    assert "total" in b[0]
    assert "Found 2 errors." in result.stdout
    assert re.search(r"\[\*\] 2 fixable with the `--fix` option", result.stdout)
    # The summary comes after the findings.
    assert result.stdout.index("Found 2 errors.") > result.stdout.index("b.py:7:5")


def test_summary_singular(cli, tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    result = cli("a.py")
    assert "Found 1 error." in result.stdout


def test_quiet_omits_summary(cli, tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    result = cli("--quiet", "a.py")
    assert result.exit_code == 1
    assert codes_of(result.stdout) == [("a.py", 7, "TLL001")]
    assert "Found" not in result.stdout


def test_concise_format(cli, tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    write(tmp_path, "b.py", TLL002_SRC)
    result = cli("--output-format", "concise", "a.py", "b.py")
    assert result.exit_code == 1
    assert codes_of(result.stdout) == [("a.py", 7, "TLL001"), ("b.py", 7, "TLL002")]
    # One line per finding: nothing indented (no evidence, no code frames).
    assert not [line for line in result.stdout.splitlines() if line.startswith((" ", "\t"))]


def test_unknown_output_format_is_rejected(cli, tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    result = cli("--output-format", "yaml", "a.py")
    assert result.exit_code == 2


def test_show_evidence_prints_the_evidence(cli, tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    evidence = json.loads(cli("--output-format", "json", "a.py").stdout)[0]["evidence"]
    assert evidence
    plain = cli("a.py").stdout
    shown = cli("--show-evidence", "a.py").stdout
    for note in evidence:
        assert note in shown
        assert note not in plain
    # The evidence says where the graph comes from.
    assert "line 5" in shown


def test_statistics_counts_per_code(cli, tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    write(tmp_path, "b.py", TLL001_SRC)
    write(tmp_path, "c.py", TLL002_SRC)
    result = cli("--statistics", "a.py", "b.py", "c.py")
    assert result.exit_code == 1
    out = result.stdout
    assert re.search(r"^\s*2\s+TLL001\b", out, re.M), out
    assert re.search(r"^\s*1\s+TLL002\b", out, re.M), out
    assert "graph-tensor-stored" in out
    assert finding_lines(out) == []  # counts instead of each finding


def test_no_ansi_escapes_when_not_a_terminal(cli, tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    result = cli("--show-evidence", "a.py")
    assert "\x1b[" not in result.output


# --- json output ------------------------------------------------------------------------

RUFF_KEYS = {"code", "message", "filename", "location", "end_location", "fix", "noqa_row", "url"}


def test_json_schema_and_positions(cli, tmp_path):
    path = write(tmp_path, "a.py", TLL001_SRC)
    result = cli("--output-format", "json", "a.py")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert isinstance(data, list) and len(data) == 1
    item = data[0]
    assert RUFF_KEYS | {"evidence"} <= set(item)
    assert item["code"] == "TLL001"
    assert isinstance(item["message"], str) and item["message"]
    assert Path(item["filename"]).resolve() == path.resolve()
    # `losses.append(loss)` is at row 7, columns 5..24 (1-based, end exclusive).
    assert item["location"] == {"row": 7, "column": 5}
    assert item["end_location"] == {"row": 7, "column": 24}
    assert item["noqa_row"] == 7
    assert isinstance(item["url"], str) and item["url"].startswith("http") and "TLL001" in item["url"]
    assert isinstance(item["evidence"], list) and item["evidence"]
    assert all(isinstance(e, str) and e for e in item["evidence"])
    fix = item["fix"]
    assert fix["applicability"] == "safe"
    assert isinstance(fix["message"], str) and fix["message"]
    assert fix["edits"]
    for edit in fix["edits"]:
        assert set(edit) >= {"content", "location", "end_location"}
        assert set(edit["location"]) == {"row", "column"}
    assert apply_json_edits(TLL001_SRC, fix["edits"]) == TLL001_FIXED


def test_json_edits_use_character_columns(cli, tmp_path):
    """Non-ASCII text before the finding on the same line: columns count characters."""
    src = TLL001_SRC.replace("    losses.append(loss)", '    tag = "héllo😀"; losses.append(loss)')
    write(tmp_path, "a.py", src)
    data = json.loads(cli("--output-format", "json", "--unsafe-fixes", "a.py").stdout)
    assert [d["code"] for d in data] == ["TLL001"]
    assert data[0]["location"] == {"row": 7, "column": len('    tag = "héllo😀"; ') + 1}
    fixed = apply_json_edits(src, data[0]["fix"]["edits"])
    assert 'losses.append(loss.item())' in fixed or "losses.append(loss.detach()" in fixed
    assert fixed.count("héllo😀") == 1


def test_json_clean_is_empty_list(cli, tmp_path):
    write(tmp_path, "a.py", CLEAN_SRC)
    result = cli("--output-format", "json", "a.py")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == []


def test_json_unsafe_fix_and_parse_error(cli, tmp_path):
    write(tmp_path, "a.py", NAME_ONLY_SRC)
    write(tmp_path, "bad.py", "x = 1\ndef f(:\n    pass\n")
    data = json.loads(cli("--output-format", "json", "a.py", "bad.py").stdout)
    by_code = {d["code"]: d for d in data}
    assert set(by_code) == {"TLL001", "TLL000"}
    assert by_code["TLL001"]["fix"]["applicability"] == "unsafe"
    assert by_code["TLL000"]["fix"] is None
    assert by_code["TLL000"]["location"]["row"] == 2


def test_json_matches_fix_for_both_rules(cli, tmp_path):
    write(tmp_path, "a.py", BOTH_SRC)
    data = json.loads(cli("--output-format", "json", "a.py").stdout)
    assert sorted((d["code"], d["location"]["row"]) for d in data) == [("TLL001", 8), ("TLL002", 9)]
    edits = [e for d in data for e in d["fix"]["edits"]]
    expected = apply_json_edits(BOTH_SRC, edits)
    assert cli("--fix", "a.py").exit_code == 0
    assert (tmp_path / "a.py").read_text() == expected


# --- noqa -------------------------------------------------------------------------------

@pytest.mark.parametrize("comment", ["# noqa", "# noqa: TLL001", "# noqa:TLL001", "# noqa: TLL001,TLL002",
                                     "# noqa: TLL002, TLL001"])
def test_noqa_suppresses(cli, tmp_path, comment):
    src = TLL001_SRC.replace("losses.append(loss)", f"losses.append(loss)  {comment}")
    path = write(tmp_path, "a.py", src)
    result = cli("a.py")
    assert result.exit_code == 0, result.output
    assert finding_lines(result.stdout) == []
    # Suppressed findings are never fixed.
    before = path.read_bytes()
    fixed = cli("--fix", "a.py")
    assert fixed.exit_code == 0
    assert path.read_bytes() == before
    assert cli("--diff", "a.py").exit_code == 0


def test_noqa_for_another_code_does_not_suppress(cli, tmp_path):
    src = TLL001_SRC.replace("losses.append(loss)", "losses.append(loss)  # noqa: TLL002")
    write(tmp_path, "a.py", src)
    result = cli("a.py")
    assert result.exit_code == 1
    assert codes_of(result.stdout) == [("a.py", 7, "TLL001")]


def test_noqa_on_another_line_does_not_suppress(cli, tmp_path):
    src = TLL001_SRC.replace("loss.backward()", "loss.backward()  # noqa")
    write(tmp_path, "a.py", src)
    assert codes_of(cli("a.py").stdout) == [("a.py", 7, "TLL001")]


def test_noqa_suppresses_tll002_only_where_written(cli, tmp_path):
    src = BOTH_SRC.replace("total += loss", "total += loss  # noqa: TLL002")
    path = write(tmp_path, "a.py", src)
    assert codes_of(cli("a.py").stdout) == [("a.py", 8, "TLL001")]
    assert cli("--fix", "a.py").exit_code == 0
    text = path.read_text()
    assert "losses.append(loss.item())" in text
    assert "total += loss  # noqa: TLL002" in text


# --- selection --------------------------------------------------------------------------

@pytest.mark.parametrize("args, expected", [
    ([], {8: "TLL001", 9: "TLL002"}),
    (["--select", "TLL002"], {9: "TLL002"}),
    (["--select", "TLL001"], {8: "TLL001"}),
    (["--ignore", "TLL001"], {9: "TLL002"}),
    (["--select", "TLL0"], {8: "TLL001", 9: "TLL002"}),
    (["--select", "ALL"], {8: "TLL001", 9: "TLL002"}),
    (["--select", "TLL001,TLL002"], {8: "TLL001", 9: "TLL002"}),
    (["--select", "TLL001", "--extend-select", "TLL002"], {8: "TLL001", 9: "TLL002"}),
    (["--select", "ALL", "--ignore", "TLL0"], {}),
    (["--select", "TLL0", "--ignore", "TLL002"], {8: "TLL001"}),
])
def test_select_and_ignore(cli, tmp_path, args, expected):
    write(tmp_path, "a.py", BOTH_SRC)
    result = cli(*args, "a.py")
    found = {int(f["row"]): f["code"] for f in finding_lines(result.stdout)}
    assert found == expected
    assert result.exit_code == (1 if expected else 0)


def test_select_restricts_fix(cli, tmp_path):
    path = write(tmp_path, "a.py", BOTH_SRC)
    assert cli("--fix", "--select", "TLL002", "a.py").exit_code == 0
    text = path.read_text()
    assert "total += loss.item()" in text
    assert "losses.append(loss)\n" in text


# --- --diff -----------------------------------------------------------------------------

def test_diff_prints_and_writes_nothing(cli, tmp_path):
    path = write(tmp_path, "a.py", TLL001_SRC)
    before = path.read_bytes()
    result = cli("--diff", "a.py")
    assert result.exit_code == 1
    out = result.stdout
    assert "--- a/a.py" in out and "+++ b/a.py" in out
    assert "\n-    losses.append(loss)\n" in out
    assert "\n+    losses.append(loss.item())\n" in out
    assert re.search(r"^@@ -\d+,\d+ \+\d+,\d+ @@", out, re.M)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "pyproject.toml"]


def test_diff_clean_file(cli, tmp_path):
    path = write(tmp_path, "a.py", CLEAN_SRC)
    before = path.read_bytes()
    result = cli("--diff", "a.py")
    assert result.exit_code == 0
    assert "---" not in result.stdout and "+++" not in result.stdout
    assert path.read_bytes() == before


def test_diff_with_only_unsafe_fixes_shows_nothing(cli, tmp_path):
    path = write(tmp_path, "a.py", NAME_ONLY_SRC)
    result = cli("--diff", "a.py")
    assert "+++" not in result.stdout
    assert path.read_text() == NAME_ONLY_SRC
    shown = cli("--diff", "--unsafe-fixes", "a.py")
    assert shown.exit_code == 1
    assert "+    losses.append(loss.item())" in shown.stdout
    assert path.read_text() == NAME_ONLY_SRC


def test_diff_is_a_valid_patch(cli, tmp_path):
    """The printed diff applied with `patch` gives what --fix writes."""
    if shutil.which("patch") is None:
        pytest.skip("patch(1) not available")
    write(tmp_path, "a.py", BOTH_SRC)
    write(tmp_path, "b.py", TLL002_SRC)
    diff = cli("--diff", "a.py", "b.py").stdout
    (tmp_path / "changes.diff").write_text(diff)
    subprocess.run(["patch", "-p1", "-s", "-i", "changes.diff"], cwd=tmp_path, check=True)
    patched = {name: (tmp_path / name).read_text() for name in ("a.py", "b.py")}
    write(tmp_path, "a.py", BOTH_SRC)
    write(tmp_path, "b.py", TLL002_SRC)
    assert cli("--fix", "a.py", "b.py").exit_code == 0
    assert patched == {name: (tmp_path / name).read_text() for name in ("a.py", "b.py")}


# --- --fix ------------------------------------------------------------------------------

def test_fix_rewrites_and_is_idempotent(cli, tmp_path):
    a = write(tmp_path, "a.py", TLL001_SRC)
    b = write(tmp_path, "b.py", TLL002_SRC)
    first = cli("--fix", "a.py", "b.py")
    assert first.exit_code == 0, first.output
    assert a.read_text() == TLL001_FIXED
    assert b.read_text() == TLL002_FIXED
    assert "2 fixed" in first.stdout
    for p in (a, b):
        compile(p.read_text(), str(p), "exec")
    snapshot = (a.read_bytes(), b.read_bytes())
    second = cli("--fix", "a.py", "b.py")
    assert second.exit_code == 0
    assert (a.read_bytes(), b.read_bytes()) == snapshot
    assert "fixed" not in second.stdout
    assert cli("a.py", "b.py").exit_code == 0
    assert cli("--diff", "a.py", "b.py").exit_code == 0


def test_fix_tensor_kept_uses_detach(cli, tmp_path):
    src = TLL001_SRC.replace("print(sum(losses) / len(losses))", "out = torch.stack(losses)")
    path = write(tmp_path, "a.py", src)
    assert cli("--fix", "a.py").exit_code == 0
    text = path.read_text()
    assert ".item()" not in text
    assert re.search(r"losses\.append\(loss\.detach\(\)(\.clone\(\))?\)", text), text


def test_fix_exits_1_when_only_unsafe_fixes_remain(cli, tmp_path):
    path = write(tmp_path, "a.py", NAME_ONLY_SRC)
    report = cli("a.py")
    lines = finding_lines(report.stdout)
    assert [(f["code"], f["fix"]) for f in lines] == [("TLL001", None)]  # no [*]: unsafe only
    assert re.search(r"nam(e|ing)", lines[0]["msg"]), "the message says the evidence is a name"
    assert "--unsafe-fixes" in report.stdout
    result = cli("--fix", "a.py")
    assert result.exit_code == 1
    assert path.read_text() == NAME_ONLY_SRC
    assert codes_of(result.stdout) == [("a.py", 7, "TLL001")]


def test_unsafe_fixes_flag_applies_them(cli, tmp_path):
    path = write(tmp_path, "a.py", NAME_ONLY_SRC)
    shown = cli("--unsafe-fixes", "a.py")
    assert [f["fix"] for f in finding_lines(shown.stdout)] == ["[*] "]
    result = cli("--fix", "--unsafe-fixes", "a.py")
    assert result.exit_code == 0, result.output
    assert path.read_text() == NAME_ONLY_SRC.replace("losses.append(loss)", "losses.append(loss.item())")
    assert cli("--fix", "--unsafe-fixes", "a.py").exit_code == 0
    assert cli("a.py").exit_code == 0


def test_backward_evidence_gives_a_safe_fix(cli, tmp_path):
    """The issue's own example: `.backward()` is called on `loss`, so the evidence is not
    just a name and the `.item()` fix (sum/len of a list of scalars) is safe."""
    src = """\
import torch
losses = []
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    losses.append(loss)
print(sum(losses) / len(losses))
"""
    path = write(tmp_path, "a.py", src)
    lines = finding_lines(cli("a.py").stdout)
    assert [(f["code"], f["row"], f["fix"]) for f in lines] == [("TLL001", "6", "[*] ")]
    assert cli("--fix", "a.py").exit_code == 0
    assert "losses.append(loss.item())" in path.read_text()


def test_fix_and_report_remaining_in_other_file(cli, tmp_path):
    a = write(tmp_path, "a.py", TLL001_SRC)
    write(tmp_path, "b.py", NAME_ONLY_SRC)
    result = cli("--fix", "a.py", "b.py")
    assert result.exit_code == 1
    assert a.read_text() == TLL001_FIXED
    assert codes_of(result.stdout) == [("b.py", 7, "TLL001")]
    assert re.search(r"1 fixed, 1 remaining", result.stdout)


def test_fix_exit_zero(cli, tmp_path):
    write(tmp_path, "b.py", NAME_ONLY_SRC)
    assert cli("--fix", "--exit-zero", "b.py").exit_code == 0


# --- discovery --------------------------------------------------------------------------

SKIPPED_DIRS = [".git", ".venv", "venv", "build", "dist", "__pycache__", "site-packages", "node_modules",
                ".tox", ".eggs"]


def test_directory_is_searched_recursively(cli, tmp_path):
    write(tmp_path, "proj/a.py", TLL001_SRC)
    write(tmp_path, "proj/pkg/sub/deep.py", TLL002_SRC)
    write(tmp_path, "proj/notes.txt", TLL001_SRC)
    write(tmp_path, "proj/script", TLL001_SRC)
    result = cli("proj")
    assert codes_of(result.stdout) == [("proj/a.py", 7, "TLL001"), ("proj/pkg/sub/deep.py", 7, "TLL002")]


def test_default_excluded_folders_are_skipped(cli, tmp_path):
    write(tmp_path, "proj/keep.py", TLL001_SRC)
    for d in SKIPPED_DIRS:
        write(tmp_path, f"proj/{d}/leak.py", TLL001_SRC)
        write(tmp_path, f"proj/src/{d}/leak.py", TLL001_SRC)
    result = cli("proj")
    assert codes_of(result.stdout) == [("proj/keep.py", 7, "TLL001")]


def test_explicit_file_in_excluded_folder_is_linted(cli, tmp_path):
    write(tmp_path, ".venv/lib/leak.py", TLL001_SRC)
    result = cli(".venv/lib/leak.py")
    assert codes_of(result.stdout) == [(".venv/lib/leak.py", 7, "TLL001")]


def test_same_file_twice_is_reported_once(cli, tmp_path):
    write(tmp_path, "a.py", TLL001_SRC)
    result = cli("a.py", ".", "a.py")
    assert len(finding_lines(result.stdout)) == 1
    assert "Found 1 error." in result.stdout


def _git_init(path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git not available")
    subprocess.run(["git", "init", "-q", str(path)], check=True)


@pytest.mark.parametrize("in_git", [False, True], ids=["no-git", "git"])
def test_gitignore_is_respected(cli, tmp_path, in_git):
    if in_git:
        _git_init(tmp_path)
    write(tmp_path, ".gitignore", "generated/\nignored_*.py\n!ignored_but_kept.py\n")
    write(tmp_path, "sub/.gitignore", "local.py\n")
    write(tmp_path, "a.py", TLL001_SRC)
    write(tmp_path, "generated/g.py", TLL001_SRC)
    write(tmp_path, "ignored_x.py", TLL001_SRC)
    write(tmp_path, "ignored_but_kept.py", TLL001_SRC)
    write(tmp_path, "sub/local.py", TLL001_SRC)
    write(tmp_path, "sub/other.py", TLL001_SRC)
    result = cli(".")
    assert codes_of(result.stdout) == [("a.py", 7, "TLL001"), ("ignored_but_kept.py", 7, "TLL001"),
                                       ("sub/other.py", 7, "TLL001")]
    # An explicitly named file is always linted.
    named = cli("ignored_x.py", "generated/g.py", "sub/local.py")
    assert codes_of(named.stdout) == [("generated/g.py", 7, "TLL001"), ("ignored_x.py", 7, "TLL001"),
                                      ("sub/local.py", 7, "TLL001")]


def test_gitignore_at_repo_root_applies_to_linted_subfolder(cli, tmp_path):
    _git_init(tmp_path)
    write(tmp_path, ".gitignore", "src/generated/\n")
    write(tmp_path, "src/a.py", TLL001_SRC)
    write(tmp_path, "src/generated/g.py", TLL001_SRC)
    result = cli("src")
    assert codes_of(result.stdout) == [("src/a.py", 7, "TLL001")]


# --- rules / explain / version ----------------------------------------------------------

def test_rules_lists_every_rule(cli):
    result = cli("rules")
    assert result.exit_code == 0
    assert "TLL001" in result.stdout and "TLL002" in result.stdout
    assert "graph-tensor-stored" in result.stdout
    assert "graph-tensor-accumulated" in result.stdout
    data = json.loads(cli("rules", "--output-format", "json").stdout)
    from torchleaklint.rules import ALL_RULES

    names = {r["code"]: r["name"] for r in data}
    assert names == {r.code: r.name for r in ALL_RULES}
    assert names["TLL001"] == "graph-tensor-stored" and names["TLL002"] == "graph-tensor-accumulated"
    assert all(r["fix"] in ("always", "sometimes", "never") for r in data)


DOC_SECTIONS = ["What it does", "Why is this bad", "Example", "Use instead", "Fix safety", "Memory impact"]


@pytest.mark.parametrize("code", ["TLL001", "TLL002", "tll001"])
def test_explain_prints_doc_sections(cli, code):
    result = cli("explain", code)
    assert result.exit_code == 0
    out = result.stdout
    assert code.upper() in out
    positions = [out.find(section) for section in DOC_SECTIONS]
    assert all(p >= 0 for p in positions), out
    assert positions == sorted(positions)


def test_explain_unknown_code(cli):
    result = cli("explain", "TLL999")
    one_line_error(result, "TLL999")
    assert result.stdout == ""


def test_version(cli):
    from torchleaklint import __version__

    result = cli("--version")
    assert result.exit_code == 0
    assert __version__ in result.stdout
    assert "torchleaklint" in result.stdout


GITIGNORE_PATTERNS = "/top_only.py\n**/deep.py\ndocs/*.py\na/**/b.py\n*.gen.py\nsub/keep.py\n"
GITIGNORE_TREE = ["top_only.py", "sub/top_only.py", "deep.py", "sub/deep.py", "docs/a.py", "docs/sub/b.py",
                  "a/b.py", "a/x/b.py", "a/x/y/b.py", "keep.py", "sub/keep.py", "x.gen.py", "sub/y.gen.py"]
# What git itself keeps (checked with `git ls-files -co --exclude-standard`).
GITIGNORE_KEPT = ["docs/sub/b.py", "keep.py", "sub/top_only.py"]


@pytest.mark.parametrize("in_git", [
    pytest.param(False, id="no-git"),
    pytest.param(True, id="git"),
])
def test_gitignore_glob_semantics_match_git(cli, tmp_path, in_git):
    if in_git:
        _git_init(tmp_path)
    write(tmp_path, ".gitignore", GITIGNORE_PATTERNS)
    for name in GITIGNORE_TREE:
        write(tmp_path, name, TLL001_SRC)
    result = cli(".")
    assert sorted(p for p, _, _ in codes_of(result.stdout)) == GITIGNORE_KEPT


# --- noqa only in comments, internal errors, diff edge cases ----------------------------

def test_noqa_inside_a_string_is_not_a_comment(cli, tmp_path):
    src = TLL001_SRC.replace("losses.append(loss)", 'losses.append(loss); tag = "# noqa"')
    write(tmp_path, "a.py", src)
    assert codes_of(cli("a.py").stdout) == [("a.py", 7, "TLL001")]


def test_internal_rule_error_exits_2_and_keeps_other_findings(cli, tmp_path, monkeypatch):
    from torchleaklint.rules import RULES_BY_CODE

    def broken(self, ctx):
        raise ValueError("boom")

    monkeypatch.setattr(RULES_BY_CODE["TLL002"], "check", broken)
    write(tmp_path, "a.py", BOTH_SRC)
    result = cli("a.py")
    assert result.exit_code == 2
    assert codes_of(result.stdout) == [("a.py", 8, "TLL001")]
    err = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and "TLL002" in err[0] and "boom" in err[0]


def test_diff_without_final_newline_is_a_valid_patch(cli, tmp_path):
    if shutil.which("patch") is None:
        pytest.skip("patch(1) not available")
    src = TLL001_SRC.rstrip("\n").replace("\nprint(sum(losses) / len(losses))", "")
    assert src.endswith("losses.append(loss)")
    path = write(tmp_path, "a.py", src)
    diff = cli("--diff", "a.py").stdout
    (tmp_path / "changes.diff").write_text(diff)
    proc = subprocess.run(["patch", "-p1", "-s", "-i", "changes.diff"], cwd=tmp_path, capture_output=True)
    assert proc.returncode == 0, proc.stdout
    patched = path.read_bytes()
    write(tmp_path, "a.py", src)
    assert cli("--fix", "a.py").exit_code == 0
    assert path.read_bytes() == patched == src.replace("append(loss)", "append(loss.item())").encode()


def test_fix_without_final_newline(cli, tmp_path):
    src = TLL002_SRC.rstrip("\n")
    path = write(tmp_path, "a.py", src)
    assert cli("--fix", "a.py").exit_code == 0
    assert path.read_text() == TLL002_FIXED.rstrip("\n")
