"""Does a statement run at most a fixed number of times per process, once the flags its
callers pass are followed?

A training script makes its summary plots at the end of ``train()`` under ``if plots:``,
with ``plots = not opt.evolve``; the script calls ``train()`` once, or 300 times in a
hyper-parameter evolution loop under ``else:`` of ``if not opt.evolve:``. On that path
``plots`` is false: the plots are made once per process. The same script's evaluation
runs every epoch with ``plots=plots and final_epoch`` (``final_epoch = epoch + 1 ==
epochs``): the flag holds on one epoch only, so a plot under ``if plots:`` there is made
once per call of ``train()`` too.

The facts used are the tests of the ``if`` arms around each call site (``opt.evolve`` is
true in the ``else`` of ``if not opt.evolve:``), and the conditions that must hold for
the statement to run (the tests of its own arms, and the arguments its callers pass for
the flags those tests read), rewritten from callee to caller through the call's
arguments. A condition the rewriting cannot carry is dropped, never guessed: dropping one
of the conditions that must all hold only loses a proof. Every caller must be known.
"""

from __future__ import annotations

import ast
import copy
from typing import Dict, List, Optional

from .callers import calls_reaching, method_of_an_object
from .flag_arms import evaluate
from .latches import switched_off_after
from .module_index import Scope, conjuncts, if_arms
from .names import dotted
from .single_pass import single_iteration_only
from .summaries import argument_of, parameter_defaults

MAX_DEPTH = 5  # callers of callers followed
MAX_SITES = 8  # calls of one function judged
NEVER = "no call path runs it: the flags its arms need are never set"


def at_most_once(analysis, scope: Scope, stmt, depth: int = 0, gates: tuple = ()) -> Optional[str]:
    """Why ``stmt`` of ``scope`` runs a fixed number of times per process (once per call
    path), or None. ``gates``: conditions, in ``scope``'s terms, that hold whenever the
    effect of ``stmt`` that matters happens."""
    from .figures import repeating_loops

    ctx = analysis.index.ctx(stmt)
    if ctx is None:
        return None
    conditions = list(gates) + _arm_conditions(ctx, stmt)
    inlined = [part for c in conditions for part in conjuncts(_inline(analysis, scope, c, stmt))]
    flags = _private_flags(analysis, scope, inlined)
    if any(evaluate(c, flags) is False for c in inlined):
        return NEVER
    loops = [loop for loop in repeating_loops(analysis, ctx, stmt=stmt)
             if not any(single_iteration_only(c, loop) for c in inlined)]
    if loops:
        return None
    if not scope.is_function:
        return "run at module level, outside any loop"
    latch = switched_off_after(analysis, scope, stmt)
    if latch:
        return latch
    if depth >= MAX_DEPTH or _called_implicitly(scope):
        return None
    sites = [site for site in calls_reaching(analysis, scope, MAX_SITES)
             if site is None or site[4] or not method_of_an_object(site[0], scope, site[2], analysis.index.module_name)]
    if not sites or any(site is None or not site[4] for site in sites):
        return None  # uncalled, or a call the analysis cannot place: it may run anywhere
    live = 0
    for caller_analysis, caller_scope, call, caller_stmt, _ in sites:
        if caller_scope is scope:
            return None  # recursion
        carried = [c for c in (_to_caller(scope, call, cond) for cond in inlined) if c is not None]
        facts = _arm_facts(caller_analysis.index.ctx(caller_stmt), caller_stmt)
        if any(evaluate(c, facts) is False for c in carried):
            continue  # the flags this call passes rule the statement out
        found = at_most_once(caller_analysis, caller_scope, caller_stmt, depth + 1, tuple(carried))
        if found is None:
            return None
        live += found != NEVER
    return f"each of the {live} call path(s) reaching it runs it once" if live else NEVER


def _private_flags(analysis, scope: Scope, conditions) -> Dict[str, bool]:
    """``self._log_tabular_only`` is false for good when every store of it in its class
    is a false constant or a parameter every caller leaves false (a private attribute is
    set by its own class only)."""
    facts: Dict[str, bool] = {}
    for cond in conditions:
        for node in ast.walk(cond):
            if isinstance(node, ast.Name) and _private(node.id) and node.id not in scope.params \
                    and (not scope.is_function or node.id not in scope.defs) \
                    and _global_never_true(analysis, node.id):
                facts[node.id] = False
            if scope.class_name and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
                    and _private(node.attr) \
                    and _never_true(analysis, scope.class_name, node.attr):
                facts[f"self.{node.attr}"] = False
    return facts


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and len(name) > 1


def _global_never_true(analysis, name: str) -> bool:
    """``_log_tabular_only = False`` at module level, and every function that declares it
    ``global`` stores a false constant or a parameter its callers leave false."""
    stores = 0
    for node in analysis.index.tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and _stores_to(node, name):
            if not _stores_false(analysis, None, node):
                return False
            stores += 1
    for scope in analysis.index.scopes:
        if not scope.is_function or not any(isinstance(n, ast.Global) and name in n.names for n in ast.walk(scope.node)):
            continue
        for node in ast.walk(scope.node):
            if _stores_to(node, name) and not _stores_false(analysis, scope, node):
                return False
    return stores > 0


def _never_true(analysis, cls: str, attr: str) -> bool:
    """Does every store of ``self.<attr>`` in the class store a false value?"""
    stores = 0
    for method in analysis.index.methods(cls):
        for node in ast.walk(method.node):
            if _stores_to(node, f"self.{attr}"):
                if not _stores_false(analysis, method, node):
                    return False
                stores += 1
    return stores > 0


def _stores_to(node, key: str) -> bool:
    """Is ``node`` a statement that binds ``key`` (a name, or ``self.attr``)?"""
    targets = node.targets if isinstance(node, ast.Assign) else (
        [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)) else [])
    return any(dotted(t) == key for t in targets)


def _stores_false(analysis, scope: Optional[Scope], node) -> bool:
    """Does the binding ``node`` store a false constant, or a parameter of ``scope`` that
    every caller leaves false?"""
    value = getattr(node, "value", None)
    if isinstance(node, (ast.AugAssign, ast.For)) or value is None:
        return False
    if isinstance(value, ast.Constant):
        return not value.value
    return scope is not None and isinstance(value, ast.Name) and value.id in scope.params \
        and _param_never_true(analysis, scope, value.id, 0)


def _param_never_true(analysis, scope: Scope, param: str, depth: int) -> bool:
    """Does every call of ``scope`` pass a false constant for ``param`` (or leave a false
    default), directly or through its own callers' parameters?"""
    project = analysis.project
    if project is None or depth > 2:
        return False
    default = parameter_defaults(scope.node).get(param)
    if _called_implicitly(scope) or not project.call_sites(scope.name):
        return False  # nothing calls it in the linted files: it may be called from anywhere
    for site in calls_reaching(analysis, scope, MAX_SITES):
        if site is None:
            return False
        caller_analysis, caller_scope, call, _, resolved = site
        if not resolved:
            if method_of_an_object(caller_analysis, scope, call, analysis.index.module_name):
                continue
            return False
        value = argument_of(call, scope, param)
        value = default if value is None else value
        if isinstance(value, ast.Constant) and not value.value:
            continue
        if isinstance(value, ast.Name) and caller_scope.is_function and value.id in caller_scope.params \
                and _param_never_true(caller_analysis, caller_scope, value.id, depth + 1):
            continue
        return False
    return True


def _called_implicitly(scope: Scope) -> bool:
    """``forward`` runs through ``model(x)``, a dunder through its operator: their calls
    are not spelled with their names, so the calls in view are not all of them."""
    return scope.name == "forward" or (scope.name.startswith("__") and scope.name.endswith("__"))


def _arm_conditions(ctx, stmt) -> List[ast.AST]:
    """The tests of the ``if`` arms around ``stmt`` (negated for an ``else``), split into
    the parts of an ``and`` that must all hold."""
    out: List[ast.AST] = []
    for owner, in_body in if_arms(ctx.blocks, stmt):
        if in_body:
            out.extend(conjuncts(owner.test))
        else:
            out.append(ast.UnaryOp(op=ast.Not(), operand=owner.test))
    return out


def _inline(analysis, scope: Scope, expr, stmt, depth: int = 0):
    """``expr`` with each local name replaced by the one value assigned to it before
    ``stmt`` (``plots`` -> ``not opt.evolve``), where exactly one assignment reaches."""
    if depth > 2 or not scope.is_function:
        return expr

    def replace(node):
        if node.id in scope.params:
            return None
        defs = analysis.flow.reaching(scope, node.id, stmt)
        if len(defs) == 1 and defs[0].kind == "assign" and defs[0].index is None \
                and isinstance(defs[0].value, (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Constant, ast.Attribute)):
            return _inline(analysis, scope, copy.deepcopy(defs[0].value), defs[0].stmt, depth + 1)
        return None

    return _NameReplacer(replace).visit(copy.deepcopy(expr))


class _NameReplacer(ast.NodeTransformer):
    """Replaces each ``Name`` by what ``replace`` returns for it (None keeps it); a call
    is reported to ``on_call`` (a module-level class: one defined per call would put every
    analysis its closures hold in a reference cycle)."""

    def __init__(self, replace, on_call=None):
        self.replace = replace
        self.on_call = on_call

    def visit_Name(self, node):
        found = self.replace(node)
        return node if found is None else found

    def visit_Call(self, node):
        if self.on_call is not None:
            self.on_call()
            return node
        return self.generic_visit(node)


def _to_caller(callee: Scope, call: ast.Call, cond):
    """``cond`` in the caller's terms: each parameter of ``callee`` replaced by what
    ``call`` passes for it (or its default); None when ``cond`` reads anything else."""
    defaults = parameter_defaults(callee.node)
    params = set(callee.params)
    failed = []

    def replace(node):
        if node.id in ("True", "False", "None"):
            return None
        if node.id not in params or node.id in ("self", "cls"):
            failed.append(node.id)
            return None
        arg = argument_of(call, callee, node.id)
        arg = arg if arg is not None else defaults.get(node.id)
        if arg is None:
            failed.append(node.id)
            return None
        return copy.deepcopy(arg)

    out = _NameReplacer(replace, on_call=lambda: failed.append("call")).visit(copy.deepcopy(cond))
    return None if failed else out  # a call may answer differently every time


def _arm_facts(ctx, stmt) -> Dict[str, bool]:
    """What the ``if`` arms around ``stmt`` say of names and attributes: ``opt.evolve`` is
    true in the ``else`` of ``if not opt.evolve:``."""
    facts: Dict[str, bool] = {}
    if ctx is None:
        return facts
    for owner, in_body in if_arms(ctx.blocks, stmt):
        _learn(owner.test, in_body, facts)
    return facts


def _learn(test, truth: bool, facts: Dict[str, bool]) -> None:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        _learn(test.operand, not truth, facts)
    elif isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and truth:
        for value in test.values:
            _learn(value, True, facts)
    elif isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) and not truth:
        for value in test.values:
            _learn(value, False, facts)
    elif isinstance(test, (ast.Name, ast.Attribute)):
        name = dotted(test)
        if name is not None:
            facts[name] = truth
