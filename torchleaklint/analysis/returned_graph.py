"""Does a function hand its forward's graph to a caller that trains with it?

A model's helper that puts a submodule in eval mode to freeze its batch norm
(``self.backbone.eval()`` in ``extract_features``) and returns the features, or a
rendering helper whose outputs a ``forward`` returns to the training step, runs its
forwards with grad on because a backward pass later uses them: it is not evaluation
code. The forward's value must reach a ``return``; then some caller in the linted files
backpropagates what it gets (``feats = net.get_last_features(x); loss(feats).backward()``),
or is itself a module's ``forward`` that returns it, or returns it on to such a caller.
"""

from __future__ import annotations

import ast
from typing import Optional

from .callers import calls_reaching
from .module_index import Scope, container_key, expr_keys, start_of
from .names import dotted, words

# A method named for prediction or evaluation is evaluation, whatever it puts in eval mode.
PREDICTION_WORDS = frozenset({"eval", "evaluate", "evaluation", "validate", "validation", "val", "valid",
                              "test", "predict", "prediction", "infer", "inference", "sample", "generate"})
MAX_CALLERS = 8  # callers of a name spelled this many times are not followed
MAX_DEPTH = 2  # callers of callers followed


def returned_for_training(analysis, scope: Scope, stmt, depth: int = 0) -> Optional[str]:
    """Why the value ``stmt`` computes leaves the function for a training caller, or None."""
    if not scope.is_function or not _reaches_return(analysis, scope, stmt):
        return None
    if scope.name == "forward":
        return f"`{scope.qualname}` returns it as the module's output"
    if depth > MAX_DEPTH:
        return None
    for found in calls_reaching(analysis, scope, MAX_CALLERS):
        if found is None or found[1] is scope:
            continue
        caller_analysis, caller_scope, call, caller_stmt, _ = found
        line = _feeds_backward(caller_analysis, caller_scope, caller_stmt) \
            if caller_analysis.graph.carrying(call, caller_stmt) is not None else None
        if line is not None:
            return f"`{caller_scope.qualname}` backpropagates what it returns (line {line})"
        if returned_for_training(caller_analysis, caller_scope, caller_stmt, depth + 1):
            return f"`{caller_scope.qualname}` returns it to a caller that trains with it"
    return None


def _feeds_backward(analysis, scope: Scope, stmt, limit: int = 64) -> Optional[int]:
    """The line of a backward pass of ``scope`` whose value is computed from what ``stmt``
    binds, followed through the definitions that reach each use (a later ``loss`` of the
    same name bound by another statement is not this one)."""
    flow = analysis.flow
    for site in scope.backward_sites:
        if site.stmt is None or start_of(site.call) < start_of(stmt):
            continue  # a backward before the binding: only a previous iteration's value could reach it
        frontier = [(key, site.stmt) for key in site.keys]
        followed = set()
        while frontier and len(followed) <= limit:
            key, at = frontier.pop()
            if (key, id(at)) in followed:
                continue
            followed.add((key, id(at)))
            for d in flow.reaching(scope, key, at):
                if d.stmt is stmt:
                    return site.call.lineno
                frontier.extend((found, d.stmt) for found in expr_keys(getattr(d, "value", None)))
    return None


def _reaches_return(analysis, scope: Scope, stmt) -> bool:
    if isinstance(stmt, ast.Return):
        return True
    flow = analysis.flow
    return any(flow.flows_into_return(scope, name) is not None for name in sorted(_bound_names(stmt)))


def _bound_names(stmt) -> set:
    if isinstance(stmt, ast.Assign):
        return {k for t in stmt.targets for k in expr_keys(t) if "." not in k}
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
        return {k for k in expr_keys(stmt.target) if "." not in k}
    value = stmt.value if isinstance(stmt, ast.Expr) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in STORES:
        key = container_key(value.func.value)  # ``chunks.append(model(x))``: what ``chunks`` returns
        return {key} if key is not None and "." not in key else set()
    return set()


STORES = frozenset({"append", "extend", "insert", "add", "update"})


def submodule_frozen_in_model(analysis, scope: Scope, eval_call: ast.Call, stmt) -> Optional[str]:
    """A method of a module class that puts one of its own submodules in eval mode
    (``self.backbone.eval()``, freezing its batch norm) and returns what the forward
    computes: part of the model, whose users may train through it, not evaluation."""
    project = analysis.project
    func = eval_call.func
    if project is None or not scope.class_name or not isinstance(func, ast.Attribute):
        return None
    if set(words(scope.name)) & PREDICTION_WORDS:
        return None  # ``predict`` running its averaged copy in eval mode is evaluation
    receiver = func.value
    if not (_own_submodule(receiver) or _iterated_from_self(scope, receiver)):
        return None  # ``self.eval()`` puts the whole model in eval mode: a prediction method
    if not project.is_module_class(analysis.index.module_name, scope.class_name):
        return None
    if not _reaches_return(analysis, scope, stmt):
        return None
    return (f"`{scope.qualname}` puts its submodule `{ast.unparse(receiver)}` in eval mode and returns what "
            f"the forward computes: part of the model")


def _own_submodule(node) -> bool:
    """``self.backbone``, ``self.encoder.bn``."""
    return (dotted(node) or "").startswith("self.")


def _iterated_from_self(scope: Scope, node) -> bool:
    """``m`` in ``for m in self.modules():`` or ``for layer in self.dropout:``: one of the
    model's own submodules."""
    if not isinstance(node, ast.Name):
        return False
    for loop in ast.walk(scope.node):
        if isinstance(loop, (ast.For, ast.AsyncFor)) and isinstance(loop.target, ast.Name) \
                and loop.target.id == node.id \
                and any(isinstance(n, ast.Name) and n.id == "self" for n in ast.walk(loop.iter)):
            return True
    return False


def part_of_returned_graph(analysis, scope: Scope, value, container: str) -> bool:
    """A local list nothing reads (only grown) in a function that returns a value computed
    from what it stores (``z_list.append(z)`` beside ``pred = decoder(h + expand(z))``,
    ``return pred``) to a caller that backpropagates it: the list dies with the call, and
    every graph it holds is part of the returned graph, alive until that backward anyway."""
    if not scope.is_function or "." in container or container in scope.params or not scope.returns:
        return False
    if not scope.defs_of(container) or _read(scope, container):
        return False
    flow = analysis.flow
    keys = {k for k in expr_keys(value) if "." not in k}
    if not keys or not all(flow.flows_into_return(scope, key) is not None for key in keys):
        return False
    return _result_backpropagated_by_caller(analysis, scope)


def _result_backpropagated_by_caller(analysis, scope: Scope) -> bool:
    """Does a caller backpropagate what the function returns (``pred, _ = rollout(...)``,
    then a loss of ``pred`` and its ``backward()``)? The returned graph then lives until that
    backward anyway."""
    return any(found is not None and _feeds_backward(found[0], found[1], found[3]) is not None
               for found in calls_reaching(analysis, scope, MAX_CALLERS))


def _read(scope: Scope, container: str) -> bool:
    """Is the name read other than as the receiver of a growing call (``xs.append(v)``)?"""
    grown = set()
    for node in ast.walk(scope.node):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STORES \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == container:
            grown.add(id(node.func.value))
    for node in ast.walk(scope.node):
        if isinstance(node, ast.Name) and node.id == container and isinstance(node.ctx, ast.Load) \
                and id(node) not in grown:
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and container in node.names:
            return True
    return False
