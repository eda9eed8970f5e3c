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
    return _volatile_loader(analysis, scope)


LOOP_WRAPPERS = frozenset({"tqdm", "enumerate", "iter", "zip"})


def _volatile_loader(analysis, scope):
    """``for x, y in validation_data`` where ``validation_data = DataLoader(...,
    evaluation=True)`` is a project class whose batches are built as ``Variable(t,
    volatile=self.evaluation)``, the flag stored from that constructor argument."""
    project = analysis.project
    if project is None:
        return None
    from .names import dotted

    kinds = analysis.graph.kinds
    module_scope = analysis.index.module_scope
    for loop in scope.loops:
        if not isinstance(loop, ast.For):
            continue
        source = loop.iter
        while isinstance(source, ast.Call) and source.args and \
                getattr(source.func, "id", getattr(source.func, "attr", None)) in LOOP_WRAPPERS:
            source = source.args[0]
        key = dotted(source)
        if key is None:
            continue
        found = [(d, scope) for d in analysis.flow.reaching(scope, key, loop)]
        if not found and key not in scope.params:
            found = [(d, module_scope) for d in module_scope.defs_of(key)]
        for d, where in found:
            if d.kind != "assign" or d.index is not None or not isinstance(d.value, ast.Call):
                continue
            kind = kinds.value_kind(d.value, where, d.stmt)
            flags = {k.arg for k in d.value.keywords if k.arg and _true(k.value)}
            if kind is not None and kind.class_ref is not None and flags \
                    and _stores_volatile_flag(project, kind.class_ref, flags):
                return d.value
    return None


def _stores_volatile_flag(project, class_ref, params) -> bool:
    """Does the class build ``Variable(..., volatile=self.<attr>)`` with ``self.<attr>``
    set in ``__init__`` from one of ``params``?"""
    owner = project.analysis(class_ref[0])
    if owner is None:
        return False
    methods = owner.index.methods(class_ref[1])
    attrs = {k.value.attr for m in methods for node in ast.walk(m.node) if isinstance(node, ast.Call)
             for k in node.keywords if k.arg == "volatile" and isinstance(k.value, ast.Attribute)
             and isinstance(k.value.value, ast.Name) and k.value.value.id == "self"}
    for method in methods:
        if method.name != "__init__":
            continue
        for attr in attrs:
            for d in method.defs_of(f"self.{attr}"):
                if d.kind == "assign" and isinstance(d.value, ast.Name) and d.value.id in params:
                    return True
    return False


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
    found = analysis.graph.kinds.only_callee(call.func, scope, stmt)
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
