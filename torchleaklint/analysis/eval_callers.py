"""Is a function evaluation because of where it is called? ``get_features(model, paths)``
is neither named like evaluation nor puts the model in eval mode, but every caller calls
it after ``model.eval()`` (a script's ``__main__`` block, a ``train()`` that validates at
the end of each epoch) and computes no gradient from what it returns: the forward passes
it runs are evaluation forwards."""

from __future__ import annotations

import ast
from typing import Callable, Optional

from .backward_reach import gradient_reaching
from .figures import never_called
from .module_index import calls_named, start_of
from .project import MAX_CALL_SITES, FunctionRef

MAX_DEPTH = 2


def evaluation_callers(analysis, scope, eval_calls: Callable, named: Callable, depth: int = 0) -> Optional[str]:
    """Why every call of ``scope`` in the linted files is an evaluation call (after
    ``model.eval()``, from a function named like evaluation, or from such a call), or None.
    ``eval_calls(analysis, scope)`` lists a scope's eval-mode calls; ``named(analysis,
    scope)`` says whether a function is named like evaluation."""
    project = analysis.project
    if project is None or not scope.is_function or scope.name.startswith("__"):
        return None
    sites = [(module, caller) for module, caller, off in project.call_sites(scope.name) if not off]
    if not sites or len(sites) > MAX_CALL_SITES:
        return None
    # A test calls a library's public method once, outside any run: it says nothing of how
    # the method is used (a ``predict`` whose outputs a user's loss may backpropagate).
    sites = [site for site in sites if not project.is_test_caller(*site)]
    if not sites:
        return None
    reasons = []
    for module, caller in dict.fromkeys(sites):
        found = scope_of_caller(project, module, caller, scope.name)
        if found is None:
            return None
        caller_analysis, caller_scope = found
        if caller_scope is scope or caller_analysis.grad.scope_off(caller_scope):
            continue  # recursion, or grad is off there anyway
        if caller_scope.is_function and never_called(caller_analysis, caller_scope) is not None:
            continue  # a caller nothing calls: it runs nothing, in evaluation or not
        why = _evaluation_call(caller_analysis, caller_scope, scope.name, eval_calls, named, depth,
                               method=bool(scope.class_name))
        if why is None:
            return None
        reasons.append(why)
    return reasons[0] if reasons else None


def _evaluation_call(analysis, scope, name, eval_calls, named, depth, method: bool = False) -> Optional[str]:
    calls = list(calls_named(scope, name))
    if method:
        # A bare ``calc_mi(...)`` calls a function of that name, never a method.
        calls = [(call, stmt) for call, stmt in calls if isinstance(call.func, ast.Attribute)]
    if not calls:
        return None
    where = scope.qualname if scope.is_function else "the module's top level"
    modes = eval_calls(analysis, scope)
    reason = None
    for call, stmt in calls:
        if analysis.index.ctx(stmt) is not None and analysis.index.ctx(stmt).grad_off:
            continue
        if gradient_reaching(analysis, scope, stmt):
            return None  # its result may be backpropagated: training, not evaluation
        before = [m for m in modes if start_of(m) < start_of(call)]
        if before:
            reason = reason or f"after `{ast.unparse(before[-1].func)}()` at line {before[-1].lineno} of `{where}`"
            continue
        if scope.is_function and named(analysis, scope):
            reason = reason or f"from `{where}`, named like evaluation"
            continue
        outer = evaluation_callers(analysis, scope, eval_calls, named, depth + 1) if depth < MAX_DEPTH else None
        if outer:
            reason = reason or f"from `{where}`, {outer}"
            continue
        return None
    return reason


def scope_of_caller(project, module: str, caller: str, callee: Optional[str] = None):
    """The (analysis, scope) of a caller named in a call site, the module's top level too.
    A function named like its own module (``foo`` in ``foo.py``) shares its name with the
    module's top level: with ``callee``, the one of the two that calls it is the caller."""
    found = project.scope_for(FunctionRef(module, caller))
    if found is not None:
        if callee is None or any(True for _ in calls_named(found[1], callee)):
            return found
        top = found[0].index.module_scope
        if top.qualname == caller and any(True for _ in calls_named(top, callee)):
            return found[0], top
        return found
    analysis = project.analysis(module)
    if analysis is not None and analysis.index.module_scope.qualname == caller:
        return analysis, analysis.index.module_scope
    return None
