"""Modules built frozen by their own constructor.

``InceptionV3([block])`` of the FID code research projects copy: its ``__init__`` ends with
``for param in self.parameters(): param.requires_grad = requires_grad``, the argument
defaulting to ``False``. A module built without passing ``requires_grad=True`` records no
autograd in its parameters, so its forward on graph-free inputs records nothing either.
"""

from __future__ import annotations

import ast
from typing import Optional

from .names import dotted
from .summaries import argument_of

_CHAIN = frozenset({"eval", "train", "to", "cuda", "cpu", "float", "half", "double"})


def built_frozen(analysis, scope, value) -> bool:
    """Is ``value`` (``InceptionV3([idx]).to(device)``) a project module whose constructor,
    as called here, sets every parameter's ``requires_grad`` to False?"""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _CHAIN:
        value = value.func.value
    project = analysis.project
    if project is None or not isinstance(value, ast.Call):
        return False
    found = analysis.graph.kinds.resolve_class(value.func, scope)
    if found is None:
        return False
    refs = project.methods_in_hierarchy(found[0], found[1], "__init__")
    init = project.scope_for(refs[0]) if refs else None
    if init is None:
        return False
    return any(_freezes(init[1], stmt, value) for stmt in init[1].node.body)


def _freezes(init, stmt, call: ast.Call) -> bool:
    """A top-level statement of ``__init__`` that freezes every parameter, as ``call``
    passes the arguments: ``self.requires_grad_(False)`` or a loop over
    ``self.parameters()`` setting ``requires_grad`` to False (or to an argument that is
    False here)."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        c = stmt.value
        return (isinstance(c.func, ast.Attribute) and c.func.attr == "requires_grad_" and dotted(c.func.value) == "self"
                and bool(c.args) and _false_here(init, c.args[0], call))
    if not isinstance(stmt, ast.For) or not isinstance(stmt.target, ast.Name):
        return False
    it = stmt.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "parameters"
            and dotted(it.func.value) == "self"):
        return False
    name = stmt.target.id
    for inner in stmt.body:
        if isinstance(inner, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == "requires_grad" and dotted(t.value) == name
                for t in inner.targets):
            return _false_here(init, inner.value, call)
        if isinstance(inner, ast.Expr) and isinstance(inner.value, ast.Call):
            c = inner.value
            if isinstance(c.func, ast.Attribute) and c.func.attr == "requires_grad_" and dotted(c.func.value) == name:
                return bool(c.args) and _false_here(init, c.args[0], call)
    return False


def _false_here(init, value, call: ast.Call) -> bool:
    """Is ``value`` False for this call: the constant, or a parameter of ``__init__`` that
    the call leaves at a False default or passes as the constant False?"""
    if isinstance(value, ast.Constant):
        return value.value is False
    if not isinstance(value, ast.Name):
        return False
    passed = argument_of(call, init, value.id)
    if passed is not None:
        return isinstance(passed, ast.Constant) and passed.value is False
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False  # ``*args`` / ``**kwargs``: cannot say what is passed
    default = _default(init.node, value.id)
    return isinstance(default, ast.Constant) and default.value is False


def _default(func, name: str) -> Optional[ast.AST]:
    args = func.args.posonlyargs + func.args.args
    defaults = func.args.defaults
    offset = len(args) - len(defaults)
    for i, a in enumerate(args):
        if a.arg == name:
            return defaults[i - offset] if i >= offset else None
    for a, d in zip(func.args.kwonlyargs, func.args.kw_defaults):
        if a.arg == name:
            return d
    return None
