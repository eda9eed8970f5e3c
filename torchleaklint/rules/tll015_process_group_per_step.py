"""TLL015 process-group-per-step."""

from __future__ import annotations

import ast

from ..analysis.module_index import contains
from ..analysis.names import dotted
from .base import Invalid, Rule, RuleContext
from .call_sites import calls_of
from .hoisting import hoist_fix
from .step_loops import step_loop_around

GROUP_FACTORIES = frozenset({"new_group", "new_subgroups", "new_subgroups_by_enumeration"})


def _is_group_factory(qual: str) -> bool:
    return qual.startswith("torch.distributed.") and qual.rsplit(".", 1)[-1] in GROUP_FACTORIES


class ProcessGroupPerStep(Rule):
    """
    ## What it does
    Finds `torch.distributed.new_group(...)` (and `new_subgroups(...)`,
    `new_subgroups_by_enumeration(...)`) called inside a loop that repeats training or
    data steps (it runs a backward pass, steps an optimizer, or iterates a data loader),
    with no `destroy_process_group(...)` in the same loop. Not reported: groups made
    before the loop, in a loop over ranks or group indices (the usual way to build one
    group per node), or under an `if` (a make-once guard such as
    `if group is None:`).

    ## Why is this bad
    A process group is never freed by dropping it: `torch.distributed` keeps every group
    in its registry until `destroy_process_group(group)`. Each one holds a communicator
    with its own connections, buffers and threads (NCCL communicators reserve device
    memory), and making it is a collective that every rank must join, so a group per step
    costs memory, file descriptors and a synchronisation on every step.

    ## Example
    ```python
    for x, y in loader:
        group = dist.new_group(ranks=[0, 1])
        loss = criterion(model(x), y)
        loss.backward()
        dist.all_reduce(loss.detach(), group=group)
        optimizer.step()
    ```

    ## Use instead
    ```python
    group = dist.new_group(ranks=[0, 1])
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        dist.all_reduce(loss.detach(), group=group)
        optimizer.step()
    ```

    ## Fix safety
    When the call is bound to a name as a statement of the loop body, reads nothing the
    loop binds, and the name is not rebound in the loop, the fix moves it above the loop.
    It is **unsafe**: the group is then made once even if the loop runs no iteration, and
    before the statements that preceded it in the iteration; every rank must still reach
    it (as it had to reach each call before). No fix when the ranks change from one
    iteration to the next: keeping one group per distinct set of ranks, or destroying
    each group after use, is the author's decision.

    ## Memory impact
    Measured on CPU with the gloo backend and one process (`torchleaklint verify`):
    about 44 KiB of host memory, three threads and three or four file descriptors per
    group, never released; with NCCL each communicator also reserves device memory. The
    file descriptors run out first (the default limit of 1024 after a few hundred steps).
    """

    code = "TLL015"
    name = "process-group-per-step"
    summary = "A torch.distributed process group is created on every step and never destroyed"
    fix_availability = "sometimes"
    repro = "tll015_group_per_step"

    VALID = [
        """
import torch.distributed as dist
group = dist.new_group(ranks=[0, 1])
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    dist.all_reduce(loss.detach(), group=group)
    optimizer.step()
""",
        """
import torch.distributed as dist
for i in range(world_size // 2):
    ranks = [2 * i, 2 * i + 1]
    group = dist.new_group(ranks)
    if rank in ranks:
        pair_group = group
""",
    ]
    INVALID = [
        Invalid(
            """
import torch.distributed as dist
for x, y in loader:
    group = dist.new_group(ranks=[0, 1])
    loss = criterion(model(x), y)
    loss.backward()
    dist.all_reduce(loss.detach(), group=group)
    optimizer.step()
""",
            """
import torch.distributed as dist
group = dist.new_group(ranks=[0, 1])
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    dist.all_reduce(loss.detach(), group=group)
    optimizer.step()
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        index = ctx.analysis.index
        for scope, call, stmt, qual in calls_of(index, _is_group_factory, GROUP_FACTORIES):
            where = index.ctx(stmt)
            if where is None:
                continue
            loop, evidence = step_loop_around(ctx.analysis, scope, where)
            if loop is None or _destroyed_in(index, scope, loop):
                continue
            text = ast.unparse(call.func)
            message = (f"`{text}(...)` creates a process group on every step ({evidence}) and none is "
                       f"destroyed: each keeps its communicator, buffers and threads for the rest of the run")
            fix = hoist_fix(ctx, scope, stmt, loop, "Create the process group once, before the loop")
            yield self.diagnostic(ctx, call, message, fix, [evidence])


def _destroyed_in(index, scope, loop) -> bool:
    """A ``destroy_process_group(...)`` in the same loop: groups are made and released."""
    for call, _ in scope.calls:
        if contains(loop, call) and (dotted(call.func) or "").rsplit(".", 1)[-1] == "destroy_process_group":
            return True
    return False
