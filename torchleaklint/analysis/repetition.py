"""Is a function called over and over? A method that stores into object state grows that
state once per call, which is a leak only when something calls it repeatedly: from a loop,
or from a function that is itself called from a loop (an environment step, a training
step called per batch)."""

from __future__ import annotations

from typing import Callable, Optional

from .call_arity import spelled_as_call_of
from .caller_resets import reset_before_loop
from .callers import call_names
from .module_index import Scope, calls_named
from .summaries import short_path

MAX_DEPTH = 3
MAX_CALLERS = 8


def repeated_call_site(analysis, scope: Scope, depth: int = 0,
                       loop_evidence: Optional[Callable[..., Optional[str]]] = None,
                       container: Optional[str] = None, graphs: bool = False) -> Optional[str]:
    """Where a loop calls this function (directly or through its callers), or None. With
    ``loop_evidence(analysis, scope, loop)``, only loops it describes count (and what it
    says is part of the answer): a training loop, not any loop. With ``container`` (the
    ``self.history`` the function stores into), a caller that empties it before its loop
    bounds it to one call of that caller, and neither counts nor leads further. With
    ``graphs`` (what repeats is the recording of a graph), callers that run with grad off
    do not count either."""
    project = analysis.project
    if project is None or not scope.is_function or depth > MAX_DEPTH:
        return None
    memo = project.memo
    kind = loop_evidence.__qualname__ if loop_evidence is not None else None
    key = ("repeated", analysis.index.module_name, scope.qualname, kind, container, graphs)
    if key in memo:
        return memo[key]
    memo[key] = None  # cycle guard
    found = None
    names = call_names(project, scope)
    for name in sorted(names):
        # Calls of the function's own name in modules that run their own function of that
        # name (a script with its own ``select_action``) are not its callers.
        own = analysis.index.module_name if name == scope.name else None
        callers = project.callers(name, MAX_CALLERS, module=own) or ()
        # Callers in the function's own file first: a same-named method elsewhere may be
        # what the other calls reach.
        callers = sorted(callers, key=lambda e: e is None or e[0].index.module_name != analysis.index.module_name)
        for entry in callers:
            if entry is None:
                continue
            caller_analysis, caller_scope = entry
            if container is not None and any(
                    reset_before_loop(caller_analysis, caller_scope, call, stmt, container, (analysis, scope))
                    for call, stmt in calls_named(caller_scope, name)):
                continue  # ``self.f_init()`` before the loop of ``self.f_next()``: one call's values
            if graphs and caller_analysis.grad.scope_off(caller_scope):
                continue  # every call of the caller runs under no_grad: nothing it calls records a graph
            for call, stmt in calls_named(caller_scope, name):
                ctx = caller_analysis.index.ctx(stmt)
                if ctx is None or not ctx.loops or (graphs and ctx.grad_off):
                    continue
                if loop_evidence is not None and not spelled_as_call_of(scope, call):
                    continue
                if loop_evidence is None:
                    found = f"called in a loop at {short_path(caller_analysis.path)}:{call.lineno}"
                    break
                why = next((w for w in (loop_evidence(caller_analysis, caller_scope, loop)
                                        for loop in reversed(ctx.loops)) if w), None)
                if why is not None:
                    found = f"called at {short_path(caller_analysis.path)}:{call.lineno}, where {why}"
                    break
            if found is None and caller_scope is not scope:
                outer = repeated_call_site(caller_analysis, caller_scope, depth + 1, loop_evidence, container, graphs)
                if outer is not None:
                    found = f"called by `{caller_scope.name}`, {outer}"
            if found:
                break
        if found:
            break
    memo[key] = found
    return found


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
