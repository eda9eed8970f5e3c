"""Is an object's statistic really kept from one call to the next? Updates that look
like running statistics but hold one call's (or one forward pass's) value: recomputed
earlier in the same call, detached in place before each update, or re-initialised by a
method that every ``forward`` runs (per-sequence attention or decoder state)."""

from __future__ import annotations

import ast

from .module_index import calls_named, contains
from .names import dotted
from .project import MAX_CALL_SITES, FunctionRef


def rebound_earlier(analysis, scope, attr, stmt) -> bool:
    """``self.latent = self.net(x); self.latent[:, d:] = f(self.latent[:, d:])``: the value
    updated was computed earlier in the same call, not kept from the previous one."""
    for d in scope.defs_of(attr):
        if d.stmt is stmt or not isinstance(d.stmt, ast.Assign) or d.start >= (stmt.lineno, stmt.col_offset):
            continue
        if any(dotted(t) == attr for t in d.stmt.targets) and analysis.flow.dominates(d, stmt):
            return True
    return False


def detached_in_place(loop, name: str) -> bool:
    """``target_param.detach_()`` in the loop: each update starts from a graph-free tensor."""
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "detach_" \
                and dotted(node.func.value) == name:
            return True
    return False


def reset_every_forward(analysis, scope, attr) -> bool:
    """Is ``attr`` re-initialised afresh (not from itself) once per forward pass or training
    step? By a method of the class or of its project bases (``__init__`` aside) that a
    ``forward`` calls (``Decoder.forward -> self.attention.init_states(x)`` setting
    ``self.mu_prev = zeros(...)``) or that a function running a backward calls
    (``state = model.get_initial_state(b)`` -> ``self.memory.reset(b)``), directly or
    through a property setter; or from outside the object, in a function that runs a
    backward (``net.hidden = net.init_hidden()`` at the top of ``train(x)``). Then the value
    lives for one pass or step, which a backward consumes, like an RNN's hidden state
    within a sequence."""
    project = analysis.project
    if project is None or not scope.class_name or not attr.startswith("self.") or "." in attr[5:]:
        return False
    for module, methods in _lineage_methods(analysis, scope.class_name):
        written = {attr} | _setters_of(methods, attr)
        for method in methods:
            if method is scope or method.name == "__init__":
                continue
            if not any(_fresh(d, key) for key in written for d in method.defs_of(key)):
                continue
            if _called_per_step(project, method.name):
                return True
    return _reset_from_outside(analysis, attr)


def _lineage_methods(analysis, class_name):
    """(module, methods) of the class and of its project bases, nearest first."""
    yield analysis.index.module_name, analysis.index.methods(class_name)
    lineage = analysis.project.class_lineage(analysis.index.module_name, class_name)
    for module, cls in lineage[1:]:
        other = analysis if module == analysis.index.module_name else analysis.project.analysis(module)
        if other is not None:
            yield module, other.index.methods(cls)


def _fresh(d, key) -> bool:
    return isinstance(d.stmt, ast.Assign) and any(dotted(t) == key for t in d.stmt.targets) \
        and not any(dotted(n) == key for n in ast.walk(d.stmt.value))


def _setters_of(methods, attr):
    """``self.hidden_var`` when ``@hidden_var.setter`` assigns ``attr`` from its argument."""
    out = set()
    for method in methods:
        if not any(isinstance(deco, ast.Attribute) and deco.attr == "setter" for deco in method.decorators):
            continue
        if any(_fresh(d, attr) for d in method.defs_of(attr)):
            out.add(f"self.{method.name}")
    return out


def _called_per_step(project, name: str, depth: int = 0) -> bool:
    """Is a function spelled ``name`` a ``forward``, or called (two calls deep) from a
    ``forward`` or from a function that itself runs a backward?"""
    if name == "forward":
        return True
    if depth >= 2:
        return False
    sites = project.call_sites(name)
    if any(caller.rsplit(".", 1)[-1] == "forward" for _, caller, _ in sites):
        return True  # ``self.cell.reset()`` in a forward, however common the name
    if len(sites) > MAX_CALL_SITES:
        return False  # too common a name to say which function runs it
    for module, caller, _ in sites:
        if _reset_with_each_backward(project, module, caller, name):
            return True
        if _called_per_step(project, caller.rsplit(".", 1)[-1], depth + 1):
            return True
    return False


def _reset_with_each_backward(project, module: str, qualname: str, name: str) -> bool:
    """Does the function ``qualname`` call ``name`` as often as it runs a backward?"""
    table = project.tables.get(module)
    if table is None or qualname not in table.backward_functions:
        return False
    found = project.scope_for(FunctionRef(module, qualname))
    if found is None:
        return False
    analysis, scope = found
    return _every_backward_repeats_it(analysis, scope, [stmt for _, stmt in calls_named(scope, name)])


def _every_backward_repeats_it(analysis, scope, stmts) -> bool:
    """Is one of ``stmts`` inside every loop that holds a backward of ``scope``: run again
    before each backward, not once before a loop of them?"""
    sites = [site for site in scope.backward_sites if site.kind != "grad" and site.stmt is not None]
    if not sites:
        return False
    index = analysis.index
    for stmt in stmts:
        ctx = index.ctx(stmt)
        around = {id(loop) for loop in ctx.loops} if ctx is not None else set()
        if all(index.ctx(site.stmt) is not None and {id(loop) for loop in index.ctx(site.stmt).loops} <= around
               for site in sites):
            return True
    return False


MAX_WRITER_MODULES = 16


def _this_and_importers(analysis):
    """(module, analysis) of this module and of the first modules importing it: where the
    object's users write to it or call it."""
    project = analysis.project
    module = analysis.index.module_name
    for other_module in [module] + project.importers_of_module(module)[:MAX_WRITER_MODULES]:
        other = analysis if other_module == module else project.analysis(other_module)
        if other is not None:
            yield other_module, other


def _reset_from_outside(analysis, attr) -> bool:
    """``frame_predictor.hidden = frame_predictor.init_hidden()`` in a function of this file
    or of a file importing it, which runs a backward: the state is started afresh every
    step."""
    project = analysis.project
    name = attr[5:]
    for other_module, other in _this_and_importers(analysis):
        table = project.tables.get(other_module)
        if table is None:
            continue
        for scope in other.index.scopes:
            if not scope.is_function or scope.qualname not in table.backward_functions:
                continue
            for key, defs in scope.defs.items():
                if not key.endswith("." + name) or key == attr:
                    continue
                writes = [d.stmt for d in defs if _fresh(d, key)]
                if writes and _every_backward_repeats_it(other, scope, writes):
                    return True
    return False


def reset_beside_every_update(analysis, scope, attr) -> bool:
    """Does every loop that calls this method on an object (``loss_rec.update(loss)``, in
    this file or one importing it) also call, on the same object and in that same loop
    (not once per epoch around it), a method of the class that sets the statistic afresh
    (``loss_rec.reset()`` every ``print_interval`` steps)?
    Then the statistic holds at most one reset interval's values, whatever the run's
    length: it does not grow with the steps."""
    project = analysis.project
    if project is None or not scope.class_name or not attr.startswith("self.") or "." in attr[5:]:
        return False
    resets = {method.name for _, methods in _lineage_methods(analysis, scope.class_name) for method in methods
              if method is not scope and method.name != "__init__" and any(_fresh(d, attr) for d in method.defs_of(attr))}
    if not resets:
        return False
    paired = 0
    for _, other in _this_and_importers(analysis):
        for caller in other.index.scopes:
            for call, stmt in caller.calls:
                if not (isinstance(call.func, ast.Attribute) and call.func.attr == scope.name and call.args):
                    continue
                receiver = dotted(call.func.value)
                ctx = other.index.ctx(stmt)
                if receiver is None or receiver == "self" or ctx is None or not ctx.loops or ctx.grad_off:
                    continue  # not repeated, or fed no graph (``with torch.no_grad():``)
                # In the innermost loop of steps (not ``for rec, val in zip(recs, vals)`` over the
                # objects themselves): a reset once per epoch leaves an epoch of steps' graphs.
                steps = next((loop for loop in reversed(ctx.loops) if not _binds(loop, receiver)), None)
                if steps is None:
                    continue
                if not any(isinstance(c.func, ast.Attribute) and c.func.attr in resets
                           and dotted(c.func.value) == receiver and contains(steps, c) for c, _ in caller.calls):
                    return False  # a loop updating it with no reset of that object
                paired += 1
    return paired > 0


def _binds(loop, receiver: str) -> bool:
    """Does the ``for`` loop's target bind the receiver's root name?"""
    target = getattr(loop, "target", None)
    root = receiver.split(".")[0]
    return target is not None and any(isinstance(n, ast.Name) and n.id == root for n in ast.walk(target))
