"""Can a call reach a given function at all, by its shape? A module-level function is
called by its name, a method through an attribute; and the arguments must fit the
parameters: ``model.eval()`` (no argument) is not a call of ``Evaluator.eval(self, inputs,
model)``, which needs two."""

from __future__ import annotations

import ast

from .module_index import Scope


def spelled_as_call_of(scope: Scope, call: ast.Call) -> bool:
    """A module-level function is called by its name; a method through an attribute
    (``self.evaluate()``): ``model.eval()`` is not a call of a function named ``eval``."""
    if scope.class_name is None:
        return isinstance(call.func, ast.Name)
    return isinstance(call.func, ast.Attribute)


def call_fits(scope: Scope, call: ast.Call) -> bool:
    """Spelled as a call of the function, with arguments its parameters can take."""
    return spelled_as_call_of(scope, call) and arguments_fit(scope, call)


def arguments_fit(scope: Scope, call: ast.Call) -> bool:
    """Can the function's parameters take the call's arguments (a method's ``self`` left
    out), however the call is spelled (``decoder(x, lengths)`` runs ``forward``)?"""
    spec = getattr(scope.node, "args", None)
    if not isinstance(spec, ast.arguments):
        return True
    positional = [a.arg for a in spec.posonlyargs + spec.args]
    if scope.class_name and positional and positional[0] in ("self", "cls") and not _static(scope):
        positional = positional[1:]
    required = len(positional) - len(spec.defaults)
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return True  # ``f(*args, **kwargs)``: any shape
    given = len(call.args)
    if given > len(positional) and spec.vararg is None:
        return False
    named = {k.arg for k in call.keywords}
    names = set(positional) | {a.arg for a in spec.kwonlyargs}
    if named - names and spec.kwarg is None:
        return False
    filled = given + len(named & set(positional[given:]))
    if filled < required:
        return False
    kw_required = {a.arg for a, d in zip(spec.kwonlyargs, spec.kw_defaults) if d is None}
    return kw_required <= named


def _static(scope: Scope) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in getattr(scope.node, "decorator_list", ()))
