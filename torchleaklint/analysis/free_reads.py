"""The names an expression reads from its own scope, not those a comprehension binds.

``loss = sum(loss for loss in loss_dict.values())`` does not read the ``loss`` of the
previous iteration: in Python 3 the generator's ``loss`` is local to the generator. Only
the first iterable of a comprehension is evaluated in the enclosing scope.
"""

from __future__ import annotations

import ast
from typing import FrozenSet, Iterator

_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def free_reads(expr) -> Iterator[ast.AST]:
    """Every ``Name`` and ``Attribute`` node of ``expr`` read from the enclosing scope."""
    if expr is not None:
        yield from _visit(expr, frozenset())


def _visit(node, bound: FrozenSet[str]) -> Iterator[ast.AST]:
    if isinstance(node, _COMPREHENSIONS):
        inner = set(bound)
        for i, gen in enumerate(node.generators):
            # The first iterable runs outside; later ones see the earlier targets.
            yield from _visit(gen.iter, bound if i == 0 else frozenset(inner))
            inner |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
            for cond in gen.ifs:
                yield from _visit(cond, frozenset(inner))
        parts = (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)
        for part in parts:
            yield from _visit(part, frozenset(inner))
        return
    if isinstance(node, (ast.Name, ast.Attribute)):
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if not (isinstance(root, ast.Name) and root.id in bound):
            yield node
    for child in ast.iter_child_nodes(node):
        yield from _visit(child, bound)
