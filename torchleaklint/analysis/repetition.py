"""Is a function called over and over? A method that stores into object state grows that
state once per call, which is a leak only when something calls it repeatedly: from a loop,
or from a function that is itself called from a loop (an environment step, a training
step called per batch)."""

from __future__ import annotations

from typing import Optional

from .callers import call_names
from .module_index import Scope, calls_named

MAX_DEPTH = 3
MAX_CALLERS = 8


def repeated_call_site(analysis, scope: Scope, depth: int = 0) -> Optional[str]:
    """Where a loop calls this function (directly or through its callers), or None."""
    project = analysis.project
    if project is None or not scope.is_function or depth > MAX_DEPTH:
        return None
    memo = project.memo
    key = ("repeated", analysis.index.module_name, scope.qualname)
    if key in memo:
        return memo[key]
    memo[key] = None  # cycle guard
    found = None
    names = call_names(project, scope)
    for name in sorted(names):
        callers = project.callers(name, MAX_CALLERS) or ()
        # Callers in the function's own file first: a same-named method elsewhere may be
        # what the other calls reach.
        callers = sorted(callers, key=lambda e: e is None or e[0].index.module_name != analysis.index.module_name)
        for entry in callers:
            if entry is None:
                continue
            caller_analysis, caller_scope = entry
            for call, stmt in calls_named(caller_scope, name):
                ctx = caller_analysis.index.ctx(stmt)
                if ctx is not None and ctx.loops:
                    found = f"called in a loop at {_short(caller_analysis.path)}:{call.lineno}"
                    break
            if found is None and caller_scope is not scope:
                outer = repeated_call_site(caller_analysis, caller_scope, depth + 1)
                if outer is not None:
                    found = f"called by `{caller_scope.name}`, {outer}"
            if found:
                break
        if found:
            break
    memo[key] = found
    return found


def _short(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def setup_only(analysis, scope: Scope) -> bool:
    """Every call of the function comes from ``__init__`` (a builder run once), or from the
    function itself (a recursive walk over the module tree started there)."""
    project = analysis.project
    if project is None or not scope.is_function:
        return False
    sites = project.call_sites_of(analysis.index.module_name, scope.name)
    own = (analysis.index.module_name, scope.qualname)
    return (any(caller.endswith(".__init__") for _, caller, _ in sites)
            and all(caller.endswith(".__init__") or (module, caller) == own for module, caller, _ in sites))
