"""Modules built frozen by their own constructor.

``InceptionV3([block])`` of the FID code research projects copy: its ``__init__`` ends with
``for param in self.parameters(): param.requires_grad = requires_grad``, the argument
defaulting to ``False``. A module built without passing ``requires_grad=True`` records no
autograd in its parameters, so its forward on graph-free inputs records nothing either.
"""

from __future__ import annotations

import ast
from typing import List, Optional

from .names import dotted
from .summaries import argument_of, parameter_defaults

def built_frozen(analysis, scope, value) -> bool:
    """Is ``value`` (``InceptionV3([idx])``, the call under any ``.to(device)``) a project
    module whose constructor, as called here, sets every parameter's ``requires_grad`` to
    False?"""
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
    values = requires_grad_values(stmt, "self", iterators=("parameters",))
    return bool(values) and values[0] is not None and _false_here(init, values[0], call)


def requires_grad_values(loop, module: str, iterators=("parameters", "named_parameters")) -> Optional[List]:
    """``for p in module.parameters(): p.requires_grad = v`` (or ``p.requires_grad_(v)``):
    the value each statement of the loop body sets, in order (None for ``requires_grad_()``
    without one); None when the loop does not walk ``module``'s parameters."""
    if not isinstance(loop, ast.For):
        return None
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in iterators
            and dotted(it.func.value) == module):
        return None
    target = loop.target
    if it.func.attr == "named_parameters" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        target = target.elts[1]  # ``for name, p in net.named_parameters():``
    if not isinstance(target, ast.Name):
        return None
    name = target.id
    values: List = []
    for inner in loop.body:
        if isinstance(inner, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == "requires_grad" and dotted(t.value) == name
                for t in inner.targets):
            values.append(inner.value)
        elif isinstance(inner, ast.Expr) and isinstance(inner.value, ast.Call):
            c = inner.value
            if isinstance(c.func, ast.Attribute) and c.func.attr == "requires_grad_" and dotted(c.func.value) == name:
                values.append(c.args[0] if c.args else None)
    return values


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
    default = parameter_defaults(init.node).get(value.id)
    return isinstance(default, ast.Constant) and default.value is False
