"""Statements that put a value into a container: ``c.append(v)``, ``c[k] = v``,
``c[k].append(v)``, ``c += [v]``, ``c.add(v)``, ``c.extend(vs)``, ``c.insert(i, v)``."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional

from .module_index import Scope, container_key
from .names import dotted

STORE_METHODS = frozenset({"append", "extend", "insert", "add", "appendleft", "extendleft"})
CLEAR_METHODS = frozenset({"clear", "pop", "popleft", "popitem", "remove", "reset"})


@dataclass(frozen=True)
class StoreSite:
    stmt: ast.AST
    container: str  # dotted key of the container (``losses``, ``self.history``)
    target: ast.AST  # the container expression as written (``history['loss']``)
    value: ast.AST  # the stored value
    how: str  # "append", "setitem", "+=", ...
    call: Optional[ast.Call] = None
    key_expr: Optional[ast.AST] = None  # the subscript of ``c[k] = v``


def store_in_stmt(stmt: ast.AST) -> List[StoreSite]:
    out: List[StoreSite] = []
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in STORE_METHODS and call.args:
            key = container_key(func.value)
            if key is not None:
                value = call.args[-1] if func.attr == "insert" else call.args[0]
                if func.attr == "insert" and len(call.args) < 2:
                    return out
                out.append(StoreSite(stmt, key, func.value, value, func.attr, call))
    elif isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            if isinstance(target, ast.Subscript) and not isinstance(target.slice, ast.Slice):
                key = container_key(target)
                if key is not None:
                    out.append(StoreSite(stmt, key, target.value, stmt.value, "setitem", key_expr=target.slice))
    elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add):
        if isinstance(stmt.value, (ast.List, ast.Tuple, ast.ListComp)):
            key = dotted(stmt.target)
            if key is not None:
                out.append(StoreSite(stmt, key, stmt.target, stmt.value, "+="))
    return out


def _scope_stores(analysis, scope: Scope) -> Dict[str, List[StoreSite]]:
    memo = analysis.__dict__.setdefault("_stores_memo", {})
    found = memo.get(id(scope.node))
    if found is None:
        found = {}
        for stmt in scope.statements:
            for site in store_in_stmt(stmt):
                found.setdefault(site.container, []).append(site)
        memo[id(scope.node)] = found
    return found


def stores_into(analysis, scope: Scope, key: str) -> List[StoreSite]:
    return _scope_stores(analysis, scope).get(key, [])


def all_stores(analysis, scope: Scope) -> List[StoreSite]:
    out: List[StoreSite] = []
    for sites in _scope_stores(analysis, scope).values():
        out.extend(sites)
    out.sort(key=lambda s: (s.stmt.lineno, s.stmt.col_offset))
    return out


def resets_of(stmt: ast.AST, key: str) -> Optional[str]:
    """How ``stmt`` empties, bounds or replaces the container ``key``, if it does."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for t in targets:
            for node in ast.walk(t):
                if isinstance(node, (ast.Name, ast.Attribute)) and dotted(node) == key:
                    return "reassigned"
    if isinstance(stmt, ast.Delete):
        for t in stmt.targets:
            if container_key(t) == key:
                return "deleted"
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in CLEAR_METHODS and container_key(node.func.value) == key:
                return f".{node.func.attr}()"
    return None


def is_bounded_constructor(value: Optional[ast.AST]) -> bool:
    """``deque(maxlen=N)`` and friends never grow without bound."""
    if isinstance(value, ast.Call):
        name = dotted(value.func) or ""
        if name.endswith("deque"):
            return any(k.arg == "maxlen" for k in value.keywords) or len(value.args) >= 2
    return False


def bindings_of(analysis, scope: Scope, key: str, stmt):
    """The definitions that may give ``key`` its value where ``stmt`` runs, each with the
    scope it is in: for an attribute of ``self`` every binding in the class's methods, for a
    local the definitions reaching ``stmt``; None for other dotted paths."""
    if key.startswith("self.") and key.count(".") == 1 and scope.class_name:
        return [(d, method) for method in analysis.index.methods(scope.class_name) for d in method.defs_of(key)]
    if "." not in key:
        return [(d, scope) for d in analysis.flow.reaching(scope, key, stmt)]
    return None
