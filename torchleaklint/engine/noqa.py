"""Suppression comments: ``# noqa``, ``# noqa: TLL001,TLL002`` and the file-level
``# torchleaklint: skip-file``; TLL100 (unused ``noqa``) and ``--add-noqa``."""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from ..diagnostics import SAFE, Diagnostic, Edit, Fix, Position
from ..rules import UNUSED_NOQA


_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)

ALL = frozenset({"*"})


def noqa_directives(text: str, lines: Sequence[str]) -> Dict[int, FrozenSet[str]]:
    """Line number -> suppressed codes (``{"*"}`` for a bare ``# noqa``), from comments only."""
    out: Dict[int, FrozenSet[str]] = {}
    if "noqa" not in text.lower():
        return out
    try:
        comments = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                    if tok.type == tokenize.COMMENT and "noqa" in tok.string.lower()]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        comments = [(n, line[line.index("#"):]) for n, line in enumerate(lines, start=1) if "#" in line]
    for lineno, comment in comments:
        match = _NOQA.search(comment)
        if match is None:
            continue
        codes = match.group("codes")
        if codes:
            out[lineno] = frozenset(c.upper() for c in re.split(r"[,\s]+", codes) if c)
        else:
            out[lineno] = ALL
    return out


def is_suppressed(directives: Dict[int, FrozenSet[str]], line: int, code: str) -> bool:
    codes: Optional[FrozenSet[str]] = directives.get(line)
    if codes is None:
        return False
    return codes is ALL or "*" in codes or code in codes


# --- file-level skip ----------------------------------------------------------------------

_SKIP_FILE = re.compile(r"#\s*torchleaklint\s*:\s*skip-file\b", re.IGNORECASE)


def skips_file(text: str) -> bool:
    """A ``# torchleaklint: skip-file`` comment anywhere in the file (not in a string)."""
    if "skip-file" not in text.lower():
        return False
    try:
        return any(tok.type == tokenize.COMMENT and _SKIP_FILE.match(tok.string)
                   for tok in tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return any(_SKIP_FILE.match(line.strip()) for line in text.splitlines())


# --- directives with their places, for TLL100 and --add-noqa ---------------------------

@dataclass(frozen=True)
class NoqaComment:
    line: int
    start: int  # columns of the noqa directive within its line
    end: int
    codes: Optional[Tuple[str, ...]]  # None for a bare directive (no codes)
    codes_start: int = 0  # columns of the code list
    codes_end: int = 0


def noqa_comments(text: str) -> List[NoqaComment]:
    out: List[NoqaComment] = []
    if "noqa" not in text.lower():
        return out
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return out  # a file that does not tokenize is reported as TLL000 anyway
    for tok in tokens:
        if tok.type != tokenize.COMMENT or "noqa" not in tok.string.lower():
            continue
        match = _NOQA.search(tok.string)
        if match is None:
            continue
        col = tok.start[1]
        codes = match.group("codes")
        if codes:
            found = tuple(c.upper() for c in re.split(r"[,\s]+", codes) if c)
            out.append(NoqaComment(tok.start[0], col + match.start(), col + match.end(), found,
                                   col + match.start("codes"), col + match.end("codes")))
        else:
            out.append(NoqaComment(tok.start[0], col + match.start(), col + match.end(), None))
    return out


def unused_noqa(path: str, source, used: Set[Tuple[int, str]], enabled: Set[str],
                known: Set[str]) -> List[Diagnostic]:
    """TLL100 for each ``# noqa: TLLxxx`` that suppressed nothing: codes of enabled rules
    with no finding on that line, and codes no rule has. Codes of other tools, codes of
    rules that are not enabled, and bare ``# noqa`` are left alone."""
    out: List[Diagnostic] = []
    for comment in noqa_comments(source.text):
        if comment.codes is None or UNUSED_NOQA in comment.codes:
            continue
        ours = [c for c in comment.codes if c.startswith("TLL")]
        unused = [c for c in ours if c in enabled and (comment.line, c) not in used]
        unknown = [c for c in ours if c not in known and c != UNUSED_NOQA]
        if not unused and not unknown:
            continue
        parts = []
        if unused:
            parts.append("unused: " + ", ".join(f"`{c}`" for c in unused))
        if unknown:
            parts.append("unknown: " + ", ".join(f"`{c}`" for c in unknown))
        drop = set(unused) | set(unknown)
        keep = [c for c in comment.codes if c not in drop]
        line_text = source.line(comment.line)
        if keep:
            edit = Edit(Position(comment.line, comment.codes_start), Position(comment.line, comment.codes_end),
                        ", ".join(keep))
            what = "Remove the unused codes"
        elif not line_text[:comment.start].strip() and not line_text[comment.end:].strip():
            edit = Edit(Position(comment.line, 0), Position(comment.line + 1, 0), "")
            what = "Remove the `noqa` comment line"
        else:
            begin = len(line_text[:comment.start].rstrip())
            if line_text[:begin].endswith("#"):  # another comment before the directive keeps its own hash
                begin = comment.start
            edit = Edit(Position(comment.line, begin), Position(comment.line, comment.end), "")
            what = "Remove the `noqa` directive"
        start, end = Position(comment.line, comment.start), Position(comment.line, comment.end)
        out.append(Diagnostic(UNUSED_NOQA, f"Unused `noqa` directive ({'; '.join(parts)})", path, start, end,
                              fix=Fix(SAFE, what, (edit,)), noqa_line=0))
    return out


def add_noqa(text: str, wanted: Dict[int, Set[str]]) -> Tuple[str, int]:
    """Add ``# noqa: CODES`` (or merge codes into an existing directive) on each line in
    ``wanted``; returns the new text and the number of lines changed. Lines where a
    comment cannot go (inside a multi-line string, after a backslash) are skipped, and
    the result must have the same syntax tree as the original."""
    source_lines = text.splitlines(keepends=True)
    blocked = _lines_without_room_for_a_comment(text)
    existing = {c.line: c for c in noqa_comments(text)}
    changed = 0
    for line, codes in sorted(wanted.items()):
        if line in blocked or not 1 <= line <= len(source_lines):
            continue
        raw = source_lines[line - 1]
        body = raw.rstrip("\r\n")
        ending = raw[len(body):]
        comment = existing.get(line)
        if comment is not None and comment.codes is None:
            continue  # a bare directive already suppresses everything
        if comment is not None:
            merged = list(comment.codes) + sorted(c for c in codes if c not in comment.codes)
            if len(merged) == len(comment.codes):
                continue
            body = body[:comment.codes_start] + ", ".join(merged) + body[comment.codes_end:]
        else:
            body = body.rstrip() + "  # noqa: " + ", ".join(sorted(codes))
        source_lines[line - 1] = body + ending
        changed += 1
    new_text = "".join(source_lines)
    if changed and _tree(new_text) != _tree(text):
        return text, 0
    return new_text, changed


def _lines_without_room_for_a_comment(text: str) -> Set[int]:
    blocked: Set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] < tok.end[0] and tok.type != tokenize.NL and tok.type != tokenize.NEWLINE:
                blocked.update(range(tok.start[0], tok.end[0]))  # a string spanning lines
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return set(range(1, text.count("\n") + 2))
    for number, line in enumerate(text.splitlines(), start=1):
        if line.rstrip().endswith("\\"):
            blocked.add(number)
    return blocked


def _tree(text: str) -> Optional[str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.dump(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


UNUSED_NOQA_SUMMARY = "A `noqa` comment names a torchleaklint code that suppresses no finding"
UNUSED_NOQA_DOCS = """
## What it does
Reports `# noqa: TLLxxx` comments whose codes suppress nothing on their line: the rule is
enabled and found nothing there (the code was fixed, or the comment sits on the wrong
line), or the code is not a torchleaklint code at all. It is off unless selected by its
own code: `--extend-select TLL100` or `extend-select = ["TLL100"]`.

Codes of other tools (`# noqa: E501`), codes of rules that are not enabled in this run,
and a bare `# noqa` are left alone.

## Why is this bad
A stale suppression hides the next real finding on that line, and tells readers that a
leak was once there.

## Example
```python
losses.append(loss.item())  # noqa: TLL001
```

## Use instead
```python
losses.append(loss.item())
```

## Fix safety
The fix removes the unused codes (the whole directive when none is left) and is safe:
comments do not change behaviour.

## Memory impact
None by itself.
"""
