"""Reporters turn diagnostics into text; they never analyse."""

from __future__ import annotations

from typing import Callable, Dict, Iterable

from ..diagnostics import Diagnostic
from .github import render_github
from .gitlab import render_gitlab
from .json_format import render_json, render_json_lines
from .junit import render_junit
from .sarif import render_sarif
from .text import TextReporter

# Human formats are printed by TextReporter; machine formats are rendered whole.
TEXT_FORMATS = ("text", "concise", "full")
RENDERERS: Dict[str, Callable[[Iterable[Diagnostic]], str]] = {
    "json": render_json,
    "json-lines": render_json_lines,
    "github": render_github,
    "gitlab": render_gitlab,
    "sarif": render_sarif,
    "junit": render_junit,
}
FORMATS = TEXT_FORMATS + tuple(RENDERERS)

__all__ = ["FORMATS", "RENDERERS", "TEXT_FORMATS", "TextReporter", "render_json"]
