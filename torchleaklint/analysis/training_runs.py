"""A statement that runs once per training run, not once per step.

A function with a training loop of its own (``fit``, ``train_loop`` of a continual-learning
approach, a federated client's ``train``) runs that loop on each call: what it appends
after the loop, or in an outer loop around the one that steps (once per epoch), grows with
the runs, tasks, rounds or epochs the caller asks for, not with the steps.
"""

from __future__ import annotations

import ast
from typing import Optional

from .backward_reach import gradient_points, statement_of
from .module_index import Scope, contains


def outside_training_steps(analysis, scope: Scope, stmt) -> Optional[str]:
    """Where ``scope`` steps (the loop around its backward pass) when ``stmt`` sits outside
    every such loop, or None (no loop of its own computes gradients, or ``stmt`` is in one)."""
    ctx = analysis.index.ctx(stmt)
    if ctx is not None and ctx.loops and ctx.scope is scope:
        loop = ctx.loops[-1]
        epoch = _runs_a_training_loop(analysis, scope, loop)
        if epoch is not None and not any(contains(loop, site.call) for site in scope.backward_sites):
            return f"each iteration of the loop at line {loop.lineno} runs `{epoch}`, which steps in a loop of its own"
    stepping = _stepping_loops(analysis, scope)
    if stepping:
        if any(contains(loop, stmt) for loop in stepping):
            return None
        loop = min(stepping, key=lambda found: found.lineno)
        return f"`{scope.name}` steps in its own loop (line {loop.lineno}); this runs outside it"
    base = _base_run(analysis, scope)
    if base is not None:
        return f"`{scope.name}` runs the training loop of `{base}` once per call; this runs outside it"
    return None


def _runs_a_training_loop(analysis, scope: Scope, loop) -> Optional[str]:
    """A project function called in the body of ``loop`` (not in a loop nested in it) that
    steps in a loop of its own (``for epoch in ...: loss = self.train_epoch(loader)``):
    each iteration of ``loop`` is a whole epoch."""
    project = analysis.project
    if project is None:
        return None
    index = analysis.index
    for call, stmt in scope.calls:
        ctx = index.ctx(stmt)
        if ctx is None or not ctx.loops or ctx.loops[-1] is not loop:
            continue
        for ref in analysis.graph.kinds.resolve_functions(call.func, scope, stmt):
            entry = project.scope_for(ref)
            if entry is not None and entry[1] is not scope and _stepping_loops(*entry):
                return ref.qualname.rsplit(".", 1)[-1]
    return None


def _stepping_loops(analysis, scope: Scope) -> list:
    """The innermost loops of ``scope`` around each of its gradient computations."""
    index = analysis.index
    loops = []
    for call, _ in gradient_points(analysis, scope):
        point = statement_of(scope, call)
        ctx = index.ctx(point) if point is not None else None
        if ctx is not None and ctx.loops and ctx.scope is scope:
            loops.append(ctx.loops[-1])
    return loops


def _base_run(analysis, scope: Scope) -> Optional[str]:
    """``super().train_loop(t, loader)`` outside any loop, where the base class's method
    steps in a loop of its own: the override runs one whole training run per call."""
    project = analysis.project
    if project is None or not scope.class_name:
        return None
    index = analysis.index
    for call, stmt in scope.calls:
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "super"):
            continue
        ctx = index.ctx(stmt)
        if ctx is None or ctx.loops:
            continue
        for base in project.class_table(index.module_name, scope.class_name) or ():
            found = project.base_class(index.module_name, base)
            refs = project.methods_in_hierarchy(found[0], found[1], func.attr) if found else []
            for ref in refs:
                entry = project.scope_for(ref)
                if entry is not None and _stepping_loops(*entry):
                    return ref.qualname
    return None
