"""Custom autograd functions in a module: classes deriving ``torch.autograd.Function``
(directly, or through another class of the same module), with their ``forward`` and
``backward`` methods. Two rules read them: tensors kept on ``ctx`` and legacy functions."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Set

from ..analysis.names import dotted

FUNCTION_BASES = frozenset({"torch.autograd.Function", "torch.autograd.function.Function",
                            "torch.autograd.function.InplaceFunction", "torch.autograd.function.NestedIOFunction"})
# ``torch.autograd.Function`` spelled through the plain module import (``import torch``).
FUNCTION_PATHS = frozenset({"torch.autograd.Function", "autograd.Function", "torch.autograd.function.Function"})


@dataclass(frozen=True)
class AutogradFunction:
    node: ast.ClassDef
    forward: Optional[ast.FunctionDef]
    backward: Optional[ast.FunctionDef]


def _is_function_base(base: ast.AST, imports) -> bool:
    qual = imports.qualname(base)
    if qual is not None:
        return qual in FUNCTION_BASES or qual == "torch.autograd.Function"
    return dotted(base) in FUNCTION_PATHS and "torch" in imports.aliases.values()


def autograd_functions(analysis) -> List[AutogradFunction]:
    """Every class of the module whose bases lead to ``torch.autograd.Function``
    (computed once per analysis: two rules ask)."""
    memo = analysis.__dict__
    if "_autograd_functions" not in memo:
        memo["_autograd_functions"] = list(_find(analysis.index))
    return memo["_autograd_functions"]


def _class_defs(index) -> List[ast.ClassDef]:
    """The module's class statements, at any depth, from the index's bindings."""
    return [d.stmt for scope in index.scopes for defs in scope.defs.values() for d in defs
            if d.kind == "def" and isinstance(d.stmt, ast.ClassDef)]


def _find(index) -> Iterator[AutogradFunction]:
    found = _class_defs(index)
    if not found:
        return
    classes: Dict[str, ast.ClassDef] = {}
    for node in found:
        classes.setdefault(node.name, node)
    memo: Dict[str, bool] = {}

    def derives(cls: ast.ClassDef, seen: Set[str]) -> bool:
        if cls.name in memo:
            return memo[cls.name]
        found = False
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in classes:  # a class of this module shadows imports
                found = base.id not in seen and derives(classes[base.id], seen | {base.id})
            elif _is_function_base(base, index.imports):
                found = True
            if found:
                break
        memo[cls.name] = found
        return found

    for node in dict.fromkeys(found):
        if derives(node, {node.name}):
            methods = {m.name: m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
            yield AutogradFunction(node, methods.get("forward"), methods.get("backward"))


def is_static(method: ast.AST) -> bool:
    return any(dotted(d) in ("staticmethod", "builtins.staticmethod") for d in method.decorator_list)
