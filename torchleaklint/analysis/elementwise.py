"""A list whose every element was replaced by a graph-free value before it is read.

``for i in range(len(mask)): mask[i] = Variable(mask[i].data.clone(), requires_grad=False)``
(and ``hidden[i] = hidden[i].detach()``) detaches the list in place: what a later
``mask[i]`` reads carries no graph, whatever the call that built the list returned.
"""

from __future__ import annotations

import ast

from .module_index import Scope, within
from .names import dotted


def rebound_elementwise(oracle, container, scope: Scope, stmt) -> bool:
    """Was every element of ``container`` rebound to a graph-free value by a loop that runs
    before ``stmt`` on every path to it, with the list not rebound since?"""
    key = dotted(container)
    if key is None or not scope.loops:
        return False
    index = oracle.analysis.index
    use = index.ctx(stmt)
    if use is None:
        return False
    for loop in scope.loops:
        if not (isinstance(loop, ast.For) and (loop.end_lineno or loop.lineno) < stmt.lineno
                and _over_indices(loop, key)):
            continue
        ctx = index.ctx(loop)
        if ctx is None or not within(use.blocks, ctx.blocks):
            continue  # the loop may not have run on the way to the read
        if any(d.stmt.lineno > loop.lineno for d in oracle.analysis.flow.reaching(scope, key, stmt)):
            continue  # the list is rebound after the loop
        name = loop.target.id
        for body_stmt in loop.body:
            if (isinstance(body_stmt, ast.Assign) and len(body_stmt.targets) == 1
                    and isinstance(body_stmt.targets[0], ast.Subscript)
                    and dotted(body_stmt.targets[0].value) == key
                    and isinstance(body_stmt.targets[0].slice, ast.Name) and body_stmt.targets[0].slice.id == name
                    and oracle.carrying(body_stmt.value, body_stmt) is None):
                return True
    return False


def _over_indices(loop: ast.For, key: str) -> bool:
    """``for i in range(len(key))``."""
    it = loop.iter
    return (isinstance(loop.target, ast.Name) and isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
            and it.func.id == "range" and len(it.args) == 1 and isinstance(it.args[0], ast.Call)
            and isinstance(it.args[0].func, ast.Name) and it.args[0].func.id == "len"
            and len(it.args[0].args) == 1 and dotted(it.args[0].args[0]) == key)
