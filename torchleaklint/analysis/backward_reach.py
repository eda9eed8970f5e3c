"""Can a gradient computation in a function use what a given statement computes?

A function that trains and then validates (``train()`` ending with ``model.eval()`` and a
loop over the validation loader) runs backward passes that never see the validation
outputs: the backward of the training loop ran before them, in a loop of its own. Only a
gradient computation in the same iteration as the statement, or after it and outside any
loop that does not also repeat the statement, can be handed its graph.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from .module_index import Scope, contains, start_of
from .names import dotted

MAX_TARGETS = 3  # a call that may reach more project functions than this is not followed


def gradient_points(analysis, scope: Scope) -> List[Tuple[ast.AST, str]]:
    """(call, description) of every place the function computes gradients: backward
    calls, ``torch.autograd.grad`` (input gradients count: saliency, physics residuals),
    and calls of project functions that call either themselves (a Hessian-vector product
    or Jacobian helper differentiates what it is handed)."""
    memo = analysis.__dict__.setdefault("_gradient_points_memo", {})
    key = id(scope.node)
    if key in memo:
        return memo[key]
    points = []
    for site in scope.backward_sites:
        what = "`torch.autograd.grad`" if site.kind == "grad" else "`.backward()`"
        points.append((site.call, f"{what} at line {site.call.lineno}"))
    for call, _ in scope.calls:
        if _closure_step(call):
            points.append((call, f"`{ast.unparse(call)}` at line {call.lineno}, whose closure runs the backward"))
    project = analysis.project
    if project is not None:
        kinds = analysis.graph.kinds
        switched = _switched_to_eval(scope)
        for call, stmt in scope.calls:
            if _mode_switch(call, switched):
                continue  # ``self.model.train()`` after ``self.model.eval()``: nn.Module's mode, not a trainer
            arity = 0
            if isinstance(stmt, ast.Assign) and stmt.value is call and isinstance(stmt.targets[0], (ast.Tuple, ast.List)):
                arity = len(stmt.targets[0].elts)
            refs = kinds.resolve_functions(call.func, scope, stmt, arity)
            if refs and len(refs) <= MAX_TARGETS and all(_trains(project, r) or _differentiates(project, r)
                                                         for r in refs):
                what = "calls `.backward()`" if all(_trains(project, r) for r in refs) else "computes gradients"
                points.append((call, f"`{ast.unparse(call.func)}()` at line {call.lineno}, which {what}"))
            elif not refs and _trains_in_forward(project, kinds, call, scope, stmt):
                points.append((call, f"`{ast.unparse(call.func)}(...)` at line {call.lineno}, a module whose forward "
                                     f"computes gradients itself"))
            elif not refs and _unresolved_training_method(project, call):
                points.append((call, f"`{ast.unparse(call.func)}()` at line {call.lineno}, a method of an object "
                                     f"the analysis cannot resolve, named like a project method that calls `.backward()`"))
    memo[key] = points
    return points


def _closure_step(call: ast.Call) -> bool:
    """``optimizer.step(closure)``: an optimizer handed a closure (L-BFGS, and any
    optimizer's ``step(closure)``) calls it to re-evaluate the loss and its gradients:
    the closure's contract is to run the backward pass."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "step"):
        return False
    owner = (dotted(func.value) or "").rsplit(".", 1)[-1].lower()
    if not owner.startswith(("optim", "opt")):
        return False
    return len(call.args) == 1 or any(k.arg == "closure" for k in call.keywords)


def _trains_in_forward(project, kinds, call, scope, stmt) -> bool:
    """``accs = meta(support_x, ...)`` where the project module's ``forward`` runs the
    backward passes itself (a meta-learner's inner and outer updates), or ``self.opt(loss)``
    where the module class overrides ``__call__`` with the backward and the optimizer step."""
    kind = kinds.kind_of(call.func, scope, stmt)
    if kind is None or kind.class_ref is None or not kind.is_module:
        return False
    for method in ("__call__", "forward"):  # a project ``__call__`` replaces nn.Module's, forward and all
        refs = project.methods_in_hierarchy(kind.class_ref[0], kind.class_ref[1], method)
        if len(refs) == 1:
            return _trains(project, refs[0]) or _differentiates(project, refs[0])
    return False


def _unresolved_training_method(project, call) -> bool:
    """``trainer.train(loader, 1)`` on an object handed in: with arguments it is no mode
    switch, and when every project method of that name trains, it is one of them."""
    func = call.func
    if not isinstance(func, ast.Attribute) or not (call.args or call.keywords):
        return False
    if len(call.args) == 1 and not call.keywords and isinstance(call.args[0], ast.Constant) \
            and isinstance(call.args[0].value, bool):
        return False  # ``net.train(True)``: nn.Module's mode switch
    refs = [r for r in project.functions_named(func.attr) if "." in r.qualname]
    return 0 < len(refs) <= MAX_TARGETS and all(project.calls_backward(r) for r in refs)


def _trains(project, ref) -> bool:
    """Does the project function call ``backward()``, itself or through its callees, other
    than through mode switches? ``train_mode()`` running ``self.G.train()`` and
    ``self.D.train()`` sets nn.Module modes; the project's ``Trainer.train`` that the bare
    name ``train`` would resolve to is not what runs there."""
    if not project.calls_backward(ref):
        return False
    found = project.scope_for(ref)
    if found is None:
        return True
    analysis, scope = found
    if scope.backward_sites:
        return True
    return _callee_does(analysis, scope, project.calls_backward, _module_mode_call)


def _differentiates(project, ref, depth: int = 0) -> bool:
    """Does the project function call ``torch.autograd.grad`` itself, or through a project
    function it calls (a Jacobian helper calling the gradient helper)? Calls spelled like
    a mode switch (``model.train()``, ``self.eval()``) are not followed."""
    if depth > 1 or not project.computes_gradients(ref):
        return False
    found = project.scope_for(ref)
    if found is None:
        return False
    analysis, scope = found
    if any(site.kind == "grad" for site in scope.backward_sites):
        return True
    return _callee_does(analysis, scope, lambda r: _differentiates(project, r, depth + 1), _mode_call)


def _callee_does(analysis, scope: Scope, does, skip) -> bool:
    """Does a call of the function, other than those ``skip`` sets aside, reach only
    project functions (at most ``MAX_TARGETS``) of which ``does`` holds?"""
    kinds = analysis.graph.kinds
    for call, stmt in scope.calls:
        if skip(call):
            continue
        refs = kinds.resolve_functions(call.func, scope, stmt)
        if refs and len(refs) <= MAX_TARGETS and all(does(r) for r in refs):
            return True
    return False


def _mode_call(call: ast.Call) -> bool:
    """``x.train()``, ``x.eval()``, ``x.train(mode)``: spelled like nn.Module's mode switch."""
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr in ("train", "eval") and len(call.args) <= 1


def _module_mode_call(call: ast.Call) -> bool:
    """``self.G.train()``, ``model.eval()``: nn.Module's mode, not the object's own method."""
    func = call.func
    return (_mode_call(call) and not call.keywords
            and not (isinstance(func.value, ast.Name) and func.value.id == "self"))


def _switched_to_eval(scope: Scope) -> set:
    """The receivers the function puts in eval mode (``self.model`` of ``self.model.eval()``)."""
    out = set()
    for call, _ in scope.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "eval" and not call.args and not call.keywords:
            out.add(ast.dump(func.value))
    return out


def _mode_switch(call: ast.Call, switched: set) -> bool:
    """``x.train()``/``x.train(mode)`` on a receiver the same function calls ``.eval()`` on:
    the module's mode switch, whatever project function is also spelled ``train``."""
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr == "train" and len(call.args) <= 1 and not call.keywords
            and ast.dump(func.value) in switched)


def gradient_reaching(analysis, scope: Scope, stmt: ast.AST) -> Optional[str]:
    """Describe a gradient computation of ``scope`` that can use the value ``stmt``
    computes, or None. One after ``stmt`` counts unless it sits in a loop that ended
    before ``stmt``; one before it counts only in the same loop body as ``stmt`` (a value
    carried to the next iteration), not in a nested loop that runs before it (the
    training loop of an epoch that ends with validation)."""
    index = analysis.index
    ctx = index.ctx(stmt)
    loops = ctx.loops if ctx is not None else ()
    where = start_of(stmt)
    for call, what in gradient_points(analysis, scope):
        point_stmt = statement_of(scope, call)
        point_ctx = index.ctx(point_stmt) if point_stmt is not None else None
        point_loops = point_ctx.loops if point_ctx is not None else ()
        if start_of(call) >= where:
            if all(contains(loop, stmt) or start_of(loop) > where for loop in point_loops):
                return what
        elif loops and all(contains(loop, stmt) for loop in point_loops) and contains(loops[-1], call):
            return what
    return None


def statement_of(scope: Scope, call: ast.AST):
    """The statement of ``scope`` that holds ``call`` (a backward site or a recorded call)."""
    for site in scope.backward_sites:
        if site.call is call and site.stmt is not None:
            return site.stmt
    for found, stmt in scope.calls:
        if found is call:
            return stmt
    return None
