"""TLL010 cycled-data-loader."""

from __future__ import annotations

import ast
from typing import Optional, Tuple

from ..analysis.names import dotted
from ..diagnostics import UNSAFE, Edit, Fix
from .base import Invalid, Rule, RuleContext
from .call_sites import calls_of
from .insertions import import_edit
from .step_loops import is_loader_name

CYCLE = frozenset({"cycle"})


class CycledDataLoader(Rule):
    """
    ## What it does
    Finds `itertools.cycle(...)` over a data loader: a `DataLoader(...)` call, a local
    name bound to one, or a name whose last word is `loader`/`dataloader`/`dl`
    (`train_loader`, `trainloader`, `train_dl`), also through `iter(...)`. Cycling a
    list (colours, environment names, a list of loaders) is not reported.

    ## Why is this bad
    `itertools.cycle` saves every element it yields during its first pass so that it can
    replay them: over a loader that means every batch of the first epoch, tensors
    included, stays in host memory for the life of the iterator. A step-based training
    loop (`next(train_iter)` for `max_steps`) grows by one batch per step until one epoch
    is held, which for an image or text dataset is the dataset itself, and later epochs
    replay the first epoch's batches in the same order (no reshuffling, no new
    augmentations).

    ## Example
    ```python
    train_iter = itertools.cycle(train_loader)
    for step in range(max_steps):
        x, y = next(train_iter)
    ```

    ## Use instead
    ```python
    def forever(loader):
        while True:
            yield from loader

    train_iter = forever(train_loader)
    for step in range(max_steps):
        x, y = next(train_iter)
    ```

    ## Fix safety
    When the argument is a local name whose every binding reaching the call is a
    `DataLoader(...)` (a re-iterable object), the fix replaces `cycle(loader)` with
    `(batch for epoch in itertools.repeat(loader) for batch in epoch)`, importing
    `itertools` when needed. It is **unsafe**: each pass now iterates the loader again, so a shuffling
    loader yields a new order and workers restart every epoch. No fix is offered when the
    evidence is only a name or the argument is `iter(...)` (an exhausted iterator
    re-iterated forever would hang), nor for a `DataLoader(...)` call (it would build a
    new loader on every pass).

    ## Memory impact
    One batch per step until a full epoch of batches is held: the size of the dataset
    as tensors (hundreds of MB to many GB of host memory).
    """

    code = "TLL010"
    name = "cycled-data-loader"
    summary = "A data loader wrapped in itertools.cycle keeps every batch of its first pass"
    fix_availability = "sometimes"
    repro = "tll010_cycled_loader"

    VALID = [
        """
import itertools
import torch
colours = itertools.cycle(["red", "green", "blue"])
for step in range(steps):
    plot(losses[step], color=next(colours))
""",
        """
import itertools
import torch
def forever(loader):
    while True:
        yield from loader
train_iter = forever(train_loader)
""",
    ]
    INVALID = [
        Invalid(
            """
import itertools
from torch.utils.data import DataLoader
loader = DataLoader(dataset, batch_size=32, shuffle=True)
train_iter = itertools.cycle(loader)
""",
            """
import itertools
from torch.utils.data import DataLoader
loader = DataLoader(dataset, batch_size=32, shuffle=True)
train_iter = (batch for epoch in itertools.repeat(loader) for batch in epoch)
""",
        ),
        Invalid(
            """
from itertools import cycle
import torch
train_iter = cycle(train_loader)
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        for scope, call, stmt, _ in calls_of(ctx.analysis.index, "itertools.cycle".__eq__, CYCLE):
            if len(call.args) != 1 or call.keywords:
                continue
            arg = call.args[0]
            found = _loader_evidence(ctx, scope, stmt, arg)
            if found is None:
                continue
            evidence, bound = found
            message = (f"`{ctx.text_of(call)}` keeps a copy of every batch it yields until one epoch of "
                       f"batches is held in memory ({evidence}); re-iterate the loader instead")
            yield self.diagnostic(ctx, call, message, _fix(ctx, call, arg, stmt) if bound else None, [evidence])


def _is_dataloader_call(ctx, expr: Optional[ast.AST]) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    qual = ctx.analysis.index.imports.qualname(expr.func) or dotted(expr.func) or ""
    return qual.rsplit(".", 1)[-1] == "DataLoader"


def _loader_evidence(ctx, scope, stmt, arg) -> Optional[Tuple[str, bool]]:
    """Why the argument is a data loader, and whether it is a plain name bound to a
    ``DataLoader(...)`` (the one shape the fix re-iterates); None when it is not one."""
    inner = arg
    if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "iter" \
            and len(inner.args) == 1:
        inner = inner.args[0]
    if _is_dataloader_call(ctx, inner):
        return "a `DataLoader(...)`", False
    key = dotted(inner)
    if key is None:
        return None
    reaching = ctx.analysis.flow.reaching(scope, key, stmt)
    loaders = [d for d in reaching if d.kind == "assign" and d.index is None and _is_dataloader_call(ctx, d.value)]
    if loaders:
        # Re-iterable for sure only when every binding that reaches the call is a DataLoader(...).
        fixable = inner is arg and isinstance(arg, ast.Name) and len(loaders) == len(reaching)
        return f"`{key}` is a `DataLoader` (line {loaders[0].stmt.lineno})", fixable
    if is_loader_name(inner):
        return f"`{key}` is named as a loader", False
    return None


def _fix(ctx, call, arg, stmt) -> Optional[Fix]:
    """Re-iterate a local name bound to a ``DataLoader(...)``. Not offered for ``iter(...)``
    (an exhausted iterator re-iterated forever would hang), for a ``DataLoader(...)`` call
    (it would build a new loader every pass) or in a class body (a generator expression
    there cannot see the class's names)."""
    tree = ctx.analysis.index.tree
    if any(isinstance(node, ast.ClassDef) and any(s is stmt for s in node.body) for node in ast.walk(tree)):
        return None
    imports = ctx.analysis.index.imports
    module = next((local for local, target in imports.aliases.items() if target == "itertools"), None)
    edits = []
    if module is None:
        module = "itertools"
        if module in ctx.analysis.index.module_scope.defs or any(module in s.defs for s in ctx.analysis.index.scopes):
            return None  # the name is taken by something else
        edit = import_edit(ctx, "import itertools")
        if edit is None:
            return None
        edits.append(edit)
    source = ctx.text_of(arg)
    # ``repeat(loader)`` is evaluated when the generator is made, so rebinding the name
    # (``loader = itertools.cycle(loader)``) cannot make the generator iterate itself.
    # The generator's own names never leak out of it.
    replacement = f"(batch for epoch in {module}.repeat({source}) for batch in epoch)"
    edits.append(Edit(ctx.start(call), ctx.end(call), replacement))
    return Fix(UNSAFE, "Re-iterate the loader instead of cycling its first epoch", tuple(edits))
