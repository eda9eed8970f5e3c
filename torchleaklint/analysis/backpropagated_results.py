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
from .stubs import is_stub

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
                if _no_forward_of_its_own(project, refs):
                    return None
                return Evidence(f"result of `{ast.unparse(func)}(...)`, which `{caller_scope.qualname}` "
                                f"backpropagates (line {line})", call.lineno)
    return None


def _scope_named(analysis, qualname: str) -> Optional[Scope]:
    for candidate in analysis.index.scopes:
        if candidate.is_function and candidate.qualname == qualname:
            return candidate
    return None


def _no_forward_of_its_own(project, refs) -> bool:
    """Read only once a caller is found to backpropagate the result (it reads the callees'
    files): ``attacker.attack(model, x, y)`` backpropagates itself, so it needs grad and is
    no inference; ``w = split_styles(batch)`` only rearranges its arguments."""
    bodies = [ref for ref in refs if not _stub(project, ref)]
    if bodies and all(project.calls_backward(ref) for ref in bodies):
        return True
    return not any(_runs_forward(project, ref) for ref in bodies)


def _runs_forward(project, ref, depth: int = 0) -> bool:
    """Can the function run a model: a module call, an attribute of its object called
    directly (``self.generator(z)``), a callable it is handed, a method of a module, or a
    project function that does (two calls deep)? A helper that only moves or slices its
    inputs (``batch.to(device)``, ``torch.cat(...)``, list building) runs none."""
    found = project.scope_for(ref)
    if found is None:
        return True  # unknown: keep the benefit of the doubt
    analysis, scope = found
    kinds = analysis.graph.kinds
    imports = analysis.index.imports
    for call, stmt in scope.calls:
        func = call.func
        if imports.qualname(func):
            continue  # a library function (torch.cat, np.stack, F.pad)
        if kinds.module_call(call, scope, stmt) is not None:
            return True
        if isinstance(func, ast.Name) and func.id in scope.params:
            return True  # a callable handed in (``loss_fn(model, batch)``)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            refs = kinds.resolve_functions(func, scope, stmt)
            if not refs:
                return True  # ``self.generator(z)``: an attribute of the object, called
            if depth < 2 and any(_runs_forward(project, r, depth + 1) for r in refs[:MAX_TARGETS]):
                return True
            continue
        if isinstance(func, ast.Attribute):
            kind = kinds.kind_of(func.value, scope, stmt)
            if kind is not None and kind.is_module:
                return True  # ``model.encode(x)``
        refs = kinds.resolve_functions(func, scope, stmt)
        if refs and depth < 2 and any(_runs_forward(project, r, depth + 1) for r in refs[:MAX_TARGETS]):
            return True
    return False


def _stub(project, ref) -> bool:
    found = project.scope_for(ref)
    return found is not None and is_stub(found[1].node)


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
