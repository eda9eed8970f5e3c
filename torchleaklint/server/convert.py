"""Between the engine's values and the protocol's: positions (1-based lines and columns in
characters here, 0-based lines and UTF-16 code units there by default), diagnostics and
edits. Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` on both sides, as the protocol says and
as the engine counts them (not at form feeds, as ``str.splitlines`` would)."""

from __future__ import annotations

from typing import List, Optional, Sequence

from lsprotocol import types as lsp

from ..diagnostics import Diagnostic, Edit, Position
from ..engine.noqa import UNUSED_NOQA
from ..engine.source import SourceText
from ..rules import PARSE_ERROR

SOURCE = "torchleaklint"


class Positions:
    """Converts positions of one text in both directions, with the client's encoding."""

    def __init__(self, text: str, codec) -> None:
        self.lines = SourceText(text).lines
        self.codec = codec  # pygls' PositionCodec: counts the client's code units

    def to_client(self, line: int, col: int) -> lsp.Position:
        if line > len(self.lines):
            return lsp.Position(line=len(self.lines), character=0)
        text = self.lines[line - 1] if line >= 1 else ""
        return lsp.Position(line=max(line - 1, 0), character=self.codec.client_num_units(text[:col]))

    def from_client(self, position: lsp.Position) -> Position:
        """The engine's position of a client position (clamped to the text)."""
        if position.line >= len(self.lines):
            return Position(len(self.lines) + 1, 0)
        text = self.lines[position.line]
        units = col = 0
        for char in text:
            if units >= position.character:
                break
            units += self.codec.client_num_units(char)
            col += 1
        return Position(position.line + 1, col)

    def range(self, start: Position, end: Position) -> lsp.Range:
        return lsp.Range(start=self.to_client(start.line, start.col), end=self.to_client(end.line, end.col))


def to_lsp_diagnostic(diag: Diagnostic, positions: Positions) -> lsp.Diagnostic:
    """Evidence lines follow the message, as ``--show-evidence`` prints them."""
    message = "\n".join([diag.message, *(f"= {note}" for note in diag.evidence)])
    fixable = None if diag.fix is None else diag.fix.applicability
    return lsp.Diagnostic(
        range=positions.range(diag.start, diag.end),
        message=message,
        severity=lsp.DiagnosticSeverity.Error if diag.code == PARSE_ERROR else lsp.DiagnosticSeverity.Warning,
        code=diag.code,
        source=SOURCE,
        tags=[lsp.DiagnosticTag.Unnecessary] if diag.code == UNUSED_NOQA else None,
        data={"fix": fixable},
    )


def text_edits(edits: Sequence[Edit], positions: Positions) -> List[lsp.TextEdit]:
    return [lsp.TextEdit(range=positions.range(e.start, e.end), new_text=e.content) for e in edits]


def edit_between(old: str, new: str, positions: Positions) -> Optional[lsp.TextEdit]:
    """One edit that turns ``old`` into ``new``: the span between their common prefix and
    suffix (None when they are equal), so that a whole-file fix keeps the editor's markers
    and undo steps outside the lines it changed."""
    if old == new:
        return None
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    source = SourceText(old)
    return lsp.TextEdit(range=positions.range(_position(source, start), _position(source, end_old)),
                        new_text=new[start:end_new])


def _position(source: SourceText, offset: int) -> Position:
    import bisect

    starts = source.line_starts
    index = bisect.bisect_right(starts, offset) - 1
    return Position(index + 1, offset - starts[index])


def workspace_edit(uri: str, edits: List[lsp.TextEdit], version: Optional[int]) -> lsp.WorkspaceEdit:
    """With the document's version (for clients that take versioned edits), so that a
    client rejects an edit made for an older text; else plain ``changes``."""
    if version is None:
        return lsp.WorkspaceEdit(changes={uri: edits})
    document = lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(text_document=document, edits=edits)])

