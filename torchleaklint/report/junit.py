"""JUnit XML: one test suite per file with findings, one failed test case per finding
(the shape Jenkins, GitLab and GitHub test reporters read)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Dict, Iterable, List

from ..diagnostics import Diagnostic
from .text import display_path


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    """Drop the characters XML 1.0 cannot hold (a source line may contain them)."""
    return _NOT_XML.sub("\ufffd", text)


def _where(d: Diagnostic) -> str:
    loc = f"{d.start.line}:{d.start.col + 1}"
    return f"cell {d.cell}:{loc}" if d.cell is not None else loc


def render_junit(diagnostics: Iterable[Diagnostic]) -> str:
    by_file: Dict[str, List[Diagnostic]] = {}
    for d in diagnostics:
        by_file.setdefault(display_path(d.path), []).append(d)
    total = sum(len(v) for v in by_file.values())
    root = ET.Element("testsuites", name="torchleaklint", tests=str(max(total, 1)), failures=str(total),
                      errors="0")
    if not by_file:
        suite = ET.SubElement(root, "testsuite", name="torchleaklint", tests="1", failures="0", errors="0")
        ET.SubElement(suite, "testcase", name="No errors found", classname="torchleaklint")
    for path, diags in by_file.items():
        suite = ET.SubElement(root, "testsuite", name=_xml(path), tests=str(len(diags)), failures=str(len(diags)),
                              errors="0")
        for d in diags:
            case = ET.SubElement(suite, "testcase", name=f"{d.code} at {_where(d)}", classname=_xml(path), file=_xml(path),
                                 line=str(d.start.line))
            failure = ET.SubElement(case, "failure", message=_xml(d.message), type=d.code)
            details = [f"{path}:{_where(d)}: {d.code} {d.message}"] + [f"= {note}" for note in d.evidence]
            failure.text = _xml("\n".join(details))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
