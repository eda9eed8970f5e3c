"""Does a container or accumulator outlive the loop iteration (or the call) that put a
value into it — and is keeping the value legitimate?

Outlives: the name is initialised before the innermost loop around the store and not
re-initialised, cleared or bounded inside it; or it is object state (``self.x``,
``obj.attr``) or module state, written outside ``__init__``.
Legitimate keeps: the container/accumulator is later consumed by a backward pass, or it
is returned to the caller from a loop that runs no backward of its own (the caller may
backpropagate it, as a ``forward()`` that collects hidden states does).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from .loops import function_calls_backward, helper_runs_backward, loop_calls_backward
from .module_index import Scope, calls_named, contains, start_of
from .names import dotted, words
from .sampled_store import sampled_store_keep
from .stores import is_bounded_constructor, resets_of

INIT_METHODS = frozenset({"__init__", "__post_init__", "setup", "reset", "reset_parameters",
                          "build", "_build", "__new__"})


@dataclass(frozen=True)
class Escape:
    text: str  # why the value outlives the iteration/call
    loop: Optional[ast.AST]


def outlives_iteration(analysis, scope: Scope, stmt, key: str, own_defs=()) -> Optional[Escape]:
    """Why ``key`` (written at ``stmt``) lives longer than one iteration/call, or None.

    ``own_defs`` are definitions that the write itself creates (``total += loss``), which
    are not re-initialisations.
    """
    index = analysis.index
    ctx = index.ctx(stmt)
    if ctx is None:
        return None
    loop = ctx.loops[-1] if ctx.loops else None
    root = key.split(".")[0]
    attr = key.rsplit(".", 1)[-1] if "." in key else None
    if attr is not None:
        if root == "self":
            if scope.name in INIT_METHODS:
                return None
            if _bounded_anywhere(analysis, key) or _reset_in(analysis, scope, key, stmt, loop, own_defs):
                return None
            owner = f"`{key}` is state of the object and outlives the call"
            return Escape(owner, loop)
        # ``obj.attr``: object state unless ``obj`` is created fresh in this iteration.
        local = analysis.flow.reaching(scope, root, stmt)
        if local and loop is not None and all(contains(loop, d.stmt) and d.kind != "for" for d in local):
            return None
        if not local and root not in _module_names(analysis):
            if loop is None:
                return None
        if loop is None and scope.is_function and local and all(d.kind != "param" for d in local):
            return None
        if _bounded_anywhere(analysis, key) or _reset_in(analysis, scope, key, stmt, loop, own_defs):
            return None
        return Escape(f"`{key}` is state of `{root}` and outlives the {'iteration' if loop else 'call'}", loop)
    defs = [d for d in scope.defs_of(key) if d not in own_defs]
    if not defs and loop is None:
        repeated = _enclosing_container(analysis, scope, key)
        if repeated is not None:
            return repeated
    if not defs:
        if scope.is_function and key in _module_names(analysis) and key not in scope.params:
            module_defs = index.module_scope.defs_of(key)
            if any(is_bounded_constructor(d.value) for d in module_defs):
                return None
            if _reset_in(analysis, scope, key, stmt, loop, own_defs):
                return None
            return Escape(f"`{key}` is a module-level global and outlives the call", loop)
        return None
    if loop is None:
        return None
    reaching = [d for d in analysis.flow.reaching(scope, key, stmt) if d not in own_defs]
    if not reaching:
        return None
    if any(d.kind == "param" for d in reaching):
        return None  # the caller's object: its lifetime is not visible here
    if any(contains(loop, d.stmt) and every_iteration(analysis, d.stmt, loop) for d in reaching):
        return None  # re-created on every iteration
    if any(is_bounded_constructor(d.value) for d in reaching):
        return None
    if _reset_in(analysis, scope, key, stmt, loop, own_defs):
        return None
    # The value escapes every loop between the store and the container's creation.
    outside = [d for d in reaching if not contains(loop, d.stmt)] or reaching
    if steps_between_refills(analysis, scope, ctx.loops, outside, stmt, key):
        return None
    # A loop whose iterations re-create the value only sometimes (``if n % log_every == 0:
    # total = 0``) does not bound it: the value still spans several of its iterations.
    escaped = [l for l in ctx.loops
               if not any(contains(l, d.stmt) and d.stmt is not stmt and every_iteration(analysis, d.stmt, l)
                          for d in outside)]
    first = min(outside, key=lambda d: d.start)
    return Escape(f"`{key}` is created before the loop (line {first.stmt.lineno}) and outlives each iteration",
                  escaped[0] if escaped else loop)


def steps_between_refills(analysis, scope: Scope, loops, defs, stmt=None, key: Optional[str] = None) -> bool:
    """Is the container re-created at the head of a loop whose every iteration is a
    training step of its own? ``for batch in loader: d_losses = []`` filled by an inner
    ``for _ in range(n_critic)`` and followed by ``g_loss.backward()`` in the batch loop:
    the list holds one step's few values and is dropped at the next step, so nothing grows
    with steps. The epoch loop of ``for epoch: losses = []; for batch in loader: ...``
    runs no step of its own (its backward is inside the batch loop): that list grows with
    every step of the epoch and stays reported."""
    refill = None
    for outer in loops:
        # re-created on every iteration, or at least on every one that stores into it (both
        # under the same ``if``): the store never sees an earlier iteration's container
        fresh = [d for d in defs if contains(outer, d.stmt) and (every_iteration(analysis, d.stmt, outer) or (
            stmt is not None and analysis.flow.dominates(d, stmt)))]
        if fresh and stmt is not None and any(start_of(d.stmt) < start_of(stmt) for d in fresh):
            # a rebinding after the store in the same iteration (``xs = torch.cat(xs)``) reaches
            # it only around the loop, through the re-creation at the top
            first = min(start_of(d.stmt) for d in fresh)
            rest = [d for d in defs if d not in fresh and not (contains(outer, d.stmt) and start_of(d.stmt) > start_of(stmt)
                                                                and first < start_of(stmt))]
        else:
            rest = [d for d in defs if d not in fresh]
        if fresh and not rest:
            refill = outer
    if refill is None and scope.is_function and all(
            analysis.index.ctx(d.stmt) is not None and not analysis.index.ctx(d.stmt).loops for d in defs):
        # ``total = 0`` once per call of a function that is one optimizer step: a gradient
        # accumulation loop fills it, then the step runs in the function's own body
        return _steps_at_level(analysis, scope, None, optimizer_only=True)
    if refill is None or refill is loops[-1]:
        return False
    return _steps_at_level(analysis, scope, refill, key=key, store=stmt)


def _steps_at_level(analysis, scope: Scope, loop, optimizer_only: bool = False, key: Optional[str] = None,
                    store=None) -> bool:
    """Does ``loop`` (the function's own body when None) run a backward pass or an
    optimizer step at its own level, not in a loop nested in it? A project helper that runs
    the backward counts when what it backpropagates is built from ``key`` (the container
    refilled there), or when the value stored at ``store`` comes back from such a helper:
    then the kept graphs are the ones each step uses, not a rollout held beside them."""
    index = analysis.index

    def own_level(stmt) -> bool:
        ctx = index.ctx(stmt)
        if ctx is None:
            return False
        return not ctx.loops if loop is None else bool(ctx.loops) and ctx.loops[-1] is loop

    def inside(node) -> bool:
        return loop is None or contains(loop, node)

    if not optimizer_only:
        for site in scope.backward_sites:
            if site.kind != "grad" and inside(site.call) and site.stmt is not None and own_level(site.stmt):
                return True
    returned = None  # whether the stored value comes back from a helper step: asked once, when needed
    for call, stmt in scope.calls:
        func = call.func
        if not optimizer_only and inside(call) and own_level(stmt) and helper_runs_backward(analysis, scope, call, stmt):
            if returned is None:
                returned = _returned_by_helper_step(analysis, scope, store)
            if returned or _consumes(analysis, scope, call, stmt, key, store):
                return True  # ``self.optimize(self.dis_opt, d_loss)``: a project helper runs the step
        if not (isinstance(func, ast.Attribute) and func.attr == "step" and inside(call) and own_level(stmt)):
            continue
        owners = [func.value.value if isinstance(func.value, ast.Subscript) else func.value] + list(call.args[:1])
        if any(_optimizer_name((dotted(o) or "").rsplit(".", 1)[-1]) for o in owners):
            return True  # ``optimizer.step()``, ``scaler.step(self.D_opt)``
    return False


def _consumes(analysis, scope: Scope, call, call_stmt, key: Optional[str], store=None) -> bool:
    """Is the container ``key``, as the store fills it, among what the call's arguments are
    built from, through definitions that keep the graph (``d_loss += criterion(torch.cat(
    all_real))`` handed to the helper; not ``torch.cat(values).detach()``)?"""
    if key is None or store is None:
        return False
    from .module_index import expr_keys

    filled = {id(d.stmt) for d in analysis.flow.reaching(scope, key, store) if d.start < start_of(store)}
    seen: set = set()
    args = list(call.args) + [k.value for k in call.keywords]
    return any(_reaches_filled(analysis, scope, n, call_stmt, key, filled, seen, 0) for a in args for n in expr_keys(a))


def _reaches_filled(analysis, scope: Scope, name: str, at, key: str, filled: set, seen: set, depth: int) -> bool:
    """Definition by definition back from ``at``: ``d_loss += crit(torch.cat(all_real))``
    reaches the filled ``all_real``; ``values = torch.cat(values).detach()`` cuts."""
    from .graph import _explicitly_detached
    from .module_index import expr_keys

    for d in analysis.flow.reaching(scope, name, at):
        if d.key == key and id(d.stmt) in filled:
            return True
        if id(d.stmt) in seen or depth > 12 or d.kind not in ("assign", "aug") or d.value is None:
            continue
        seen.add(id(d.stmt))
        if _explicitly_detached(d.value):
            continue
        if any(_reaches_filled(analysis, scope, n, d.stmt, key, filled, seen, depth + 1) for n in expr_keys(d.value)):
            return True
    return False


def _returned_by_helper_step(analysis, scope: Scope, store) -> bool:
    """``errD_total += errD`` where ``errD = self.train_Dnet(i)``, a helper that ran the
    backward of what it returns."""
    if not isinstance(store, ast.AugAssign) or not isinstance(store.value, ast.Name):
        return False
    defs = analysis.flow.reaching(scope, store.value.id, store)
    return bool(defs) and all(d.kind == "assign" and isinstance(d.value, ast.Call)
                              and helper_runs_backward(analysis, scope, d.value, d.stmt) for d in defs)


def _optimizer_name(name: str) -> bool:
    """``optimizer``, ``optimizerG``, ``optim_d``, ``D_opt``, ``opt``."""
    lowered = name.lower()
    return "optim" in lowered or any(w in ("opt", "opts") for w in words(name))


def _reset_in(analysis, scope: Scope, key: str, stmt, loop, own_defs, any_reset: bool = False) -> bool:
    """Is ``key`` emptied on every iteration of the loop (every call, outside loops), or
    bounded (popped, truncated) in it? With ``any_reset``, a reset on some iterations
    (``if step % 100 == 0: total = 0``) counts too."""
    own = {id(d.stmt) for d in own_defs}
    region = loop if loop is not None else scope.node
    for other in scope.statements:
        if other is stmt or id(other) in own:
            continue
        if region is not None and not contains(region, other):
            continue
        how = resets_of(other, key)
        if how is None:
            continue
        if how == "reassigned" and key in _expr_names(other):
            # ``total = total + x`` accumulates; ``hist = hist[-100:]`` bounds.
            if isinstance(other, ast.Assign) and isinstance(other.value, ast.Subscript):
                return True
            continue
        if how in (".pop()", ".popleft()", ".popitem()", ".remove()"):
            return True
        if any_reset:
            return True
        if every_iteration(analysis, other, loop):
            return True
    return False


def _enclosing_container(analysis, scope: Scope, key: str) -> Optional[Escape]:
    """A nested function (an optimizer closure, a callback) that writes to a container of
    the enclosing function, and runs on every iteration of a loop there: passed as an
    argument (``optimizer.step(closure)``) or called in it. The container is created before
    that loop and collects one value per call."""
    parent = scope.parent
    if not scope.is_function or parent is None or not parent.is_function or scope.class_name:
        return None
    created = [d for d in parent.defs_of(key) if d.kind == "assign"]
    if not created or len(created) != len(parent.defs_of(key)):
        return None
    index = analysis.index
    for call, stmt in parent.calls:
        passed = any(isinstance(a, ast.Name) and a.id == scope.name for a in call.args) or (
            isinstance(call.func, ast.Name) and call.func.id == scope.name)
        ctx = index.ctx(stmt)
        if not passed or ctx is None or not ctx.loops:
            continue
        loop = ctx.loops[-1]
        if any(contains(loop, d.stmt) for d in created):
            continue  # re-created in the loop that runs the function
        if _reset_in(analysis, parent, key, stmt, loop, ()):
            continue
        return Escape(f"`{key}` is created in `{parent.name}` (line {created[0].stmt.lineno}) and collects a value "
                      f"on every call of `{scope.name}`, which runs in the loop at line {loop.lineno}", None)
    return None


def every_iteration(analysis, stmt, loop) -> bool:
    """Does ``stmt`` run on every iteration of ``loop`` (every call when ``loop`` is None)?"""
    ctx = analysis.index.ctx(stmt)
    if ctx is None:
        return False
    blocks = ctx.blocks
    if loop is not None:
        inner = [i for i, b in enumerate(blocks) if b is loop]
        rest = blocks[inner[0] + 1:] if inner else blocks
    else:
        rest = blocks
    return not rest


def _bounded_anywhere(analysis, key: str) -> bool:
    """Attribute containers: bounded at creation or popped/truncated somewhere."""
    attr = "." + key.rsplit(".", 1)[-1]
    for scope in analysis.index.scopes:
        for d_key, defs in scope.defs.items():
            if d_key == key or d_key.endswith(attr):
                if any(is_bounded_constructor(d.value) for d in defs):
                    return True
        for stmt in scope.statements:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    if node.func.attr in ("pop", "popleft", "popitem", "remove"):
                        owner = ast.unparse(node.func.value)
                        if owner == key or owner.endswith(attr):
                            return True
                if isinstance(node, ast.Delete):
                    for t in node.targets:
                        if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Slice):
                            owner = ast.unparse(t.value)
                            if owner == key or owner.endswith(attr):
                                if t.slice.lower is None and t.slice.upper is not None:
                                    return True
    return False


def _module_names(analysis):
    return analysis.index.module_scope.defs


def _expr_names(stmt) -> set:
    from .module_index import expr_keys

    value = getattr(stmt, "value", None)
    return expr_keys(value)


@dataclass(frozen=True)
class Keep:
    text: str


def legitimate_keep(analysis, scope: Scope, key: str, stmt, loop) -> Optional[Keep]:
    """Why keeping graph values in ``key`` is intended, or None.

    A backward inside the loop the value escapes only consumes the kept graphs when the
    container is reset after it (gradient accumulation every k steps); otherwise each
    iteration backpropagates its own graph and the kept ones pile up.
    """
    flow = analysis.flow
    for other in _scopes_using(analysis, scope, key):
        for site in other.backward_sites:
            sources = flow.attached_sources_of(other, site.keys)
            if not (key in sources or ("." in key and any(s.endswith("." + key.rsplit(".", 1)[-1]) for s in sources))):
                continue
            if site.retain_graph or other is not scope or loop is None or not contains(loop, site.call):
                return Keep(f"`{key}` is backpropagated at line {site.call.lineno}")
            if _reset_in(analysis, scope, key, stmt, loop, (), any_reset=True):
                return Keep(f"`{key}` is backpropagated at line {site.call.lineno} and then reset")
    handed = _handed_to_backward(analysis, scope, key, stmt)
    if handed is not None:
        return handed
    sampled = sampled_store_keep(analysis, scope, key)
    if sampled is not None:
        return Keep(sampled)
    ret = flow.flows_into_return(scope, key)
    if ret is not None and "." in key and not _returns_whole(scope, key, ret):
        ret = None  # ``return [tmp1, tmp2]`` drawn from ``self.images``: the rest stays on the object
    if ret is not None:
        backward = loop_calls_backward(analysis, scope, loop) if loop is not None else function_calls_backward(analysis, scope)
        if backward is None and callers_may_backpropagate(analysis, scope) and not _returned_graph_free(analysis, scope, key):
            return Keep(f"`{key}` is returned to the caller (line {ret}), which may backpropagate it")
    return None


def _returns_whole(scope: Scope, key: str, line: int) -> bool:
    """Does a return at ``line`` hand back the object's container itself (``return
    self.hiddens``), rather than entries drawn from it?"""
    for stmt in scope.statements:
        if isinstance(stmt, ast.Return) and stmt.lineno == line and stmt.value is not None:
            values = stmt.value.elts if isinstance(stmt.value, ast.Tuple) else [stmt.value]
            return any(dotted(v) == key for v in values)
    return True  # not found: keep the caller's benefit of the doubt


def _handed_to_backward(analysis, scope: Scope, key: str, store) -> Optional[Keep]:
    """``policy_gradient_step(optimizer, log_probs, rewards)``: the container, as the loop
    filled it, is passed to a project function that runs a backward pass (itself or through
    its callees), which is what the kept graphs are for."""
    project = analysis.project
    if project is None:
        return None
    for call, stmt in scope.calls:
        if not any(dotted(a) == key for a in list(call.args) + [k.value for k in call.keywords]):
            continue
        if not handed_as_filled(analysis, scope, key, store, call):
            continue  # ``log_probs = torch.cat(log_probs).detach()`` first: only a copy is handed
        refs = analysis.graph.kinds.resolve_functions(call.func, scope, stmt)
        if refs and all(project.calls_backward(ref) for ref in refs):
            return Keep(f"`{key}` is handed to `{dotted(call.func)}` at line {call.lineno}, which runs a backward pass")
    return None


def handed_as_filled(analysis, scope: Scope, key: str, store, call) -> bool:
    """Is the container ``key``, as the store at ``store`` fills it (not rebound since, as by
    ``log_probs = torch.cat(log_probs).detach()``), an argument of ``call``?"""
    stmt = next((st for found, st in scope.calls if found is call), None)
    if stmt is None:
        return False
    filled = {id(d.stmt) for d in analysis.flow.reaching(scope, key, store)
              if d.start < start_of(store)}  # the bindings the loop fills, not later rebinds
    for arg in list(call.args) + [k.value for k in call.keywords]:
        if any(isinstance(n, ast.Name) and n.id == key for n in ast.walk(arg)) or dotted(arg) == key:
            handed = analysis.flow.reaching(scope, key, stmt)
            if handed and all(id(d.stmt) in filled or _joined_from(analysis, scope, key, d, filled) for d in handed):
                return True
    return False


def _joined_from(analysis, scope: Scope, key: str, d, filled: set) -> bool:
    """``next_actions = torch.cat(next_actions, dim=1).to(device)``: a rebinding that joins
    the filled container into one tensor, graphs and all (not ``.detach()``-ed)."""
    from .graph import _explicitly_detached

    value = d.value
    if d.kind != "assign" or d.index is not None or not isinstance(value, ast.Call) or _explicitly_detached(value):
        return False
    if not any(isinstance(n, ast.Name) and n.id == key for n in ast.walk(value)):
        return False
    if any(isinstance(n, ast.Attribute) and n.attr in ("detach", "data", "item", "numpy", "tolist")
           for n in ast.walk(value)):
        return False
    before = analysis.flow.reaching(scope, key, d.stmt)
    return bool(before) and all(id(b.stmt) in filled for b in before)


def _returned_graph_free(analysis, scope: Scope, key: str) -> bool:
    """Is every returned value that ``key`` flows into proven to carry no graph? A project
    helper that reduces the kept losses to floats (``return model.epoch_end(outputs)``,
    whose summary returns ``.item()``s) gives the caller nothing to backpropagate."""
    from .graph import _explicitly_detached
    from .module_index import expr_keys
    from .summaries import stmt_of

    found = False
    for expr in scope.returns:
        if key not in analysis.flow.sources_of(scope, expr_keys(expr)):
            continue
        found = True
        if _explicitly_detached(expr):
            continue
        stmt = stmt_of(analysis, scope, expr)
        if not isinstance(expr, ast.Call) or stmt is None:
            return False
        summary = analysis.graph.kinds.call_summary(expr, scope, stmt, 0)
        if summary is None or summary.ambiguous or analysis.graph.carrying(expr, stmt) is not None:
            return False
    return found


def _scopes_using(analysis, scope: Scope, key: str):
    if "." in key:
        return analysis.index.scopes  # object state: any method may consume it
    return [scope]


def callers_may_backpropagate(analysis, scope: Scope) -> bool:
    """False only when every caller in the linted files is known and none of them
    backpropagates what the function returns."""
    project = analysis.project
    if project is None or not scope.is_function:
        return True
    callers = project.callers(scope.name)
    if callers is None or None in callers:
        return True
    for caller_analysis, caller_scope in callers:
        for call, call_stmt in calls_named(caller_scope, scope.name):
            targets = _result_names(call_stmt, call)
            if targets is None:
                return True  # the result goes somewhere we do not follow
            for target in targets:
                if caller_analysis.flow.flows_into_backward(caller_scope, target) is not None:
                    return True
                if caller_analysis.flow.flows_into_return(caller_scope, target) is not None:
                    return True
                if _handed_to_helper_step(caller_analysis, caller_scope, target):
                    return True
    return False


def _handed_to_helper_step(analysis, scope: Scope, key: str) -> bool:
    """``adv_loss = criterion(..., rewards); self.optimize(opt, adv_loss)``: the value flows
    into what a project helper backpropagates."""
    from .module_index import expr_keys

    for call, stmt in scope.calls:
        args = list(call.args) + [k.value for k in call.keywords]
        if not args:
            continue
        keys = set().union(*(expr_keys(a) for a in args))
        if key in analysis.flow.sources_of(scope, keys) and helper_runs_backward(analysis, scope, call, stmt):
            return True
    return False


def _result_names(stmt, call):
    """Names the call's result is bound to, [] when discarded, None when it flows elsewhere."""
    if isinstance(stmt, ast.Expr) and stmt.value is call:
        return []
    if isinstance(stmt, ast.Assign) and stmt.value is call:
        names = []
        for target in stmt.targets:
            for node in ast.walk(target):
                if isinstance(node, (ast.Name, ast.Attribute)):
                    from .names import dotted

                    key = dotted(node)
                    if key:
                        names.append(key)
        return names
    return None
