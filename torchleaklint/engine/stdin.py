"""One source held in memory and linted as if it were the file ``filename``: standard
input for editors (``--stdin-filename``) and the Python API (``lint_source``)."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import List, Optional, Union

from ..config import Settings
from ..diagnostics import Diagnostic
from .fix import fix_source
from .lint import LintSession, parse_error
from .notebook import NotebookSource, is_notebook
from .source import SourceDecodeError, SourceText, decode_source

# Files of the same folder that are read for cross-file facts (an editor's buffer sees
# the helpers next to it, as a run over the folder would).
MAX_NEIGHBOURS = 200


@dataclass
class CodeResult:
    diagnostics: List[Diagnostic] = field(default_factory=list)
    source: Optional[SourceText] = None  # None when the code could not be decoded
    text: Optional[str] = None  # the (fixed) text, as a joined notebook text for notebooks
    fixed: int = 0
    fixed_codes: Counter = field(default_factory=Counter)
    internal_errors: List[str] = field(default_factory=list)

    def output(self) -> bytes:
        """The (fixed) code in the input's own encoding: a notebook stays a notebook."""
        if self.source is None:
            return b""
        return self.source.encode(self.text)


def decode(code: Union[str, bytes], filename: str) -> Union[SourceText, Diagnostic]:
    try:
        if is_notebook(filename):
            return NotebookSource.from_bytes(code.encode("utf-8") if isinstance(code, str) else code)
        if isinstance(code, bytes):
            return decode_source(code)
    except SourceDecodeError as exc:
        return parse_error(filename, str(exc), exc.line, exc.col)
    return SourceText(code)


def lint_code(code: Union[str, bytes], filename: str, settings: Settings, fix: bool = False,
              unsafe: bool = False, neighbours: bool = False, session: Optional[LintSession] = None) -> CodeResult:
    """``neighbours``: the files of the same folder are part of the project; ``session``:
    a session that already holds the project (the language server's)."""
    source = decode(code, filename)
    if isinstance(source, Diagnostic):
        return CodeResult([source])
    if session is None:
        session = LintSession(settings)
        if neighbours:
            for path in folder_neighbours(filename):
                session.register(path)
    session.register(filename, text=source.text)
    if fix:
        outcome = fix_source(session, filename, source, unsafe)
        diagnostics = list(outcome.diagnostics)
        if outcome.error:
            diagnostics.append(parse_error(filename, outcome.error, 1, 0))
        return CodeResult(diagnostics, source, outcome.text, outcome.applied, outcome.fixed_codes)
    result = session.lint_text(source, filename)
    return CodeResult(source.relocate(result.diagnostics), source, source.text,
                      internal_errors=result.internal_errors)


def folder_neighbours(filename: str) -> List[str]:
    """The other ``.py`` files of the file's folder (at most MAX_NEIGHBOURS)."""
    folder = os.path.dirname(os.path.abspath(filename))
    if not os.path.isdir(folder) or folder == os.path.abspath(os.sep):
        return []
    own = os.path.realpath(filename)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    paths = [os.path.join(os.path.dirname(filename), name) for name in names if name.endswith(".py")]
    paths = [p for p in paths if os.path.isfile(p) and os.path.realpath(p) != own]
    return paths[:MAX_NEIGHBOURS]
