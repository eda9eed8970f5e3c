"""Deep copies handed to a project function that only reads their weights.

``agg(copy.deepcopy(m))``, or copies gathered into a local list that is only handed on
(``picked.append(copy.deepcopy(m)); merged = agg(picked)``), where ``agg`` never changes,
trains, stores or returns the modules it is given: it iterates their ``parameters()`` and
reads the values (``acc.data += p.data.clone() * w``), and deep-copies what it keeps. The
original modules would serve it just as well, so each copy is a full model made and dropped
for nothing. Anything else the callee does with them (a method call, an in-place tensor
method, a store, an unknown function) means it may need its own copy: not claimed.
"""

from __future__ import annotations

import ast
from typing import Optional, Tuple

from .module_index import Scope, start_of
from .parents import parent_map
from .state_copies import DEEPCOPY, GROWING_CALLS, callee_parameter

WEIGHT_ITERATORS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers"})
# Tensor attributes and methods that read values without changing them (in-place methods end in ``_``).
PURE_VIEWS = frozenset({"data", "clone", "detach", "cpu", "float", "double", "view", "flatten", "reshape",
                        "shape", "size", "numel", "dtype", "device", "norm", "sum", "mean", "abs", "pow",
                        "item", "numpy", "tolist"})


def read_only_by_callee(analysis, scope: Scope, stmt, call: ast.Call) -> Optional[Tuple[str, str]]:
    """(callee name, evidence) when the copy made by ``call`` reaches a project function that
    only reads its weights, as an argument or in a local list built for that one call."""
    handed = _handed_directly(scope, call) or _handed_in_list(scope, stmt, call)
    if handed is None:
        return None
    outer, arg, via = handed
    found = callee_parameter(analysis, scope, stmt, outer, arg)
    if found is None:
        return None
    summary, param = found
    node = summary.scope.node
    imports = summary.analysis.index.imports
    parents = parent_map(node)
    many = via is not None
    if not _reads_only(node, param, parents, imports, many):
        return None
    held = f" (in `{via}`)" if via else ""
    return summary.scope.name, f"`{summary.scope.name}` only reads the weights of `{param}`{held} ({summary.where})"


def _handed_directly(scope: Scope, call):
    for outer, _ in scope.calls:
        if isinstance(outer.func, ast.Attribute) and outer.func.attr in GROWING_CALLS:
            continue  # gathered into a container: see ``_handed_in_list``
        if call in outer.args or any(k.value is call for k in outer.keywords):
            return outer, call, None
    return None


def _handed_in_list(scope: Scope, stmt, call):
    """``xs.append(copy.deepcopy(m))`` where the local ``xs`` is created empty, only grown,
    and read by exactly one later call that takes it as an argument."""
    value = getattr(stmt, "value", None)
    if not (isinstance(stmt, ast.Expr) and isinstance(value, ast.Call) and value.args == [call]
            and isinstance(value.func, ast.Attribute) and value.func.attr == "append"
            and isinstance(value.func.value, ast.Name)):
        return None
    name = value.func.value.id
    defs = scope.defs_of(name)
    if name in scope.params or not defs or any(
            d.kind != "assign" or not (isinstance(d.value, ast.List) and not d.value.elts) for d in defs):
        return None
    parents = parent_map(scope.node)
    handed = []
    for node in ast.walk(scope.node):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.attr == "append":
            continue
        if isinstance(parent, ast.Call) and node in parent.args and start_of(parent) > start_of(stmt):
            handed.append((parent, node))
            continue
        return None  # read, returned or kept some other way
    if len(handed) != 1:
        return None
    outer, arg = handed[0]
    return outer, arg, name


def _loads(node, name):
    return [n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]


def _reads_only(fn, name, parents, imports, many: bool) -> bool:
    """Every read of the parameter (a module, or a list of modules when ``many``) copies it,
    tests it, counts it, or iterates it (or its ``parameters()``) only to read values."""
    loads = _loads(fn, name)
    if not loads:
        return False
    for node in loads:
        parent = parents.get(node)
        if isinstance(parent, ast.Compare) or (isinstance(parent, ast.Call) and getattr(parent.func, "id", None)
                                               == "len" and parent.args == [node]):
            continue
        if _deep_copied(node, parents, imports, many):
            continue
        element = _loop_element(node, parents)
        if element is None:
            return False
        if many:
            if not (isinstance(element, ast.Name) and _reads_only(fn, element.id, parents, imports, False)):
                return False
        elif not _values_only(fn, element, parents):
            return False
    return True


def _deep_copied(node, parents, imports, many: bool) -> bool:
    """``copy.deepcopy(m)``, or ``copy.deepcopy(models[0])`` for a list."""
    parent = parents.get(node)
    if many and isinstance(parent, ast.Subscript) and parent.value is node:
        node, parent = parent, parents.get(parent)
    return isinstance(parent, ast.Call) and parent.args == [node] and imports.qualname(parent.func) == DEEPCOPY


def _loop_element(node, parents):
    """The loop target bound to the elements of ``node`` (``for m in models``, ``for w, m in
    zip(ws, models)``, ``for i, m in enumerate(models)``), or of ``node.parameters()``."""
    parent = parents.get(node)
    if isinstance(parent, ast.Attribute) and parent.attr in WEIGHT_ITERATORS:
        call = parents.get(parent)
        if not (isinstance(call, ast.Call) and call.func is parent and not call.args):
            return None
        node, parent = call, parents.get(call)
    position = None
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in ("zip", "enumerate") \
            and node in parent.args and not parent.keywords:
        position = parent.args.index(node) + (1 if parent.func.id == "enumerate" else 0)
        node, parent = parent, parents.get(parent)
    if not (isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node):
        return None
    target = parent.target
    if position is None:
        return target
    if isinstance(target, (ast.Tuple, ast.List)) and position < len(target.elts):
        return target.elts[position]
    return None


def _values_only(fn, element, parents) -> bool:
    """The loop element (a module, or one of its parameters) is only read: modules only by
    iterating their parameters, parameters only through value views (``p.data``,
    ``p.clone()``) inside arithmetic or on the right of an assignment."""
    names = [element] if isinstance(element, ast.Name) else list(getattr(element, "elts", []))
    if not names or not all(isinstance(n, ast.Name) for n in names):
        return False
    for target in names:
        if sum(1 for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == target.id
               and isinstance(n.ctx, ast.Store)) != 1:
            return False  # rebound elsewhere: its reads may be of something else
        for node in _loads(fn, target.id):
            inner = _loop_element(node, parents)
            if inner is not None:
                if not _values_only(fn, inner, parents):
                    return False
                continue
            if not _value_read(node, parents):
                return False
    return True


def _value_read(node, parents) -> bool:
    top = node
    parent = parents.get(top)
    while True:
        if isinstance(parent, ast.Attribute) and parent.value is top and parent.attr in PURE_VIEWS:
            top, parent = parent, parents.get(parent)
            if isinstance(parent, ast.Call) and parent.func is top:
                top, parent = parent, parents.get(parent)
            continue
        break
    if isinstance(parent, (ast.BinOp, ast.UnaryOp)):
        return True
    # A new tensor on the right of an assignment; a bare view (``x = p.data``) could be changed later.
    return isinstance(parent, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and parent.value is top \
        and isinstance(top, ast.Call) and getattr(top.func, "attr", None) == "clone"
