"""A training function called with the flag that skips its backward passes.

``def run_epoch(loader, model, loss_compute, optimizer, mode="train")`` runs
``loss.backward()`` only under ``if mode == "train":``; a validation call
``run_epoch(valid_loader, model, ..., mode="eval")`` without ``no_grad`` runs every
forward of the epoch with autograd recording and never backpropagates any of it. The
arms are decided from the constant the call passes (or the parameter's default), never
guessed: an unknown value in a test leaves the call alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional

from .callers import calls_reaching
from .module_index import Scope, contains, if_arms, start_of
from .names import dotted, last_name
from .summaries import argument_of, parameter_defaults, passed_parameters

_UNKNOWN = object()
UNKNOWN = _UNKNOWN


@dataclass(frozen=True)
class SkippedBackward:
    flags: str  # ``mode='eval'``
    test: ast.AST  # the test that skips the backward
    line: int


def flag_bindings(call: ast.Call, callee: Scope) -> Dict[str, object]:
    """The constant each parameter of ``callee`` takes at ``call`` (passed or defaulted)."""
    node = callee.node
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {}
    args = node.args
    defaults = parameter_defaults(node)
    out: Dict[str, object] = {}
    for name in passed_parameters(callee) + [a.arg for a in args.kwonlyargs]:
        arg = argument_of(call, callee, name)
        value = arg if arg is not None else defaults.get(name)
        if isinstance(value, ast.Constant):
            out[name] = value.value
    return out


def skipped_backward(analysis, scope: Scope, bindings: Dict[str, object], points) -> Optional[SkippedBackward]:
    """When every gradient point of ``scope`` sits in an ``if`` arm that ``bindings`` rule
    out, the test that rules the first one out; else None."""
    if not points or not bindings:
        return None
    found: List[SkippedBackward] = []
    for call, _ in points:
        skipped = ruled_out_by(analysis, _stmt_of(scope, call), call, bindings)
        if skipped is None:
            return None
        found.append(SkippedBackward(_describe(skipped, bindings), skipped, skipped.lineno))
    return found[0]


def ruled_out_by(analysis, stmt, node, bindings: Dict[str, object]):
    """The ``if`` test that, under ``bindings``, never takes the arm holding ``node``."""
    ctx = analysis.index.ctx(stmt) if stmt is not None else None
    if ctx is None:
        return None
    for owner, in_body in if_arms(ctx.blocks, node):
        truth = _evaluate(owner.test, bindings)
        if truth is not _UNKNOWN and truth is not in_body:  # the arm holding it is never taken
            return owner.test
    return None


def _stmt_of(scope: Scope, call):
    for other, stmt in scope.calls:
        if other is call:
            return stmt
    for site in scope.backward_sites:
        if site.call is call:
            return site.stmt
    return None


def _describe(test, bindings) -> str:
    names = sorted({n.id for n in ast.walk(test) if isinstance(n, ast.Name) and n.id in bindings})
    return ", ".join(f"{name}={bindings[name]!r}" for name in names)


def evaluate(node, bindings):
    """True/False when ``bindings`` (constants by name or dotted attribute) decide the
    test ``node``, else ``UNKNOWN``."""
    return _evaluate(node, bindings)


def _evaluate(node, bindings):
    """True/False when the test is decided by the bound constants, else _UNKNOWN."""
    if isinstance(node, ast.Constant):
        return bool(node.value)
    if isinstance(node, (ast.Name, ast.Attribute)):  # ``opt.evolve``: bound by its dotted name
        name = dotted(node)
        return bool(bindings[name]) if name in bindings else _UNKNOWN
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _evaluate(node.operand, bindings)
        return _UNKNOWN if inner is _UNKNOWN else not inner
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v, bindings) for v in node.values]
        if isinstance(node.op, ast.And):
            if any(v is False for v in values):
                return False
            return True if all(v is True for v in values) else _UNKNOWN
        if any(v is True for v in values):
            return True
        return False if all(v is False for v in values) else _UNKNOWN
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _value(node.left, bindings), _value(node.comparators[0], bindings)
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        op = node.ops[0]
        try:
            if isinstance(op, ast.Eq):
                return left == right
            if isinstance(op, ast.NotEq):
                return left != right
            if isinstance(op, ast.Is):
                return left is right
            if isinstance(op, ast.IsNot):
                return left is not right
            if isinstance(op, ast.In):
                return left in right
            if isinstance(op, ast.NotIn):
                return left not in right
        except TypeError:
            return _UNKNOWN
    return _UNKNOWN


def _value(node, bindings):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return bindings.get(node.id, _UNKNOWN)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_value(e, bindings) for e in node.elts]
        return _UNKNOWN if any(i is _UNKNOWN for i in items) else tuple(items)
    return _UNKNOWN


_GRAD_CONTEXTS = frozenset({"set_grad_enabled", "no_grad", "enable_grad", "inference_mode"})


def grad_switched_by(scope: Scope, stmt, bindings: Dict[str, object]) -> bool:
    """Does a ``with`` around ``stmt`` switch grad mode by a computed value (``with
    torch.set_grad_enabled(train):``, ``with torch.no_grad() if not train else
    nullcontext():``), or mention one of the flags? Then the flag may turn grad off."""
    for node in ast.walk(scope.node):
        if not isinstance(node, (ast.With, ast.AsyncWith)) or not any(contains(s, stmt) for s in node.body):
            continue
        for item in node.items:
            expr = item.context_expr
            names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
            calls = {last_name(n.func) for n in ast.walk(expr) if isinstance(n, ast.Call)}
            if names & set(bindings) or (calls & _GRAD_CONTEXTS and not isinstance(expr, ast.Call)) \
                    or ("set_grad_enabled" in calls):
                return True
    return _switched_before(scope, stmt)


def _switched_before(scope: Scope, stmt) -> bool:
    """``torch.set_grad_enabled(phase == "train")`` or ``torch.set_grad_enabled(True) if
    train else torch.set_grad_enabled(False)`` as a statement of the function, before
    ``stmt`` and not in a branch of its own: it sets grad mode for what follows, by a
    computed value."""
    body = getattr(scope.node, "body", [])
    for node in body:
        if start_of(node) >= start_of(stmt):
            break
        if not (isinstance(node, ast.Expr) and isinstance(node.value, (ast.Call, ast.IfExp))):
            continue
        switches = [n for n in ast.walk(node.value)
                    if isinstance(n, ast.Call) and last_name(n.func) == "set_grad_enabled"]
        if isinstance(node.value, ast.IfExp) and switches:
            return True
        if any(n.args and not isinstance(n.args[0], ast.Constant) for n in switches):
            return True
    return False


def phase_values(analysis, scope: Scope, loop) -> Optional[List[object]]:
    """The constants a ``for phase in ["train", "valid"]`` loop runs through (also through
    a name bound once to such a list, concatenations of literal lists included), or None."""
    if not isinstance(loop, ast.For) or not isinstance(loop.target, ast.Name):
        return None
    items = loop.iter
    if isinstance(items, ast.Name):
        defs = analysis.flow.reaching(scope, items.id, loop)
        if len(defs) != 1 or defs[0].kind != "assign" or defs[0].index is not None:
            return None
        items = defs[0].value
    values = _literal_items(items)
    if not values or any(d.stmt is not loop for d in scope.defs_of(loop.target.id) if contains(loop, d.stmt)):
        return None  # rebound inside the loop: the test may not see the phase
    return values


def _literal_items(node) -> Optional[List[object]]:
    if isinstance(node, (ast.List, ast.Tuple)):
        if not node.elts or not all(isinstance(e, ast.Constant) for e in node.elts):
            return None
        return [e.value for e in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal_items(node.left), _literal_items(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.IfExp):  # ``(["test"] if args.test else [])``
        body, orelse = _literal_items(node.body), _literal_items(node.orelse)
        if body is None and isinstance(node.body, (ast.List, ast.Tuple)) and not node.body.elts:
            body = []
        if orelse is None and isinstance(node.orelse, (ast.List, ast.Tuple)) and not node.orelse.elts:
            orelse = []
        return None if body is None or orelse is None else body + orelse
    return None


def dead_arm(analysis, scope: Scope, stmt) -> Optional[ast.AST]:
    """The ``if`` test that never takes the arm holding ``stmt`` because it reads a name
    bound only to a constant (``plot_flag = False`` then ``if plot_flag:``), or None."""
    ctx = analysis.index.ctx(stmt)
    if ctx is None:
        return None
    bindings: Dict[str, object] = {}
    for owner, _ in if_arms(ctx.blocks, stmt):
        for name in {n.id for n in ast.walk(owner.test) if isinstance(n, ast.Name)}:
            defs = analysis.flow.reaching(scope, name, owner)
            if defs and all(d.kind == "assign" and d.index is None and isinstance(d.value, ast.Constant)
                            for d in defs) and len({repr(d.value.value) for d in defs}) == 1:
                bindings[name] = defs[0].value.value
            elif name in scope.params and all(d.kind == "param" for d in defs):
                passed = _passed_by_every_caller(analysis, scope, name)
                if passed is not None:
                    bindings[name] = passed[0]
    return ruled_out_by(analysis, stmt, stmt, bindings) if bindings else None


MAX_FLAG_CALLERS = 8


def _passed_by_every_caller(analysis, scope: Scope, param: str) -> Optional[tuple]:
    """``(value,)`` when every call of the function in the linted files passes the same
    constant for ``param`` (or leaves its constant default): ``unet(x, val=False)`` at its
    only call site. None when a caller passes anything else, or nothing calls it."""
    default = parameter_defaults(scope.node).get(param)
    values = {}
    for found in calls_reaching(analysis, scope, MAX_FLAG_CALLERS):
        if found is None or not found[4]:
            return None  # a caller or a call the analysis cannot place: it may pass anything
        value = argument_of(found[2], scope, param)
        value = default if value is None else value
        if not isinstance(value, ast.Constant):
            return None
        values[repr(value.value)] = value.value
    if len(values) != 1:
        return None
    return (next(iter(values.values())),)
