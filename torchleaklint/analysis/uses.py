"""How is a value consumed after it is stored? Decides between ``.item()`` (every use
treats it as a number) and ``.detach()`` (some use needs a tensor), and whether the
chosen rewrite is provably behaviour-preserving."""

from __future__ import annotations

import ast
from typing import Iterator, Optional, Tuple

from .module_index import Scope
from .names import dotted

NUMERIC = "numeric"  # every use works on a Python number
TENSOR = "tensor"  # some use needs a tensor (torch.*, tensor methods)
UNKNOWN = "unknown"  # some use escapes the analysis (returned, passed to unknown code)

# Builtins whose result is of the kind of what they are given (an element of a list, the
# value itself): ``sum(losses).item()`` needs the elements to stay tensors.
ELEMENT_CALLS = frozenset({"sum", "min", "max", "abs"})
NUMERIC_CALLS = frozenset({"sum", "len", "print", "float", "int", "round", "str", "repr", "format", "min", "max",
                           "sorted", "list", "tuple", "enumerate", "zip", "abs", "isinstance", "bool", "mean", "median",
                           "stdev", "fmean", "append", "extend", "add_scalar", "add_scalars", "log", "log_metrics",
                           "info", "debug", "warning", "warn", "error", "set_postfix", "set_description", "write", "dump",
                           "dumps", "plot", "scatter", "hist", "update_plot", "add", "insert", "array", "asarray",
                           "nanmean", "std", "var", "average", "percentile", "cumsum", "isfinite", "isnan", "clip", "exp",
                           "sqrt", "log10", "savetxt", "save"})
CONTAINER_METHODS = frozenset({"append", "extend", "insert", "clear", "pop", "copy", "index",
                               "count", "remove", "reverse", "sort", "appendleft", "popleft",
                               "items", "keys", "values", "get", "setdefault", "update", "add"})
TENSOR_NAMESPACES = ("torch",)


def classify_uses(analysis, scope: Scope, key: str, skip_stmts=(), container: bool = False,
                  depth: int = 0) -> Tuple[str, Optional[str]]:
    """(NUMERIC | TENSOR | UNKNOWN, the deciding use) for every later read of ``key``."""
    verdict = NUMERIC
    reason = None
    skip = {id(s) for s in skip_stmts}
    for stmt in scope.statements:
        if id(stmt) in skip:
            continue
        for node, parents in _loads(stmt, key):
            kind, why = _classify(analysis, scope, stmt, node, parents, container, depth)
            if kind == TENSOR:
                return TENSOR, why
            if kind == UNKNOWN and verdict == NUMERIC:
                verdict, reason = UNKNOWN, why
    return verdict, reason


def _loads(stmt, key) -> Iterator[Tuple[ast.AST, list]]:
    """Reads of ``key`` in a statement's own expressions, with their parent chain."""
    roots = _own_expressions(stmt)
    for root in roots:
        stack = [(root, [])]
        while stack:
            node, parents = stack.pop()
            if isinstance(node, (ast.Name, ast.Attribute)) and dotted(node) == key and isinstance(getattr(node, "ctx", None), ast.Load):
                yield node, parents
                continue
            if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for child in ast.iter_child_nodes(node):
                stack.append((child, parents + [node]))


def _own_expressions(stmt):
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.iter]
    if isinstance(stmt, (ast.While, ast.If)):
        return [stmt.test]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [i.context_expr for i in stmt.items]
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try)):
        return []
    return [stmt]


def _classify(analysis, scope, stmt, node, parents, container, depth) -> Tuple[str, Optional[str]]:
    line = getattr(node, "lineno", 0)
    parent = parents[-1] if parents else None
    # Climb through arithmetic and subscripts: a number in, a number out.
    child = node
    while parent is not None and (
        isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp))
        or (isinstance(parent, ast.Subscript) and parent.value is child and container)
        or isinstance(parent, (ast.FormattedValue, ast.JoinedStr))
    ):
        if isinstance(parent, (ast.FormattedValue, ast.JoinedStr, ast.Compare)):
            return NUMERIC, None
        child = parent
        parents = parents[:-1]
        parent = parents[-1] if parents else None
    if parent is None or isinstance(parent, ast.Expr):
        return NUMERIC, None
    if isinstance(parent, ast.Attribute):
        # A method on the value itself.
        attr = parent.attr
        if container and attr in CONTAINER_METHODS:
            return NUMERIC, None
        return TENSOR, f"`.{attr}` is used on it at line {line}"
    if isinstance(parent, ast.Call):
        func = parent.func
        if child is func:
            return UNKNOWN, f"it is called at line {line}"
        qual = analysis.index.imports.qualname(func) or ""
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if qual.startswith(TENSOR_NAMESPACES):
            return TENSOR, f"`{qual}` receives it at line {line}"
        if not qual and name in ELEMENT_CALLS and parent.args and parent.args[0] is child:
            # ``sum(losses).item()``: the result is of the elements' kind, so a tensor method
            # on it needs them to stay tensors; any other use is a number's as before
            kind, why = _classify(analysis, scope, stmt, parent, parents[:-1], False, depth)
            return (TENSOR, why) if kind == TENSOR else (NUMERIC, None)
        if qual.startswith(("numpy.", "math.", "statistics.")) or name in NUMERIC_CALLS:
            return NUMERIC, None
        return UNKNOWN, f"it is passed to `{dotted(func) or name}` at line {line}"
    if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        if isinstance(parent, ast.AugAssign) and parent.target is child:
            return NUMERIC, None
        names = [dotted(t) for t in targets]
        if depth < 2 and all(names):
            for other in names:
                if other == dotted(node):
                    continue
                kind, why = classify_uses(analysis, scope, other, skip_stmts=(parent,), depth=depth + 1)
                if kind != NUMERIC:
                    return kind, why
            return NUMERIC, None
        return UNKNOWN, f"it is assigned at line {line}"
    if isinstance(parent, (ast.Return, ast.Yield, ast.YieldFrom)):
        return UNKNOWN, f"it is returned at line {line}"
    if isinstance(parent, (ast.Tuple, ast.List, ast.Dict, ast.keyword, ast.Starred)):
        return UNKNOWN, f"it is packed into a structure at line {line}"
    if isinstance(parent, ast.comprehension) and parent.iter is child and container and len(parents) >= 2:
        comp = parents[-2]
        if isinstance(parent.target, ast.Name) and isinstance(comp, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            # ``[float(l) for l in losses]``: judge the element by how the comprehension uses it.
            verdict = _element_uses(analysis, scope, stmt, comp, parent.target.id, depth)
            if verdict[0] != NUMERIC:
                return verdict
            return _classify(analysis, scope, stmt, comp, parents[:-2], False, depth)
    if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)):
        return UNKNOWN, f"it is iterated at line {line}"
    return UNKNOWN, f"it is used at line {line}"


def _element_uses(analysis, scope, stmt, comp, name, depth) -> Tuple[str, Optional[str]]:
    for node, parents in _loads(comp.elt, name):
        kind, why = _classify(analysis, scope, stmt, node, parents, False, depth + 1)
        if kind != NUMERIC:
            return kind, why
    return NUMERIC, None
