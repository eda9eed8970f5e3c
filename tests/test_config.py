"""``[tool.torchleaklint]`` in pyproject.toml: loading, precedence and one-line errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchleaklint.config import ConfigError, Settings, load_settings

from torchleaklint.rules import ALL_RULES, OPT_IN

from .snippets import BOTH_SRC, LINE_RE, NAME_ONLY_SRC


def pyproject(folder: Path, body: str) -> Path:
    path = folder / "pyproject.toml"
    path.write_text('[project]\nname = "demo"\n\n' + body)
    return path


def findings(out: str):
    return sorted((m["path"], int(m["row"]), m["code"]) for m in map(LINE_RE.match, out.splitlines()) if m)


def one_line_error(result, *needles):
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert result.stdout == ""


# --- through the CLI --------------------------------------------------------------------

def test_no_tool_table_means_defaults(cli, tmp_path):
    pyproject(tmp_path, "")
    (tmp_path / "a.py").write_text(BOTH_SRC)
    assert findings(cli("a.py").stdout) == [("a.py", 8, "TLL001"), ("a.py", 9, "TLL002")]


def test_select_from_config(cli, tmp_path):
    pyproject(tmp_path, '[tool.torchleaklint]\nselect = ["TLL002"]\n')
    (tmp_path / "a.py").write_text(BOTH_SRC)
    result = cli("a.py")
    assert findings(result.stdout) == [("a.py", 9, "TLL002")]
    assert result.exit_code == 1
    assert findings(cli().stdout) == [("a.py", 9, "TLL002")]


def test_ignore_and_prefix_from_config(cli, tmp_path):
    pyproject(tmp_path, '[tool.torchleaklint]\nselect = ["TLL0"]\nignore = ["TLL002"]\n')
    (tmp_path / "a.py").write_text(BOTH_SRC)
    assert findings(cli("a.py").stdout) == [("a.py", 8, "TLL001")]


def test_command_line_select_overrides_config(cli, tmp_path):
    pyproject(tmp_path, '[tool.torchleaklint]\nselect = ["TLL002"]\n')
    (tmp_path / "a.py").write_text(BOTH_SRC)
    assert findings(cli("--select", "TLL001", "a.py").stdout) == [("a.py", 8, "TLL001")]
    assert findings(cli("--extend-select", "TLL001", "a.py").stdout) == [("a.py", 8, "TLL001"),
                                                                          ("a.py", 9, "TLL002")]


def test_config_is_found_from_a_parent_folder(cli, tmp_path):
    pyproject(tmp_path, '[tool.torchleaklint]\nignore = ["TLL001"]\n')
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "a.py").write_text(BOTH_SRC)
    assert findings(cli("src/pkg/a.py").stdout) == [("src/pkg/a.py", 9, "TLL002")]
    assert findings(cli("src").stdout) == [("src/pkg/a.py", 9, "TLL002")]


def test_explicit_config_path(cli, tmp_path):
    (tmp_path / "conf").mkdir()
    pyproject(tmp_path / "conf", '[tool.torchleaklint]\nselect = ["TLL001"]\n')
    (tmp_path / "a.py").write_text(BOTH_SRC)
    assert findings(cli("--config", "conf/pyproject.toml", "a.py").stdout) == [("a.py", 8, "TLL001")]
    one_line_error(cli("--config", "conf/missing.toml", "a.py"), "conf/missing.toml")


def test_unsafe_fixes_from_config(cli, tmp_path):
    pyproject(tmp_path, "[tool.torchleaklint]\nunsafe-fixes = true\n")
    path = tmp_path / "a.py"
    path.write_text(NAME_ONLY_SRC)
    assert cli("--fix", "a.py").exit_code == 0
    assert "losses.append(loss.item())" in path.read_text()


def test_no_unsafe_fixes_flag_overrides_config(cli, tmp_path):
    pyproject(tmp_path, "[tool.torchleaklint]\nunsafe-fixes = true\n")
    path = tmp_path / "a.py"
    path.write_text(NAME_ONLY_SRC)
    assert cli("--fix", "--no-unsafe-fixes", "a.py").exit_code == 1
    assert path.read_text() == NAME_ONLY_SRC


def test_fix_style_detach(cli, tmp_path):
    pyproject(tmp_path, '[tool.torchleaklint.tll001]\nfix-style = "detach"\n')
    path = tmp_path / "a.py"
    path.write_text(BOTH_SRC)
    assert cli("--fix", "a.py").exit_code == 0
    text = path.read_text()
    assert re.search(r"losses\.append\(loss\.detach\(\)(\.clone\(\))?\)", text), text
    assert "losses.append(loss.item())" not in text
    # The option is per rule: TLL002 keeps its own default.
    assert "total += loss.item()" in text


def test_fix_style_item_for_a_kept_tensor(cli, tmp_path):
    src = BOTH_SRC.replace("print(sum(losses) / len(losses), total)", "out = torch.stack(losses)")
    pyproject(tmp_path, '[tool.torchleaklint.tll001]\nfix-style = "item"\n')
    (tmp_path / "a.py").write_text(src)
    diff = cli("--diff", "--unsafe-fixes", "a.py").stdout
    assert "+    losses.append(loss.item())" in diff


def test_fix_style_inline_table_form(cli, tmp_path):
    pyproject(tmp_path, '[tool.torchleaklint]\nselect = ["TLL001"]\ntll001 = { fix-style = "detach" }\n')
    (tmp_path / "a.py").write_text(BOTH_SRC)
    diff = cli("--diff", "a.py").stdout
    assert "+    losses.append(loss.detach()" in diff
    assert "total += loss.item()" not in diff


@pytest.mark.parametrize("body, needles", [
    ('[tool.torchleaklint]\nbogus-key = 1\n', ["bogus-key"]),
    ('[tool.torchleaklint]\nselect = ["TLL002"]\nselcet = ["TLL001"]\n', ["selcet"]),
    ('[tool.torchleaklint.tll001]\nfix-style = "bogus"\n', ["fix-style", "bogus"]),
    ('[tool.torchleaklint.tll002]\nfix-style = 3\n', ["fix-style"]),
    ('[tool.torchleaklint.tll001]\nfix-styl = "item"\n', ["fix-styl"]),
    ('[tool.torchleaklint]\nselect = ["TLL999"]\n', ["TLL999"]),
    ('[tool.torchleaklint]\nignore = ["XYZ"]\n', ["XYZ"]),
    ('[tool.torchleaklint]\nselect = "TLL001,"\nunsafe-fixes = "yes"\n', ["unsafe-fixes"]),
    ('[tool.torchleaklint]\nselect = [1, 2]\n', ["select"]),
    ('[tool.torchleaklint\nselect = \n', ["pyproject.toml"]),
    ('[tool.torchleaklint]\nselect = ["TLL001"\n', ["pyproject.toml"]),
])
def test_bad_config_is_one_line_exit_2(cli, tmp_path, body, needles):
    pyproject(tmp_path, body)
    (tmp_path / "a.py").write_text(BOTH_SRC)
    one_line_error(cli("a.py"), *needles)
    # The same error for the other commands that read files.
    one_line_error(cli("--fix", "a.py"), *needles)
    assert (tmp_path / "a.py").read_text() == BOTH_SRC


def test_malformed_toml_mentions_position(cli, tmp_path):
    pyproject(tmp_path, '[tool.torchleaklint]\nselect = = ["TLL001"]\n')
    (tmp_path / "a.py").write_text(BOTH_SRC)
    result = cli("a.py")
    one_line_error(result, "pyproject.toml", "line 5")


# --- the loader -------------------------------------------------------------------------

def test_load_settings_values(tmp_path):
    path = pyproject(tmp_path, """\
[tool.torchleaklint]
select = ["TLL0"]
extend-select = ["TLL002"]
ignore = ["TLL001"]
unsafe-fixes = true
extend-exclude = ["generated"]

[tool.torchleaklint.tll001]
fix-style = "detach"
""")
    settings = load_settings(path)
    assert settings.select == ("TLL0",)
    assert settings.ignore == ("TLL001",)
    assert settings.unsafe_fixes is True
    assert settings.enabled_codes() == {r.code for r in ALL_RULES} - {"TLL001"} - OPT_IN
    assert settings.options_for("TLL001")["fix-style"] == "detach"
    assert settings.options_for("TLL002")["fix-style"] != "detach"
    assert "generated" in settings.extend_exclude


def test_load_settings_defaults(tmp_path):
    every = {r.code for r in ALL_RULES} - OPT_IN  # opt-in rules need their full code
    assert load_settings(None).enabled_codes() == every
    assert load_settings(pyproject(tmp_path, "")).enabled_codes() == every
    assert Settings().unsafe_fixes is False


def test_load_settings_errors_are_config_errors(tmp_path):
    path = pyproject(tmp_path, "[tool.torchleaklint]\nnope = 1\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    assert "nope" in str(info.value) and "\n" not in str(info.value)


def test_extend_exclude_from_config(cli, tmp_path):
    pyproject(tmp_path, '[tool.torchleaklint]\nextend-exclude = ["generated"]\n')
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "g.py").write_text(BOTH_SRC)
    (tmp_path / "a.py").write_text(BOTH_SRC)
    assert {p for p, _, _ in findings(cli(".").stdout)} == {"a.py"}


def test_per_file_ignores_from_config(cli, tmp_path):
    pyproject(tmp_path, '[tool.torchleaklint.per-file-ignores]\n"legacy_*.py" = ["TLL001"]\n')
    (tmp_path / "legacy_train.py").write_text(BOTH_SRC)
    (tmp_path / "train.py").write_text(BOTH_SRC)
    assert findings(cli(".").stdout) == [("legacy_train.py", 9, "TLL002"), ("train.py", 8, "TLL001"),
                                         ("train.py", 9, "TLL002")]
