"""Terminal output: one line per finding (ruff-style), optional evidence, fixes and source
excerpts (``full``), a summary."""

from __future__ import annotations

import os
from collections import Counter
from typing import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..diagnostics import Diagnostic


def display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def location(d: Diagnostic) -> str:
    """``path:row:col`` (``path:cell N:row:col`` in a notebook), columns 1-based."""
    where = f"{d.start.line}:{d.start.col + 1}"
    if d.cell is not None:
        where = f"cell {d.cell}:{where}"
    return f"{display_path(d.path)}:{where}"


class TextReporter:
    def __init__(self, console: Console, concise: bool = False, show_evidence: bool = False,
                 unsafe_fixes: bool = False, full: bool = False, show_fixes: bool = False) -> None:
        self.console = console
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
        out = self.console
        for d in diags:
            loc = location(d) + ":"
            marker = self._fixable_marker(d)
            out.print(f"[bold]{escape(loc)}[/bold] [bold red]{d.code}[/bold red] "
                      f"[cyan]{escape(marker)}[/cyan]{escape(d.message)}", highlight=False)
            if self.concise:
                continue
            if self._excerpts is not None:
                for line in self._excerpts.excerpt(d):
                    out.print(escape(line), highlight=False)
            if self.show_evidence:
                for note in d.evidence:
                    out.print(f"    [dim]= {escape(note)}[/dim]", highlight=False)
            if self.show_fixes and d.fix is not None:
                label = "fix" if (d.fix.is_safe or self.unsafe_fixes) else "unsafe fix, with --unsafe-fixes"
                out.print(f"    [cyan]= {escape(label)}: {escape(d.fix.message)}[/cyan]", highlight=False)
            if self.full:
                out.print("")

    def fixed(self, fixed_codes: dict, names: dict) -> None:
        """``--show-fixes`` after ``--fix``: what was fixed, per file and rule."""
        total = sum(sum(c.values()) for c in fixed_codes.values())
        if not total:
            return
        out = self.console
        out.print(f"Fixed {total} error{'s' if total != 1 else ''}:", highlight=False)
        for path, codes in fixed_codes.items():
            out.print(f"- {escape(display_path(path))}:", highlight=False)
            for code, count in sorted(codes.items()):
                out.print(f"    {count} × {code} ({escape(names.get(code, ''))})", highlight=False)

    def summary(self, remaining: Sequence[Diagnostic], fixed: int = 0) -> None:
        out = self.console
        n = len(remaining)
        safe = sum(1 for d in remaining if d.fix is not None and (d.fix.is_safe or self.unsafe_fixes))
        hidden = sum(1 for d in remaining if d.fix is not None and not d.fix.is_safe and not self.unsafe_fixes)
        if n == 0:
            if fixed:
                out.print(f"Found {fixed} error{'s' if fixed != 1 else ''} ({fixed} fixed, 0 remaining).")
            else:
                out.print("All checks passed!")
            return
        if fixed:
            out.print(f"Found {n + fixed} errors ({fixed} fixed, {n} remaining).")
        else:
            out.print(f"Found {n} error{'s' if n != 1 else ''}.")
        if safe:
            out.print(f"[cyan]{escape('[*]')}[/cyan] {safe} fixable with the `--fix` option"
                      + (f" ({_hidden(hidden)} with the `--unsafe-fixes` option)." if hidden else "."),
                      highlight=False)
        elif hidden:
            out.print(f"No fixes available ({_hidden(hidden)} with the `--unsafe-fixes` option).",
                      highlight=False)

    def statistics(self, diags: Sequence[Diagnostic], names: dict) -> None:
        counts = Counter(d.code for d in diags)
        fixable = Counter(d.code for d in diags if d.fix is not None and (d.fix.is_safe or self.unsafe_fixes))
        table = Table(show_header=False, box=None, pad_edge=False)
        for _ in range(4):
            table.add_column()
        for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            table.add_row(str(count), code, escape("[*]") if fixable[code] else "", names.get(code, "parse-error"))
        self.console.print(table)


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
