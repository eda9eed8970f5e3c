"""Edits that add whole lines: a statement before/after another one (at a given
indentation, in the file's own newline style), a decorator, an import."""

from __future__ import annotations

import ast
from typing import Optional

from ..diagnostics import Edit, Position


def indentation_of(ctx, stmt: ast.AST) -> Optional[str]:
    """The indentation of a statement that starts its own line, else None."""
    line = ctx.source.line(stmt.lineno)
    prefix = line[: ctx.source.char_col(stmt.lineno, stmt.col_offset)]
    return prefix if prefix.strip() == "" else None


def line_before(ctx, stmt: ast.AST, text: str, indent: Optional[str] = None) -> Optional[Edit]:
    """Insert ``text`` as a line just above ``stmt`` (above its decorators for a def)."""
    first = stmt
    decorators = getattr(stmt, "decorator_list", None)
    line_no = min([d.lineno for d in decorators] + [stmt.lineno]) if decorators else stmt.lineno
    own = indentation_of(ctx, first)
    if own is None:
        return None
    indent = own if indent is None else indent
    pos = Position(line_no, 0)
    return Edit(pos, pos, f"{indent}{text}{ctx.source.newline}")


def line_after(ctx, stmt: ast.AST, text: str, indent: str) -> Optional[Edit]:
    """Insert ``text`` as a line right after the last line of ``stmt``."""
    end_line = stmt.end_lineno
    line = ctx.source.line(end_line)
    if ";" in line[ctx.source.char_col(end_line, stmt.end_col_offset):].split("#")[0]:
        return None  # another statement follows on the same line
    if end_line >= len(ctx.source.lines):
        pos = Position(end_line, len(line))
        return Edit(pos, pos, f"{ctx.source.newline}{indent}{text}")
    pos = Position(end_line + 1, 0)
    return Edit(pos, pos, f"{indent}{text}{ctx.source.newline}")


def import_edit(ctx, statement: str) -> Optional[Edit]:
    """Add a top-level import after the module docstring, ``__future__`` imports and the
    last top-level import; None when the module already has it."""
    tree = ctx.analysis.index.tree
    after = None
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if ast.unparse(node) == statement:
                return None
            after = node
        elif after is None and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str) and node is tree.body[0]:
            after = node
        else:
            break
    if after is None:
        pos = Position(1, 0)
        # Keep a shebang or coding cookie on the first lines.
        for n in (1, 2):
            line = ctx.source.line(n)
            if line.startswith("#!") or (line.startswith("#") and "coding" in line):
                pos = Position(n + 1, 0)
        return Edit(pos, pos, f"{statement}{ctx.source.newline}")
    return line_after(ctx, after, statement, "")


def torch_name(ctx) -> Optional[str]:
    """The local name bound to the ``torch`` package, if the module imports it."""
    for local, target in ctx.analysis.index.imports.aliases.items():
        if target == "torch":
            return local
    return None
