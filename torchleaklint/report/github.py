"""GitHub Actions workflow commands: one ``::error`` annotation per finding."""

from __future__ import annotations

from typing import Iterable

from ..diagnostics import Diagnostic
from .text import display_path


def _data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(value: str) -> str:
    return _data(value).replace(":", "%3A").replace(",", "%2C")


def render_github(diagnostics: Iterable[Diagnostic]) -> str:
    lines = []
    for d in diagnostics:
        path = _property(display_path(d.path))
        if d.cell is not None:
            # Lines of a notebook's cells are not lines of the .ipynb file: annotate the
            # file and say where in the message.
            where = f"file={path}"
            message = f"cell {d.cell}:{d.start.line}:{d.start.col + 1}: {d.message}"
        else:
            where = (f"file={path},line={d.start.line},col={d.start.col + 1},"
                     f"endLine={d.end.line},endColumn={d.end.col + 1}")
            message = d.message
        lines.append(f"::error {where},title={_property(d.code)}::{_data(message)}")
    return "".join(line + "\n" for line in lines)
