"""A class whose constructor switches autograd off for the whole process.

``Tester.__init__`` calls ``torch.set_grad_enabled(False)`` as a statement: not a context
manager, so grad stays off after the constructor returns, for every method the object runs
later, unless something in the class switches it back on. Its methods record no graph.
"""

from __future__ import annotations

import ast
from typing import Optional

from .module_index import Scope, _enables_grad, grad_off_call


def constructor_switches_grad_off(analysis, scope: Scope) -> Optional[str]:
    """Why a method of ``scope``'s class runs with grad off, or None."""
    if not scope.class_name or scope.name == "__init__":
        return None
    index = analysis.index
    methods = index.methods(scope.class_name)
    init = next((m for m in methods if m.name == "__init__"), None)
    if init is None:
        return None
    if not any(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
               and grad_off_call(s.value, index.imports) == "set_grad_enabled(False)"
               for s in init.node.body):
        return None  # only an unconditional statement at the top of the constructor counts
    for method in methods:
        for node in ast.walk(method.node):
            if isinstance(node, ast.Call) and _enables_grad(node, index.imports):
                return None  # the class turns grad back on somewhere
    return (f"`{scope.class_name}.__init__` switches autograd off for the process "
            f"(`torch.set_grad_enabled(False)`) before any method runs")
