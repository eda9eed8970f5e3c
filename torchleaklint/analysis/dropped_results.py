"""Callers that keep nothing of a function's graph.

``action = select_action(state)`` followed by ``action = action.data[0].numpy()``: the
acting function returns the policy's output with its graph, and its only caller reads the
numbers out of it at once. No backward pass can reach that graph; it is recorded at every
environment step for nothing. Every call must be read this way: one caller that keeps the
result (a log-probability stored for REINFORCE) may backpropagate it.
"""

from __future__ import annotations

import ast
from typing import Optional

from .eval_callers import scope_of_caller
from .module_index import calls_named, own_nodes
from .project import MAX_CALL_SITES

# Reading these off a tensor keeps nothing of its graph.
_DROPS = frozenset({"data", "detach", "item", "numpy", "tolist", "shape", "size", "dtype", "device"})
# These keep the graph but hand it on unchanged: look one step further.
_PASSES = frozenset({"cpu", "cuda", "to", "squeeze", "unsqueeze", "view", "reshape", "float", "double", "flatten"})


def callers_drop_graph(analysis, scope) -> Optional[str]:
    """Where the callers read only graph-free values from the function's result, or None
    when some call (or some use of a result) may keep the graph."""
    project = analysis.project
    if project is None or not scope.is_function or scope.name.startswith("__"):
        return None
    sites = [s for s in project.call_sites_of(analysis.index.module_name, scope.name) if not s[2]]
    if not sites or len(sites) > MAX_CALL_SITES:
        return None
    sites = [s for s in sites if not project.is_test_caller(s[0], s[1])]  # a test reads a shape once
    if not sites:
        return None
    where = None
    for module, caller, _ in dict.fromkeys(sites):
        found = scope_of_caller(project, module, caller, scope.name)
        if found is None:
            return None
        caller_analysis, caller_scope = found
        if caller_scope is scope:
            return None
        for call, stmt in calls_named(caller_scope, scope.name):
            if caller_analysis.index.ctx(stmt) is not None and caller_analysis.index.ctx(stmt).grad_off:
                continue
            refs = caller_analysis.graph.kinds.resolve_functions(call.func, caller_scope, stmt)
            if not any(ref.module == analysis.index.module_name and ref.qualname == scope.qualname for ref in refs):
                return None  # a call of another function of that name, or one we cannot resolve
            line = _dropped_at(caller_analysis, caller_scope, call, stmt)
            if line is None:
                return None
            where = where or f"`{caller_scope.qualname}` reads only graph-free values from it, line {line}"
    return where


def _dropped_at(analysis, scope, call, stmt) -> Optional[int]:
    """The line where the call's result loses its graph, when every use does."""
    if _drops(call, stmt):
        return stmt.lineno  # ``select_action(s).data.numpy()`` in the statement itself
    if not (isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        return None
    name = stmt.targets[0].id
    uses = []
    for other in scope.statements:
        if other is stmt:
            continue
        for node in own_nodes(other):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                if any(d.stmt is stmt for d in analysis.flow.reaching(scope, name, other)):
                    uses.append((node, other))
    if not uses:
        return None  # dropped unread: nothing says what the caller wanted
    for node, other in uses:
        if not _drops(node, other):
            return None
    return uses[0][1].lineno


def _drops(node, stmt) -> bool:
    """Is ``node`` (a value in ``stmt``) read only through attributes that drop its graph?"""
    parents = {}
    for parent in ast.walk(stmt):
        for child in ast.iter_child_nodes(parent):
            parents[id(child)] = parent
    current = node
    while True:
        parent = parents.get(id(current))
        if not isinstance(parent, ast.Attribute) or parent.value is not current:
            return False
        if parent.attr in _DROPS:
            return True
        if parent.attr not in _PASSES:
            return False
        call = parents.get(id(parent))  # ``x.cpu()``: step over the call
        if not (isinstance(call, ast.Call) and call.func is parent):
            return False
        current = call
