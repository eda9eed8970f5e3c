"""Callers that decide a function's grad mode for TLL009: does some call in the linted
files reach the function with grad on, and does its class hierarchy call a method only
under ``no_grad``?"""

from __future__ import annotations

import ast

from .eval_callers import scope_of_caller
from .figures import never_called
from .module_index import calls_named
from .project import MAX_CALL_SITES
from .self_calls import self_call_sites


def called_with_grad(analysis, scope) -> bool:
    """Does some call in the linted files that reaches this function run with grad on? A
    free function is matched by resolving each call (``test()`` in ``main.py`` is not the
    ``test()`` smoke check of a model file); a method, whose receiver's class is rarely
    known at the call (``policy.select_action(s)``), when some call of its name does."""
    project = analysis.project
    sites = project.call_sites(scope.name)
    if all(off for _, _, off in sites):
        return False
    if scope.class_name:
        # a method is called as ``obj.name(...)``: a bare ``name(...)`` is a function namesake
        return len(sites) > MAX_CALL_SITES or any(_attribute_call_with_grad(project, module, caller, scope.name)
                                                  for module, caller in dict.fromkeys((m, c) for m, c, _ in sites))
    if len(sites) > MAX_CALL_SITES:
        return False
    me = (analysis.index.module_name, scope.qualname)
    for module, caller in dict.fromkeys((module, caller) for module, caller, _ in sites):
        found = scope_of_caller(project, module, caller, scope.name)
        if found is None:
            continue
        caller_analysis, caller_scope = found
        for call, stmt in calls_named(caller_scope, scope.name):
            if caller_analysis.index.ctx(stmt).grad_off:
                continue
            refs = caller_analysis.graph.kinds.resolve_functions(call.func, caller_scope, stmt)
            if any((ref.module, ref.qualname) == me for ref in refs):
                return True
    return False


def _attribute_call_with_grad(project, module: str, caller: str, name: str) -> bool:
    found = scope_of_caller(project, module, caller, name)
    if found is None:
        return True
    caller_analysis, caller_scope = found
    if caller_scope.is_function and never_called(caller_analysis, caller_scope) is not None:
        return False  # a caller nothing calls runs nothing
    return any(isinstance(call.func, ast.Attribute) and not caller_analysis.index.ctx(stmt).grad_off
               for call, stmt in calls_named(caller_scope, name))


def class_calls_only_without_grad(analysis, scope) -> bool:
    """A method its class hierarchy calls (``self.visualize_results(epoch)``, a base
    class's ``batch_act`` running ``self.eval_step(batch)``) only with grad disabled.
    Where the name is too common across the project to follow every caller (one such
    method per GAN variant, per agent), the class's own calls still decide."""
    if not scope.class_name or scope.name.startswith("__"):
        return False
    sites = list(self_call_sites(analysis, scope))
    return bool(sites) and all(method is not scope and (owner.index.ctx(stmt).grad_off
                                                          or owner.grad.scope_off(method))
                               for owner, method, stmt in sites)
