"""Terminal output: one line per finding (ruff-style), optional evidence, a summary."""

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


class TextReporter:
    def __init__(self, console: Console, concise: bool = False, show_evidence: bool = False,
                 unsafe_fixes: bool = False) -> None:
        self.console = console
        self.concise = concise
        self.show_evidence = show_evidence
        self.unsafe_fixes = unsafe_fixes

    def _fixable_marker(self, diag: Diagnostic) -> str:
        if diag.fix is not None and (diag.fix.is_safe or self.unsafe_fixes):
            return "[*] "
        return ""

    def diagnostics(self, diags: Sequence[Diagnostic]) -> None:
        out = self.console
        for d in diags:
            loc = f"{display_path(d.path)}:{d.start.line}:{d.start.col + 1}:"
            marker = self._fixable_marker(d)
            out.print(f"[bold]{escape(loc)}[/bold] [bold red]{d.code}[/bold red] "
                      f"[cyan]{escape(marker)}[/cyan]{escape(d.message)}", highlight=False)
            if self.show_evidence and not self.concise:
                for note in d.evidence:
                    out.print(f"    [dim]= {escape(note)}[/dim]", highlight=False)

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
