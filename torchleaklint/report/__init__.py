"""Reporters turn diagnostics into text; they never analyse.

Each machine format's module is imported when that format is asked for, so that a run
printing plain text loads none of them.
"""

from __future__ import annotations

from typing import Callable, Dict, Iterable

from ..diagnostics import Diagnostic
from ..lazy import load

# Human formats are printed by TextReporter; machine formats are rendered whole.
TEXT_FORMATS = ("text", "concise", "full")
# format -> "module.function" in this package
RENDERERS: Dict[str, str] = {
    "json": "json_format.render_json",
    "json-lines": "json_format.render_json_lines",
    "github": "github.render_github",
    "gitlab": "gitlab.render_gitlab",
    "sarif": "sarif.render_sarif",
    "junit": "junit.render_junit",
}
FORMATS = TEXT_FORMATS + tuple(RENDERERS)


def renderer(output_format: str) -> Callable[[Iterable[Diagnostic]], str]:
    """The function that renders a machine format (a key of ``RENDERERS``)."""
    return load(__name__, RENDERERS[output_format])


__all__ = ["FORMATS", "RENDERERS", "TEXT_FORMATS", "renderer"]
