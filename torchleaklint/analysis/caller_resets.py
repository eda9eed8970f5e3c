"""An object's container that the caller empties before the loop that fills it.

``forward`` calls ``self.f_init(...)``, which sets ``self.history = defaultdict(list)``, and
then ``self.f_next(...)`` once per time step, which appends to ``self.history``: the
container holds one call of ``forward``'s values, whatever repeats ``forward``. The store in
``f_next`` does not grow with the loop in ``forward``, nor with anything around it.
"""

from __future__ import annotations

import ast
from .module_index import Scope, contains
from .names import dotted
from .stores import resets_of


def reset_before_loop(analysis, caller: Scope, call, call_stmt, key: str, callee) -> bool:
    """Does ``caller`` empty ``key`` (``self.history`` of the method ``callee``) before the
    loop around ``call``, on every pass of the loops around that reset?

    The reset is a statement of ``caller`` that empties the container through the receiver
    of ``call`` (``self.history = []``, ``dec.history.clear()``) or calls, on that receiver,
    a method of ``callee``'s class hierarchy that empties it at its top level
    (``h = self.f_init(...)``, ``model.dec.f_init(...)``), outside the innermost loop around
    the call, under no ``if``, and before that loop."""
    if not key.startswith("self.") or "." in key[5:] or not isinstance(call.func, ast.Attribute):
        return False
    receiver = dotted(call.func.value)
    if receiver is None:
        return False
    index = analysis.index
    ctx = index.ctx(call_stmt)
    if ctx is None or not ctx.loops:
        return False
    innermost = ctx.loops[-1]
    for stmt in caller.statements:
        if stmt.lineno >= innermost.lineno or contains(innermost, stmt):
            continue
        here = index.ctx(stmt)
        if here is None or here.blocks != ctx.blocks[:len(here.blocks)]:
            continue
        if not all(isinstance(b, (ast.For, ast.AsyncFor, ast.While)) for b in here.blocks):
            continue  # under an ``if``: not on every pass
        if resets_of(stmt, receiver + key[4:]) is not None and not _reads(stmt, receiver + key[4:]):
            return True
        if _resetting_method_called(analysis, stmt, receiver, key, callee):
            return True
    return False


def _resetting_method_called(analysis, stmt, receiver: str, key: str, callee) -> bool:
    value = getattr(stmt, "value", None)  # ``self.f_init(...)`` or ``h = self.f_init(...)``
    if not isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) or not isinstance(value, ast.Call):
        return False
    func = value.func
    if not (isinstance(func, ast.Attribute) and dotted(func.value) == receiver):
        return False
    callee_analysis, callee_scope = callee
    project = callee_analysis.project
    if project is None or not callee_scope.class_name:
        return False
    refs = project.methods_in_hierarchy(callee_analysis.index.module_name, callee_scope.class_name, func.attr)
    if len(refs) != 1:
        return False
    found = project.scope_for(refs[0])
    if found is None:
        return False
    _, method = found
    return any(resets_of(s, key) is not None and not _reads(s, key) for s in method.node.body)


def _reads(stmt, key: str) -> bool:
    """``self.history = self.history + [x]`` grows it; it does not empty it."""
    value = getattr(stmt, "value", None)
    return value is not None and any(isinstance(n, ast.Attribute) and dotted(n) == key for n in ast.walk(value))
