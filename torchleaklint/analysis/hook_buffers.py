"""Lists a forward hook fills on the hooked module and only a backward hook drains.

``module.register_forward_hook(self.save_input)`` with ``save_input`` doing
``module.inputs.append(x)``, and ``module.register_full_backward_hook(self.use_input)``
popping it: each forward leaves an entry that the backward pass through that module
takes back. A forward that no backward follows (evaluation or inference under
``torch.no_grad()``/``torch.inference_mode()``, the module still in training mode) fires the
forward hook all the same, and its entry stays for the life of the module. Not claimed when
the forward hook consults grad mode (``torch.is_grad_enabled()``), or when anything other
than the backward side (a reset method, ``del module.inputs``, a rebinding outside the
hook's own lazy ``module.inputs = []``) can empty the list.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Iterator, List, Set

from .module_index import Scope
from .names import dotted
from .stores import CLEAR_METHODS, store_in_stmt

FORWARD_HOOKS = frozenset({"register_forward_hook", "register_forward_pre_hook"})
BACKWARD_HOOKS = frozenset({"register_backward_hook", "register_full_backward_hook",
                            "register_full_backward_pre_hook"})
GRAD_MODE_CHECKS = frozenset({"is_grad_enabled", "is_inference_mode_enabled", "is_inference", "requires_grad",
                              "grad_fn"})


@dataclass(frozen=True)
class HookBuffer:
    stmt: ast.AST  # the append in the forward hook
    key: str  # ``module.activations``
    value: ast.AST  # what each forward appends
    forward_hook: str
    backward_hook: str
    drained_at: int  # line of the pop on the backward side


def hook_buffers(analysis) -> Iterator[HookBuffer]:
    index = analysis.index
    registered: Dict[str, Set[str]] = {"forward": set(), "backward": set()}
    for scope in index.scopes:
        for call, _ in scope.calls:
            if isinstance(call.func, ast.Attribute) and call.args:
                kind = ("forward" if call.func.attr in FORWARD_HOOKS
                        else "backward" if call.func.attr in BACKWARD_HOOKS else None)
                name = _hook_name(call.args[0])
                if kind and name:
                    registered[kind].add(name)
    if not registered["forward"] or not registered["backward"]:
        return
    functions: Dict[str, List[Scope]] = {}
    for scope in index.scopes:
        if scope.is_function:
            functions.setdefault(scope.name, []).append(scope)
    backward_side = _reachable(functions, registered["backward"])
    for name in sorted(registered["forward"]):
        for hook in functions.get(name, ()):
            params = [p for p in hook.params if p != "self"]
            if not params or _consults_grad_mode(hook):
                continue
            for stmt in hook.statements:
                for site in store_in_stmt(stmt):
                    if site.how != "append" or site.container.split(".")[0] != params[0] \
                            or site.container.count(".") != 1:
                        continue
                    attr = site.container.split(".", 1)[1]
                    drains = _emptied(index, attr, hook)
                    if not drains or any(scope.name not in backward_side for scope, _ in drains):
                        continue  # never drained (another pattern), or emptied elsewhere too
                    scope, line = drains[0]
                    yield HookBuffer(stmt, site.container, site.value, hook.name, backward_side[scope.name], line)


def _hook_name(expr):
    """``self.save_input``, ``save_input``, ``partial(self.save_input, ...)``: the function's name."""
    if isinstance(expr, ast.Call) and (dotted(expr.func) or "").rsplit(".", 1)[-1] == "partial" and expr.args:
        expr = expr.args[0]
    path = dotted(expr)
    return path.rsplit(".", 1)[-1] if path else None


def _reachable(functions, roots, depth: int = 3) -> Dict[str, str]:
    """Function names the backward hooks run, directly or through calls by name, mapped to
    the hook they run under."""
    found = {name: name for name in roots if name in functions}
    frontier = list(found)
    for _ in range(depth):
        nxt = []
        for name in frontier:
            for scope in functions.get(name, ()):
                for call, _ in scope.calls:
                    callee = (dotted(call.func) or "").rsplit(".", 1)[-1]
                    if callee in functions and callee not in found:
                        found[callee] = found[name]
                        nxt.append(callee)
        frontier = nxt
    return found


def _emptied(index, attr: str, hook: Scope):
    """(scope, line) of every statement that can empty ``<anything>.attr``: a shrinking method
    call, a ``del``, or a rebinding other than the hook's own lazy creation."""
    out = []
    for scope in index.scopes:
        for node in ast.walk(scope.node) if scope.is_function else ():
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CLEAR_METHODS \
                    and _ends_with(node.func.value, attr):
                out.append((scope, node.lineno))
            elif isinstance(node, ast.Delete) and any(_ends_with(_base(t), attr) for t in node.targets):
                out.append((scope, node.lineno))
            elif isinstance(node, (ast.Assign, ast.AugAssign)) and scope is not hook:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(_ends_with(t, attr) for t in targets):
                    out.append((scope, node.lineno))
    # Each statement once: nested functions are walked from their parents too.
    seen, unique = set(), []
    for scope, line in out:
        if line not in seen:
            seen.add(line)
            unique.append((scope, line))
    return unique


def _consults_grad_mode(hook: Scope) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in GRAD_MODE_CHECKS for n in ast.walk(hook.node))


def _ends_with(node, attr: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attr


def _base(node):
    while isinstance(node, ast.Subscript):
        node = node.value
    return node
