"""A stored value that another container already holds.

``aux_label.append(video_segments[prev][obj]["pred_mask"])`` in a loop over the frames
already tracked: the tensor lives in ``video_segments``, made before the loop and not
touched in it. The list adds a reference to a graph that exists anyway, one per element
of what the loop walks, not a new graph per iteration.
"""

from __future__ import annotations

import ast
from typing import Optional

from .module_index import contains
from .stores import all_stores


def held_elsewhere(analysis, scope, value, container: str, stmt) -> bool:
    """Is ``value`` a subscript read (``segments[i][k]["mask"]``) of a local made before
    the innermost loop around ``stmt``, which neither rebinds nor stores into it, while
    every outer loop makes ``container`` afresh?"""
    ctx = analysis.index.ctx(stmt)
    if ctx is None or not ctx.loops:
        return False
    loop = ctx.loops[-1]
    root = _subscript_root(value)
    if root is None or root == container or root in ("self", "cls"):
        return False
    if not scope.defs_of(root) or any(contains(loop, d.stmt) for d in scope.defs_of(root)):
        return False  # a parameter, a global, or bound again in the loop (``out = model(x)``)
    if any(store.container.split(".")[0].split("[")[0] == root and contains(loop, store.stmt)
           for store in all_stores(analysis, scope)):
        return False  # filled in the loop: what it holds is made there
    made = [d.stmt for d in scope.defs_of(container) if d.kind == "assign"]
    return all(any(contains(outer, at) for at in made) for outer in ctx.loops[:-1])


def _subscript_root(value) -> Optional[str]:
    """``a[i][k]["m"]`` -> ``a``; None unless the value is subscripts (at least one) down
    to a plain name."""
    node = value
    seen = False
    while isinstance(node, ast.Subscript):
        seen = True
        node = node.value
    return node.id if seen and isinstance(node, ast.Name) else None
