"""TLL001 graph-tensor-stored."""

from __future__ import annotations

import ast

from ..analysis.backward_reach import gradient_points
from ..analysis.callers import argument_evidence
from ..analysis.carried import detached_read
from ..analysis.graph import CONVENTION
from ..analysis.held_elsewhere import held_elsewhere
from ..analysis.returned_graph import part_of_returned_graph
from ..analysis.names import dotted
from ..analysis.numpy_buffers import numeric_array
from ..analysis.per_call_containers import bounded_per_call
from ..analysis.lifetimes import handed_as_filled, legitimate_keep, outlives_iteration
from ..analysis.loops import function_calls_backward, loop_calls_backward
from ..analysis.stepped_state import module_method
from ..analysis.stores import all_stores
from ..analysis.uses import classify_uses
from ..analysis.volatile import volatile_input
from .base import Invalid, Rule, RuleContext
from .detach_fix import FIX_STYLES, build_fix, carrying_parts


class GraphTensorStored(Rule):
    """
    ## What it does
    Finds tensors that carry an autograd graph being stored in a container that outlives
    the loop iteration (or the call, for `self.*` and module-level containers):
    `losses.append(loss)`, `history["loss"].append(loss)`, `outputs[i] = out`,
    `hist += [loss]`, `seen.add(out)`. A nested function that runs once per iteration of
    its enclosing function's loop (an optimizer closure passed to `optimizer.step(closure)`)
    and stores into that function's list counts too. A receiver built by a class we
    cannot see (`metric = Accumulator(3)`; `metric.add(l)`) is not taken for a container.
    Files that hold tests are not checked: a test keeps what it builds for one short run.
    Not reported for a list a function builds afresh on each call and fills over a
    training loop of fixed length (`for a in range(self.n_agents)`, not a loop over data,
    each iteration backpropagating), when the function itself is one step of a loop in its
    callers: what it keeps lives for one step. Nor for a local list nothing reads (only
    grown) in a function that returns values computed from what it stores (`z_list.append(z)`
    beside predictions decoded from `z`) to a caller that backpropagates them: the list dies
    with the call, and its entries are part of the returned graph until that backward anyway.

    ## Why is this bad
    A tensor produced by a forward pass references its `grad_fn`, and through it the
    whole graph of the step: autograd nodes, saved activations, and the inputs they
    hold. Storing it keeps all of that alive after the step is over, so memory grows by
    one graph per iteration until the run dies of OOM. (Seed incident: storing
    `actor_loss`/`critic_loss` per update grew RAM to 175 GB in seven generations.)

    ## Example
    ```python
    losses = []
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss)
    print(sum(losses) / len(losses))
    ```

    ## Use instead
    ```python
    losses = []
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    print(sum(losses) / len(losses))
    ```

    ## Fix safety
    The fix appends `.item()` when the value is a scalar loss and every later use of the
    container treats its elements as numbers; `.detach().clone()` for scalar losses that
    must stay tensors; `.detach()` for other tensors. It is **safe** when the value is
    proven to be a tensor (and, for `.item()`, a scalar with numeric uses only); it is
    **unsafe** when the evidence is a naming convention or a use of the container could
    not be followed (returned, passed to unknown code). A value proven a tensor on some
    paths only (`loss if step else 0.0`, a name that a branch sets to a float, a helper
    that may return a number) is fixed on its tensor branch (`loss.item() if step else
    0.0`) or gets an unsafe fix; `loss or 0` and `loss and x` get unsafe fixes. Set
    `[tool.torchleaklint.tll001] fix-style = "item" | "detach"` to force a style.

    ## Memory impact
    One full autograd graph per iteration: for a loss, every activation saved by the
    forward pass (often MBs to GBs per step on a real model), until the container dies.
    """

    code = "TLL001"
    name = "graph-tensor-stored"
    summary = "A graph-carrying tensor is stored in a container that outlives the iteration"
    fix_availability = "sometimes"
    repro = "tll001_loss_list"
    default_options = {"fix-style": "auto"}
    option_choices = {"fix-style": FIX_STYLES}

    VALID = [
        # Detached before storing.
        """
import torch
losses = []
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    losses.append(loss.item())
""",
        # The container is consumed by one backward.
        """
import torch
parts = []
for head in heads:
    parts.append(criterion(head(x), y))
torch.stack(parts).sum().backward()
""",
        # Work under no_grad.
        """
import torch
preds = []
with torch.no_grad():
    for x in loader:
        preds.append(model(x))
""",
    ]
    INVALID = [
        Invalid(
            """
import torch
losses = []
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    losses.append(loss)
print(sum(losses) / len(losses))
""",
            fixed="""
import torch
losses = []
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    losses.append(loss.item())
print(sum(losses) / len(losses))
""",
        ),
        Invalid(
            """
import torch
import torch.nn as nn
model = nn.Linear(4, 1)
history = {"out": []}
for x in batches:
    out = model(x)
    out.sum().backward()
    history["out"].append(out)
""",
            fixed="""
import torch
import torch.nn as nn
model = nn.Linear(4, 1)
history = {"out": []}
for x in batches:
    out = model(x)
    out.sum().backward()
    history["out"].append(out.detach())
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        if not ctx.uses_torch or ctx.in_test_module:
            return  # a test keeps what it builds for one short run, not across training steps
        analysis = ctx.analysis
        graph = analysis.graph
        for scope in analysis.index.scopes:
            if volatile_input(analysis, scope) is not None:
                continue  # inputs built volatile (PyTorch before 0.4): its forwards record no graph
            for site in all_stores(analysis, scope):
                if site.how == "setitem" and (isinstance(site.key_expr, ast.Constant)
                                              or _key_of_mapping_loop(analysis, site)):
                    continue  # overwritten every iteration: at most one graph alive (per key)
                if site.how == "setitem" and numeric_array(analysis, scope, site.container, site.stmt):
                    continue  # ``buf[i] = v`` into ``np.zeros(n)``: the array keeps a number
                if site.call is not None and graph.kinds.resolve_functions(site.call.func, scope, site.stmt):
                    continue  # ``metric.add(x)`` on a project class: its own method, judged by TLL002's summaries
                if site.call is not None and _class_instance(analysis, scope, site):
                    continue  # ``metric = Accumulator(4)``: a method of a class we cannot see, not a container
                evidence = graph.carrying(site.value, site.stmt) or _passed_in(analysis, scope, site)
                if evidence is None or _joined_as_text(scope, site.container):
                    continue
                own = [d for d in scope.defs_of(site.container) if d.kind == "aug"]
                escape = outlives_iteration(analysis, scope, site.stmt, site.container, own_defs=own)
                if escape is None:
                    continue
                if legitimate_keep(analysis, scope, site.container, site.stmt, escape.loop) is not None:
                    continue
                if held_elsewhere(analysis, scope, site.value, site.container, site.stmt):
                    continue  # a reference to a tensor a container made before the loop holds anyway
                if part_of_returned_graph(analysis, scope, site.value, site.container):
                    continue  # an unread local list of values the returned graph holds anyway
                if "." not in site.container and module_method(analysis, scope):
                    continue  # a local list of an nn.Module method builds that module's output
                trains = self._trains(analysis, scope, escape.loop)
                if trains and bounded_per_call(analysis, scope, site.container, site.stmt) is not None:
                    continue  # one step's values, their graphs backpropagated, over a loop of fixed length
                per_call = None
                if not trains and not _forward_kept_without_backward(analysis, scope, site, evidence, escape):
                    per_call = _kept_on_object_per_call(analysis, scope, site, evidence, escape)
                    if per_call is None:
                        continue  # no backward pass runs: a forward being built or evaluation (TLL009)
                stores = [s.stmt for s in all_stores(analysis, scope) if s.container == site.container]
                owner = scope
                if not scope.defs_of(site.container) and scope.parent is not None and \
                        scope.parent.defs_of(site.container):
                    owner = scope.parent  # a closure's container: its uses are in the enclosing function
                uses, why = classify_uses(analysis, owner, site.container, skip_stmts=stores, container=True)
                fix = build_fix(ctx, carrying_parts(ctx, site.value, site.stmt), uses, why)
                value = " ".join(ctx.text_of(site.value).split())
                if len(value) > 40:
                    value = value[:37] + "..."
                lifetime = "iteration" if escape.loop is not None else "call"
                if per_call is not None:
                    message = (f"`{value}` carries an autograd graph and is stored in `{site.container}` on every "
                               f"call of `{scope.name}` ({per_call}); no backward pass uses what it keeps, so "
                               f"each call's graph stays alive until the container is cleared")
                elif trains:
                    message = (f"`{value}` carries an autograd graph and is stored in `{site.container}`, "
                               f"which outlives the {lifetime}; each step's graph stays alive")
                else:
                    message = (f"`{value}` carries an autograd graph and is stored in `{site.container}`, "
                               f"which outlives the iteration; no backward pass runs here or is handed "
                               f"`{site.container}`, and grad is on "
                               f"(no `no_grad` on any path to this loop), so every iteration's graph and "
                               f"saved activations stay alive")
                if evidence.strength == CONVENTION:
                    message += " (evidence is a naming convention)"
                notes = [f"graph: {evidence.describe()}", f"lifetime: {escape.text}"]
                if why:
                    notes.append(f"fix: {why}")
                yield self.diagnostic(ctx, site.stmt, message, fix, notes)
            yield from self._comprehension_keeps(ctx, scope)

    def _comprehension_keeps(self, ctx, scope):
        """``outputs = [model.validation_step(b) for b in loader]`` where no backward runs:
        the list holds one graph per element, with the activations saved for a backward
        that never comes. A comprehension inside a loop of a function is rebuilt on every
        iteration and holds one iteration's values: no growth to report, and the forward
        run with grad on is TLL009's finding there (which does not judge a script's
        top-level code)."""
        analysis = ctx.analysis
        if not _no_backward_outside_modules(analysis, scope):
            return
        for stmt in scope.statements:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                    and isinstance(stmt.value, ast.ListComp)):
                continue
            key = stmt.targets[0].id
            placed = analysis.index.ctx(stmt)
            if scope.is_function and placed is not None and placed.loops:
                continue  # rebuilt on every iteration: one iteration's values, no growth (grad mode is TLL009's)
            if _pieces_only(stmt.value):
                continue  # ``[(h[0][i], h[1][i]) for i in range(n)]``: views of a value alive anyway, no new graph
            evidence = analysis.graph.carrying(stmt.value, stmt)
            if evidence is None or evidence.strength == CONVENTION:
                continue
            if legitimate_keep(analysis, scope, key, stmt, None) is not None:
                continue
            message = (f"`{key}` keeps one graph-carrying value per element of the comprehension; no backward "
                       f"pass runs here and grad is on (no `no_grad` on any path to it), so every element's "
                       f"graph and saved activations stay alive")
            yield self.diagnostic(ctx, stmt, message, None, [f"graph: {evidence.describe()}"])

    @staticmethod
    def _trains(analysis, scope, loop) -> bool:
        """Is this training code? Kept graphs pile up where every iteration (or call) runs a
        backward pass; elsewhere a kept output is a forward being built or evaluation."""
        if loop is not None:
            return loop_calls_backward(analysis, scope, loop) is not None
        if function_calls_backward(analysis, scope) is not None:
            return True
        project = analysis.project
        return (scope.name == "training_step" and scope.class_name is not None and project is not None
                and project.is_lightning_class(analysis.index.module_name, scope.class_name))


PIECE_NODES = (ast.Subscript, ast.Tuple, ast.List, ast.Name, ast.Attribute, ast.Constant, ast.Slice,
               ast.Load, ast.Store)


def _pieces_only(comp: ast.ListComp) -> bool:
    """Are the comprehension's elements only pieces of existing values (indexing, tuples of
    them)? Such a list records no graph of its own: each element is a view of a value that
    holds its graph anyway, so the list keeps nothing per element."""
    return all(isinstance(node, PIECE_NODES) for node in ast.walk(comp.elt))


def _forward_kept_without_backward(analysis, scope, site, evidence, escape) -> bool:
    """A loop that keeps forward outputs or losses of its own and never runs a backward
    (``samples.append(G(z))`` in a sampling script without ``no_grad``): each kept value
    holds its whole graph with the activations saved for a backward that never comes.
    Only a local (or module-level) container filled in a loop of this function, with
    proof from a module call or a loss (not a naming convention), outside the methods of
    an nn.Module (whose outputs feed their caller's graph)."""
    if escape.loop is None or evidence.strength == CONVENTION or "." in site.container:
        return False
    if site.how == "setitem":
        return False  # ``outputs[t] = out``: a buffer filled once per sequence, bounded by its size
    # A backward here, or in a project function handed the container itself (``loss_fn(
    # policies, values)`` that calls ``.backward()``), consumes them. (Module methods' local
    # lists were set aside by the caller.)
    if scope.backward_sites:
        return False
    return not any(handed_as_filled(analysis, scope, site.container, site.stmt, call)
                   for call, _ in gradient_points(analysis, scope))


def _kept_on_object_per_call(analysis, scope, site, evidence, escape):
    """``self.images.append(image)`` or ``memory.logprobs.append(...)`` in a method that a
    loop calls (an image pool fed generator outputs, an agent's per-step ``act``): the
    object's container gains one graph per call. Where the loop is, or None. Not for an
    nn.Module's ``forward``, whose kept outputs belong to its caller's graph."""
    if escape.loop is not None or "." not in site.container or evidence.strength == CONVENTION:
        return None
    if scope.name in ("forward", "__call__") and module_method(analysis, scope):
        return None
    if scope.backward_sites or _backpropagated_elsewhere(analysis, site.container):
        return None
    from ..analysis.repetition import repeated_call_site

    return repeated_call_site(analysis, scope, container=site.container, graphs=True)


def _passed_in(analysis, scope, site):
    """``self.images.append(image)`` in a method whose callers pass a graph-carrying value
    for the parameter ``image`` (an image pool fed the generators' outputs): what the callers
    pass is what is kept. Only for object state, which outlives the call."""
    value = site.value
    if not (isinstance(value, ast.Name) and value.id in scope.params and scope.class_name
            and site.container.startswith("self.")):
        return None
    if any(d.kind != "param" for d in analysis.flow.reaching(scope, value.id, site.stmt)):
        return None  # rebound before the store: its own value decides
    return argument_evidence(analysis, scope, value.id)


def _backpropagated_elsewhere(analysis, container: str) -> bool:
    """Does a function of this module that runs a backward pass read the container's
    attribute without detaching it (REINFORCE: ``select_action`` appends to
    ``policy.saved_log_probs``, ``finish_episode`` builds the loss from it and clears it)?"""
    attr = container.rsplit(".", 1)[-1]
    for other in analysis.index.scopes:
        if not other.is_function or not other.backward_sites:
            continue
        for stmt in other.statements:
            root = stmt.iter if isinstance(stmt, (ast.For, ast.AsyncFor)) else getattr(stmt, "value", None)
            if not isinstance(root, ast.AST):
                continue
            for node in ast.walk(root):
                if isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.ctx, ast.Load) \
                        and not detached_read(node, root):
                    return True
    return False


def _no_backward_outside_modules(analysis, scope) -> bool:
    """No backward (nor ``autograd.grad``) runs in this function, which is not a method of
    an nn.Module (whose outputs feed the caller's graph)."""
    return not scope.backward_sites and not module_method(analysis, scope)


def _key_of_mapping_loop(analysis, site) -> bool:
    """``inputs[key] = f(val)`` in ``for key, val in features.items()``: one slot per key of
    a mapping, rewritten on every pass; the container holds at most one value per key."""
    key = site.key_expr
    ctx = analysis.index.ctx(site.stmt)
    if not isinstance(key, ast.Name) or ctx is None or not ctx.loops:
        return False
    loop = ctx.loops[-1]
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    source, target = loop.iter, loop.target
    if not (isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute)
            and source.func.attr in ("items", "keys") and not source.args):
        return False
    first = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
    return isinstance(first, ast.Name) and first.id == key.id


def _joined_as_text(scope, container: str) -> bool:
    """``"\n".join(context)``: the container's elements are strings (a tensor cannot be
    joined), whatever the module that produced them is annotated as."""
    for call, _ in scope.calls:
        func = call.func
        if (isinstance(func, ast.Attribute) and func.attr == "join" and isinstance(func.value, ast.Constant)
                and isinstance(func.value.value, str) and len(call.args) == 1 and not call.keywords
                and dotted(call.args[0]) == container):
            return True
    return False


_CONTAINER_CLASSES = frozenset({"list", "dict", "set", "deque", "defaultdict", "OrderedDict", "Counter",
                                "ChainMap", "SortedList", "UserList", "UserDict"})


def _class_instance(analysis, scope, site) -> bool:
    """Is the receiver of ``c.add(v)`` built by calling a class other than a builtin container
    (``metric = d2l.Accumulator(4)``)? Its method may do anything with the value; a wrong guess
    about which class it is (several project classes share the method name) is worse than none."""
    if "." in site.container or not isinstance(site.target, ast.Name):
        return False
    defs = analysis.flow.reaching(scope, site.container, site.stmt)
    if not defs:
        return False
    for d in defs:
        value = d.value
        if d.kind != "assign" or d.index is not None or not isinstance(value, ast.Call):
            return False
        name = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
        if not name[:1].isupper() or name in _CONTAINER_CLASSES:
            return False
    return True

