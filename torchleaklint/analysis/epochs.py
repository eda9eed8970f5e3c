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
