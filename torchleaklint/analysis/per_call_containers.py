"""A container a function builds afresh on every call and fills over a loop of fixed,
structural length (``for agent in range(self.n_agents)``, ``for k in
range(self.opts.n_refinements)``), where the function itself is one step of a loop in its
callers: what it keeps lives for one step and is bounded by that count, not by the number
of steps of the run (``q_losses = []; for a in range(n_agents): q_losses.append(
self.update_agent(a)); return q_losses``)."""

from __future__ import annotations

import ast
from typing import Optional

from .module_index import Scope, start_of
from .repetition import repeated_call_site

FRESH_CALLS = frozenset({"list", "dict", "set", "defaultdict", "OrderedDict", "deque"})


def bounded_per_call(analysis, scope: Scope, key: str, stmt) -> Optional[str]:
    """Why the values stored into ``key`` at ``stmt`` live for one call of a function that
    runs once per step, or None."""
    if "." in key or not scope.is_function or key in scope.params:
        return None
    index = analysis.index
    ctx = index.ctx(stmt)
    if ctx is None or not ctx.loops or not all(_structural_count(loop) for loop in ctx.loops):
        return None  # a loop over data (a loader, an episode) grows with the run
    first = ctx.loops[0]
    defs = scope.defs_of(key)
    if not defs or not all(
            d.kind == "assign" and d.index is None and _fresh(d.value) and start_of(d.stmt) < start_of(first)
            and not index.ctx(d.stmt).loops for d in defs):
        return None  # built once per call, before its loops
    where = repeated_call_site(analysis, scope)
    if where is None:
        return None  # called once (the whole run's loop lives in it)
    return (f"`{key}` is built afresh on each call of `{scope.name}` and filled over a loop of fixed length "
            f"(line {first.lineno}); `{scope.name}` is one step ({where})")


def _structural_count(loop) -> bool:
    """``for i in range(self.n_agents)``: a count from the configuration, not ``range(len(loader))``."""
    if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call):
        return False
    func = loop.iter.func
    if not (isinstance(func, ast.Name) and func.id == "range"):
        return False
    return not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len"
                   for n in ast.walk(loop.iter))


def _fresh(value) -> bool:
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    return isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", None)) in FRESH_CALLS
