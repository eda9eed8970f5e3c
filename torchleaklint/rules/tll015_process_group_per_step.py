"""TLL015 process-group-per-step."""

from __future__ import annotations

import ast
from typing import Optional

from ..analysis.module_index import contains
from ..analysis.names import dotted
from ..analysis.repetition import MAX_DEPTH, repeated_call_site
from .base import Invalid, Rule, RuleContext
from .call_sites import calls_of
from .hoisting import hoist_fix
from .step_loops import once_guarded, step_evidence, step_loop_around

GROUP_FACTORIES = frozenset({"new_group", "new_subgroups", "new_subgroups_by_enumeration"})
CACHING_DECORATORS = frozenset({"lru_cache", "cache", "cached_property", "cached"})


def _is_group_factory(qual: str) -> bool:
    return qual.startswith("torch.distributed.") and qual.rsplit(".", 1)[-1] in GROUP_FACTORIES


class ProcessGroupPerStep(Rule):
    """
    ## What it does
    Finds `torch.distributed.new_group(...)` (and `new_subgroups(...)`,
    `new_subgroups_by_enumeration(...)`) called inside a loop that repeats training or
    data steps (it runs a backward pass, steps an optimizer, or iterates a data loader),
    with no `destroy_process_group(...)` in the same loop; also in a function that such a
    loop calls directly, such as an evaluation run every `eval_freq` steps. Not reported: groups made before the loop, in a loop over ranks or group
    indices (the usual way to build one group per node), in a function decorated with
    `functools.lru_cache` (made once), or under an `if` that makes them once
    (`if group is None:`, `if key not in groups:`, `if step == 0:`); an `if` on a
    configuration flag (`if args.distributed:`) is not such a guard.

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
    iteration to the next (keeping one group per distinct set of ranks, or destroying
    each group after use, is the author's decision), nor in a function called per step
    (the group belongs where the loop's setup is).

    ## Memory impact
    Measured on CPU with the gloo backend and one process (`torchleaklint verify`):
    about 44 KiB of host memory, three threads and three or four file descriptors per
    group, never released; with NCCL each communicator also reserves device memory. The
    file descriptors run out first (the default limit of 1024 after a few hundred steps).
    Deleting the group object does not release it (pytorch/pytorch#40400: memory grows
    even with `del group` and `gc.collect()`).

    This rule is opt-in (`--extend-select TLL015`): 3 of its findings on real code have
    been read (all right), fewer than the 20 needed to measure its precision.
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
        analysis = ctx.analysis
        index = analysis.index
        for scope, call, stmt, qual in calls_of(index, _is_group_factory, GROUP_FACTORIES):
            where = index.ctx(stmt)
            if where is None or once_guarded(where, stmt):
                continue
            loop, evidence = step_loop_around(analysis, scope, where, stmt=stmt)
            fix = None
            how_often = "on every step"
            if loop is not None:
                if _destroyed_in(scope, loop):
                    continue
                fix = hoist_fix(ctx, scope, stmt, loop, "Create the process group once, before the loop")
            else:
                evidence = _called_per_step(analysis, scope)
                if evidence is None or _destroyed_in(scope, scope.node):
                    continue
                how_often = f"every time `{scope.name}` runs"
            text = ast.unparse(call.func)
            message = (f"`{text}(...)` creates a process group {how_often} ({evidence}) and none is "
                       f"destroyed: each keeps its communicator, buffers and threads for the rest of the run")
            yield self.diagnostic(ctx, call, message, fix, [evidence])


def _called_per_step(analysis, scope) -> Optional[str]:
    """``evaluate()`` making a group, called from a training loop (every ``eval_freq``
    steps): once per call. Not a function that caches its result (``@lru_cache``)."""
    if not scope.is_function or any(_caches(d) for d in scope.decorators):
        return None
    # Direct callers only: a caller found by name alone, through further calls, is too
    # often another function of the same name.
    where = repeated_call_site(analysis, scope, depth=MAX_DEPTH, loop_evidence=step_evidence)
    return f"`{scope.name}` is {where}" if where else None


def _caches(decorator: ast.AST) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (dotted(target) or "").rsplit(".", 1)[-1] in CACHING_DECORATORS


def _destroyed_in(scope, where: ast.AST) -> bool:
    """A ``destroy_process_group(...)`` in the same loop (or function): groups are made
    and released."""
    for call, _ in scope.calls:
        if contains(where, call) and (dotted(call.func) or "").rsplit(".", 1)[-1] == "destroy_process_group":
            return True
    return False
