"""Functions that run once per epoch: named for it (``on_train_epoch_end``,
``validation_epoch_end``) or registered for an epoch event (``@trainer.on(Events.EPOCH_COMPLETED)``,
``trainer.add_event_handler(Events.EPOCH_COMPLETED, log_results)``). What they append grows
with the number of epochs, which a run fixes in advance: a few hundred entries, not millions."""

from __future__ import annotations

import ast
from typing import Optional

from .module_index import Scope
from .names import dotted, words

REGISTERS = frozenset({"on", "add_event_handler"})


def runs_per_epoch(analysis, scope: Scope) -> Optional[str]:
    if not scope.is_function:
        return None
    if "epoch" in words(scope.name):
        return f"`{scope.name}` runs once per epoch"
    node = scope.node
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call) and _registers_epoch_event(decorator):
            return f"`{scope.name}` is registered for an epoch event (line {decorator.lineno})"
    for call, _ in analysis.index.module_scope.calls + [c for s in analysis.index.scopes for c in s.calls]:
        if _registers_epoch_event(call) and any(isinstance(a, ast.Name) and a.id == scope.name for a in call.args):
            return f"`{scope.name}` is registered for an epoch event (line {call.lineno})"
    return None


def _registers_epoch_event(call: ast.Call) -> bool:
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in REGISTERS and call.args):
        return False
    event = call.args[0]
    if isinstance(event, ast.Call):
        event = event.func  # ``Events.EPOCH_COMPLETED(every=2)``
    name = (dotted(event) or "").rsplit(".", 1)[-1]
    return name.startswith("EPOCH_")


MAX_DEPTH = 3


def called_per_epoch(analysis, scope: Scope, depth: int = 0) -> Optional[str]:
    """Every call of the function in the linted files runs once per epoch: from a function
    that runs per epoch (or is itself called only from such functions), outside loops
    there. ``TerminalTablePrinter.print_tabular`` called by ``Logger.dump_tabular``,
    called by ``_end_epoch``."""
    from .eval_callers import scope_of_caller
    from .module_index import calls_named
    from .project import MAX_CALL_SITES

    project = analysis.project
    if project is None or not scope.is_function or depth >= MAX_DEPTH or scope.name.startswith("__"):
        return None
    sites = project.call_sites(scope.name)
    if not sites or len(sites) > MAX_CALL_SITES:
        return None
    why = None
    for module, caller, _ in dict.fromkeys(sites):
        found = scope_of_caller(project, module, caller, scope.name)
        if found is None:
            return None
        caller_analysis, caller_scope = found
        if caller_scope is scope or not caller_scope.is_function:
            return None
        for _, stmt in calls_named(caller_scope, scope.name):
            ctx = caller_analysis.index.ctx(stmt)
            if ctx is None or ctx.loops:
                return None
        reason = runs_per_epoch(caller_analysis, caller_scope) or called_per_epoch(caller_analysis, caller_scope,
                                                                                    depth + 1)
        if reason is None:
            return None
        why = why or f"`{scope.name}` is called only from `{caller_scope.name}`, and {reason}"
    return why
