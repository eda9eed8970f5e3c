"""The values that flow from rules to the fixer and the reporters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Tuple

from .rules import PARSE_ERROR

SAFE = "safe"
UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Position:
    """A place in a source file: 1-based line, 0-based column counted in characters."""

    line: int
    col: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between ``start`` and ``end`` with ``content`` (empty range = insert)."""

    start: Position
    end: Position
    content: str


@dataclass(frozen=True)
class Fix:
    applicability: str  # SAFE or UNSAFE
    message: str
    edits: Tuple[Edit, ...]

    @property
    def is_safe(self) -> bool:
        return self.applicability == SAFE


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    path: str
    start: Position
    end: Position
    fix: Optional[Fix] = None
    evidence: Tuple[str, ...] = field(default_factory=tuple)
    # The line whose ``# noqa`` comment suppresses this finding.
    noqa_line: int = 0
    # In a notebook: the 1-based cell number; ``start``/``end`` and fix edits are then
    # relative to that cell's source.
    cell: Optional[int] = None

    def sort_key(self):
        return (self.path, self.cell or 0, self.start.line, self.start.col, self.code)


def parse_error(path: str, message: str, line: int, col: int) -> Diagnostic:
    """A TLL000 report: the file (or folder) could not be read, decoded or parsed."""
    pos = Position(max(line, 1), max(col, 0))
    return Diagnostic(PARSE_ERROR, message, path, pos, pos, noqa_line=0)
