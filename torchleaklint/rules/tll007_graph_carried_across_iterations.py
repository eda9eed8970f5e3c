"""TLL007 graph-carried-across-iterations."""

from __future__ import annotations

import ast

from ..analysis.volatile import volatile_input
from ..analysis.carried import bound_value, carried_states, detached_read, initial_value, reads_of, rebuilt_keys
from ..analysis.graph import CONVENTION
from ..analysis.names import dotted
from ..analysis.loops import loop_calls_backward
from ..analysis.stepped_state import (counts_steps, keeps_graphs_for_later, legacy_no_grad, module_method,
                                         runs_backward, stepping_loop)
from ..diagnostics import SAFE, Fix
from .base import Invalid, Rule, RuleContext
from .insertions import line_before, torch_name


class GraphCarriedAcrossIterations(Rule):
    """
    ## What it does
    Finds state carried from one loop iteration to the next and rebuilt from its previous
    value by graph-carrying work, in a loop that runs a backward pass every iteration:
    RNN hidden state (`out, hidden = model(x, hidden)`), growing histories
    (`history = torch.cat([history, new])`), recurrent statistics
    (`state = 0.9 * state + f(x)`).

    It also finds recurrent state fed back where no backward pass consumes it: a method
    that rebinds `self.hidden` from a module call on its previous value
    (`out, self.hidden = self.agent(x, self.hidden)`) while a loop elsewhere in the project
    calls it once per environment step, with grad on and no backward pass in that loop's
    function (a rollout or acting loop; the learner that unrolls and backpropagates is
    fine); and generation or decoding loops (`out, h = model(token, h)`) in a function that
    runs no backward pass, returns no graph and stores none for later.
    State rebound earlier in the same iteration on every path is not carried, nor is an
    attribute of a name rebound so (`action = actor(s)` at the top of the iteration makes
    `action.grad = torch.cat([action.grad[:, :4], g])` this iteration's).
    Files that hold tests are not checked: a test keeps what it builds for one short run.

    ## Why is this bad
    The new value's graph references the previous value, whose graph references the one
    before: iteration N keeps the graphs of all N iterations reachable. Memory and
    backward time grow with every step, and a second `backward()` fails with "Trying to
    backward through the graph a second time" — which is often silenced with
    `retain_graph=True` (TLL008), making the leak worse.

    ## Example
    ```python
    hidden = model.init_hidden(batch_size)
    for x, y in batches:
        output, hidden = model(x, hidden)
        loss = criterion(output, y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    hidden = model.init_hidden(batch_size)
    for x, y in batches:
        hidden = hidden.detach()  # truncated backpropagation through time
        output, hidden = model(x, hidden)
        loss = criterion(output, y)
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    For state fed back with no backward pass the right fix is `torch.no_grad()` around the
    acting or generation loop: state carried across calls gets no automatic fix, and a
    generation loop gets the detach below (memory stops growing; nothing backpropagates
    through it). Otherwise the fix detaches the carried value at the top of the loop body (a tuple of tensors,
    e.g. an LSTM's `(h, c)`, element by element; a value that may start as `None` only when
    set), or detaches the carried operand inside the expression (`torch.cat([history.detach(), new])`).
    It is **safe** when the evidence is strong: gradients already could not flow into
    earlier iterations' freed graphs. It is unsafe when the graph evidence is a convention.

    ## Memory impact
    Every iteration's autograd graph stays reachable: memory grows linearly with the number
    of steps until the run is killed.
    """

    code = "TLL007"
    name = "graph-carried-across-iterations"
    summary = "Loop-carried state keeps the graphs of all previous iterations alive"
    fix_availability = "sometimes"
    repro = "tll007_cat_history"

    VALID = [
        """
import torch
hidden = model.init_hidden(16)
for x, y in batches:
    hidden = hidden.detach()
    output, hidden = model(x, hidden)
    criterion(output, y).backward()
""",
        # One forward unrolled through time, backpropagated after the loop.
        """
import torch
h = torch.zeros(4, 8)
for x in sequence:
    h = cell(x, h)
loss = h.sum()
loss.backward()
""",
    ]
    INVALID = [
        Invalid(
            """
import torch
import torch.nn as nn
rnn = nn.GRU(8, 8)
hidden = torch.zeros(1, 4, 8)
for x in batches:
    out, hidden = rnn(x, hidden)
    out.sum().backward()
""",
            fixed="""
import torch
import torch.nn as nn
rnn = nn.GRU(8, 8)
hidden = torch.zeros(1, 4, 8)
for x in batches:
    hidden = hidden.detach()
    out, hidden = rnn(x, hidden)
    out.sum().backward()
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        if not ctx.uses_torch or ctx.in_test_module:
            return  # a test keeps what it builds for one short run, not across training steps
        analysis = ctx.analysis
        reported = set()
        for scope in analysis.index.scopes:
            for loop in scope.loops:
                backward = loop_calls_backward(analysis, scope, loop, retained=True)
                if backward is None:
                    continue
                if not backward.startswith("`.backward()`") and module_method(analysis, scope):
                    continue  # a module's forward over its layers; a helper it calls (profiling) backpropagates
                for state in carried_states(analysis, scope, loop):
                    if _pure_sum(state.stmt, state.key) or (id(state.stmt), state.key) in reported:
                        continue  # `total = total + loss` is TLL002's finding
                    reported.add((id(state.stmt), state.key))
                    fix = self._fix(ctx, scope, state)
                    message = (f"`{state.key}` is carried into the next iteration and rebuilt from its previous "
                               f"value while each iteration runs a backward pass; the graphs of all earlier "
                               f"iterations stay reachable")
                    if state.evidence.strength == CONVENTION:
                        message += " (evidence is a naming convention)"
                    notes = [f"graph: {state.evidence.describe()}", f"backward: {backward}",
                             f"carried: `{state.key}` is read at line {state.references[0].lineno} and rebuilt "
                             f"at line {state.stmt.lineno}"]
                    yield self.diagnostic(ctx, state.stmt, message, fix, notes)
        yield from self._fed_back(ctx)

    def _fed_back(self, ctx):
        """Loops that run no backward pass, and state fed back across calls of a method."""
        analysis = ctx.analysis
        project = analysis.project
        for scope in analysis.index.scopes:
            if scope.is_function and scope.class_name and scope.name != "__init__":
                for stmt, key, evidence in _rebound_across_calls(analysis, scope):
                    driver = stepping_loop(analysis, scope)
                    if driver is None:
                        continue
                    message = (f"`{key}` is fed back into `{scope.name}` on every call and rebuilt from its previous "
                               f"value with grad on: `{driver.function}` calls it once per step (loop at line "
                               f"{driver.loop_line}) with no `no_grad` on the path and no backward pass, so the "
                               f"state keeps the graph of every step since it was last reset")
                    notes = [f"graph: {evidence.describe()}", f"called per step: {driver.path}",
                             "fix: run the acting loop under `torch.no_grad()` (or detach the state where it is "
                             "fed back)"]
                    yield self.diagnostic(ctx, stmt, message, None, notes)
            if project is None or runs_backward(analysis, scope) or module_method(analysis, scope) \
                    or legacy_no_grad(scope):
                continue
            for loop in scope.loops:
                if not counts_steps(loop) or loop_calls_backward(analysis, scope, loop, retained=True) is not None:
                    continue
                if volatile_input(analysis, scope) is not None:
                    continue  # ``Variable(x, volatile=True)`` inputs (PyTorch before 0.4): no graph
                if keeps_graphs_for_later(analysis, scope, loop):
                    continue
                where = f"`{scope.name}`" if scope.is_function else "this module"
                for state in carried_states(analysis, scope, loop):
                    if _pure_sum(state.stmt, state.key) or not _module_output(analysis, scope, state):
                        continue
                    message = (f"`{state.key}` is fed back into the next iteration and rebuilt from its previous "
                               f"value with grad on, and no backward pass runs in {where} or consumes what it "
                               f"returns: every iteration's graph stays reachable until the loop ends (one per "
                               f"generated step)")
                    notes = [f"graph: {state.evidence.describe()}",
                             f"carried: `{state.key}` is read at line {state.references[0].lineno} and rebuilt "
                             f"at line {state.stmt.lineno}",
                             "fix: run the loop under `torch.no_grad()`"]
                    yield self.diagnostic(ctx, state.stmt, message, self._fix(ctx, scope, state), notes)

    def _fix(self, ctx, scope, state):
        safe = state.evidence.strength != CONVENTION
        applicability = SAFE if safe else "unsafe"
        value = state.stmt.value
        if not isinstance(value, ast.Call) or _module_call_arg(value, state.references):
            body = state.loop.body[0]
            if not _defined_before(ctx.analysis, scope, state):
                return None  # first assigned inside the loop: a detach at its top would run too early
            text, certain = self._top_detach(ctx, scope, state)
            if text is None:
                return None
            if not certain:
                applicability = "unsafe"  # the carried value's type (tensor, tuple, dict) is not known
            edit = line_before(ctx, body, text)
            if edit is None:
                return None
            return Fix(applicability, f"Detach `{state.key}` at the top of the loop", (edit,))
        init = initial_value(ctx.analysis, scope, state.loop, state.key)
        if isinstance(init, ast.Constant):
            return None  # ``loss = 0`` before the loop: ``loss.detach()`` would raise on the first iteration
        qual = ctx.analysis.index.imports.qualname(init.func) if isinstance(init, ast.Call) else None
        if not (qual or "").startswith("torch."):
            applicability = "unsafe"  # the first iteration reads a value not proven a tensor
        edits = tuple(ctx.insert_after(ref, ".detach()") for ref in state.references)
        return Fix(applicability, f"Detach the previous `{state.key}` where it is reused", edits)

    @staticmethod
    def _top_detach(ctx, scope, state):
        key = state.key
        init = initial_value(ctx.analysis, scope, state.loop, key)
        torch = torch_name(ctx)
        if isinstance(init, (ast.Tuple, ast.List)):
            return f"{key} = tuple(t.detach() for t in {key})", True
        qual = ctx.analysis.index.imports.qualname(init.func) if isinstance(init, ast.Call) else None
        if (qual or "").startswith("torch."):
            return f"{key} = {key}.detach()", True
        if torch is None:
            return None, False
        if isinstance(init, ast.Constant) and isinstance(init.value, (int, float)) and not isinstance(init.value, bool):
            # ``mean_len = 0`` before the loop: a number until the first update makes it a tensor
            return f"{key} = {key}.detach() if isinstance({key}, {torch}.Tensor) else {key}", True
        expr = f"{key}.detach() if isinstance({key}, {torch}.Tensor) else tuple(h.detach() for h in {key})"
        if isinstance(init, ast.Constant) and init.value is None:
            return f"{key} = None if {key} is None else {expr}", False
        return f"{key} = {expr}", False


def _module_call_arg(value: ast.Call, refs) -> bool:
    """Is the carried value passed straight into the call (``model(x, hidden)``)?"""
    args = list(value.args) + [k.value for k in value.keywords]
    return any(ref is arg or (isinstance(arg, ast.Tuple) and ref in arg.elts) for ref in refs for arg in args)


def _pure_sum(stmt, key) -> bool:
    value = stmt.value
    if not isinstance(value, ast.BinOp) or not isinstance(value.op, (ast.Add, ast.Sub)):
        return False
    node = value
    while isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        node = node.left

    return dotted(node) == key or dotted(value.right) == key


def _defined_before(analysis, scope, state) -> bool:
    loop = state.loop
    start = (loop.lineno, loop.col_offset)
    return any(d.start < start and analysis.flow.dominates(d, loop) for d in scope.defs_of(state.key))


def _rebound_across_calls(analysis, scope):
    """``out, self.h = self.rnn(x, self.h)`` outside any loop of the method: the state
    persists on the object from one call to the next."""
    index = analysis.index
    for stmt in scope.statements:
        if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
            continue
        ctx = index.ctx(stmt)
        if ctx is None or ctx.loops:
            continue
        for key, refs in _self_state_reads(scope, stmt):
            if not refs or all(detached_read(n, stmt.value) for n in refs):
                continue
            if isinstance(refs[0], ast.Attribute) and any(
                    d.stmt is not stmt and d.start < (stmt.lineno, stmt.col_offset) and analysis.flow.dominates(d, stmt)
                    for d in scope.defs_of(key)):
                continue  # set earlier in the same call: this call's value, not the previous call's
            evidence = bound_value(analysis, scope, stmt, key)  # its element when unpacked
            if evidence is not None:
                yield stmt, key, evidence


def _self_state_reads(scope, stmt):
    """(state, reads of its previous value) for ``self.h = f(self.h)``, and for slices of it
    read through a local name: ``h = self.h[:, i]; out, self.h[:, i] = self.rnn(x, h)``."""
    keys = [k for k in rebuilt_keys(stmt) if k.startswith("self.") and k.count(".") <= 2]
    for key in keys:
        yield key, list(reads_of(stmt.value, key))
    for target in stmt.targets:
        for node in ast.walk(target):
            if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Store):
                continue
            key = dotted(node.value)
            if not key or not key.startswith("self.") or key in keys:
                continue
            refs = [n for n in ast.walk(stmt.value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                    and _slice_of(scope, n.id, key, stmt)]
            if refs:
                yield key, refs


def _slice_of(scope, name, key, stmt) -> bool:
    """Is every definition of ``name`` before ``stmt`` a view of ``key`` (``key[...]``,
    possibly moved: ``name = name.cuda()``)?"""
    defs = [d for d in scope.defs_of(name) if d.start < (stmt.lineno, stmt.col_offset)]
    if not defs:
        return False
    for d in defs:
        value = d.value
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in (
                "cuda", "to", "cpu", "float", "contiguous", "reshape", "view"):
            value = value.func.value
        if isinstance(value, ast.Name) and value.id == name:
            continue
        if not (isinstance(value, ast.Subscript) and dotted(value.value) == key):
            return False
    return True


def _module_output(analysis, scope, state) -> bool:
    """Is the state fed back through a module (``out, h = model(tok, h)``), the shape of a
    recurrent generation loop, rather than grown by ``torch.cat`` or indexing?"""
    value = state.stmt.value
    return isinstance(value, ast.Call) and analysis.graph.kinds.module_call(value, scope, state.stmt) is not None
