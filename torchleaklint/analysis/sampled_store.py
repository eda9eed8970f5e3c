"""Graphs handed to a store that the same function samples, backpropagates and clears.

An on-policy rollout buffer: ``memory.push([states, actions, returns])`` after each
rollout, ``batch = memory.sample(n)`` feeding the loss undetached, ``loss.backward()``,
then ``memory.clear()`` after the update. The lists filled during the rollout keep their
graphs on purpose: the update backpropagates through them and the store is emptied once
it has. When the samples are detached first (``Variable(batch.data)``), the graphs were
kept for nothing and the store is no excuse.
"""

from __future__ import annotations

import ast
from typing import Optional, Set

from .module_index import Scope, contains, expr_keys
from .names import dotted

_CLEARS = frozenset({"clear", "reset"})


def sampled_store_keep(analysis, scope: Scope, key: str) -> Optional[str]:
    """Why graphs in ``key`` are consumed through a store, or None."""
    for call, stmt in scope.calls:
        func = call.func
        if not isinstance(func, ast.Attribute) or not _hands(analysis, scope, call, key):
            continue
        store = dotted(func.value)
        if not store or store == key:
            continue
        line = consumed_store(analysis, scope, store, stmt)
        if line is not None:
            return (f"`{key}` is handed to `{store}` at line {call.lineno}, whose samples are "
                    f"backpropagated at line {line} before it is cleared")
    return None


def consumed_store(analysis, scope: Scope, store: str, stmt) -> Optional[int]:
    """Line of the backward pass that consumes what ``store`` was given at ``stmt``: its
    samples reach that backward undetached and the function clears the store."""
    if not _cleared(scope, store):
        return None
    for site in scope.backward_sites:
        if site.kind != "grad" and _after_or_repeated(analysis, stmt, site.call) and \
                store in _attached_reach(analysis, scope, site):
            return site.call.lineno
    return None


def _hands(analysis, scope: Scope, call: ast.Call, key: str) -> bool:
    """Is the container an argument, or an item of a list/tuple argument, or what such an
    item was built from (``returns`` computed from ``values``)?"""
    names = []
    for arg in list(call.args) + [k.value for k in call.keywords]:
        items = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
        names.extend(n for n in map(dotted, items) if n)
    return key in names or key in analysis.flow.sources_of(scope, names)


def _cleared(scope: Scope, store: str) -> bool:
    for call, _ in scope.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in _CLEARS and dotted(func.value) == store:
            return True
    return False


def _after_or_repeated(analysis, first, call) -> bool:
    if call.lineno > first.lineno:
        return True
    ctx = analysis.index.ctx(first)
    return ctx is not None and any(contains(loop, call) for loop in ctx.loops)


def _attached_reach(analysis, scope: Scope, site) -> Set[str]:
    """The names whose values reach the backward pass at ``site`` with their graph, following
    the definitions that reach each use (a later ``x = Variable(x.data)`` cuts the path)."""
    flow = analysis.flow
    seen: Set[str] = set()
    todo = [(key, site.stmt or site.call) for key in site.keys]
    while todo:
        key, at = todo.pop()
        if (key, id(at)) in seen:
            continue
        seen.add((key, id(at)))
        defs = flow.reaching(scope, key, at)
        if not defs and "." in key:
            todo.append((key.rsplit(".", 1)[0], at))
        for d in defs:
            value = d.value
            if d.index is not None and isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == d.arity:
                value = value.elts[d.index]  # ``a, b = a.detach(), b.detach()``: item by item
            if d.kind in ("assign", "aug", "for", "with") and not _cuts_graph(value):
                todo.extend((k, d.stmt) for k in expr_keys(value))
    return {key for key, _ in seen}


def _cuts_graph(value) -> bool:
    from .graph import _explicitly_detached

    if _explicitly_detached(value):
        return True
    # ``Variable(x.data)``, ``torch.tensor(x.detach())``: a new leaf around a detached value.
    return (isinstance(value, ast.Call) and bool(value.args) and _explicitly_detached(value.args[0])
            and isinstance(value.func, (ast.Name, ast.Attribute))
            and (dotted(value.func) or "").rsplit(".", 1)[-1] in ("Variable", "tensor", "as_tensor"))
