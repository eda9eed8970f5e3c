"""What object a parameter holds, learned from the callers: ``def testing(model, loader)``
called as ``testing(UsadModel(...), loader)`` (or with a name bound to one) receives an
nn.Module, although nothing in its own body says so. Only a parameter that every call in
the linted files fills with the same kind of object, by strong evidence, gets that kind."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from .module_index import Scope, calls_named
from .summaries import argument_for

MAX_CALLERS = 6


def kind_from_callers(kinds, scope: Scope, param: str, depth: int):
    project = kinds.project
    if project is None or not scope.is_function or param not in scope.params or scope.name.startswith("__"):
        return None
    memo = project.memo
    # Keyed by names, not nodes: another file's analysis may be parsed again later in the run.
    key = ("param-kind", kinds.index.module_name, scope.qualname, param)
    if key in memo:
        return memo[key]
    memo[key] = None  # cycle guard
    memo[key] = found = _agreed_kind(kinds, project, scope, param, depth)
    return found


def _agreed_kind(kinds, project, scope: Scope, param: str, depth: int):
    from .objects import STRONG

    params = list(scope.params)
    offset = 1 if params and params[0] in ("self", "cls") else 0
    position = params.index(param) - offset
    if position < 0:
        return None
    callers = project.callers(scope.name, MAX_CALLERS)
    if not callers or None in callers:
        return None
    agreed: Optional[object] = None
    where = ""
    for caller_analysis, caller_scope in callers:
        for call, stmt in calls_named(caller_scope, scope.name):
            arg = argument_for(call, position, param)
            if arg is None:
                return None
            kind = caller_analysis.graph.kinds.kind_of(arg, caller_scope, stmt, depth + 1)
            if kind is None or kind.strength != STRONG or not (kind.is_module or kind.kind == "instance"):
                return None
            if agreed is not None and (agreed.kind, agreed.class_ref) != (kind.kind, kind.class_ref):
                return None
            if agreed is None:
                agreed = kind
                where = f"{caller_scope.name} (line {call.lineno})"
    if agreed is None:
        return None
    return replace(agreed, why=f"every caller passes {agreed.why}, e.g. {where}")
