"""Does a project function return a graph because a caller backpropagates what it returns?
``g_loss = self.get_g_loss(batch); g_loss.backward()`` in a training step proves that
``get_g_loss`` returns a value with an autograd graph, even when its body builds the loss
through helpers and models the analysis cannot see into (generators built by a config
factory, losses looked up in dicts). The same call in an evaluation loop runs those
forward passes with grad on. Only callers in the calling module are read."""

from __future__ import annotations

import ast
from typing import Optional

from .module_index import Scope, calls_named
from .project import MAX_CALL_SITES

MAX_TARGETS = 3


def backpropagated_result(analysis, call: ast.Call, scope: Scope, stmt) -> Optional[object]:
    """Evidence that another call of the function ``call`` reaches has its result
    backpropagated in this module, or None."""
    from .graph import Evidence

    project = analysis.project
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if project is None or name is None:
        return None
    kinds = analysis.graph.kinds
    refs = set(kinds.resolve_functions(func, scope, stmt))
    if not refs or len(refs) > MAX_TARGETS:
        return None
    if all(_returns_fresh(project, ref) for ref in refs):
        return None  # ``init_hidden`` returns ``weight.new_zeros(...)``: an input of the step, not its graph
    module = analysis.index.module_name
    sites = project.call_sites(name)
    if len(sites) > MAX_CALL_SITES:
        return None
    flow = analysis.flow
    for caller_module, caller, _ in sites:
        if caller_module != module:
            continue
        caller_scope = _scope_named(analysis, caller)
        if caller_scope is None or caller_scope is scope:
            continue
        for other, other_stmt in calls_named(caller_scope, name):
            if not (isinstance(other_stmt, ast.Assign) and other_stmt.value is other and len(other_stmt.targets) == 1
                    and isinstance(other_stmt.targets[0], ast.Name)):
                continue
            if not refs & set(kinds.resolve_functions(other.func, caller_scope, other_stmt)):
                continue
            line = flow.attached_into_backward(caller_scope, other_stmt.targets[0].id)
            if line is not None:
                return Evidence(f"result of `{ast.unparse(func)}(...)`, which `{caller_scope.qualname}` "
                                f"backpropagates (line {line})", call.lineno)
    return None


def _scope_named(analysis, qualname: str) -> Optional[Scope]:
    for candidate in analysis.index.scopes:
        if candidate.is_function and candidate.qualname == qualname:
            return candidate
    return None


def _returns_fresh(project, ref) -> bool:
    """Does every return of the function build new tensors with no graph (``torch.zeros``,
    ``weight.new_zeros``, a tuple of such), by its spelling?"""
    found = project.scope_for(ref)
    if found is None:
        return False
    analysis, scope = found
    return bool(scope.returns) and all(_fresh(analysis, scope, r, 0) for r in scope.returns)


def _fresh(analysis, scope: Scope, expr, depth: int) -> bool:
    from .detachers import TORCH_NON_CARRYING
    from .graph import _explicitly_detached
    from .summaries import stmt_of

    if isinstance(expr, (ast.Tuple, ast.List)):
        return bool(expr.elts) and all(_fresh(analysis, scope, e, depth) for e in expr.elts)
    if _explicitly_detached(expr):
        return True
    if isinstance(expr, ast.Call):
        qual = analysis.index.imports.qualname(expr.func) or ""
        return qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in TORCH_NON_CARRYING
    if isinstance(expr, ast.Name) and depth < 3:
        at = stmt_of(analysis, scope, expr)
        defs = analysis.flow.reaching(scope, expr.id, at) if at is not None else []
        return bool(defs) and all(d.kind == "assign" and d.index is None and _fresh(analysis, scope, d.value, depth + 1)
                                  for d in defs)
    return False
