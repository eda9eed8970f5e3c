"""Statements the author runs with grad switched on by hand: the body of
``with torch.enable_grad():`` (often inside an evaluation loop's ``no_grad``, around an
adversarial attack or a test-time optimisation) or of a function decorated with
``@torch.enable_grad()``. Grad there is a choice, not an oversight."""

from __future__ import annotations

import ast
from typing import Set

from .module_index import Scope, _enables_grad, contains


def grad_enabled_on_purpose(analysis, scope: Scope) -> Set[int]:
    """Ids of the statements of ``scope`` (its own, not nested functions') that run inside
    an explicit ``enable_grad``/``set_grad_enabled(<not False>)``."""
    imports = analysis.index.imports
    if any(_enables_grad(deco, imports) for deco in scope.decorators):
        return {id(stmt) for stmt in scope.statements}
    blocks = [stmt for stmt in scope.statements if isinstance(stmt, (ast.With, ast.AsyncWith))
              and any(_enables_grad(item.context_expr, imports) for item in stmt.items)]
    return {id(stmt) for stmt in scope.statements if any(stmt is not b and contains(b, stmt) for b in blocks)}
