"""Terminal output: one line per finding (ruff-style), optional evidence, fixes and source
excerpts (``full``), a summary.

Lines are written as parts with styles. On a colour terminal rich renders them; anywhere
else (pipes, files, CI logs, ``--no-color``/``NO_COLOR``) the text is written as it is,
which is what rich would print there, without importing rich.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from typing import Optional, Sequence, TextIO, Tuple, Union

from ..diagnostics import Diagnostic

Part = Union[str, Tuple[str, str]]  # text, or (text, rich style)


class PlainOutput:
    """Lines as plain text on a stream."""

    def __init__(self, stream: Optional[TextIO] = None, stderr: bool = False) -> None:
        self.stream = stream if stream is not None else (sys.stderr if stderr else sys.stdout)

    def line(self, *parts: Part) -> None:
        self.stream.write("".join(p if isinstance(p, str) else p[0] for p in parts) + "\n")


class StyledOutput:
    """Lines styled by rich, for a terminal."""

    def __init__(self, console) -> None:
        self.console = console

    def line(self, *parts: Part) -> None:
        from rich.text import Text

        self.console.print(Text.assemble(*parts), highlight=False)


def wants_styles(no_color: bool, stderr: bool = False) -> bool:
    """Whether styles could show: a terminal (or FORCE_COLOR) and no request for plain text."""
    if no_color or os.environ.get("NO_COLOR"):
        return False
    stream = sys.stderr if stderr else sys.stdout
    isatty = getattr(stream, "isatty", None)
    return bool(os.environ.get("FORCE_COLOR")) or bool(isatty and isatty())


def display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def printable_path(path: str) -> str:
    """``display_path`` with each unprintable character (a newline, a tab, an escape, a
    byte that is not UTF-8) written as its Python escape, so that one finding stays one
    line and a file name cannot inject terminal control sequences."""
    shown = display_path(path)
    if shown.isprintable():
        return shown
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in shown)


def location(d: Diagnostic) -> str:
    """``path:row:col`` (``path:cell N:row:col`` in a notebook), columns 1-based."""
    where = f"{d.start.line}:{d.start.col + 1}"
    if d.cell is not None:
        where = f"cell {d.cell}:{where}"
    return f"{printable_path(d.path)}:{where}"


class TextReporter:
    def __init__(self, out: Union[PlainOutput, StyledOutput], concise: bool = False, show_evidence: bool = False,
                 unsafe_fixes: bool = False, full: bool = False, show_fixes: bool = False) -> None:
        self.out = out
        self.concise = concise
        self.show_evidence = show_evidence or full
        self.unsafe_fixes = unsafe_fixes
        self.full = full
        self.show_fixes = show_fixes or full
        self._excerpts = SourceExcerpts() if full else None

    def _fixable_marker(self, diag: Diagnostic) -> str:
        if diag.fix is not None and (diag.fix.is_safe or self.unsafe_fixes):
            return "[*] "
        return ""

    def diagnostics(self, diags: Sequence[Diagnostic]) -> None:
        out = self.out
        for d in diags:
            out.line((location(d) + ":", "bold"), " ", (d.code, "bold red"), " ",
                     (self._fixable_marker(d), "cyan"), d.message)
            if self.concise:
                continue
            if self._excerpts is not None:
                for line in self._excerpts.excerpt(d):
                    out.line(line)
            if self.show_evidence:
                for note in d.evidence:
                    out.line(("    = " + note, "dim"))
            if self.show_fixes and d.fix is not None:
                label = "fix" if (d.fix.is_safe or self.unsafe_fixes) else "unsafe fix, with --unsafe-fixes"
                out.line((f"    = {label}: {d.fix.message}", "cyan"))
            if self.full:
                out.line("")

    def fixed(self, fixed_codes: dict, names: dict) -> None:
        """``--show-fixes`` after ``--fix``: what was fixed, per file and rule."""
        total = sum(sum(c.values()) for c in fixed_codes.values())
        if not total:
            return
        out = self.out
        out.line(f"Fixed {total} error{'s' if total != 1 else ''}:")
        for path, codes in fixed_codes.items():
            out.line(f"- {printable_path(path)}:")
            for code, count in sorted(codes.items()):
                out.line(f"    {count} × {code} ({names.get(code, '')})")

    def summary(self, remaining: Sequence[Diagnostic], fixed: int = 0) -> None:
        out = self.out
        n = len(remaining)
        safe = sum(1 for d in remaining if d.fix is not None and (d.fix.is_safe or self.unsafe_fixes))
        hidden = sum(1 for d in remaining if d.fix is not None and not d.fix.is_safe and not self.unsafe_fixes)
        if n == 0:
            if fixed:
                out.line(f"Found {fixed} error{'s' if fixed != 1 else ''} ({fixed} fixed, 0 remaining).")
            else:
                out.line("All checks passed!")
            return
        if fixed:
            out.line(f"Found {n + fixed} errors ({fixed} fixed, {n} remaining).")
        else:
            out.line(f"Found {n} error{'s' if n != 1 else ''}.")
        if safe:
            out.line(("[*]", "cyan"), f" {safe} fixable with the `--fix` option"
                     + (f" ({_hidden(hidden)} with the `--unsafe-fixes` option)." if hidden else "."))
        elif hidden:
            out.line(f"No fixes available ({_hidden(hidden)} with the `--unsafe-fixes` option).")

    def statistics(self, diags: Sequence[Diagnostic], names: dict) -> None:
        counts = Counter(d.code for d in diags)
        fixable = Counter(d.code for d in diags if d.fix is not None and (d.fix.is_safe or self.unsafe_fixes))
        rows = [(str(count), code, "[*]" if fixable[code] else "", names.get(code, "parse-error"))
                for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
        widths = [max((len(row[i]) for row in rows), default=0) for i in range(4)]
        for row in rows:
            self.out.line("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def _hidden(n: int) -> str:
    return f"{n} hidden fix can be enabled" if n == 1 else f"{n} hidden fixes can be enabled"


class SourceExcerpts:
    """The reported lines of each file (of each notebook cell), read once per file."""

    CONTEXT = 1

    def __init__(self) -> None:
        self._lines: dict = {}

    def _source_lines(self, d: Diagnostic):
        key = (d.path, d.cell)
        if key not in self._lines:
            from ..engine.lint import read_source
            from ..engine.notebook import NotebookSource

            source = read_source(d.path)
            lines = None
            if isinstance(source, NotebookSource):
                if d.cell is not None and d.cell - 1 in source.cells:
                    lines = source.cells[d.cell - 1].split("\n")
            elif hasattr(source, "lines"):
                lines = source.lines
            self._lines[key] = lines
        return self._lines[key]

    def excerpt(self, d: Diagnostic):
        lines = self._source_lines(d)
        if not lines or not 1 <= d.start.line <= len(lines):
            return []
        first = max(1, d.start.line - self.CONTEXT)
        last = min(len(lines), max(d.end.line, d.start.line), d.start.line + 2)
        width = len(str(last))
        out = [f"{' ' * width} |"]
        for number in range(first, last + 1):
            text = lines[number - 1].expandtabs(1)
            out.append(f"{number:>{width}} | {text}")
            if d.start.line <= number <= d.end.line:
                begin = d.start.col if number == d.start.line else len(text) - len(text.lstrip())
                end = d.end.col if number == d.end.line else len(text)
                out.append(f"{' ' * width} | {' ' * begin}{'^' * max(end - begin, 1)}")
        return out
