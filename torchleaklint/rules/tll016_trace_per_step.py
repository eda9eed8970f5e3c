"""TLL016 trace-per-step."""

from __future__ import annotations

import ast

from .base import Invalid, Rule, RuleContext
from .call_sites import calls_of
from .hoisting import hoist_fix
from .step_loops import step_loop_around

TRACERS = frozenset({"trace", "trace_module"})


def _is_tracer(qual: str) -> bool:
    return qual in ("torch.jit.trace", "torch.jit.trace_module", "torch.jit._trace.trace",
                    "torch.jit._trace.trace_module")


class TracePerStep(Rule):
    """
    ## What it does
    Finds `torch.jit.trace(...)` and `torch.jit.trace_module(...)` called inside a loop
    that repeats training or data steps (it runs a backward pass, steps an optimizer, or
    iterates a data loader), on a module or function that is the same object in every
    iteration. Not reported: a trace under an `if` (cached after the first iteration:
    `if traced is None:`), a trace of a model built inside the loop (one model per trial,
    fold or seed), and `torch.jit.script` (scripting is cached per function and per
    module type: measured flat, see below).

    ## Why is this bad
    Every trace compiles a new graph and registers a new type for it in TorchScript's
    global compilation unit, which keeps it for the life of the process even after the
    traced module is dropped. Tracing the same model again on every step (or epoch) adds
    one more compiled graph each time, and each trace runs the model once more.

    ## Example
    ```python
    example = torch.randn(1, 3, 224, 224)
    for epoch in range(epochs):
        train_one_epoch(model, loader, optimizer)
        traced = torch.jit.trace(model, example)
        traced.save(f"model-{epoch}.pt")
    ```

    ## Use instead
    ```python
    example = torch.randn(1, 3, 224, 224)
    traced = torch.jit.trace(model, example)
    for epoch in range(epochs):
        train_one_epoch(model, loader, optimizer)
        traced.save(f"model-{epoch}.pt")
    ```
    A traced module shares its parameters with the module it was traced from, so one
    trace sees every later update of the weights.

    ## Fix safety
    When the trace is bound to a name as a statement of the loop body, its arguments are
    all bound before the loop, and the name is not rebound in the loop, the fix moves it
    above the loop. It is **unsafe**: the trace then records the model's control flow as
    it is before the first iteration (a model whose `forward` branches on state that
    training changes traces differently), and it runs even when the loop does not. No fix
    when the example input comes from the iteration (a batch): trace once with an example
    made before the loop, or cache the first trace under an `if`.

    ## Memory impact
    Measured on CPU (`torchleaklint verify`, and by hand with glibc's in-use bytes over
    200 steps): about 270 KiB per trace of a three-layer `nn.Sequential` and 110 KiB per
    trace of a small function, never released; more for larger graphs. `torch.jit.script`
    of the same module or function on every step stayed flat (under 1 KiB per step).

    This rule is opt-in (`--extend-select TLL016`): no finding on real code has been read
    yet (none in 142 repository trees), too few to measure its precision.
    """

    code = "TLL016"
    name = "trace-per-step"
    summary = "torch.jit.trace is called on every step for the same model: compiled graphs accumulate"
    fix_availability = "sometimes"
    repro = "tll016_trace_per_step"

    VALID = [
        """
import torch
traced = None
for x, y in loader:
    if traced is None:
        traced = torch.jit.trace(model, x)
    loss = criterion(traced(x), y)
    loss.backward()
    optimizer.step()
""",
        """
import torch
@torch.jit.script
def fused_gelu(x):
    return x * 0.5 * (1.0 + torch.erf(x / 1.41421))
for x, y in loader:
    loss = criterion(fused_gelu(model(x)), y)
    loss.backward()
    optimizer.step()
""",
        """
import torch
for trial in range(trials):
    model = build_model(trial)
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    torch.jit.trace(model, example).save(f"trial-{trial}.pt")
""",
    ]
    INVALID = [
        Invalid(
            """
import torch
example = torch.randn(1, 3, 32, 32)
for epoch in range(epochs):
    for x, y in loader:
        criterion(model(x), y).backward()
        optimizer.step()
    traced = torch.jit.trace(model, example)
    traced.save(f"model-{epoch}.pt")
""",
            """
import torch
example = torch.randn(1, 3, 32, 32)
traced = torch.jit.trace(model, example)
for epoch in range(epochs):
    for x, y in loader:
        criterion(model(x), y).backward()
        optimizer.step()
    traced.save(f"model-{epoch}.pt")
""",
        ),
        Invalid(
            """
import torch
for x, y in loader:
    traced = torch.jit.trace(model, x)
    loss = criterion(traced(x), y)
    loss.backward()
    optimizer.step()
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        index = ctx.analysis.index
        for scope, call, stmt, qual in calls_of(index, _is_tracer, TRACERS):
            if not call.args:
                continue
            where = index.ctx(stmt)
            if where is None:
                continue
            traced = call.args[0]
            loop, evidence = step_loop_around(ctx.analysis, scope, where, traced, stmt)
            if loop is None:
                continue
            message = (f"`{ast.unparse(call.func)}(...)` traces `{ast.unparse(traced)}` again on every step "
                       f"({evidence}): each trace adds a compiled graph that TorchScript keeps for the life "
                       f"of the process")
            fix = hoist_fix(ctx, scope, stmt, loop, "Trace once, before the loop")
            yield self.diagnostic(ctx, call, message, fix, [evidence])
