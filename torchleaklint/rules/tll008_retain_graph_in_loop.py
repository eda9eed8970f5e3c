"""TLL008 retain-graph-in-loop."""

from __future__ import annotations

import ast

from ..analysis.callers import argument_evidence, calls_reaching
from ..analysis.carried import carried_states
from ..analysis.module_index import calls_named, contains, expr_keys, start_of
from ..analysis.stores import all_stores
from ..analysis.summaries import argument_of, stmt_of
from .base import Invalid, Rule, RuleContext


class RetainGraphInLoop(Rule):
    """
    ## What it does
    Finds `backward(retain_graph=True)` (or `torch.autograd.grad(..., retain_graph=True)`)
    inside a loop when no second backward pass (or `torch.autograd.grad`) uses the same
    graph later in that iteration, neither in the loop nor in a project function that a
    later call hands a value of that graph to (`balancer.step([loss_a, loss_b])`). When the loop
    carries state that links iterations' graphs (TLL007), the message names it. Not
    reported when every backpropagated local is deleted later in the same iteration or
    call (`del out`, on every path that runs the backward) without being stored,
    aliased, returned or used with autograd recording first: the retained graph is
    released there. Nor when the backpropagated value is computed from a graph made before
    the loop (`p_clean = softmax(model(x))` once, then `kl(model(x + delta), p_clean)`
    every step), or from a parameter a caller fills with a graph and the function slices
    chunk by chunk (`hyp = hyp.view(-1, n)` then `criterion(hyp[i:j], gold[i:j])`, with
    `loss /= total` in place): each iteration's backward runs through that shared graph
    again and must retain it (a leaf made with `requires_grad=True` is not such a graph).
    Nor in a helper that differentiates values its caller hands it
    (`calculate_lambda(perceptual_loss, gan_loss)`) when a caller backpropagates, later in
    the same iteration, a value sharing their graph (`vq_loss.backward()` with `vq_loss`
    built from both losses). Nor in a method that differentiates a graph the object holds
    (`self.f0`, built by another method) when the loops calling it rebuild nothing for it
    (`q = self.A(p)` once per conjugate-gradient iteration): the next call differentiates
    the same graph again. A loop that rebinds the attribute, itself or through a method of
    its class (`self.compute_loss(x, y)` before `self.update()`), gives each call a graph
    of its own, and the retained one is still reported.

    ## Why is this bad
    `retain_graph=True` keeps the saved tensors of the graph after the backward pass. It is
    needed only when the same graph is backpropagated again. It is most often added to
    silence "Trying to backward through the graph a second time", whose real cause is
    state carried across iterations without `.detach()`: the flag then makes every
    iteration keep the full graph of every earlier one.

    ## Example
    ```python
    for x, y in batches:
        output, hidden = model(x, hidden)
        loss = criterion(output, y)
        loss.backward(retain_graph=True)
        optimizer.step()
    ```

    ## Use instead
    ```python
    for x, y in batches:
        hidden = hidden.detach()
        output, hidden = model(x, hidden)
        loss = criterion(output, y)
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    No automatic fix: removing the flag is only correct once the state that made it
    necessary is detached, which is a decision about the model (see TLL007's fix).

    ## Memory impact
    Without carried state, one extra iteration's saved activations: the retained graph is
    freed when the loss is rebound in the next iteration, so the peak doubles but nothing
    grows. With carried state, those of all previous iterations: about one forward's
    activations more per iteration, for the whole run.
    """

    code = "TLL008"
    name = "retain-graph-in-loop"
    summary = "backward(retain_graph=True) in a loop where no second backward uses the graph"
    fix_availability = "never"
    repro = None

    VALID = [
        # A second backward through the shared graph in the same iteration.
        """
import torch
for x in batches:
    feats = encoder(x)
    loss_a = head_a(feats).mean()
    loss_b = head_b(feats).mean()
    loss_a.backward(retain_graph=True)
    loss_b.backward()
""",
    ]
    INVALID = [
        Invalid(
            """
import torch
for x, y in batches:
    output, hidden = model(x, hidden)
    loss = criterion(output, y)
    loss.backward(retain_graph=True)
    optimizer.step()
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        if not ctx.uses_torch:
            return
        analysis = ctx.analysis
        index = analysis.index
        for scope in index.scopes:
            for site in scope.backward_sites:
                if not _retain_true(site.call):
                    continue  # a computed flag (``retain_graph=i < n - 1``) is a deliberate choice
                stmt = site.stmt
                ctx_ = index.ctx(stmt) if stmt is not None else None
                if ctx_ is None:
                    continue
                if ctx_.loops:
                    region = ctx_.loops[-1]
                elif scope.is_function and _called_in_loop(analysis, scope) \
                        and not _dies_with_call(analysis, scope, site):
                    region = scope.node  # once per call, and the callers loop
                else:
                    continue
                # A later backward anywhere in the enclosing loops may reuse the retained graph
                # (a meta-gradient after an inner loop of retained task backwards).
                outer = ctx_.loops[0] if ctx_.loops else region
                later = [other for other in scope.backward_sites
                         if other is not site and contains(outer, other.call)
                         and start_of(other.call) > start_of(site.call)
                         and _may_share_graph(analysis, scope, site, other)]
                if later or _graph_built_outside(analysis, scope, site, stmt, region) \
                        or _released(analysis, scope, site, region) \
                        or _handed_to_backward(analysis, scope, site, outer) \
                        or (not ctx_.loops and _returned_for_backward(analysis, scope, site)) \
                        or (not ctx_.loops and _caller_backpropagates_later(analysis, scope, site)) \
                        or (not ctx_.loops and _object_graph_differentiated_again(analysis, scope, site)):
                    continue
                carried = [state for l in ctx_.loops for state in carried_states(analysis, scope, l)]
                written = _as_written(site.call)
                holder = f"`{site.keys[0]}`" if site.keys else "the backpropagated value"
                where = "in a loop" if ctx_.loops else f"in `{scope.name}`, which is called in a loop,"
                message = (f"`{written}` {where} with no later backward or `autograd.grad` through the same graph: "
                           f"the saved tensors of each iteration's forward stay alive until {holder} is rebound or "
                           f"goes out of scope, so two iterations' activations are held at the peak for nothing")
                notes = [f"call: `{written}` at line {site.call.lineno}; no later backward in the loop uses its graph"]
                if carried:
                    state = carried[0]
                    message = (f"`{written}` {where} while `{state.key}` is carried across iterations (line "
                               f"{state.stmt.lineno}): every iteration's graph stays linked to the next, so the "
                               f"retained saved tensors grow by about one forward's activations per iteration "
                               f"(1M iterations: 1M forwards' worth) — detach `{state.key}` instead of retaining "
                               f"the graph")
                    notes.append(f"carried: `{state.key}` rebuilt from its previous value at line {state.stmt.lineno}")
                yield self.diagnostic(ctx, stmt, message, None, notes)


def _as_written(call) -> str:
    """The call as the code spells it: ``loss.backward(retain_graph=True)``,
    ``torch.autograd.grad(..., retain_graph=True)``."""
    others = bool(call.args) or any(k.arg != "retain_graph" for k in call.keywords)
    return f"{ast.unparse(call.func)}({'..., ' if others else ''}retain_graph=True)"


def _graph_family(analysis, scope, site, depth: int = 2):
    """Names the backpropagated value was computed from (``loss = loss_a + loss_b``): they
    share its graph."""
    family = set(site.keys)
    frontier = set(site.keys)
    for _ in range(depth):
        found = set()
        for key in frontier:
            for d in analysis.flow.reaching(scope, key, site.stmt):
                value = getattr(d, "value", None)
                if d.kind == "assign" and value is not None:
                    found |= {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
                if d.kind == "assign" and d.index is not None and isinstance(d.stmt, ast.Assign):
                    # ``pred, features = netD(x, True)``: both outputs of one forward share its graph
                    found |= {n.id for t in d.stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        frontier = found - family
        family |= found
    return family - set(scope.params)


def _ancestry(analysis, scope, site, limit: int = 64):
    """Every name and attribute path the backpropagated value was computed from in this
    scope, followed through each definition that reaches its use (``gp = ((g - 1) ** 2).sum()``
    after ``g = grad(D(x), x)[0]`` gives ``g``, ``D``, ``x``, …), imported names left out;
    ``None`` when the backward names no value or the chain is too long to follow."""
    return _names_behind(analysis, scope, site.keys, site.stmt, limit) if site.keys else None


def _names_behind(analysis, scope, keys, stmt, limit: int = 64):
    """The names and attribute paths the values of ``keys`` at ``stmt`` were computed from,
    imported names left out; ``None`` when the chain is too long to follow."""
    imported = set(analysis.index.imports.aliases)
    seen = set(keys)
    frontier = [(key, stmt) for key in keys]
    followed = set()  # (name, statement): a rebound name (``g = flat(g)``) is followed to each definition
    while frontier:
        key, at = frontier.pop()
        if (key, id(at)) in followed:
            continue
        followed.add((key, id(at)))
        for d in analysis.flow.reaching(scope, key, at):
            for found in expr_keys(getattr(d, "value", None)) - imported:
                seen.add(found)
                frontier.append((found, d.stmt))
        if len(followed) > limit:
            return None
    return seen


def _may_share_graph(analysis, scope, site, other) -> bool:
    """Can the later backward (or ``autograd.grad``) run through the graph the first one
    retained? Only if their values have a common ancestor in the scope (an activation, an
    input, a module, a parameter of the function, an attribute): two losses computed from
    disjoint names (a critic's score on detached samples, then a penalty on a fresh forward
    of other inputs) build separate graphs, and the first one's saved tensors are never read
    again. When either value cannot be traced, they may share it."""
    first, second = _ancestry(analysis, scope, site), _ancestry(analysis, scope, other)
    return first is None or second is None or bool(first & second)


def _handed_to_backward(analysis, scope, site, outer) -> bool:
    """A later call in the iteration hands a value of the same graph to a project function
    that backpropagates or differentiates it (``balancer.step([loss_a, loss_b])`` whose
    ``step`` calls ``loss.backward()``, a Hessian-vector product of the KL that came out of
    the same forward): that second pass needs the retained graph."""
    project = analysis.project
    if project is None:
        return False
    family = _graph_family(analysis, scope, site)
    after = start_of(site.call)
    for call, stmt in scope.calls:
        if start_of(call) <= after or not contains(outer, call):
            continue
        args = list(call.args) + [k.value for k in call.keywords]
        if not any(isinstance(n, ast.Name) and n.id in family for a in args for n in ast.walk(a)):
            # ``old_kl = sum(old_kls) / n`` handed on, ``old_kls`` an output of the same forward
            behind = _names_behind(analysis, scope, {n.id for a in args for n in ast.walk(a)
                                                     if isinstance(n, ast.Name)}, stmt, limit=16)
            if not behind or not (behind - {"self"} - set(scope.params)) & family:
                continue
        refs = analysis.graph.kinds.resolve_functions(call.func, scope, stmt)
        if not refs and isinstance(call.func, ast.Attribute):
            # ``self.agent.hessian_vector_product(kl, params)``: the project functions of that name
            refs = project.functions_named(call.func.attr)
            if len(refs) > MAX_NAMESAKES:
                refs = []
        if refs and all(project.computes_gradients(ref) for ref in refs):
            return True
    return False


MAX_NAMESAKES = 3  # project functions a method call by name alone may reach


def _dies_with_call(analysis, scope, site) -> bool:
    """Is every backpropagated value a local of the function (not a parameter, not object
    state) that is neither returned nor stored anywhere? Then the retained graph loses its
    last reference when the call returns, before the caller's next iteration: nothing is
    held across iterations (``kl_grads = autograd.grad(kl.mean(), probs, retain_graph=True)``
    in a trust-region helper that runs no forward of its own)."""
    keys = set(site.keys)
    if not keys or any("." in k or k in scope.params for k in keys):
        return False
    kinds = analysis.graph.kinds
    if any(kinds.module_call(call, scope, stmt) is not None for call, stmt in scope.calls):
        return False  # it runs a forward itself: the modules may keep its activations (attention maps, hooks)
    for node in ast.walk(scope.node):
        if isinstance(node, ast.Return) and node.value is not None and keys & expr_keys(node.value):
            return False
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(node, (ast.Global, ast.Nonlocal)) and keys & set(node.names):
            return False
        if isinstance(node, ast.Assign) and keys & expr_keys(node.value) and any(
                not isinstance(t, ast.Name) for t in node.targets):
            return False  # ``self.kl = kl`` or ``out[k] = kl``: kept beyond the call
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STORE_CALLS \
                and any(keys & expr_keys(a) for a in node.args):
            return False
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and node is not scope.node:
            return False  # a closure may keep it
    return True


def _returned_for_backward(analysis, scope, site) -> bool:
    """The function returns a value of the retained graph (``loss`` computed from the
    ``logits`` it backpropagated with ``retain_graph=True`` for Grad-CAM): its caller's
    backward runs through that graph, which is what it was retained for."""
    if not scope.is_function or not scope.returns:
        return False
    mine = _ancestry(analysis, scope, site)
    if mine is None:
        return True
    mine = mine - {"self"} - set(scope.params)
    after = start_of(site.call)
    for expr in scope.returns:
        stmt = stmt_of(analysis, scope, expr)
        if stmt is None or start_of(stmt) <= after or analysis.graph.carrying(expr, stmt) is None:
            continue  # ``return loss.item()``: nothing of the graph leaves
        returned = _names_behind(analysis, scope, expr_keys(expr), stmt)
        if returned is None or returned & mine:
            return True  # computed from the retained graph, or too long a chain to say it is not
    return False


MAX_CALLERS = 8  # callers of a helper judged


def _caller_backpropagates_later(analysis, scope, site) -> bool:
    """The helper differentiates values its caller hands it (``calculate_lambda(
    perceptual_loss, gan_loss)`` running ``autograd.grad(..., retain_graph=True)`` on each),
    and a caller runs a backward later in the same iteration through a graph those values
    share (``vq_loss = perceptual_loss + q_loss + lam * gan_loss; vq_loss.backward()``):
    that backward needs what the helper retained."""
    project = analysis.project
    keys = set(site.keys)
    if project is None or not keys or not keys <= set(scope.params):
        return False
    for found in calls_reaching(analysis, scope, MAX_CALLERS):
        if found is None:
            continue
        caller_analysis, caller_scope, call, stmt, _ = found
        args = [argument_of(call, scope, key) for key in keys]
        if any(arg is None for arg in args):
            continue
        handed = _names_behind(caller_analysis, caller_scope, {k for a in args for k in expr_keys(a)}, stmt)
        ctx = caller_analysis.index.ctx(stmt)
        outer = ctx.loops[0] if ctx is not None and ctx.loops else caller_scope.node
        for other in caller_scope.backward_sites:
            if not contains(outer, other.call) or start_of(other.call) <= start_of(call):
                continue
            later = _ancestry(caller_analysis, caller_scope, other)
            if handed is None or later is None or (handed - {"self"}) & later:
                return True
    return False


def _object_graph_differentiated_again(analysis, scope, site) -> bool:
    """The helper differentiates a graph the object holds (``self.f0``, built once per outer
    step by another method), and the loops that call it build nothing new for it (``for i
    in range(n_cg): q = self.A(p)`` computing one Hessian-vector product per iteration of
    conjugate gradient): the next call differentiates the same graph again, so each call
    must retain it. Not when a loop calling it also rebinds the attribute, directly or
    through a method of the same class: then each call has a graph of its own."""
    keys = set(site.keys)
    if not keys or not all(k.startswith("self.") for k in keys) or any(scope.defs_of(k) for k in keys):
        return False
    looping = 0
    for found in _calls_in_loops(analysis, scope):
        if found is None:
            return False  # a caller the analysis cannot place
        caller_analysis, caller_scope, loop = found
        looping += 1
        if _rebinds_in_loop(caller_analysis, caller_scope, loop, keys):
            return False
    return looping > 0


def _rebinds_in_loop(analysis, scope, loop, keys) -> bool:
    """Does the loop assign one of the ``self.*`` keys, or call a method of the caller's
    class that does?"""
    attrs = {k.split(".", 1)[1] for k in keys}
    for node in ast.walk(loop):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for t in ast.walk(target):
                    if isinstance(t, ast.Attribute) and t.attr in attrs:
                        return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "self" and scope.class_name:
            for other in analysis.index.scopes:
                if other.class_name == scope.class_name and other.name == node.func.attr \
                        and any(other.defs_of(k) for k in keys):
                    return True
    return False


def _called_in_loop(analysis, scope) -> bool:
    """Is the function called from inside a loop somewhere in the linted files?"""
    return any(found is not None for found in _calls_in_loops(analysis, scope))


def _calls_in_loops(analysis, scope):
    """(caller analysis, caller scope, outermost loop) for each call spelled with the
    function's name inside a loop, found by name so that a base class's ``self.A(p)``
    dispatching to the override counts; None for a caller the analysis cannot place."""
    project = analysis.project
    if project is None:
        return
    for found in project.callers(scope.name) or ():
        if found is None:
            yield None
            continue
        caller_analysis, caller_scope = found
        for _, stmt in calls_named(caller_scope, scope.name):
            ctx = caller_analysis.index.ctx(stmt)
            if ctx is not None and ctx.loops:
                yield caller_analysis, caller_scope, ctx.loops[0]


STORE_CALLS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "register_hook"})


def _released(analysis, scope, site, region) -> bool:
    """Every backpropagated local is deleted later in the same iteration or call (``del
    output`` after ``output.backward(g, retain_graph=True)``, on every path that runs the
    backward) and none was stored, aliased or returned before that: the retained graph loses its last reference there, so no
    iteration's graph outlives the iteration."""
    keys = [k for k in site.keys if "." not in k and k not in scope.params]
    if not keys or len(keys) != len(site.keys):
        return False
    after = start_of(site.call)
    where = analysis.index.ctx(site.stmt)
    deleted_at = {}
    for node in ast.walk(region):
        ctx = analysis.index.ctx(node) if isinstance(node, ast.Delete) else None
        if ctx is not None and start_of(node) > after and where is not None \
                and tuple(ctx.blocks) == tuple(where.blocks)[:len(ctx.blocks)]:  # runs whenever the backward does
            for target in node.targets:
                for name in ([target] if isinstance(target, ast.Name) else getattr(target, "elts", [])):
                    if isinstance(name, ast.Name) and name.id in keys:
                        deleted_at.setdefault(name.id, start_of(node))
    if set(deleted_at) != set(keys):
        return False
    last = max(deleted_at.values())
    for node in ast.walk(region):
        if not isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)) \
                or not start_of(node) < last:
            continue
        value = node.value
        if value is None or not any(isinstance(n, ast.Name) and n.id in keys for n in ast.walk(value)):
            continue
        ctx = analysis.index.ctx(node)
        if isinstance(node, ast.Expr) and not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                                               and value.func.attr in STORE_CALLS):
            continue  # used, not kept
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets) \
                and not isinstance(value, ast.Name) and ctx is not None and ctx.grad_off:
            continue  # a new local computed from it without recording a graph
        return False  # stored, aliased, returned or computed with a graph: it may outlive the ``del``
    return True


def _retain_true(call) -> bool:
    return any(k.arg == "retain_graph" and isinstance(k.value, ast.Constant) and k.value.value is True
               for k in call.keywords)


def _graph_built_outside(analysis, scope, site, stmt, region) -> bool:
    """Is the backpropagated graph built before the loop, so that later iterations
    backpropagate it again (one class score per iteration, Hessian-vector products)?"""
    if region is scope.node:
        return False
    for key in site.keys:
        for d in analysis.flow.reaching(scope, key, stmt):
            if d.stmt is region or not contains(region, d.stmt):
                return True  # made before the loop, or an element of what the loop iterates
    return _ancestor_graph_before_loop(analysis, scope, site, region)


def _ancestor_graph_before_loop(analysis, scope, site, region, limit: int = 96) -> bool:
    """Is the backpropagated value computed from a graph made before the loop (``p_natural
    = softmax(model(x))`` once, then ``kl(model(x_adv), p_natural)`` every step)? Each
    iteration's backward runs through that shared graph again, so each must retain it. Only
    a name whose every definition reaching its use lies before the loop counts (state the
    loop rebinds is TLL007's business), and only a value computed by an operation that
    records a graph: a leaf (``requires_grad=True``) has no saved tensors to lose."""
    imported = set(analysis.index.imports.aliases)
    frontier = [(key, site.stmt) for key in site.keys]
    followed = set()
    while frontier:
        key, at = frontier.pop()
        if (key, id(at)) in followed or "." in key:
            continue
        followed.add((key, id(at)))
        if len(followed) > limit:
            return False
        defs = list(analysis.flow.reaching(scope, key, at))
        if defs and all(d.stmt is not region and contains(region, d.stmt) for d in defs):
            for d in defs:
                for found in expr_keys(getattr(d, "value", None)) - imported:
                    frontier.append((found, d.stmt))
                if d.kind == "aug":
                    frontier.append((key, d.stmt))  # ``loss /= n`` reads the ``loss`` before it
            continue
        if not defs or any(contains(region, d.stmt) and d.stmt is not region for d in defs):
            continue
        for d in defs:
            value = getattr(d, "value", None)
            if d.kind == "assign" and value is not None and not _makes_leaf(value) \
                    and (analysis.graph.carrying(value, d.stmt) is not None
                         or _joins_graphs(analysis, scope, value, d.stmt)
                         or _filled_by_caller_with_graph(analysis, scope, value)):
                return True
    return False


def _filled_by_caller_with_graph(analysis, scope, value) -> bool:
    """``hyp = hyp.view(-1, n)`` of a parameter a caller fills with a model's output
    (``self.batch_loss_backward(criterion, model(src), gold)``): a backward through a slice
    of it needs the caller's graph, so every chunk but the last must retain it."""
    names = [n.id for n in ast.walk(value) if isinstance(n, ast.Name) and n.id in scope.params and n.id != "self"]
    return any(argument_evidence(analysis, scope, name) is not None for name in dict.fromkeys(names))


def _joins_graphs(analysis, scope, value, stmt) -> bool:
    """``torch.stack(pred_actions, 1)`` of a list the function filled with module outputs."""
    if not (isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name)
            and isinstance(value.func, ast.Attribute) and value.func.attr in ("stack", "cat", "concat")):
        return False
    name = value.args[0].id
    graph = analysis.graph
    return any(site.container == name and start_of(site.stmt) < start_of(stmt)
               and graph.carrying(site.value, site.stmt) is not None
               for site in all_stores(analysis, scope))


def _makes_leaf(value) -> bool:
    """``torch.zeros(n, requires_grad=True)``, ``nn.Parameter(w)``, ``x.requires_grad_()``:
    a leaf tensor, whose backward keeps no saved tensors."""
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("Parameter", "requires_grad_") or any(k.arg == "requires_grad" for k in value.keywords)
