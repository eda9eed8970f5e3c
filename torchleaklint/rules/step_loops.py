"""Loops that repeat training or data steps: the loops in which something done once per
iteration grows with the length of a run. Read by the rules about objects registered or
built per step (hooks, traces, process groups)."""

from __future__ import annotations

import ast
from typing import Optional

from ..analysis.loops import loop_calls_backward
from ..analysis.module_index import LOOP_TYPES, contains
from ..analysis.names import dotted, last_name, words

# The last word of a name that holds a data loader; plurals (``loaders``) name collections.
LOADER_WORDS = frozenset({"loader", "dataloader", "dl"})


def is_loader_name(expr: ast.AST) -> bool:
    """``train_loader``, ``trainloader``, ``self.val_dataloader``, ``train_dl``."""
    name = last_name(expr) or ""
    ws = words(name)
    return bool(ws) and (ws[-1] in LOADER_WORDS or name.lower().endswith("loader"))


def _iterates_loader(loop: ast.AST) -> bool:
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    return any(isinstance(n, (ast.Name, ast.Attribute)) and is_loader_name(n) for n in ast.walk(loop.iter))


def is_optimizer_step(node: ast.AST) -> bool:
    """``optimizer.step()``, ``self.opt_g.step()``, ``scaler.step(opt)``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step"):
        return False
    receiver = dotted(node.func.value) or ""
    ws = words(receiver.rsplit(".", 1)[-1])
    return any(w.startswith("opt") for w in ws) or bool(ws and ws[-1] in ("scaler", "accelerator"))


def _steps_optimizer(loop: ast.AST) -> Optional[ast.Call]:
    return next((node for node in ast.walk(loop) if is_optimizer_step(node)), None)


def own_optimizer_step(index, scope, loop: ast.AST) -> Optional[ast.Call]:
    """An ``optimizer.step()`` that ``loop`` runs once per iteration of its own: not inside
    a loop nested in it (a trial, fold or epoch loop whose inner loop does the steps)."""
    for call, stmt in scope.calls:
        if not (contains(loop, call) and is_optimizer_step(call)):
            continue
        where = index.ctx(stmt)
        if where is not None and where.loops and where.loops[-1] is loop:
            return call
    return None


def step_evidence(analysis, scope, loop: ast.AST) -> Optional[str]:
    """Why an iteration of ``loop`` is a training or data step, or None."""
    backward = loop_calls_backward(analysis, scope, loop)
    if backward:
        return f"the loop at line {loop.lineno} runs {backward}"
    step = _steps_optimizer(loop)
    if step is not None:
        return f"the loop at line {loop.lineno} calls `{dotted(step.func) or 'step'}()` at line {step.lineno}"
    if _iterates_loader(loop):
        return f"the loop at line {loop.lineno} iterates a data loader"
    return None


def step_loop_around(analysis, scope, where, subject: Optional[ast.AST] = None, stmt: Optional[ast.AST] = None):
    """(loop, evidence) for the innermost loop around a statement that repeats training or
    data steps, in which ``subject`` (the object acted on) is the same object in every
    iteration; (None, None) when there is none, or when the statement sits under an ``if``
    (typically a do-it-once guard: ``if traced is None:``). Given the statement, only an
    ``if`` that reads like a do-it-once guard (see :func:`once_guarded`) counts."""
    if stmt is not None and once_guarded(where, stmt):
        return None, None
    if stmt is None and any(not isinstance(b, LOOP_TYPES) for b in where.blocks):
        return None, None
    for loop in reversed(where.loops):
        if subject is not None and bound_inside(analysis, scope, loop, subject):
            return None, None  # another object (another model, another trial) each iteration
        evidence = step_evidence(analysis, scope, loop)
        if evidence is not None:
            return loop, evidence
    return None, None


def once_guarded(where, stmt: ast.AST) -> bool:
    """Is the statement under an ``if`` that makes it run once, or once per key: a test of
    what it binds (``if group is None:``, ``if key not in cache:``, ``if not hasattr(self,
    "traced"):``) or of a first iteration (``if step == 0:``)? A configuration flag
    (``if args.distributed:``) or a period (``if step % 100 == 0:``) is not one."""
    bound = _bound_roots(stmt)
    for block in where.blocks:
        test = getattr(getattr(block, "owner", block), "test", None)
        if test is None or isinstance(block, LOOP_TYPES):
            continue
        for node in ast.walk(test):
            if isinstance(node, ast.Name) and node.id in bound:
                return True
            if isinstance(node, ast.Compare):
                if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
                    return True
                if not isinstance(node.left, ast.BinOp) and any(
                        isinstance(c, ast.Constant) and c.value == 0 and not isinstance(c.value, bool)
                        for c in node.comparators):
                    return True
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                return True
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "hasattr":
                return True
    return False


def _bound_roots(stmt: ast.AST) -> set:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    roots = set()
    for target in targets:
        for node in ast.walk(target) if target is not None else ():
            if isinstance(node, ast.Name):
                roots.add(node.id)
            elif isinstance(node, ast.Attribute):
                roots.add(node.attr)
    roots.discard("self")
    return roots


def bound_inside(analysis, scope, loop: ast.AST, expr: ast.AST) -> bool:
    """Does ``expr`` read a name that is (re)bound inside ``loop``, or the loop's own
    target, so that it may be another object in every iteration?"""
    for node in ast.walk(expr):
        key = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if key is None or key == "self":
            continue
        for d in scope.defs_of(key):
            if d.stmt is loop or (contains(loop, d.stmt) and not isinstance(d.stmt, LOOP_TYPES + (ast.arg,))):
                return True
            if isinstance(d.stmt, LOOP_TYPES) and contains(loop, d.stmt):
                return True
    return False
