"""GitLab Code Quality report (the Code Climate subset GitLab reads)."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from typing import Iterable

from ..diagnostics import Diagnostic


def _project_path(path: str) -> str:
    """Paths relative to the project folder (``CI_PROJECT_DIR`` in GitLab CI)."""
    base = os.environ.get("CI_PROJECT_DIR") or os.getcwd()
    rel = os.path.relpath(os.path.abspath(path), base)
    return (path if rel.startswith("..") else rel).replace(os.sep, "/")


def render_gitlab(diagnostics: Iterable[Diagnostic]) -> str:
    issues = []
    seen: Counter = Counter()
    for d in diagnostics:
        path = _project_path(d.path)
        description = d.message if d.cell is None else f"cell {d.cell}:{d.start.line}:{d.start.col + 1}: {d.message}"
        # Stable across edits that only move code: no line number, but distinct for
        # repeated identical findings in one file.
        key = (d.code, path, d.cell, d.message)
        seen[key] += 1
        fingerprint = hashlib.sha256(repr(key + (seen[key],)).encode("utf-8")).hexdigest()
        lines = {"begin": 1} if d.cell is not None else {"begin": d.start.line, "end": d.end.line}
        issues.append({
            "type": "issue",
            "check_name": d.code,
            "description": f"{d.code} {description}",
            "categories": ["Bug Risk" if d.code != "TLL100" else "Style"],
            "severity": "major" if d.code not in ("TLL000", "TLL100") else ("blocker" if d.code == "TLL000" else "minor"),
            "fingerprint": fingerprint,
            "location": {"path": path, "lines": lines},
        })
    return json.dumps(issues, indent=2, ensure_ascii=False)
