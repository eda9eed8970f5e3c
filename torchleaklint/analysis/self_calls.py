"""Who calls a method through ``self``: its own class and the project classes it derives
from. ``TorchAgent.batch_act`` runs ``self.eval_step(batch)`` under ``no_grad``; a
subclass that overrides ``eval_step`` but not ``batch_act`` has its ``eval_step`` run by
that base-class method, under ``no_grad``. A method name defined on every agent class
is too common to follow through the project's call sites; the class hierarchy still
says which ``self.<name>(...)`` calls reach a given override."""

from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Tuple

from .module_index import Scope

MAX_BASES = 12  # project classes walked up from one class


def self_call_sites(analysis, scope: Scope) -> Iterator[Tuple[object, Scope, ast.AST]]:
    """(analysis, calling method, statement) of every ``self.<name>(...)`` call that can
    reach the method ``scope`` through its class: in the class's own methods, and in the
    methods of project base classes that the class and the bases between do not override."""
    name = scope.name
    for owner, method in _effective_methods(analysis, scope.class_name):
        for call, stmt in method.calls:
            func = call.func
            if (isinstance(func, ast.Attribute) and func.attr == name and isinstance(func.value, ast.Name)
                    and func.value.id == "self"):
                yield owner, method, stmt


def _effective_methods(analysis, class_name: str) -> Iterator[Tuple[object, Scope]]:
    """The methods an instance of the class runs: its own, then those of each project
    base class (nearest first) whose name no nearer class defines."""
    defined = set()
    for owner, cls in _class_and_bases(analysis, class_name):
        methods = owner.index.methods(cls)
        for method in methods:
            if method.name not in defined:  # else overridden nearer the class
                yield owner, method
        defined |= {m.name for m in methods}


def _class_and_bases(analysis, class_name: str) -> List[Tuple[object, str]]:
    out = [(analysis, class_name)]
    project = analysis.project
    if project is None:
        return out
    todo = [(analysis.index.module_name, class_name)]
    seen = set(todo)
    while todo and len(out) < MAX_BASES:
        module, cls = todo.pop(0)
        for base in project.class_table(module, cls) or []:
            found = _project_class(project, module, base)
            if found is None or found in seen:
                continue
            seen.add(found)
            owner = project.analysis(found[0])
            if owner is None:
                continue
            out.append((owner, found[1]))
            todo.append(found)
    return out


def _project_class(project, module: str, base: str) -> Optional[Tuple[str, str]]:
    found = project.resolve_class(module, base)
    if found is None and "." in base:
        found = project.resolve_symbol(base)
    if found is None or found[1] not in project.tables[found[0]].classes:
        return None
    return found
