"""Statements the author runs with grad switched on by hand: the body of
``with torch.enable_grad():`` (often inside an evaluation loop's ``no_grad``, around an
adversarial attack or a test-time optimisation) or of a function decorated with
``@torch.enable_grad()``. Grad there is a choice, not an oversight."""

from __future__ import annotations

import ast
from typing import Set

from .module_index import Scope, _enables_grad


def grad_enabled_on_purpose(analysis, scope: Scope) -> Set[int]:
    """Ids of the statements of ``scope`` (its own, not nested functions') that run inside
    an explicit ``enable_grad``/``set_grad_enabled(<not False>)``."""
    imports = analysis.index.imports
    found: Set[int] = set()
    if any(_enables_grad(deco, imports) for deco in scope.decorators):
        return {id(stmt) for stmt in _own_statements(scope.node.body)}
    for node in _own_statements(scope.node.body):
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                _enables_grad(item.context_expr, imports) for item in node.items):
            found.update(id(stmt) for stmt in _own_statements(node.body))
    return found


def _own_statements(body):
    """Every statement under ``body``, not entering nested functions or classes."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                yield from _own_statements(inner)
        for case in getattr(stmt, "cases", None) or ():
            yield from _own_statements(case.body)
