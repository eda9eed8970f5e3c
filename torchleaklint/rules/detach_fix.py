"""The shared fix for values that keep a graph alive: append ``.item()`` (a Python number,
for scalar losses consumed as numbers), ``.detach().clone()`` (a scalar loss that must
stay a tensor: a 0-dim loss can be a view that pins its whole element-wise buffer) or
``.detach()`` (other tensors) to the graph-carrying part of the stored expression."""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import List, Optional, Tuple

from ..analysis.graph import STRONG, Evidence
from ..analysis.uses import NUMERIC, TENSOR
from ..diagnostics import SAFE, UNSAFE, Edit, Fix

ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)
FIX_STYLES = ("auto", "item", "detach")


def carrying_parts(ctx, expr: ast.AST, stmt, graph=None) -> List[Tuple[ast.AST, Evidence]]:
    """The smallest sub-expressions whose graphs make ``expr`` carry one (as judged by
    ``graph``, the module's oracle unless another is given). None when one of them is a
    container of graph-carrying values (``[log_probs, returns]`` of two lists): a list has
    no ``.detach()``, so there is no fix to offer."""
    parts = _carrying_parts(ctx, expr, stmt, graph or ctx.analysis.graph)
    return [] if any(ev.container for _, ev in parts) else parts


def _carrying_parts(ctx, expr: ast.AST, stmt, graph) -> List[Tuple[ast.AST, Evidence]]:
    ev = graph.carrying(expr, stmt)
    if ev is None:
        return []
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        parts = []
        for elt in expr.elts:
            parts.extend(_carrying_parts(ctx, elt, stmt, graph))
        return parts
    if isinstance(expr, ast.Dict):
        parts = []
        for value in expr.values:
            parts.extend(_carrying_parts(ctx, value, stmt, graph))
        return parts
    if isinstance(expr, ast.BinOp):
        left = graph.carrying(expr.left, stmt)
        right = graph.carrying(expr.right, stmt)
        if left is not None and right is None:
            return _carrying_parts(ctx, expr.left, stmt, graph)
        if right is not None and left is None:
            return _carrying_parts(ctx, expr.right, stmt, graph)
    if isinstance(expr, ast.IfExp):
        # Fix each branch that carries a graph, by its own evidence: `loss.item() if c else 0`,
        # never `(loss if c else 0).item()`, which raises on the integer branch.
        return [part for branch in (expr.body, expr.orelse) for part in _carrying_parts(ctx, branch, stmt, graph)]
    if isinstance(expr, ast.BoolOp):
        # `loss or 0`: which operand is the value depends on truthiness at run time, so a
        # fix of the carrying operands (`loss.item() or 0`) is offered as unsafe only.
        return [(part, replace(part_ev, tensor=False, scalar=False)) for value in expr.values
                for part, part_ev in _carrying_parts(ctx, value, stmt, graph)]
    if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp, ast.Starred)):
        return []  # no single expression to detach: report without a fix
    return [(expr, ev)]


def choose_style(option: str, evidence: Evidence, uses: str) -> str:
    if option in ("item", "detach"):
        return option
    if evidence.loss_like and uses != TENSOR:
        return "item"
    if evidence.scalar and uses == NUMERIC:
        return "item"
    return "detach"


def build_fix(ctx, parts: List[Tuple[ast.AST, Evidence]], uses: str, uses_reason: Optional[str]) -> Optional[Fix]:
    if not parts:
        return None
    option = str(ctx.options.get("fix-style", "auto"))
    edits: List[Edit] = []
    safe = True
    styles = set()
    for expr, ev in parts:
        style = choose_style(option, ev, uses)
        if style == "item":
            suffix = ".item()"
            if not (ev.scalar and uses == NUMERIC and ev.strength == STRONG):
                safe = False
        else:
            suffix = ".detach().clone()" if (ev.loss_like and ev.scalar) else ".detach()"
            if not (ev.tensor and ev.strength == STRONG):
                safe = False
        styles.add(suffix)
        if isinstance(expr, ATOMS):
            edits.append(ctx.insert_after(expr, suffix))
        else:
            edits.append(ctx.insert_before(expr, "("))
            edits.append(ctx.insert_after(expr, ")" + suffix))
    what = " / ".join(sorted(styles))
    return Fix(SAFE if safe else UNSAFE, f"Append `{what}` to the stored value", tuple(edits))
