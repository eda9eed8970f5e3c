"""What a function's callable parameter is, from its callers.

``def run_epoch(data_iter, model, loss_compute): ... loss, node = loss_compute(out, y, n)``
is named like a loss, but every caller passes ``SimpleLossCompute(generator, criterion)``,
a project class whose ``__call__`` is there to read (and returns ``sloss.data * norm``
first). A name is a guess; the objects the callers pass are facts, and the call is judged
by them (their ``__call__``) rather than by its name.
"""

from __future__ import annotations

from typing import List, Optional

from .module_index import Scope, calls_named
from .project import FunctionRef
from .summaries import argument_for

MAX_CLASSES = 3


def passed_call_methods(analysis, scope: Scope, param: str) -> Optional[List[FunctionRef]]:
    """The ``__call__`` methods of the project objects every caller passes for ``param``,
    or None when some caller passes something else (or cannot be read)."""
    project = analysis.project
    if project is None or not scope.is_function or param not in scope.params:
        return None
    params = list(scope.params)
    offset = 1 if scope.class_name and params and params[0] in ("self", "cls") else 0
    position = params.index(param) - offset
    if position < 0:
        return None
    callers = project.callers(scope.name, module=analysis.index.module_name)
    if not callers:
        return None
    found: List[FunctionRef] = []
    for entry in callers:
        if entry is None:
            return None
        caller_analysis, caller_scope = entry
        calls = list(calls_named(caller_scope, scope.name))
        if not calls:
            return None
        for call, stmt in calls:
            arg = argument_for(call, position, param)
            if arg is None:
                return None
            kind = caller_analysis.graph.kinds.value_kind(arg, caller_scope, stmt)
            if kind is None or kind.class_ref is None or kind.is_module:
                return None  # unknown, or an nn.Module: its call is a forward
            methods = project.methods_in_hierarchy(kind.class_ref[0], kind.class_ref[1], "__call__")
            if not methods:
                return None
            for ref in methods:
                if ref not in found:
                    found.append(ref)
            if len(found) > MAX_CLASSES:
                return None
    return found or None
