"""SARIF 2.1.0 (GitHub code scanning and other SARIF viewers): the rules with their help
text and documentation links, and each finding with its region and fix."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, List

from .. import __version__
from ..diagnostics import Diagnostic, Position
from ..rules import ALL_RULES
from .urls import rule_url

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://github.com/torchleaklint/torchleaklint"

# Codes that are not rules of the catalogue but can be reported.
ENGINE_CODES = {
    "TLL000": ("parse-error", "A file could not be read, decoded or parsed; it was not analysed or changed."),
    "TLL100": ("unused-noqa", "A `# noqa: TLLxxx` comment suppresses no finding."),
}


def _uri(path: str) -> str:
    rel = os.path.relpath(os.path.abspath(path))
    if rel.startswith(".."):
        return Path(os.path.abspath(path)).as_uri()
    return Path(rel).as_posix()


def _region(start: Position, end: Position) -> dict:
    return {"startLine": start.line, "startColumn": start.col + 1, "endLine": end.line, "endColumn": end.col + 1}


def _rules() -> List[dict]:
    out = []
    for rule in ALL_RULES:
        out.append({
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.summary},
            "help": {"text": rule.docs(), "markdown": rule.docs()},
            "helpUri": rule_url(rule.code),
            "defaultConfiguration": {"level": "error"},
            "properties": {"fix": rule.fix_availability},
        })
    for code, (name, text) in ENGINE_CODES.items():
        entry = {"id": code, "name": name, "shortDescription": {"text": text}, "help": {"text": text},
                 "defaultConfiguration": {"level": "error"}}
        if code != "TLL000":
            entry["helpUri"] = rule_url(code)
        out.append(entry)
    return out


def _result(d: Diagnostic, index: int) -> dict:
    uri = _uri(d.path)
    result = {
        "ruleId": d.code,
        "ruleIndex": index,
        "level": "error",
        "message": {"text": d.message if d.cell is None else f"cell {d.cell}:{d.start.line}:{d.start.col + 1}: {d.message}"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"}}}],
    }
    properties: dict = {}
    if d.evidence:
        properties["evidence"] = list(d.evidence)
    if d.cell is not None:
        # Cell lines are not lines of the .ipynb file: the location names the file, the
        # cell and the place inside it go in the message and the properties.
        properties["cell"] = d.cell
        properties["cellRegion"] = _region(d.start, d.end)
    else:
        result["locations"][0]["physicalLocation"]["region"] = _region(d.start, d.end)
        if d.fix is not None and d.fix.edits:
            result["fixes"] = [{
                "description": {"text": f"{d.fix.message} ({d.fix.applicability} fix)"},
                "artifactChanges": [{
                    "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
                    "replacements": [{"deletedRegion": _region(e.start, e.end), "insertedContent": {"text": e.content}}
                                     for e in d.fix.edits],
                }],
            }]
    if d.fix is not None:
        properties["fixApplicability"] = d.fix.applicability
    if properties:
        result["properties"] = properties
    return result


def render_sarif(diagnostics: Iterable[Diagnostic]) -> str:
    rules = _rules()
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "torchleaklint", "version": __version__, "semanticVersion": __version__,
                                "informationUri": INFORMATION_URI, "rules": rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(os.getcwd()).as_uri().rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": [_result(d, index[d.code]) for d in diagnostics],
        }],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)
