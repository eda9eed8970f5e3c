"""Who calls a method through ``self``: its own class and the project classes it derives
from. ``TorchAgent.batch_act`` runs ``self.eval_step(batch)`` under ``no_grad``; a
subclass that overrides ``eval_step`` but not ``batch_act`` has its ``eval_step`` run by
that base-class method, under ``no_grad``. A method name defined on every agent class
is too common to follow through the project's call sites; the class hierarchy still
says which ``self.<name>(...)`` calls reach a given override."""

from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Tuple

from .graph import STRONG
from .module_index import Scope



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
    """The class and its project bases (nearest first), each with its module's analysis."""
    project = analysis.project
    out = [(analysis, class_name)]
    if project is None:
        return out
    for module, cls in project.class_lineage(analysis.index.module_name, class_name)[1:]:
        owner = project.analysis(module)
        if owner is not None:
            out.append((owner, cls))
    return out


def calls_another_hierarchy(caller_analysis, caller: Scope, name: str, analysis, class_name: str) -> bool:
    """Does ``caller`` reach ``name`` only on objects of classes unrelated to ``class_name``
    (neither it, nor a project base or subclass of it)? ``self.<name>(...)`` in a method of
    another class runs that class's method (``ERM.update`` calling ``self.predict(x)`` never
    runs another algorithm's ``predict``); ``self.game.act(a)`` where ``self.game`` is built
    from another project class runs that class's ``act``."""
    calls = [(call, stmt) for call, stmt in caller.calls
             if isinstance(call.func, ast.Attribute) and call.func.attr == name]
    if not calls:
        return False
    project = analysis.project
    me = (analysis.index.module_name, class_name)
    mine = _lineage(project, *me)
    for call, stmt in calls:
        receiver = call.func.value
        if isinstance(receiver, ast.Name) and receiver.id == "self":
            others = [(caller_analysis.index.module_name, caller.class_name)] if caller.class_name else None
        else:
            others = _receiver_classes(caller_analysis, caller, receiver, stmt)
        if others is None:
            return False  # an object of unknown class may be one of ours
        for other in others:
            # an instance of the receiver's class or of a subclass: the method is reached when
            # its class is among the receiver's bases, or the receiver's class among its.
            if me in _lineage(project, *other) or other in mine:
                return False
    return True


def _lineage(project, module: str, class_name: str):
    """The class and its project bases, as (module, class), from the symbol tables alone
    (no other file is analysed for it)."""
    if project is None:
        return ((module, class_name),)
    return project.class_lineage(module, class_name)


def _receiver_classes(analysis, scope: Scope, receiver, stmt, depth: int = 0) -> Optional[List[Tuple[str, str]]]:
    """The project classes of every object ``receiver`` may be where ``stmt`` runs (each
    binding of ``self.actor`` in the class's methods, each definition of a local reaching
    it; for a parameter, what every caller passes), or None when one of them is not a
    project class built right there."""
    from .names import dotted
    from .stores import bindings_of

    key = dotted(receiver)
    project = analysis.project
    bindings = bindings_of(analysis, scope, key, stmt) if key is not None and project is not None else None
    if not bindings:
        return None
    kinds = analysis.graph.kinds
    out = []
    for d, where in bindings:
        if d.kind == "param" and "." not in key and depth < MAX_PARAMETER_HOPS:
            passed = passed_classes(analysis, where, key, depth)
            if passed is None:
                return None
            out.extend(passed)
            continue
        if d.kind != "assign" or d.index is not None or not isinstance(d.value, ast.Call):
            return None
        kind = kinds.value_kind(d.value, where, d.stmt)
        if kind is None or kind.class_ref is None or kind.strength != STRONG or kind.by_attribute_name:
            return None
        out.extend(kind.classes)
    return out


MAX_PARAMETER_HOPS = 2  # ``evaluate(env, policy)`` called with ``agent``, built by its caller


def passed_classes(analysis, scope: Scope, param: str, depth: int) -> Optional[List[Tuple[str, str]]]:
    """The project classes of what every caller in the linted files passes for the
    parameter ``param`` of the function ``scope``, or None when a caller is unknown or
    passes something else."""
    from .module_index import calls_named
    from .summaries import argument_of

    project = analysis.project
    if not scope.is_function or scope.class_name:
        return None  # a method's callers reach it through receivers of their own
    callers = project.callers(scope.name, module=analysis.index.module_name)
    if not callers or None in callers:
        return None
    out = []
    for caller_analysis, caller_scope in callers:
        for call, call_stmt in calls_named(caller_scope, scope.name):
            refs = caller_analysis.graph.kinds.resolve_functions(call.func, caller_scope, call_stmt)
            if refs and all(ref.qualname != scope.qualname for ref in refs):
                continue  # a function of the same name elsewhere
            arg = argument_of(call, scope, param)
            if arg is None:
                return None
            found = _receiver_classes(caller_analysis, caller_scope, arg, call_stmt, depth + 1)
            if found is None:
                return None
            out.extend(found)
    return out or None
