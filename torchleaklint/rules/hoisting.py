"""Hoisting a statement out of the loop that repeats it: the fix of the rules about
objects made once per step that one object made before the loop would serve (process
groups, traces). Always unsafe: the statement then runs once even when the loop runs
zero or many times, and before whatever earlier statements of the iteration did."""

from __future__ import annotations

import ast
from typing import Optional

from ..diagnostics import UNSAFE, Edit, Fix, Position
from .insertions import indentation_of, line_before
from .step_loops import bound_inside

# Calls that may move with a hoisted statement: they build values and change nothing.
PURE_BUILTINS = frozenset({"list", "range", "tuple", "len", "sorted", "dict", "set", "int", "float", "str", "min",
                           "max", "abs"})


def hoist_fix(ctx, scope, stmt: ast.AST, loop: ast.AST, message: str) -> Optional[Fix]:
    """Move ``name = call(...)``, a statement of ``loop``'s own body, to just above the
    loop, when everything it reads is bound before the loop, ``name`` is bound nowhere else
    in the loop, and the statement has its lines to itself; None otherwise."""
    if not _hoistable(ctx, scope, stmt, loop):
        return None
    first, last = stmt.lineno, stmt.end_lineno
    loop_indent = indentation_of(ctx, loop)
    own_indent = indentation_of(ctx, stmt)
    if loop_indent is None or own_indent is None:
        return None
    lines = [ctx.source.line(n) for n in range(first, last + 1)]
    if not _owns_lines(ctx, stmt, lines[-1]):
        return None
    # Continuation lines move with the statement's indentation; inside a string that
    # spans lines, they are text and move as they are.
    if _spans_string(stmt):
        moved = [loop_indent + lines[0][len(own_indent):]] + lines[1:]
    else:
        moved = [loop_indent + line[len(own_indent):] if line.startswith(own_indent) else line for line in lines]
    insert = line_before(ctx, loop, ctx.source.newline.join(moved), "")
    if insert is None:
        return None
    delete = Edit(Position(first, 0), _line_end(ctx, last), "")
    return Fix(UNSAFE, message, (insert, delete))


def _hoistable(ctx, scope, stmt, loop) -> bool:
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return False
    if not any(s is stmt for s in loop.body) or len(loop.body) < 2:
        return False  # only a statement of the loop's own body, never the last one left
    name = stmt.targets[0].id
    if bound_inside(ctx.analysis, scope, loop, stmt.value):
        return False  # reads something the iteration makes: it cannot run before the loop
    for d in scope.defs_of(name):
        if d.stmt is not stmt and _within(loop, d.stmt):
            return False  # the loop rebinds the name: later iterations expect the new binding
    for node in ast.walk(loop):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return False
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load) \
                and (node.lineno, node.col_offset) < (stmt.lineno, stmt.col_offset):
            return False  # read earlier (the loop's test, or the iteration before it): it saw the old binding
    if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr, ast.Lambda)) for n in ast.walk(stmt.value)):
        return False
    # Only the call itself moves: another call in its arguments (``model.eval()``) would
    # move its side effect too, before the iteration that meant it.
    inner = [n for n in ast.walk(stmt.value) if isinstance(n, ast.Call) and n is not stmt.value]
    return all(isinstance(n.func, ast.Name) and n.func.id in PURE_BUILTINS for n in inner)


def _spans_string(stmt) -> bool:
    return any(isinstance(n, (ast.Constant, ast.JoinedStr)) and n.end_lineno > n.lineno for n in ast.walk(stmt)
               if hasattr(n, "end_lineno"))


def _within(loop, node) -> bool:
    return (loop.lineno, loop.col_offset) <= (node.lineno, node.col_offset) and \
        (node.end_lineno, node.end_col_offset) <= (loop.end_lineno, loop.end_col_offset)


def _owns_lines(ctx, stmt, last_line: str) -> bool:
    """No other statement shares the statement's last line (``g = new_group(); x = 1``);
    ``indentation_of`` has already checked the first."""
    after = last_line[ctx.source.char_col(stmt.end_lineno, stmt.end_col_offset):]
    return after.split("#", 1)[0].strip() == ""


def _line_end(ctx, line_no: int) -> Position:
    if line_no >= len(ctx.source.lines):
        return Position(line_no, len(ctx.source.line(line_no)))
    return Position(line_no + 1, 0)
