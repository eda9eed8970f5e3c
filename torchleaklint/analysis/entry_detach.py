"""Callees that detach what they are given before using it.

``y, memory = model(x, memory)`` where the module's ``forward`` starts with
``memory = self.repackage_hidden(memory)``; ``mask, idx = helper(logits)`` where the helper
starts with ``logits = logits.detach()``: what the caller passes in is cut from its graph
on entry, so the result does not chain the caller's previous value.
"""

from __future__ import annotations

import ast
from typing import Optional, Tuple

from .module_index import Scope

MAX_ENTRY = 4  # statements at the top of the callee where the detach must come


def detached_on_entry(analysis, callee: Scope, param: str, depth: int = 0) -> bool:
    """Does one of the first statements of ``callee`` rebind ``param`` to a detached read of
    itself (``.detach()``, ``.data``, a ``repackage``/``detach`` helper), before any other
    read of it, or hand it first to a callee that does (a wrapper module's ``forward``
    passing ``memory`` straight to its core)?"""
    from .carried import detached_read

    body = getattr(callee.node, "body", [])
    for stmt in body[:MAX_ENTRY]:
        reads = [n for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Load)]
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # the docstring
        if not reads:
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id == param:
            return all(detached_read(n, stmt.value) for n in reads)
        if depth < 2 and len(reads) == 1 and isinstance(getattr(stmt, "value", None), ast.Call):
            call = stmt.value
            found = callee_parameter(analysis, callee, stmt, call, reads[0])
            if found is not None:
                inner_analysis, inner, inner_param = found
                return detached_on_entry(inner_analysis, inner, inner_param, depth + 1)
        return False  # used as given first
    return False


def callee_parameter(analysis, scope: Scope, stmt, call: ast.Call, arg) -> Optional[Tuple[object, Scope, str]]:
    """The analysis and scope of the project function (or module ``forward``) ``call`` runs
    and the parameter that receives ``arg``, when all are known."""
    from .keyed_outputs import forward_of
    from .summaries import parameter_of

    project = analysis.project
    if project is None:
        return None
    found = forward_of(analysis.graph, call, scope, stmt) or analysis.graph.kinds.only_callee(call.func, scope, stmt)
    if found is None:
        return None
    callee_analysis, callee = found
    param = parameter_of(call, callee, arg)
    return (callee_analysis, callee, param) if param is not None else None
