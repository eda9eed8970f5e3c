"""Loops that do not repeat, and statements a loop runs on its first iteration only.

``for i, batch in enumerate(loader): if i > 0: break`` takes one batch; ``for batch in
loader: ...; break`` too; ``if i == 0: samples.append(out)`` stores once per pass of the
loop. None of these repeats with the loop, so nothing they keep grows with it: the index
leaves such a loop out of the loops around its body, and the loop out of the loops around
such a guarded statement.
"""

from __future__ import annotations

import ast
from typing import Optional, Tuple

_EXITS = (ast.Break, ast.Return, ast.Raise)


def runs_once(loop) -> bool:
    """Does the loop's body end every iteration it starts, on its first one?

    Either an exit (``break``/``return``/``raise``) at the top level of the body, or, as the
    first statement, ``if i > 0: break`` (``i >= 1``, ``i == 1``, ``i != 0``) on the loop's own
    counter."""
    if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
        return False
    body = loop.body
    if _continues(body):
        return False  # ``if bad(batch): continue`` before the exit: earlier statements repeat
    if any(isinstance(s, _EXITS) for s in body):
        return True
    counter = loop_counter(loop)
    if counter is None or not body:
        return False
    first = body[0]
    return (isinstance(first, ast.If) and not first.orelse and len(first.body) == 1
            and isinstance(first.body[0], _EXITS) and _past_first(first.test, counter)
            and not _rebinds(loop, counter))


def first_iteration_only(test, loop) -> bool:
    """Is ``test`` true only on the first iteration of ``loop`` (``i == 0``, ``i < 1``,
    ``not i``, ``i <= 0``) for the loop's own counter, never rebound in its body?"""
    counter = loop_counter(loop)
    if counter is None or _rebinds(loop, counter):
        return False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return isinstance(test.operand, ast.Name) and test.operand.id == counter
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(first_iteration_only(v, loop) for v in test.values)  # ``if i == 0 and verbose:``
    bound = _compared(test, counter)
    if bound is None:
        return False
    op, value = bound
    return ((isinstance(op, ast.Eq) and value == 0) or (isinstance(op, ast.Lt) and value == 1)
            or (isinstance(op, ast.LtE) and value == 0))


def single_iteration_only(test, loop) -> bool:
    """Is ``test`` true on one iteration of ``loop`` at most: the loop's own counter (never
    rebound in its body) equal to a value the loop does not change (``epoch == epochs - 1``,
    ``i + 1 == len(loader)``), alone or in an ``and``? The counter takes each value once."""
    counter = _increasing_counter(loop)
    if counter is None or _rebinds(loop, counter):
        return False
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(single_iteration_only(v, loop) for v in test.values)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    left, right = test.left, test.comparators[0]
    for mine, other in ((left, right), (right, left)):
        if _counter_plus_constant(mine, counter) and not any(
                isinstance(n, ast.Name) and (n.id == counter or _rebinds(loop, n.id)) for n in ast.walk(other)) \
                and not any(isinstance(n, (ast.Call, ast.Subscript, ast.Attribute)) and _calls_or_reads_state(n)
                            for n in ast.walk(other)):
            return True
    return False


def _increasing_counter(loop) -> Optional[str]:
    """The counter of ``for i in range(...)`` (any start, no step or a positive constant one)
    or of ``for i, x in enumerate(...)``: it takes each value once."""
    found = _counter(loop)
    return found[0] if found else None


def _counter_plus_constant(node, counter: str) -> bool:
    """``i``, ``i + 1``, ``1 + i``, ``i - 1``."""
    if isinstance(node, ast.Name):
        return node.id == counter
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        pairs = ((node.left, node.right), (node.right, node.left)) if isinstance(node.op, ast.Add) \
            else ((node.left, node.right),)
        return any(isinstance(a, ast.Name) and a.id == counter and isinstance(b, ast.Constant)
                   and isinstance(b.value, int) for a, b in pairs)
    return False


def _calls_or_reads_state(node) -> bool:
    """A call other than ``len(...)``, which may return a new value every time."""
    if isinstance(node, ast.Call):
        return not (isinstance(node.func, ast.Name) and node.func.id in ("len", "int", "min", "max"))
    return False


def loop_counter(loop) -> Optional[str]:
    """``i`` in ``for i in range(n)`` (one argument, or a start of 0) and in ``for i, x in
    enumerate(xs)`` (no start, or a start of 0)."""
    found = _counter(loop)
    return found[0] if found and found[1] else None


def _counter(loop) -> Optional[Tuple[str, bool]]:
    """(the counter, whether it starts at 0) of a loop over ``range(...)`` (no step or a
    positive constant one) or ``enumerate(...)``, whose counter takes each value once."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or not isinstance(loop.iter, ast.Call):
        return None
    call, target = loop.iter, loop.target
    name = call.func.id if isinstance(call.func, ast.Name) else None
    if name == "range" and isinstance(target, ast.Name) and call.args and not call.keywords:
        args = call.args
        if len(args) > 3 or (len(args) == 3 and not (isinstance(_constant(args[2]), int) and _constant(args[2]) > 0)):
            return None
        return target.id, len(args) == 1 or (len(args) == 2 and _constant(args[0]) == 0)
    if name == "enumerate" and isinstance(target, ast.Tuple) and len(target.elts) == 2 \
            and isinstance(target.elts[0], ast.Name) and len(call.args) >= 1:
        start = call.args[1] if len(call.args) > 1 else next(
            (k.value for k in call.keywords if k.arg == "start"), None)
        return target.elts[0].id, start is None or _constant(start) == 0
    return None


def _past_first(test, counter: str) -> bool:
    """``i > 0``, ``i >= 1``, ``i == 1``, ``i != 0``, ``i``: true from the second iteration."""
    if isinstance(test, ast.Name):
        return test.id == counter
    bound = _compared(test, counter)
    if bound is None:
        return False
    op, value = bound
    return ((isinstance(op, ast.Gt) and value == 0) or (isinstance(op, ast.GtE) and value == 1)
            or (isinstance(op, ast.Eq) and value == 1) or (isinstance(op, ast.NotEq) and value == 0))


def _compared(test, counter: str):
    """(operator, constant) of ``counter <op> constant``, or None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
            and test.left.id == counter):
        return None
    value = _constant(test.comparators[0])
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return test.ops[0], value


def _continues(body) -> bool:
    """A ``continue`` of this loop (not of a loop nested in it)."""
    stack = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Continue):
            return True
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _constant(node):
    return node.value if isinstance(node, ast.Constant) else None


def _rebinds(loop, counter: str) -> bool:
    for node in ast.walk(loop):
        if node is loop.target:
            continue
        if isinstance(node, ast.Name) and node.id == counter and isinstance(node.ctx, ast.Store) \
                and not _inside(node, loop.target):
            return True
    return False


def _inside(node, target) -> bool:
    return any(n is node for n in ast.walk(target))
