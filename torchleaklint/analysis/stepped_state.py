"""Recurrent state fed back with no backward pass to consume it.

Two shapes keep one graph per step for nothing:

* **across calls**: a method rebinds ``self.hidden`` to a module's output computed from
  its previous value (``out, self.hidden = self.agent(x, self.hidden)``) and a loop
  elsewhere in the project calls it once per environment step (through a few calls,
  ``runner.run -> mac.select_actions -> self.forward``), with grad on and no backward pass
  in that loop's function: a rollout or acting loop. A learner that unrolls the same
  method over time steps and backpropagates afterwards is the legitimate case.
* **within one function**: a generation or decoding loop (``out, h = model(tok, h)``)
  in a function that runs no backward pass, returns no graph and stores none for later.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator, List, Optional

from .module_index import Scope, calls_named, contains
from .names import dotted, words
from .project import FunctionRef

MAX_CALLER_DEPTH = 3
MAX_SITES = 16  # each candidate must still be a loop with grad on and no backward pass
RESET_WORDS = frozenset({"init", "reset", "detach", "repackage", "clear", "zero"})
STORE_METHODS = frozenset({"append", "extend", "insert", "add", "put", "push", "update", "__setitem__"})


@dataclass(frozen=True)
class SteppingLoop:
    """The loop that calls a method once per step, and how the call reaches it."""

    function: str  # the function holding the loop
    loop_line: int
    path: str  # "`runner.run` -> `mac.select_actions`"


def stepping_loop(analysis, scope: Scope, depth: int = 0, seen=None) -> Optional[SteppingLoop]:
    """A loop in a project function that calls ``scope`` (directly or through callers)
    once per iteration, with grad on, in a function that runs no backward pass."""
    project = analysis.project
    if project is None or depth > MAX_CALLER_DEPTH:
        return None
    seen = seen if seen is not None else set()
    if id(scope.node) in seen:
        return None
    seen.add(id(scope.node))
    for caller_analysis, caller, call, stmt in _callers(analysis, scope):
        if caller_analysis.grad.stmt_off(stmt):
            continue
        ctx = caller_analysis.index.ctx(stmt)
        if ctx is not None and ctx.loops:
            loop = ctx.loops[0]
            if runs_backward(caller_analysis, caller) or _resets_receiver(caller, loop, call):
                continue
            if module_method(caller_analysis, caller) or keeps_graphs_for_later(caller_analysis, caller, loop):
                continue  # a forward unrolled over time steps (its caller backpropagates), or graphs kept for one
            return SteppingLoop(caller.qualname, loop.lineno, f"`{caller.qualname}` calls `{dotted(call.func)}`")
        outer = stepping_loop(caller_analysis, caller, depth + 1, seen)
        if outer is not None and not runs_backward(caller_analysis, caller):
            return SteppingLoop(outer.function, outer.loop_line,
                                f"{outer.path} -> `{caller.qualname}` calls `{dotted(call.func)}`")
    return None


def _callers(analysis, scope: Scope) -> Iterator[tuple]:
    """(analysis, caller scope, call, statement) for the calls of this method: ``self.name(...)``
    in its own class, and calls spelled ``.name(...)`` elsewhere when the name is rare."""
    name = scope.name
    if scope.class_name:
        for method in analysis.index.methods(scope.class_name):
            for call, stmt in calls_named(method, name):
                if dotted(call.func) == f"self.{name}":
                    yield analysis, method, call, stmt
    project = analysis.project
    if name.startswith("__") or name in ("forward", "step", "update", "run", "act", "__call__"):
        return  # spelled too commonly to say which class a call reaches
    sites = project.call_sites(name)
    if not sites or len(sites) > MAX_SITES:
        return
    for module, qualname, _ in dict.fromkeys(sites):  # unique, in file order (a set would differ per process)
        found = project.scope_for(FunctionRef(module, qualname))
        if found is None:
            continue
        caller_analysis, caller = found
        if caller is scope or (caller_analysis is analysis and caller.class_name == scope.class_name):
            continue
        for call, stmt in calls_named(caller, name):
            if isinstance(call.func, ast.Attribute) and dotted(call.func.value) != "self":
                yield caller_analysis, caller, call, stmt


def runs_backward(analysis, scope: Scope) -> bool:
    if any(site.kind != "grad" for site in scope.backward_sites):
        return True
    project = analysis.project
    return project is not None and project.calls_backward(FunctionRef(analysis.index.module_name, scope.qualname))


def _resets_receiver(caller: Scope, loop, call) -> bool:
    """``mac.init_hidden(b)`` inside the same loop: the state starts afresh each iteration."""
    receiver = dotted(call.func.value) if isinstance(call.func, ast.Attribute) else None
    if receiver is None:
        return False
    for other, _ in caller.calls:
        if other is call or not contains(loop, other) or not isinstance(other.func, ast.Attribute):
            continue
        if dotted(other.func.value) == receiver and RESET_WORDS & set(words(other.func.attr)):
            return True
    return False


def keeps_graphs_for_later(analysis, scope: Scope, loop) -> bool:
    """Does the function hand graphs on: return one, or store graph-carrying values
    (appends, item or attribute stores) that a backward elsewhere may consume?"""
    graph = analysis.graph
    for expr in scope.returns:
        ret = _return_stmt(scope, expr)
        if ret is not None and graph.carrying(expr, ret) is not None:
            return True
    for stmt in scope.statements:
        if not contains(loop, stmt):
            continue
        for value in _stored_values(stmt):
            if graph.carrying(value, stmt) is not None and not _kept_locally(analysis, scope, stmt):
                return True
        if isinstance(stmt, (ast.Expr,)) and isinstance(stmt.value, (ast.Yield, ast.YieldFrom)):
            return True
    return False


def _kept_locally(analysis, scope: Scope, stmt) -> bool:
    """``done_scores.extend(scores[i])`` into a list of this function that no use hands on
    (not returned, stored elsewhere or passed to code we cannot follow): no backward
    elsewhere can consume what it keeps."""
    from .uses import UNKNOWN, classify_uses

    func = stmt.value.func if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None
    if not (scope.is_function and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return False  # (a script's module-level list may be read by any function)
    key = func.value.id
    defs = scope.defs_of(key)
    if not defs or any(d.kind != "assign" for d in defs) or key in scope.params:
        return False
    verdict, _ = classify_uses(analysis, scope, key, skip_stmts=[stmt], container=True)
    return verdict != UNKNOWN


def _return_stmt(scope: Scope, expr) -> Optional[ast.AST]:
    for stmt in scope.statements:
        if isinstance(stmt, ast.Return) and stmt.value is expr:
            return stmt
    return None


def _stored_values(stmt) -> List[ast.AST]:
    out: List[ast.AST] = []
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        if isinstance(func, ast.Attribute) and func.attr in STORE_METHODS:
            out.extend(stmt.value.args)
    elif isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            if isinstance(target, (ast.Subscript, ast.Attribute)):
                out.append(stmt.value)
    return out


SMALL_LOOP = 16  # ``for i in range(3)``: a smoke test of a few steps, not growth


def counts_steps(loop) -> bool:
    """Is this a loop over steps (``while``, ``for _ in range(n)``) rather than over the
    elements of a sequence (``for x_t in x``, one forward unrolled through time)? A
    ``range`` with a small literal bound runs a few steps only."""
    if isinstance(loop, ast.While):
        return True
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and it.args):
        return False
    bound = it.args[1] if len(it.args) >= 2 else it.args[0]
    if isinstance(bound, ast.Call) and isinstance(bound.func, ast.Name) and bound.func.id == "len":
        return False  # ``for i in range(1, len(layers))``: the elements of a sequence, as ``for x in xs``
    return not (isinstance(bound, ast.Constant) and isinstance(bound.value, int) and bound.value <= SMALL_LOOP)


def legacy_no_grad(scope: Scope) -> bool:
    """``Variable(x, volatile=True)`` (PyTorch before 0.4): the author turned autograd off
    for this function's forward the old way; the code asks for ``no_grad``, not a detach."""
    for call, _ in scope.calls:
        for k in call.keywords:
            if k.arg == "volatile" and isinstance(k.value, ast.Constant) and k.value.value is True:
                return True
    return False


def module_method(analysis, scope: Scope) -> bool:
    """A method of an nn.Module: its loops unroll a forward whose result the caller uses."""
    project = analysis.project
    return bool(scope.class_name and project is not None
                and project.is_module_class(analysis.index.module_name, scope.class_name))
