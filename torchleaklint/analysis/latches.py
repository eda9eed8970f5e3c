"""A one-shot switch: a block guarded by an object's flag that the same call turns off
once the block has run.

    if self.visualize and sample_id > -1:
        plt.figure() ...                 # the statement judged
    ...
    if self.visualize and sample_id > -1:
        self.visualize = False           # "to prevent visualization for the following batches"

After the first call that runs the block, the flag stays off for the object's life: the
block runs in one call per object, however often the method is called. The switch-off
must come after the statement in the same function, at the same loop depth or outside
the loops around it, under no test but the flag itself and tests the statement is
already under; and no method of the class but ``__init__`` may set the flag to anything
but a false constant.
"""

from __future__ import annotations

import ast
from typing import List, Optional

from .module_index import LOOP_TYPES, Scope, conjuncts, if_arms, start_of, within
from .names import dotted


def switched_off_after(analysis, scope: Scope, stmt) -> Optional[str]:
    """Why ``stmt`` runs in one call per object at most (a flag it is guarded by is
    switched off by the same call after it), or None."""
    if not scope.is_function or not scope.class_name:
        return None
    index = analysis.index
    ctx = index.ctx(stmt)
    if ctx is None:
        return None
    guards = _guards(ctx, stmt)
    if guards is None:
        return None
    seen = {ast.dump(g) for g in guards}
    for guard in guards:
        key = dotted(guard) if isinstance(guard, ast.Attribute) else None
        if key is None or not key.startswith("self.") or key.count(".") != 1:
            continue
        if not _only_init_arms_it(analysis, scope, key):
            continue
        for candidate in scope.statements:
            if _switches_off(candidate, key) and start_of(candidate) > start_of(stmt) \
                    and _always_after(index, ctx, candidate, seen):
                return f"`{key}` is switched off at line {candidate.lineno} by the call that runs it"
    return None


def _guards(ctx, stmt) -> Optional[List[ast.AST]]:
    """The parts of the ``if`` tests that must all hold for ``stmt`` to run (None when it
    sits in an ``else`` arm: its guard is a negation)."""
    out: List[ast.AST] = []
    for owner, in_body in if_arms(ctx.blocks, stmt):
        if not in_body:
            return None
        out.extend(conjuncts(owner.test))
    return out


def _switches_off(stmt, key: str) -> bool:
    return (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and dotted(stmt.targets[0]) == key
            and isinstance(stmt.value, ast.Constant) and not stmt.value.value)


def _always_after(index, ctx, reset, guards) -> bool:
    """Does ``reset`` run whenever the guarded statement has run: outside any loop the
    statement is not in, under tests that the statement's guards already make true?"""
    where = index.ctx(reset)
    if where is None or where.scope is not ctx.scope:
        return False
    if not within(ctx.loops, where.loops):
        return False
    for owner, in_body in if_arms(where.blocks, reset):
        if not in_body or any(ast.dump(part) not in guards for part in conjuncts(owner.test)):
            return False
    # A handler, a loop's ``else`` or a ``match`` case may be skipped whatever the guards.
    return all(isinstance(block, LOOP_TYPES) or isinstance(getattr(block, "owner", None), ast.If)
               for block in where.blocks)


def _only_init_arms_it(analysis, scope: Scope, key: str) -> bool:
    for method in analysis.index.methods(scope.class_name):
        if method.name == "__init__":
            continue
        for d in method.defs.get(key, ()):
            if not (d.kind == "assign" and isinstance(d.value, ast.Constant) and not d.value.value):
                return False
    return True
