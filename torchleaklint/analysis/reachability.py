"""Statements that never run: after a ``return``, ``raise``, ``break`` or ``continue`` in
the same block, or inside a statement that is itself such a one (``def test(): return``
left at the top of a function to switch it off)."""

from __future__ import annotations

import ast

_JUMPS = (ast.Return, ast.Raise, ast.Break, ast.Continue)
_BLOCKS = ("body", "orelse", "finalbody")


def unreachable(scope_node: ast.AST, stmt: ast.AST) -> bool:
    """Does a jump earlier in a block on the way from ``scope_node`` to ``stmt`` skip it?"""
    node = scope_node
    while node is not stmt:
        child = _step(node, stmt)
        if child is None:
            return False
        block, index = child
        if any(isinstance(earlier, _JUMPS) for earlier in block[:index]):
            return True
        node = block[index]
    return False


def _step(node, stmt):
    """The block of ``node`` holding ``stmt`` (or a statement that contains it), and where."""
    blocks = [getattr(node, name, None) for name in _BLOCKS]
    blocks += [h.body for h in getattr(node, "handlers", []) or []]
    blocks += [c.body for c in getattr(node, "cases", []) or []]
    for block in blocks:
        if not isinstance(block, list):
            continue
        for i, child in enumerate(block):
            if child is stmt or (child.lineno <= stmt.lineno <= (child.end_lineno or child.lineno)
                                 and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))):
                return block, i
    return None
