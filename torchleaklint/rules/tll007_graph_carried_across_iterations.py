"""TLL007 graph-carried-across-iterations."""

from __future__ import annotations

import ast

from ..analysis.carried import carried_states, initial_value
from ..analysis.graph import CONVENTION
from ..analysis.loops import loop_calls_backward
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
    The fix detaches the carried value at the top of the loop body (a tuple of tensors,
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
        if not ctx.uses_torch:
            return
        analysis = ctx.analysis
        reported = set()
        for scope in analysis.index.scopes:
            for loop in scope.loops:
                backward = loop_calls_backward(analysis, scope, loop, retained=True)
                if backward is None:
                    continue
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
    from ..analysis.names import dotted

    return dotted(node) == key or dotted(value.right) == key


def _defined_before(analysis, scope, state) -> bool:
    loop = state.loop
    start = (loop.lineno, loop.col_offset)
    return any(d.start < start and analysis.flow.dominates(d, loop) for d in scope.defs_of(state.key))
