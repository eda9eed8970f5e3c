"""JSON output in Ruff's schema (so existing tooling can read it) plus ``evidence``; in a
notebook, ``cell`` is the 1-based cell number and rows/columns are inside that cell."""

from __future__ import annotations

import json
import os
from typing import Iterable, List

from ..diagnostics import Diagnostic, Position
from .urls import rule_url


def _loc(pos: Position) -> dict:
    return {"row": pos.line, "column": pos.col + 1}


def diagnostic_to_dict(diag: Diagnostic) -> dict:
    fix = None
    if diag.fix is not None:
        fix = {
            "applicability": diag.fix.applicability,
            "message": diag.fix.message,
            "edits": [
                {"content": e.content, "location": _loc(e.start), "end_location": _loc(e.end)}
                for e in diag.fix.edits
            ],
        }
    return {
        "cell": diag.cell,
        "code": diag.code,
        "message": diag.message,
        "filename": os.path.abspath(diag.path),
        "location": _loc(diag.start),
        "end_location": _loc(diag.end),
        "fix": fix,
        "noqa_row": diag.noqa_line or None,
        "url": rule_url(diag.code) if diag.code != "TLL000" else None,
        "evidence": list(diag.evidence),
    }


def render_json(diagnostics: Iterable[Diagnostic]) -> str:
    items: List[dict] = [diagnostic_to_dict(d) for d in diagnostics]
    return json.dumps(items, indent=2, ensure_ascii=False)


def render_json_lines(diagnostics: Iterable[Diagnostic]) -> str:
    """One compact JSON object per line (the same objects as ``json``)."""
    return "".join(json.dumps(diagnostic_to_dict(d), ensure_ascii=False) + "\n" for d in diagnostics)
