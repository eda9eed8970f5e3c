"""Applying fixes: non-overlapping edits per pass, re-lint until stable (at most 10
passes), keep the last version that parses, and write atomically."""

from __future__ import annotations

import ast
import os
import stat
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple


from ..diagnostics import Diagnostic, Fix
from .source import SourceText

MAX_PASSES = 10


@dataclass
class FixOutcome:
    text: str
    applied: int = 0
    diagnostics: List[Diagnostic] = field(default_factory=list)
    error: Optional[str] = None
    fixed_codes: Counter = field(default_factory=Counter)  # rule code -> fixes applied


def applicable(diag: Diagnostic, unsafe: bool) -> bool:
    return diag.fix is not None and (diag.fix.is_safe or unsafe)


def apply_fixes(source: SourceText, fixes: Sequence[Fix], taken: Optional[list] = None) -> Tuple[str, int]:
    """Apply every fix whose edits overlap no edit of a fix accepted before it (the
    accepted ones are appended to ``taken`` when given)."""
    spans: List[Tuple[int, int, str]] = []
    accepted = 0
    ordered = sorted(fixes, key=lambda f: min((e.start.line, e.start.col) for e in f.edits))
    for fix in ordered:
        mine = [(source.offset(e.start.line, e.start.col), source.offset(e.end.line, e.end.col), e.content)
                for e in fix.edits]
        if any(_overlaps(a, b) for a in mine for b in spans):
            continue
        spans.extend(mine)
        accepted += 1
        if taken is not None:
            taken.append(fix)
    text = source.text
    for start, end, content in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
        text = text[:start] + content + text[end:]
    return text, accepted


def _overlaps(a, b) -> bool:
    if a[0] == a[1] and b[0] == b[1]:
        return a[0] == b[0]
    return a[0] < b[1] and b[0] < a[1] or (a[0] == a[1] and b[0] < a[0] < b[1]) or (
        b[0] == b[1] and a[0] < b[0] < a[1])


def parses(text: str) -> Optional[str]:
    """None when both CPython and libcst accept the text, else the parser's message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except SyntaxError as exc:
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    import libcst  # here, not at the top: checking without fixing never needs it (0.25 s to import)

    try:
        libcst.parse_module(text)
    except libcst.ParserSyntaxError as exc:
        return f"libcst: {exc.message} (line {exc.raw_line})"
    except Exception as exc:  # libcst's native parser can reject exotic constructs
        return f"libcst: {exc}"
    return None


def fix_source(session, path: str, source: SourceText, unsafe: bool) -> FixOutcome:
    """Fix one file's text to a fixed point; the session re-lints each pass."""
    text = source.text
    applied = 0
    result = session.lint_text(source, path)
    error = None
    fixed_codes: Counter = Counter()
    for _ in range(MAX_PASSES):
        fixable = [d for d in result.diagnostics if applicable(d, unsafe)]
        fixes = [d.fix for d in fixable]
        if not fixes:
            break
        current = SourceText(text, source.encoding, source.bom)
        taken: list = []
        new_text, count = apply_fixes(current, fixes, taken)
        if count == 0 or new_text == text:
            break
        problem = parses(new_text)
        if problem is not None:
            if parses(text) is not None:
                # Read with an older grammar (``async`` as a name): the parsers that check a
                # fix reject the file before any edit too.
                error = (f"not fixed: the file is valid only in an older Python ({problem}), so a fix "
                         f"cannot be checked; the file was left as it was")
            else:
                error = f"a fix produced code that does not parse ({problem}); the file was left as it was"
            break
        text = new_text
        applied += count
        code_of = {id(d.fix): d.code for d in fixable}
        fixed_codes.update(code_of[id(f)] for f in taken)
        session.set_text(path, text)
        result = session.lint_text(SourceText(text, source.encoding, source.bom), path)
    # Every pass that parsed is kept; the one that did not is reported.
    return FixOutcome(text, applied, source.relocate(result.diagnostics, text), error, fixed_codes)


def atomic_write(path: str, data: bytes) -> None:
    """Write via a temporary file in the same folder and ``os.replace``; keep the mode
    (and the owner, where allowed). A reader, or a run killed at any moment, sees either
    the old bytes or the new ones, never a mix."""
    import tempfile  # here: checking never writes

    folder = os.path.dirname(os.path.abspath(path))
    info = os.stat(path)
    fd, tmp = tempfile.mkstemp(prefix=".torchleaklint-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(info.st_mode))
        if hasattr(os, "chown") and (info.st_uid, info.st_gid) != (os.getuid(), os.getgid()):
            try:
                os.chown(tmp, info.st_uid, info.st_gid)
            except OSError:
                pass  # only the owner's group or root may keep them; the mode is kept regardless
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
