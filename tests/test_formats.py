"""Every output format is parsed back and names the same findings (a notebook finding, a
parse error and two rules included); SARIF is validated against the official 2.1.0 schema."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import nbformat
import pytest
from junitparser import JUnitXml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from torchleaklint.diagnostics import Diagnostic, Position
from torchleaklint.report import FORMATS
from torchleaklint.report.github import render_github
from torchleaklint.rules import ALL_RULES

from .snippets import BOTH_SRC, TLL001_SRC

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
TEXT_LINE = re.compile(r"^(?P<path>[^\s:][^:]*):(?:cell (?P<cell>\d+):)?(?P<row>\d+):(?P<col>\d+): "
                       r"(?P<code>TLL\d{3}) ")
CELL_PREFIX = re.compile(r"^cell (?P<cell>\d+):(?P<row>\d+):(?P<col>\d+): ")

# (path, cell, row, column 1-based, code) of every finding of the project below.
EXPECTED = {
    ("a.py", None, 8, 5, "TLL001"),
    ("a.py", None, 9, 5, "TLL002"),
    ("broken.py", None, 1, 7, "TLL000"),
    ("train.ipynb", 3, 6, 5, "TLL001"),
}


@pytest.fixture
def project(tmp_path):
    (tmp_path / "a.py").write_text(BOTH_SRC)
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    nb = new_notebook()
    nb.cells = [new_markdown_cell("# Train"), new_code_cell("%matplotlib inline\nimport torch"),
                new_code_cell(TLL001_SRC.split("\n", 1)[1])]
    nbformat.write(nb, str(tmp_path / "train.ipynb"))
    return tmp_path


def test_every_format_is_covered_here():
    assert set(FORMATS) == {"text", "concise", "full", "json", "json-lines", "github", "gitlab", "sarif", "junit"}


def parse_text(out):
    found = set()
    for line in out.splitlines():
        m = TEXT_LINE.match(line)
        if m:
            found.add((m["path"], int(m["cell"]) if m["cell"] else None, int(m["row"]), int(m["col"]), m["code"]))
    return found


def with_cell(path, message, row, col, code):
    m = CELL_PREFIX.match(message)
    if m:
        return (path, int(m["cell"]), int(m["row"]), int(m["col"]), code)
    return (path, None, row, col, code)


def parse_json(out, root):
    return {(str(Path(d["filename"]).relative_to(root)), d["cell"], d["location"]["row"], d["location"]["column"],
             d["code"]) for d in json.loads(out)}


def parse_json_lines(out, root):
    lines = out.splitlines()
    assert lines and all(line.startswith("{") for line in lines)
    return parse_json("[" + ",".join(lines) + "]", root)


GITHUB = re.compile(r"^::error (?P<props>[^:]*)::(?P<message>.*)$")


def parse_github(out):
    found = set()
    for line in out.splitlines():
        m = GITHUB.match(line)
        assert m, line
        props = dict(p.split("=", 1) for p in m["props"].split(","))
        assert set(props) >= {"file", "title"}
        found.add(with_cell(props["file"], m["message"], int(props.get("line", 0)), int(props.get("col", 0)),
                            props["title"]))
    return found


def parse_gitlab(out):
    issues = json.loads(out)
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    found = set()
    for issue in issues:
        assert issue["type"] == "issue" and issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert isinstance(issue["location"]["lines"]["begin"], int)
        code, _, description = issue["description"].partition(" ")
        assert code == issue["check_name"]
        m = CELL_PREFIX.match(description)
        col = int(m["col"]) if m else None
        found.add(with_cell(issue["location"]["path"], description, issue["location"]["lines"]["begin"], col, code))
    return found


def parse_sarif(out):
    log = json.loads(out)
    jsonschema.validate(log, SCHEMA)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} >= {r.code for r in ALL_RULES}
    for rule in rules:
        if rule["id"] in {r.code for r in ALL_RULES}:
            assert rule["helpUri"].endswith(f"docs/rules/{rule['id']}.md")
            assert "## Why is this bad" in rule["help"]["markdown"]
    found = set()
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        loc = result["locations"][0]["physicalLocation"]
        path = loc["artifactLocation"]["uri"]
        if "cell" in result.get("properties", {}):
            region = result["properties"]["cellRegion"]
            found.add((path, result["properties"]["cell"], region["startLine"], region["startColumn"], result["ruleId"]))
        else:
            found.add((path, None, loc["region"]["startLine"], loc["region"]["startColumn"], result["ruleId"]))
    return found


def parse_junit(out, root):
    xml = root / "report.xml"
    xml.write_text(out, encoding="utf-8")
    found = set()
    for suite in JUnitXml.fromfile(str(xml)):
        for case in suite:
            (failure,) = case.result
            m = re.match(r"^(?P<code>TLL\d{3}) at (?:cell (?P<cell>\d+):)?(?P<row>\d+):(?P<col>\d+)$", case.name)
            assert m and failure.type == m["code"], case.name
            found.add((case.classname, int(m["cell"]) if m["cell"] else None, int(m["row"]), int(m["col"]), m["code"]))
    ET.fromstring(out.encode("utf-8"))  # well-formed for any XML reader
    return found


@pytest.mark.parametrize("fmt", FORMATS)
def test_same_findings_in_every_format(cli, project, fmt):
    result = cli("--output-format", fmt, ".")
    assert result.exit_code == 1, result.output
    out = result.stdout
    parsed = {
        "text": lambda: parse_text(out), "concise": lambda: parse_text(out), "full": lambda: parse_text(out),
        "json": lambda: parse_json(out, project), "json-lines": lambda: parse_json_lines(out, project),
        "github": lambda: parse_github(out), "gitlab": lambda: parse_gitlab(out), "sarif": lambda: parse_sarif(out),
        "junit": lambda: parse_junit(out, project),
    }[fmt]()
    if fmt == "gitlab":
        # Code Quality has lines, not columns: take the column from the expected set.
        parsed = {(p, c, r, col if c is not None else _col(p, r), code) for p, c, r, col, code in parsed}
    assert parsed == EXPECTED


def _col(path, row):
    return {("a.py", 8): 5, ("a.py", 9): 5, ("broken.py", 1): 7}[(path, row)]


def test_full_format_shows_source_and_fix(cli, project):
    out = cli("--output-format", "full", "a.py", "train.ipynb").stdout
    assert "8 |     losses.append(loss)" in out
    assert re.search(r"\|     \^+", out)
    assert "= fix: " in out and "= graph: " in out
    assert "6 |     losses.append(loss)" in out  # the notebook cell's own line 6


def test_sarif_fixes_match_the_json_edits(cli, project):
    sarif = json.loads(cli("--output-format", "sarif", "a.py").stdout)
    as_json = json.loads(cli("--output-format", "json", "a.py").stdout)
    by_line = {d["location"]["row"]: d for d in as_json}
    for result in sarif["runs"][0]["results"]:
        line = result["locations"][0]["physicalLocation"]["region"]["startLine"]
        edits = by_line[line]["fix"]["edits"]
        (fix,) = result["fixes"]
        replacements = fix["artifactChanges"][0]["replacements"]
        assert [(r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"], r["insertedContent"]["text"])
                for r in replacements] == [(e["location"]["row"], e["location"]["column"], e["content"]) for e in edits]
    assert sarif["runs"][0]["columnKind"] == "unicodeCodePoints"


def test_clean_run_in_machine_formats(cli, tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n")
    log = json.loads(cli("--output-format", "sarif", ".").stdout)
    jsonschema.validate(log, SCHEMA)
    assert log["runs"][0]["results"] == []
    assert json.loads(cli("--output-format", "gitlab", ".").stdout) == []
    assert cli("--output-format", "github", ".").stdout == ""
    assert cli("--output-format", "json-lines", ".").stdout == ""
    junit = cli("--output-format", "junit", ".")
    assert junit.exit_code == 0
    (tmp_path / "r.xml").write_text(junit.stdout)
    cases = [case for suite in JUnitXml.fromfile(str(tmp_path / "r.xml")) for case in suite]
    assert len(cases) == 1 and cases[0].is_passed


def test_github_escapes_data_and_properties():
    diag = Diagnostic("TLL001", "100% of\nthe graph", "dir,with:odd/a.py", Position(3, 4), Position(3, 9))
    line = render_github([diag]).rstrip("\n")
    assert "\n" not in line
    assert "file=dir%2Cwith%3Aodd/a.py,line=3,col=5" in line
    assert line.endswith("::100%25 of%0Athe graph")


def test_junit_holds_control_characters(cli, tmp_path):
    from torchleaklint.report.junit import render_junit

    diag = Diagnostic("TLL001", "bad \x0b char", "a.py", Position(1, 0), Position(1, 1))
    root = ET.fromstring(render_junit([diag]).encode("utf-8"))
    assert root.find(".//failure").get("type") == "TLL001"
