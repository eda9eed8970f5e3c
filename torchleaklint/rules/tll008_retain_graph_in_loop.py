"""TLL008 retain-graph-in-loop."""

from __future__ import annotations

import ast

from ..analysis.carried import carried_states
from ..analysis.module_index import calls_named, contains, start_of
from .base import Invalid, Rule, RuleContext


class RetainGraphInLoop(Rule):
    """
    ## What it does
    Finds `backward(retain_graph=True)` inside a loop when no second backward pass (or
    `torch.autograd.grad`) uses the same graph later in that iteration. When the loop
    carries state that links iterations' graphs (TLL007), the message names it.

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
    The saved activations of every retained graph stay in memory; with carried state,
    those of all previous iterations.
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
                elif scope.is_function and _called_in_loop(analysis, scope):
                    region = scope.node  # once per call, and the callers loop
                else:
                    continue
                # A later backward anywhere in the enclosing loops may reuse the retained graph
                # (a meta-gradient after an inner loop of retained task backwards).
                outer = ctx_.loops[0] if ctx_.loops else region
                later = [other for other in scope.backward_sites
                         if other is not site and contains(outer, other.call)
                         and start_of(other.call) > start_of(site.call)]
                if later or _graph_built_outside(analysis, scope, site, stmt, region):
                    continue
                carried = [state for l in ctx_.loops for state in carried_states(analysis, scope, l)]
                message = ("`backward(retain_graph=True)` in a loop with no later backward through the same graph "
                           "in the iteration: each iteration keeps its saved tensors")
                notes = []
                if carried:
                    state = carried[0]
                    message += (f"; `{state.key}` is carried across iterations (line {state.stmt.lineno}) — "
                                f"detach it instead of retaining the graph")
                    notes.append(f"carried: `{state.key}` rebuilt from its previous value at line {state.stmt.lineno}")
                yield self.diagnostic(ctx, stmt, message, None, notes)


def _called_in_loop(analysis, scope) -> bool:
    """Is the function called from inside a loop somewhere in the linted files?"""
    project = analysis.project
    if project is None:
        return False
    for found in project.callers(scope.name) or ():
        if found is None:
            continue
        caller_analysis, caller_scope = found
        for _, stmt in calls_named(caller_scope, scope.name):
            ctx = caller_analysis.index.ctx(stmt)
            if ctx is not None and ctx.loops:
                return True
    return False


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
    return False
