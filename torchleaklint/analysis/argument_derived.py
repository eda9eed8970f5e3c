"""A value a function computes from its own parameters alone.

``dec_len = [x - 1 for x in caption_lengths]`` returned by a decoder's ``forward`` beside its
scores: the module's output as a whole carries a graph, but this item is built only from the
``caption_lengths`` argument, by Python arithmetic and builtins. It carries a graph exactly
when the argument a caller passes does, which the caller's own evidence answers (lengths from
the data loader carry none).

Only spellings that cannot bring in a parameter, a submodule or anything else from outside
count: names that reach the function's parameters through plain local assignments (never
mutated in place), constants, arithmetic, comparisons, comprehensions, a few pure builtins
and methods called on such a value with such arguments.
"""

from __future__ import annotations

import ast
from typing import Optional, Set

from .detachers import DETACH_METHODS, NON_CARRYING_ATTRS
from .module_index import Scope

PURE_BUILTINS = frozenset({"len", "max", "min", "sum", "list", "tuple", "sorted", "int", "float", "abs",
                           "round", "range", "zip", "enumerate", "reversed", "bool"})
# methods that compute from their receiver and arguments only (tensor and sequence methods)
PURE_METHODS = DETACH_METHODS | frozenset({
    "sort", "squeeze", "unsqueeze", "view", "reshape", "flatten", "clone", "float", "double", "half", "cpu",
    "cuda", "to", "type", "contiguous", "permute", "transpose", "flip", "index_select", "masked_fill",
    "cumsum", "sum", "max", "min", "mean", "expand", "expand_as", "repeat", "index", "count", "copy",
    "new_ones", "new_zeros", "new_full", "fill_", "zero_"})
MAX_DEPTH = 12


def parameters_behind(analysis, scope: Scope, expr, stmt) -> Optional[Set[str]]:
    """The parameters of ``scope`` that ``expr`` (at ``stmt``) is computed from, or None when
    something else (``self``, a global, a call that is not pure) takes part."""
    found: Set[str] = set()
    if _walk(analysis, scope, expr, stmt, found, frozenset(), 0):
        return found
    return None


def _walk(analysis, scope, expr, stmt, found, local, depth) -> bool:
    from .stores import stores_into

    if depth > MAX_DEPTH:
        return False
    nxt = depth + 1
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, ast.Name):
        if expr.id in local:
            return True
        if expr.id == "self":
            return False
        defs = analysis.flow.reaching(scope, expr.id, stmt)
        if not defs:
            return False
        if any(True for _ in stores_into(analysis, scope, expr.id)):
            return False  # ``lengths[0] = ...``, ``lengths.append(...)``: written in place
        for d in defs:
            if d.kind == "param":
                if scope.class_name and scope.params and scope.params[0] == expr.id:
                    return False  # the receiver, whatever it is called
                found.add(expr.id)
            elif d.kind == "assign" and d.value is not None:
                value = d.value
                if d.index is not None:
                    if isinstance(value, (ast.Tuple, ast.List)) and d.index < len(value.elts):
                        value = value.elts[d.index]
                    elif not _pure_method_call(value):
                        return False  # ``a, b = f(x)``: only a pure method's pieces are followed
                if not _walk(analysis, scope, value, d.stmt, found, frozenset(), nxt):
                    return False
            else:
                return False
        return True
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return all(_walk(analysis, scope, e, stmt, found, local, nxt) for e in expr.elts)
    if isinstance(expr, ast.BinOp):
        return (_walk(analysis, scope, expr.left, stmt, found, local, nxt)
                and _walk(analysis, scope, expr.right, stmt, found, local, nxt))
    if isinstance(expr, ast.UnaryOp):
        return _walk(analysis, scope, expr.operand, stmt, found, local, nxt)
    if isinstance(expr, (ast.BoolOp,)):
        return all(_walk(analysis, scope, v, stmt, found, local, nxt) for v in expr.values)
    if isinstance(expr, ast.Compare):
        return True  # a truth value
    if isinstance(expr, ast.IfExp):
        return (_walk(analysis, scope, expr.body, stmt, found, local, nxt)
                and _walk(analysis, scope, expr.orelse, stmt, found, local, nxt))
    if isinstance(expr, ast.Subscript):
        return (_walk(analysis, scope, expr.value, stmt, found, local, nxt)
                and _walk(analysis, scope, expr.slice, stmt, found, local, nxt))
    if isinstance(expr, ast.Slice):
        return all(part is None or _walk(analysis, scope, part, stmt, found, local, nxt)
                   for part in (expr.lower, expr.upper, expr.step))
    if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        inner = set(local)
        for gen in expr.generators:
            if not _walk(analysis, scope, gen.iter, stmt, found, frozenset(inner), nxt):
                return False
            inner |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
            if not all(_walk(analysis, scope, c, stmt, found, frozenset(inner), nxt) for c in gen.ifs):
                return False
        return _walk(analysis, scope, expr.elt, stmt, found, frozenset(inner), nxt)
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Name):
            if func.id not in PURE_BUILTINS or analysis.flow.reaching(scope, func.id, stmt):
                return False  # not a builtin, or the name is rebound here
        elif isinstance(func, ast.Attribute):
            if func.attr not in PURE_METHODS or not _walk(analysis, scope, func.value, stmt, found, local, nxt):
                return False  # ``lengths.sort(...)``: a method of a derived value
        else:
            return False
        args = list(expr.args) + [kw.value for kw in expr.keywords]
        return all(_walk(analysis, scope, a.value if isinstance(a, ast.Starred) else a, stmt, found, local, nxt)
                   for a in args)
    if isinstance(expr, ast.Attribute):
        return expr.attr in NON_CARRYING_ATTRS  # ``lengths.shape``; ``net.weight`` is not followed
    return False


def _pure_method_call(value) -> bool:
    """``lengths.sort(descending=True)`` unpacked into values and indices."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in PURE_METHODS
