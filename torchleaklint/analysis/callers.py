"""What callers pass: does some call of a function (in the linted files) give a
parameter a graph-carrying argument? ``Normalizer.update(x)`` only leaks when a caller
passes a tensor with a graph; an observation normalizer fed raw data does not."""

from __future__ import annotations

import ast
from typing import Optional

from .module_index import Scope, calls_named
from .names import dotted
from .summaries import argument_for

MAX_SITES = 8


MAX_DEPTH = 3


def argument_evidence(analysis, scope: Scope, param: str, depth: int = 0):
    """Evidence that some caller passes a graph-carrying value for ``param``, or None.
    A caller that passes its own parameter along is followed to its callers in turn; a
    layer's ``forward`` whose instances are only built inside other modules' constructors
    (``nn.Sequential(MyNorm(d), ...)``) gets the graph of the layers before it."""
    project = analysis.project
    if project is None or not scope.is_function or param not in scope.params:
        return None
    params = list(scope.params)
    offset = 1 if params and params[0] in ("self", "cls") else 0
    position = params.index(param) - offset
    if position < 0:
        return None
    for name in sorted(call_names(project, scope)):
        for found in project.callers(name, MAX_SITES) or ():
            if found is None:
                continue
            caller_analysis, caller_scope = found
            if not project.import_connected(caller_analysis.index.module_name, analysis.index.module_name):
                continue  # another program of the tree: its objects never reach this function
            ev = _from_calls(caller_analysis, caller_scope, name, position, param, depth, scope)
            if ev is not None:
                return ev
    return _layer_input(analysis, scope, param)


def _from_calls(analysis, scope: Scope, name: str, position: int, param: str, depth: int,
                callee: Optional[Scope] = None) -> Optional[object]:
    for call, stmt in calls_named(scope, name):
        if callee is not None and not _fits(call, callee):
            continue  # another function spelled the same: its arguments do not fit this signature
        if callee is not None and isinstance(call.func, ast.Attribute) \
                and library_object(analysis, scope, call.func.value, stmt):
            continue  # ``self.scaler.scale(loss)`` on a GradScaler: a library method of the same name
        arg = argument_for(call, position, param)
        if arg is None:
            continue
        ev = analysis.graph.carrying(arg, stmt)
        if ev is not None:
            return ev
        if depth < MAX_DEPTH and isinstance(arg, ast.Name) and arg.id in scope.params:
            ev = argument_evidence(analysis, scope, arg.id, depth + 1)
            if ev is not None:
                return ev
    return None


def library_object(analysis, scope: Scope, receiver, stmt) -> bool:
    """Is ``receiver`` (``scaler``, ``self.scaler``) bound only to what a library
    constructor or function returns (``torch.cuda.amp.GradScaler()``, in the class or a
    project base class)? Then a method called on it is the library's, whatever project
    function shares its name."""
    key = dotted(receiver)
    project = analysis.project
    if key is None or project is None:
        return False
    if key.startswith("self.") and key.count(".") == 1 and scope.class_name:
        bindings = _bindings_in_hierarchy(analysis, scope.class_name, key)
    elif "." not in key:
        bindings = [(analysis, d) for d in analysis.flow.reaching(scope, key, stmt)]
    else:
        return False
    if not bindings:
        return False
    for owner, d in bindings:
        value = d.value
        if d.kind != "assign" or d.index is not None or not isinstance(value, ast.Call):
            return False
        qual = owner.index.imports.qualname(value.func)
        if not qual or project.find_module(qual.split(".")[0]) is not None or project.resolve_symbol(qual) is not None:
            return False
    return True


def _bindings_in_hierarchy(analysis, class_name: str, key: str, limit: int = 8) -> list:
    """(analysis, definition) for every binding of ``self.<attr>`` in the class and its
    project base classes."""
    project = analysis.project
    out = []
    todo = [(analysis.index.module_name, class_name)]
    seen = set()
    while todo and len(seen) < limit:
        module, cls = todo.pop(0)
        if (module, cls) in seen:
            continue
        seen.add((module, cls))
        owner = analysis if module == analysis.index.module_name else project.analysis(module)
        table = project.tables.get(module)
        if owner is None or table is None:
            continue
        out.extend((owner, d) for method in owner.index.methods(cls) for d in method.defs.get(key, ()))
        for base in table.classes.get(cls, []):
            found = project.base_class(module, base)
            if found:
                todo.append(found)
    return out


def _layer_input(analysis, scope: Scope, param: str):
    project = analysis.project
    if scope.name != "forward" or not scope.class_name:
        return None
    if not project.is_module_class(analysis.index.module_name, scope.class_name):
        return None
    if has_known_callers(analysis, scope):
        return None
    # Instances never called by a name of their own reach ``forward`` only through the
    # modules they are composed into (``nn.Sequential(conv, MyNorm(d))``, a ModuleList, a
    # parent's ``__init__``), which feed it the output of the layers before it.
    built_in = [caller for _, caller, off in project.call_sites(scope.class_name) if not off]
    if not built_in:
        return None
    from .graph import CONVENTION, Evidence

    return Evidence(f"`{param}` is the input of `{scope.class_name}.forward`, a layer composed into other "
                    f"modules (built in {built_in[0]})", scope.node.lineno, strength=CONVENTION)


def calls_reaching(analysis, scope: Scope, limit: int = MAX_SITES):
    """Every call spelled with the function's name in the linted files that may reach it, as
    (caller analysis, caller scope, call, statement, resolved): calls the analysis resolves
    to other functions (``trainer.test()`` beside ``net.test()``) are left out; ``resolved``
    says the call was resolved to this one, not merely spelled like it. None for a caller
    that cannot be analysed; nothing when the name is spelled in more than ``limit`` places."""
    project = analysis.project
    if project is None or not scope.is_function:
        return
    me = (analysis.index.module_name, scope.qualname)
    for entry in project.callers(scope.name, limit) or ():
        if entry is None:
            yield None
            continue
        caller_analysis, caller_scope = entry
        holders = [caller_scope]
        top = caller_analysis.index.module_scope
        if caller_scope is not top and caller_scope.qualname == caller_analysis.index.module_name:
            holders.append(top)  # ``train.py``'s function ``train`` and its top-level code share a name
        for holder in holders:
            for call, stmt in calls_named(holder, scope.name):
                refs = resolved_refs(caller_analysis, holder, call, stmt)
                if refs and me not in refs:
                    continue
                yield caller_analysis, holder, call, stmt, bool(refs)


def method_of_an_object(caller_analysis, scope: Scope, call: ast.Call, module: Optional[str] = None) -> bool:
    """Is ``call`` (``model.train()``) a method call on an object, which cannot reach the
    module-level function ``scope`` (only ``module.train()`` on an imported module can)?
    Given the function's ``module``, a call through another project module that resolves
    to a function of its own (``parser.eval(...)`` in the module defining ``eval``) cannot
    reach it either."""
    if scope.class_name or not isinstance(call.func, ast.Attribute):
        return False
    qualified = caller_analysis.index.imports.qualname(call.func.value)
    if qualified is None:
        return True
    project = caller_analysis.project
    if module is None or project is None:
        return False
    found = project.resolve_symbol(f"{qualified}.{call.func.attr}")
    return found is not None and found != (module, scope.qualname)


def resolved_refs(analysis, holder: Scope, call: ast.Call, stmt) -> set:
    """The project functions ``call`` resolves to, as (module, qualname) pairs."""
    return {(r.module, r.qualname) for r in analysis.graph.kinds.resolve_functions(call.func, holder, stmt)}


def call_names(project, scope: Scope):
    """How calls of this function are spelled: its name, or for ``forward`` the names its
    class's instances are bound to."""
    if scope.name in ("forward", "__call__") and scope.class_name:
        return project.instance_names(scope.class_name)
    return {scope.name}


def has_known_callers(analysis, scope: Scope) -> bool:
    project = analysis.project
    if project is None:
        return False
    return any(project.call_sites(name) for name in call_names(project, scope))


def _fits(call: ast.Call, callee: Scope) -> bool:
    """Can ``call`` reach ``callee``: no more positional arguments than it takes, and no
    keyword it does not name (unless it takes ``*args``/``**kwargs``)?"""
    node = callee.node
    if not isinstance(getattr(node, "args", None), ast.arguments):
        return True
    spec = node.args
    positional = [a.arg for a in spec.posonlyargs + spec.args]
    if positional and positional[0] in ("self", "cls"):
        positional = positional[1:]
    if spec.vararg is None and not any(isinstance(a, ast.Starred) for a in call.args) \
            and len(call.args) > len(positional):
        return False
    names = set(positional) | {a.arg for a in spec.kwonlyargs}
    if spec.kwarg is None and any(k.arg is not None and k.arg not in names for k in call.keywords):
        return False
    return True
