"""Code actions for the findings under the editor's cursor or selection: each finding's
own fix (safe ones preferred, unsafe ones marked in the title), a ``# noqa`` for the line,
and one source action that fixes the whole file as ``--fix`` would."""

from __future__ import annotations

from typing import List, Optional, Sequence

from lsprotocol import types as lsp

from ..diagnostics import Diagnostic
from ..engine.fix import apply_fixes, parses
from ..engine.noqa import UNUSED_NOQA, add_noqa
from ..engine.source import SourceText
from ..rules import PARSE_ERROR
from .convert import Positions, edit_between, text_edits, to_lsp_diagnostic, workspace_edit

FIX_ALL = f"{lsp.CodeActionKind.SourceFixAll.value}.torchleaklint"
KINDS = [lsp.CodeActionKind.QuickFix, FIX_ALL]


def wanted(kind: str, only: Optional[Sequence[str]]) -> bool:
    """Whether the client asked for actions of this kind (a kind covers its sub-kinds)."""
    return not only or any(kind == k or kind.startswith(f"{k}.") for k in only)


def quick_fixes(uri: str, version: Optional[int], text: str, diagnostics: Sequence[Diagnostic],
                selection: lsp.Range, positions: Positions, only) -> List[lsp.CodeAction]:
    if not wanted(lsp.CodeActionKind.QuickFix, only):
        return []
    start, end = positions.from_client(selection.start), positions.from_client(selection.end)
    source = SourceText(text)
    actions: List[lsp.CodeAction] = []
    for diag in diagnostics:
        if diag.code == PARSE_ERROR or diag.end < start or end < diag.start:
            continue
        shown = [to_lsp_diagnostic(diag, positions)]
        if diag.fix is not None:
            fixed, applied = apply_fixes(source, [diag.fix])
            if applied and parses(fixed) is None:  # a fix that breaks the code is never offered
                label = "" if diag.fix.is_safe else " (unsafe)"
                actions.append(lsp.CodeAction(
                    title=f"Fix {diag.code}{label}: {diag.fix.message}", kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=shown, is_preferred=diag.fix.is_safe,
                    edit=workspace_edit(uri, text_edits(diag.fix.edits, positions), version)))
        if diag.noqa_line and diag.code != UNUSED_NOQA:
            with_noqa, added = add_noqa(text, {diag.noqa_line: {diag.code}})
            edit = edit_between(text, with_noqa, positions) if added else None
            if edit is not None:
                actions.append(lsp.CodeAction(
                    title=f"Disable {diag.code} for this line", kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=shown, edit=workspace_edit(uri, [edit], version)))
    return actions


def fix_all(uri: str, version: Optional[int], text: str, fixed: Optional[str], unsafe: bool,
            positions: Positions, only) -> List[lsp.CodeAction]:
    """``fixed``: the text after ``--fix`` (with ``unsafe``: ``--unsafe-fixes``) would run."""
    if fixed is None or not wanted(FIX_ALL, only):
        return []
    edit = edit_between(text, fixed, positions)
    if edit is None:
        return []
    title = "torchleaklint: fix all fixable findings" + (" (unsafe fixes included)" if unsafe else " (safe fixes)")
    return [lsp.CodeAction(title=title, kind=FIX_ALL, edit=workspace_edit(uri, [edit], version))]
