"""One entry of the dict a project module's ``forward`` returns.

``model_out = lw_model(fc, att, labels)`` then ``history[i] = model_out["reward"].mean()``:
the module's output as a whole carries a graph (its ``"loss"``), but the forward builds
``out["reward"]`` from ``torch.from_numpy(...)``. What the entry holds is read from the
forward itself, when every return there is that dict (or a dict literal) and every store
of the key is visible.
"""

from __future__ import annotations

import ast
import os
from typing import Optional, Tuple

from .argument_derived import parameters_behind
from .call_arity import arguments_fit
from .inference import spelled_graph_free
from .module_index import Scope
from .names import dotted
from .objects import PARALLEL_WRAPPERS
from .summaries import stmt_of

GRAPH_FREE = object()  # the entry is proven to hold no graph


def keyed_output(oracle, expr: ast.Subscript, scope: Scope, stmt):
    """Evidence for ``out["key"]`` from the forward that built ``out``, ``GRAPH_FREE``, or
    None when the forward does not say."""
    key = expr.slice.value if isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, str) else None
    name = dotted(expr.value)
    project = oracle.analysis.project
    if key is None or name is None or project is None:
        return None
    defs = oracle.analysis.flow.reaching(scope, name, stmt)
    if not defs or any(d.kind != "assign" or d.index is not None or not isinstance(d.value, (ast.Call, ast.Dict))
                       for d in defs):
        return None
    found = None
    for d in defs:
        if isinstance(d.value, ast.Dict):  # ``out = {"loss": ..., "reward": ...}`` in another branch
            entry = _literal_entry(oracle.analysis, d.value, d.stmt, key)
        else:
            forward = forward_of(oracle, d.value, scope, d.stmt)
            if forward is None:
                return None
            entry = _entry(forward, key)
        if entry is None:
            return None
        if entry is not GRAPH_FREE:
            return entry
        found = GRAPH_FREE
    return found


def forward_of(oracle, call: ast.Call, scope: Scope, stmt) -> Optional[Tuple[object, Scope]]:
    """The analysis and scope of the ``forward`` a call of a project module instance runs
    (also through ``nn.DataParallel``), when its class is known."""
    kinds = oracle.kinds
    project = oracle.analysis.project
    func = call.func
    kind = kinds.kind_of(func, scope, stmt)
    if kind is not None and kind.class_ref is None:
        inner = _unwrapped(oracle, func, scope, stmt)  # ``dp_model = nn.DataParallel(lw_model)``
        kind = kinds.kind_of(inner, scope, stmt) if inner is not None else None
    if kind is None or kind.class_ref is None or not kind.is_module:
        return None
    refs = project.methods_in_hierarchy(kind.class_ref[0], kind.class_ref[1], "forward")
    if len(refs) != 1:
        return None
    return project.scope_for(refs[0])


MAX_ARITY_CANDIDATES = 6


def _forwards_by_arity(oracle, stmt) -> list:
    """``scores, caps, lengths, alphas, order = decoder(imgs, caps)`` where ``decoder`` is a
    parameter of unknown class: the project module classes, defined in this module or one
    it imports, whose ``forward`` returns a tuple of that many items in every return (none
    when there are more than a few)."""
    if oracle.analysis.project is None or not (
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple)):
        return []
    arity = len(stmt.targets[0].elts)
    project = oracle.analysis.project
    own = oracle.analysis.index.module_name
    key = ("forward-by-arity", own, arity)
    if key not in project.memo:
        found = []
        for module in [own] + sorted(_imported_with_packages(project, own) - {own}):
            table = project.tables.get(module)
            for cls in (table.classes if table is not None else ()):
                if not project.is_module_class(module, cls):
                    continue
                refs = project.methods_in_hierarchy(module, cls, "forward")
                entry = project.scope_for(refs[0]) if len(refs) == 1 else None
                if entry is not None and entry[1].returns and all(
                        _returns_tuple_of(entry[0], entry[1], r, arity) for r in entry[1].returns) \
                        and entry not in found:
                    found.append(entry)
        project.memo[key] = found if len(found) <= MAX_ARITY_CANDIDATES else []
    return project.memo[key]


def _returns_tuple_of(analysis, scope: Scope, expr, arity: int) -> bool:
    """Is the returned ``expr`` a tuple of ``arity`` items, or a call of project functions
    that each return only such tuples (``return self.metric(logits, labels)``)?"""
    if isinstance(expr, ast.Tuple):
        return len(expr.elts) == arity
    returned = _helper_returns(analysis, scope, expr) if isinstance(expr, ast.Call) else None
    return returned is not None and all(isinstance(r, ast.Tuple) and len(r.elts) == arity for _, _, r in returned)


def _helper_returns(analysis, scope: Scope, call: ast.Call):
    """(analysis, scope, returned expression) for every ``return`` of the project
    functions ``call`` resolves to; None when it resolves to none, to more than a few, or
    to one that cannot be read or returns nothing."""
    at = stmt_of(analysis, scope, call)
    if at is None or analysis.project is None:
        return None
    refs = analysis.graph.kinds.resolve_functions(call.func, scope, at)
    if not refs or len(refs) > MAX_ARITY_CANDIDATES:
        return None
    out = []
    for ref in refs:
        found = analysis.project.scope_for(ref)
        if found is None or not found[1].returns:
            return None
        out.extend((found[0], found[1], expr) for expr in found[1].returns)
    return out


def _imported_with_packages(project, module: str) -> set:
    """The modules ``module`` imports, and for an imported package the modules its
    ``__init__`` imports (``import models`` where ``models/__init__.py`` does ``from .
    import meta_baseline``: the classes a registry there builds); and the modules imported
    by the scripts that import ``module`` (``main.py`` imports ``network`` and ``trainer``
    and hands ``trainer`` a ``network.GNet``)."""
    found = set(project.imported_modules(module))
    for importer in project.importers_of_module(module)[:MAX_IMPORTERS]:
        found |= project.imported_modules(importer)
    for imported in list(found):
        table = project.tables.get(imported)
        if table is not None and table.path and os.path.basename(table.path) == "__init__.py":
            found |= project.imported_modules(imported)
    return found


MAX_IMPORTERS = 4  # importers whose imports are searched for module classes


def _unwrapped(oracle, func, scope: Scope, stmt):
    key = dotted(func)
    if key is None:
        return None
    defs = oracle.analysis.flow.reaching(scope, key, stmt)
    if len(defs) != 1 or not isinstance(defs[0].value, ast.Call):
        return None
    value = defs[0].value
    if (dotted(value.func) or "").rsplit(".", 1)[-1] in PARALLEL_WRAPPERS and value.args:
        return value.args[0]
    return None


def _entry(forward, key: str):
    from .stores import stores_into

    analysis, scope = forward
    values = []
    for expr in scope.returns:
        stmt = stmt_of(analysis, scope, expr)
        if stmt is None:
            return None
        if isinstance(expr, ast.Dict):
            matches = [v for k, v in zip(expr.keys, expr.values) if isinstance(k, ast.Constant) and k.value == key]
            if len(matches) != 1 or None in expr.keys:
                return None
            values.append((matches[0], stmt))
        elif isinstance(expr, ast.Name):
            defs = analysis.flow.reaching(scope, expr.id, stmt)
            if not defs or any(d.kind != "assign" or not _empty_dict(d.value) for d in defs):
                return None
            stores = [s for s in stores_into(analysis, scope, expr.id)]
            if any(s.how != "setitem" or not isinstance(s.key_expr, ast.Constant) for s in stores):
                return None  # ``out.update(...)``, a computed key: not every entry is in view
            keyed = [s for s in stores if s.key_expr.value == key]
            if not keyed:
                return None
            values.extend((s.value, s.stmt) for s in keyed)
        else:
            return None
    if not values:
        return None
    for value, at in values:
        ev = analysis.graph.carrying(value, at)
        if ev is not None:
            return ev
    return GRAPH_FREE


def _literal_entry(analysis, value: ast.Dict, stmt, key: str):
    matches = [v for k, v in zip(value.keys, value.values) if isinstance(k, ast.Constant) and k.value == key]
    if len(matches) != 1 or None in value.keys:
        return None
    return analysis.graph.carrying(matches[0], stmt) or GRAPH_FREE


def _empty_dict(value) -> bool:
    return (isinstance(value, ast.Dict) and not value.keys) or (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict"
        and not value.args and not value.keywords)


def position_graph_free(oracle, call: ast.Call, index: int, scope: Scope, stmt) -> bool:
    """Is element ``index`` of what a project module's ``forward`` returns graph-free in every
    return: by its spelling (``decode_lengths = (lengths - 1).tolist()`` returned as the fourth
    item), or because it is computed from parameters alone and this call passes graph-free
    values for them? The module's output as a whole carries a graph; this item does not."""
    forward = forward_of(oracle, call, scope, stmt)
    if forward is None:
        # A module of unknown class: every project forward that could be it (by the arity
        # the call is unpacked to) must agree.
        candidates = [c for c in _forwards_by_arity(oracle, stmt) if arguments_fit(c[1], call)] \
            if _unresolved_module(oracle, call, scope, stmt) else []
        return bool(candidates) and all(_position_free_in(oracle, c, call, index, scope, stmt) for c in candidates)
    return _position_free_in(oracle, forward, call, index, scope, stmt)


def _unresolved_module(oracle, call, scope, stmt) -> bool:
    kind = oracle.kinds.kind_of(call.func, scope, stmt)
    return kind is None or kind.class_ref is None


def _position_free_in(oracle, forward, call, index: int, scope: Scope, stmt) -> bool:
    analysis, fscope = forward
    found = False
    for expr in fscope.returns:
        if isinstance(expr, ast.Call):
            # ``return self.metric(logits, labels)``: the tuple a helper of the project returns
            if not _helper_position_free(analysis, fscope, expr, index):
                return False
            found = True
            continue
        if not isinstance(expr, ast.Tuple) or index >= len(expr.elts) or any(
                isinstance(e, ast.Starred) for e in expr.elts):
            return False
        item = expr.elts[index]
        at = stmt_of(analysis, fscope, expr)
        if at is None:
            return False
        if spelled_graph_free(analysis, fscope, item, at):
            found = True
            continue
        params = parameters_behind(analysis, fscope, item, at)
        if params is None or not _arguments_graph_free(oracle, call, fscope, params, scope, stmt):
            return False
        found = True  # ``dec_len = [x - 1 for x in caption_lengths]``: lengths from the loader
    return found


def _helper_position_free(analysis, scope: Scope, call: ast.Call, index: int) -> bool:
    """Is item ``index`` of every tuple the called project function returns graph-free by
    its spelling (``return loss, torch.mean((preds == labels).float())``)?"""
    returned = _helper_returns(analysis, scope, call)
    if returned is None:
        return False
    for callee_analysis, callee, expr in returned:
        where = stmt_of(callee_analysis, callee, expr)
        if where is None or not isinstance(expr, ast.Tuple) or index >= len(expr.elts) or any(
                isinstance(e, ast.Starred) for e in expr.elts) \
                or not spelled_graph_free(callee_analysis, callee, expr.elts[index], where):
            return False
    return True


def _arguments_graph_free(oracle, call: ast.Call, fscope: Scope, params, scope: Scope, stmt) -> bool:
    """Does the caller pass a graph-free value for every parameter in ``params``?"""
    from .summaries import argument_of

    for param in params:
        arg = argument_of(call, fscope, param)  # none for ``*args``/``**kwargs`` or an omitted one
        if arg is None or oracle._expr(arg, scope, stmt, {}, 0) is not None:
            return False
    return True
