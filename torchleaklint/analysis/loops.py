"""Facts about loops: which loop a statement repeats in, and whether an iteration runs a
backward pass (directly or through project functions that call ``backward()``)."""

from __future__ import annotations

import ast
from typing import Optional

from .module_index import Scope, contains


def innermost_loop(analysis, stmt) -> Optional[ast.AST]:
    ctx = analysis.index.ctx(stmt)
    if ctx is None or not ctx.loops:
        return None
    return ctx.loops[-1]


def loop_calls_backward(analysis, scope: Scope, loop: ast.AST, retained: bool = False) -> Optional[str]:
    """Describe the backward pass an iteration of ``loop`` runs, or None. With
    ``retained``, ``backward(retain_graph=True)`` counts too."""
    memo = analysis.__dict__.setdefault("_loop_backward_memo", {})
    key = (id(loop), retained)
    if key in memo:
        return memo[key]
    found = None
    for site in scope.backward_sites:
        if site.kind == "grad":
            continue  # ``torch.autograd.grad`` computes gradients for the code to use (penalties, meta-learning)
        if contains(loop, site.call) and (retained or not site.retain_graph):
            found = f"`.backward()` at line {site.call.lineno}"
            break
    if found is None and analysis.project is not None:
        for call, stmt in scope.calls:
            if not contains(loop, call):
                continue
            arity = 0  # ``a, b = step(batch)``: only functions returning that many values fit
            if isinstance(stmt, ast.Assign) and stmt.value is call and isinstance(stmt.targets[0], (ast.Tuple, ast.List)):
                arity = len(stmt.targets[0].elts)
            if helper_runs_backward(analysis, scope, call, stmt, arity):
                found = f"`{ast.unparse(call.func)}()` at line {call.lineno}, which calls `.backward()`"
                break
    memo[key] = found
    return found


def helper_runs_backward(analysis, scope: Scope, call, stmt, arity: int = 0) -> bool:
    """Is ``call`` a call of project functions (at most three candidates) that each run a
    backward pass, themselves or through their callees (``self.optimize(opt, loss)``)?"""
    project = analysis.project
    if project is None:
        return False
    refs = analysis.graph.kinds.resolve_functions(call.func, scope, stmt, arity)
    return bool(refs) and len(refs) <= 3 and all(project.calls_backward(r) for r in refs)


def function_calls_backward(analysis, scope: Scope) -> Optional[str]:
    for site in scope.backward_sites:
        if not site.retain_graph:
            return f"`.backward()` at line {site.call.lineno}"
    return None
