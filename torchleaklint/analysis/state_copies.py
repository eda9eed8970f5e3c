"""Deep copies of weights whose tensors nobody needs, and containers of copies that are a
product rather than a pile: the facts behind TLL003.

- a *template copy*: ``w = copy.deepcopy(sd)`` and the loop right after it replaces every
  entry (``for k in w: w[k] = ...``) before reading one, so the copied tensors are dropped;
- a copy *the callee makes again*: ``f(copy.deepcopy(m))`` where ``f`` only ever reads its
  parameter as ``copy.deepcopy(param)``;
- a copy of a *dead source*: this iteration's own fresh object, copied and never used again;
- a copy made only to be flattened: ``parameters_to_vector(copy.deepcopy(m).parameters())``,
  which builds a new tensor from the parameters anyway;
- a *product*: a local list of snapshots the function returns (its caller reads them), or a
  per-round working set re-created in an enclosing loop that nothing keeps past the round.
"""

from __future__ import annotations

import ast
from typing import Optional

from .module_index import Scope, contains, enclosing_block, start_of
from .names import dotted
from .parents import parent_map

DEEPCOPY = "copy.deepcopy"
GROWING_CALLS = frozenset({"append", "extend", "insert", "add", "appendleft"})


def template_loop(scope: Scope, stmt, call: ast.Call) -> Optional[int]:
    """Line of the loop that replaces every entry of ``name = copy.deepcopy(...)`` before
    any entry is read: ``for key in name: name[key] = <value not reading name>``."""
    if not (isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        return None
    name = stmt.targets[0].id
    block = enclosing_block(scope.node, stmt)
    position = next((i for i, s in enumerate(block or ()) if s is stmt), None)
    if position is None or position + 1 >= len(block):
        return None
    loop = block[position + 1]
    if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and not loop.orelse
            and _iterates_keys_of(loop.iter, name)):
        return None
    key = loop.target.id
    first = loop.body[0]
    if not (isinstance(first, ast.Assign) and len(first.targets) == 1 and isinstance(first.targets[0], ast.Subscript)
            and dotted(first.targets[0].value) == name and isinstance(first.targets[0].slice, ast.Name)
            and first.targets[0].slice.id == key):
        return None
    if _mentions(first.value, name) or any(isinstance(n, (ast.Break, ast.Continue, ast.Try, ast.Return, ast.Raise))
                                           for s in loop.body for n in ast.walk(s)):
        return None
    return loop.lineno


def callee_parameter(analysis, scope: Scope, stmt, outer: ast.Call, arg):
    """(summary, parameter name): the project function ``outer`` calls, and its parameter
    that receives the argument ``arg`` (positional or keyword); None when unknown."""
    from .summaries import summary_for  # the project summaries load lazily with the project

    project = analysis.project
    if project is None or not (arg in outer.args or any(k.value is arg for k in outer.keywords)):
        return None
    refs = analysis.graph.kinds.resolve_functions(outer.func, scope, stmt)
    summary = summary_for(project, refs[0]) if len(refs) == 1 else None
    if summary is None:
        return None
    node = summary.scope.node
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    if summary.scope.class_name and params and isinstance(outer.func, ast.Attribute):
        params = params[1:]  # a method called on an object: ``self`` is not an argument here
    for keyword in outer.keywords:
        if keyword.value is arg:
            return (summary, keyword.arg) if keyword.arg in params else None
    position = outer.args.index(arg)
    if position >= len(params) or any(isinstance(a, ast.Starred) for a in outer.args[:position + 1]):
        return None
    return summary, params[position]


def copied_again_by_callee(analysis, scope: Scope, stmt, call: ast.Call, outer: ast.Call) -> Optional[str]:
    """Where the project function called by ``outer`` (with ``call`` as an argument) deep-copies
    that parameter itself and uses it no other way; None otherwise."""
    if call not in outer.args:
        return None
    found = callee_parameter(analysis, scope, stmt, outer, call)
    if found is None:
        return None
    summary, param = found
    callee = summary.scope
    node = callee.node
    imports = summary.analysis.index.imports
    copies, other = 0, 0
    parents = parent_map(node)
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == param:
            if isinstance(n.ctx, ast.Store):
                return None
            parent = parents.get(n)
            if isinstance(parent, ast.Call) and parent.args == [n] and not parent.keywords \
                    and imports.qualname(parent.func) == DEEPCOPY:
                copies += 1
            else:
                other += 1
    if copies and not other:
        return f"`{callee.name}` deep-copies `{param}` itself ({summary.where})"
    return None


def flattened_copy(analysis, call: ast.Call, scope: Scope) -> Optional[str]:
    """``parameters_to_vector(copy.deepcopy(m).parameters())``: the vector is new memory
    either way, so the module copy is made for nothing."""
    imports = analysis.index.imports
    for outer, _ in scope.calls:
        if not (imports.qualname(outer.func) or "").endswith("parameters_to_vector") or not outer.args:
            continue
        arg = outer.args[0]
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "parameters" \
                and arg.func.value is call:
            return f"`{dotted(outer.func) or 'parameters_to_vector'}` at line {outer.lineno}"
    return None


def product_of_call(scope: Scope, container: str) -> Optional[str]:
    """The local container of copies is returned or yielded, directly or gathered into a
    local that is (``all_models += round_models``; ``return all_models``): its caller reads
    the snapshots."""
    if "." in container or not scope.is_function:
        return None
    returned = {n.id for expr in scope.returns for n in ast.walk(expr) if isinstance(n, ast.Name)}
    if container in returned:
        return f"`{container}` is returned to the caller"
    for node in ast.walk(scope.node):
        gathered = None
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and _is_name(node.value, container):
            gathered = node.target.id
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in GROWING_CALLS \
                and isinstance(node.func.value, ast.Name) and any(_is_name(a, container) for a in node.args):
            gathered = node.func.value.id
        if gathered is not None and gathered in returned:
            return f"`{container}` is gathered into `{gathered}`, which is returned to the caller"
    return None


def _is_name(node, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def per_round_working_set(analysis, scope: Scope, stmt, container: str) -> Optional[str]:
    """The local container is re-created in an enclosing loop (``clients = []`` per round)
    and never handed to anything that keeps it past the round: its copies live one round."""
    if "." in container:
        return None
    ctx = analysis.index.ctx(stmt)
    if ctx is None or len(ctx.loops) < 2:
        return None
    defs = [d for d in analysis.flow.reaching(scope, container, stmt) if d.kind != "aug"]
    inits = [d for d in defs if d.kind == "assign" and isinstance(d.value, (ast.List, ast.Dict))]
    if not defs or len(inits) != len(defs):
        return None
    rounds = [loop for loop in ctx.loops[:-1] if all(contains(loop, d.stmt) for d in inits)]
    if not rounds:
        return None
    for node in ast.walk(scope.node):
        if not (isinstance(node, ast.Name) and node.id == container and isinstance(node.ctx, ast.Load)):
            continue
        if _kept_elsewhere(scope, node):
            return None
    return f"`{container}` is re-created every round (line {inits[0].stmt.lineno}) and kept by nothing else"


def _kept_elsewhere(scope: Scope, name: ast.Name) -> bool:
    """Is this read of the container a store of it somewhere longer-lived (appended to
    another list, assigned to an attribute, item or other name, returned)?"""
    for stmt in ast.walk(scope.node):
        if isinstance(stmt, ast.Return) and stmt.value is not None and _within(stmt.value, name):
            return True
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and stmt.value is not None \
                and _within(stmt.value, name) and _bare(stmt.value, name):
            return True
        if isinstance(stmt, ast.Call) and isinstance(stmt.func, ast.Attribute) and stmt.func.attr in GROWING_CALLS \
                and any(a is name for a in stmt.args):
            return True
    return False


def _bare(value, name) -> bool:
    """The value is the container itself (or a tuple holding it), not something computed from it."""
    if value is name:
        return True
    return isinstance(value, (ast.Tuple, ast.List)) and any(e is name for e in value.elts)


def _within(expr, node) -> bool:
    return any(n is node for n in ast.walk(expr))


def _iterates_keys_of(expr, name: str) -> bool:
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "keys" \
            and not expr.args:
        expr = expr.func.value
    return dotted(expr) == name


def _mentions(expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(expr))



def dead_source(analysis, scope: Scope, stmt, call: ast.Call) -> Optional[str]:
    """``self.model = copy.deepcopy(adapted)`` where ``adapted`` is this iteration's own
    fresh object (itself a deep copy or a construction made earlier in the same loop body),
    handed to nothing bare, and never read again after the copy: binding it would do, the
    copy only doubles the model for a moment every iteration."""
    source = call.args[0]
    ctx = analysis.index.ctx(stmt)
    if not (isinstance(source, ast.Name) and ctx is not None and ctx.loops and scope.is_function):
        return None
    loop = ctx.loops[-1]
    name = source.id
    defs = analysis.flow.reaching(scope, name, stmt)
    if not defs or any(d.kind != "assign" or not contains(loop, d.stmt) or not _fresh(analysis, scope, d.value)
                       for d in defs):
        return None
    if len(scope.defs_of(name)) != len(defs):
        return None  # bound elsewhere too: it may be read before this iteration rebinds it
    parents = parent_map(scope.node)
    for node in ast.walk(scope.node):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)) or node is source:
            continue
        if start_of(node) > start_of(stmt):
            return None  # read after the copy: the original is still used
        parent = parents.get(node)
        if not (isinstance(parent, ast.Attribute) or (isinstance(parent, ast.Call) and parent.func is node)):
            return None  # handed on bare: someone else may hold and change it
    return f"`{name}` is made fresh in this iteration (line {defs[0].stmt.lineno}) and not used after the copy"


def _fresh(analysis, scope: Scope, value) -> bool:
    if not isinstance(value, ast.Call):
        return False
    if analysis.index.imports.qualname(value.func) == DEEPCOPY:
        return True
    return analysis.graph.kinds.resolve_class(value.func, scope) is not None


def returns_copies(analysis, scope: Scope) -> bool:
    """Does the function return a list it fills with deep copies (``models.append(deepcopy(m))``)?"""
    from .stores import store_in_stmt

    imports = analysis.index.imports
    returned = {expr.id for expr in scope.returns if isinstance(expr, ast.Name)}
    for stmt in scope.statements:
        for site in store_in_stmt(stmt):
            if site.container in returned and site.how != "setitem" and isinstance(site.value, ast.Call) \
                    and imports.qualname(site.value.func) == DEEPCOPY:
                return True
    return False


def never_read(scope: Scope, container: str) -> bool:
    """Is the local container only ever grown (``xs += ...``, ``xs.append(...)``), never read?"""
    if "." in container:
        return False
    parents = parent_map(scope.node)
    for node in ast.walk(scope.node):
        if isinstance(node, ast.Name) and node.id == container and isinstance(node.ctx, ast.Load):
            parent = parents.get(node)
            if not (isinstance(parent, ast.Attribute) and parent.attr in GROWING_CALLS):
                return False
    return True
