"""Graph building switched off the pre-0.4 way: ``Variable(x, volatile=True)``.

Code written for PyTorch before 0.4 (which it needs: ``loss.data[0]`` on a 0-dim tensor
fails on later versions) turned autograd off for everything computed from a volatile
input; such forwards record no graph where that code runs.
"""

from __future__ import annotations

import ast


def volatile_input(analysis, scope):
    """``Variable(x, volatile=True)``: how code written for PyTorch before 0.4 (which it
    needs, and which ran it) switched graph building off for everything computed from
    that input; also through a project helper that passes one of its parameters as the
    flag (``get_batch(data, i, evaluation=True)`` building ``Variable(x, volatile=evaluation)``)."""
    for call, stmt in scope.calls:
        for keyword in call.keywords:
            if keyword.arg == "volatile" and _maybe_true(keyword.value):
                return call
            unpacked = keyword.value if keyword.arg is None else None
            if isinstance(unpacked, ast.Name):  # ``var_params = {'volatile': not train}`` then ``**var_params``
                defs = analysis.flow.reaching(scope, unpacked.id, stmt)
                unpacked = defs[0].value if len(defs) == 1 and defs[0].kind == "assign" else None
            if isinstance(unpacked, ast.Dict) and any(
                    isinstance(k, ast.Constant) and k.value == "volatile" and _maybe_true(v)
                    for k, v in zip(unpacked.keys, unpacked.values)):
                return call  # ``Variable(x, **{'volatile': not train})``
        if _volatile_through_helper(analysis, scope, call, stmt):
            return call
    return None


def _maybe_true(node) -> bool:
    """``True``, or a value computed at run time (``volatile=not train``): the code ties
    graph building to it, so a graph is not proven."""
    return not (isinstance(node, ast.Constant) and not node.value)


def _true(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _volatile_through_helper(analysis, scope, call, stmt) -> bool:
    project = analysis.project
    if project is None or not any(_true(a) for a in list(call.args) + [k.value for k in call.keywords]):
        return False
    refs = analysis.graph.kinds.resolve_functions(call.func, scope, stmt)
    if len(refs) != 1:
        return False
    found = project.scope_for(refs[0])
    if found is None:
        return False
    _, helper = found
    flags = {k.value.id for node in ast.walk(helper.node) if isinstance(node, ast.Call)
             for k in node.keywords if k.arg == "volatile" and isinstance(k.value, ast.Name)}
    params = [a.arg for a in helper.node.args.args]
    if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        params = params[1:]
    passed = {k.arg for k in call.keywords if _true(k.value)}
    passed |= {params[i] for i, a in enumerate(call.args) if i < len(params) and _true(a)}
    return bool(flags & passed)
