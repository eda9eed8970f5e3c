"""A class whose constructor, or a script's entry block, switches autograd off for the
whole process.

``Tester.__init__`` calls ``torch.set_grad_enabled(False)`` as a statement: not a context
manager, so grad stays off after the constructor returns, for every method the object runs
later, unless something in the class switches it back on. Its methods record no graph.
"""

from __future__ import annotations

import ast
from typing import Optional

from .module_index import Scope, _enables_grad, grad_off_call, walk_nodes


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


def entry_switches_grad_off(analysis, scope: Scope) -> Optional[str]:
    """A script (a module no other linted module imports) whose top-level code, or its
    ``if __name__ == "__main__":`` block, calls ``torch.set_grad_enabled(False)`` before it
    runs any function of its own (``torch.set_grad_enabled(False); fire.Fire(dict(
    extract=extract, ...))``), and that never switches grad back on: every function of
    the script runs with grad off."""
    if not scope.is_function:
        return None
    key = "_entry_grad_off"  # memoised on the analysis: the answer depends on the project's imports
    if key not in analysis.__dict__:
        analysis.__dict__[key] = _entry_switch(analysis)
    return analysis.__dict__[key]


def _entry_switch(analysis) -> Optional[str]:
    index = analysis.index
    project = analysis.project
    if project is None or project.importers_of_module(index.module_name):
        return None  # imported elsewhere: its functions may run under another program's grad mode
    blocks = [index.tree.body]
    blocks += [node.body for node in index.tree.body if isinstance(node, ast.If) and _main_guard(node.test)]
    switch = None
    for body in blocks:
        for stmt in body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) \
                    and grad_off_call(stmt.value, index.imports) == "set_grad_enabled(False)":
                switch = stmt
                break
        if switch is not None:
            break
    if switch is None:
        return None
    own = {s.name for s in index.scopes if s.is_function}
    for node in ast.walk(index.tree):
        if isinstance(node, ast.Call) and _enables_grad(node, index.imports):
            return None  # switched back on somewhere
    for stmt in index.module_scope.statements:
        if (stmt.lineno, stmt.col_offset) >= (switch.lineno, switch.col_offset):
            break
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # a definition runs nothing
        for node in walk_nodes(stmt):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in own:
                return None  # a function of the script runs before the switch
    return f"the script switches autograd off for the process (`torch.set_grad_enabled(False)`, line {switch.lineno}) before its entry point runs"


def _main_guard(test) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")
