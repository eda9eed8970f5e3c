"""Which calls put a module in evaluation mode: ``model.eval()``, ``model.train(False)``,
and project helpers that do it (``self.eval_mode()``, looked into only when their name
says "eval", to keep the lookups few)."""

from __future__ import annotations

import ast

from .module_index import called_name, start_of


def eval_mode_calls(scope, analysis=None):
    """The ``x.eval()`` calls of the function, in source order; with ``analysis``, also
    calls of project helpers that do it (``self.eval_mode()``; only helpers whose name
    says "eval" are looked into, to keep the lookups few)."""
    found = []
    for call, stmt in scope.calls:
        if _eval_mode(call) or (analysis is not None and not call.args and not call.keywords
                                and "eval" in (called_name(call) or "")
                                and _sets_eval_mode(analysis, call, scope, stmt)):
            found.append(call)
    return sorted(found, key=start_of)


def _sets_eval_mode(analysis, call, scope, stmt) -> bool:
    project = analysis.project
    if project is None:
        return False
    refs = analysis.graph.kinds.resolve_functions(call.func, scope, stmt)
    if not refs or len(refs) > 3:
        return False
    for ref in refs:
        found = project.scope_for(ref)
        if found is None or found[1] is scope or not eval_mode_call(found[1]):
            return False
    return True


def _eval_mode(call) -> bool:
    """``model.eval()`` or ``model.train(False)``."""
    func = call.func
    if not isinstance(func, ast.Attribute) or call.keywords:
        return False
    if func.attr == "eval" and not call.args:
        return not (isinstance(func.value, ast.Name) and func.value.id == "builtins")
    return (func.attr == "train" and len(call.args) == 1 and isinstance(call.args[0], ast.Constant)
            and call.args[0].value is False)


def eval_mode_call(scope):
    calls = eval_mode_calls(scope)
    return calls[0] if calls else None
