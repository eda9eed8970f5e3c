"""TLL013 hook-registered-per-step."""

from __future__ import annotations

import ast
from typing import Optional

from ..analysis.module_index import start_of
from ..analysis.names import dotted
from ..diagnostics import UNSAFE, Fix
from .base import Invalid, Rule, RuleContext
from .insertions import indentation_of, line_after
from .step_loops import step_loop_around

MODULE_HOOKS = frozenset({"register_forward_hook", "register_forward_pre_hook", "register_backward_hook",
                          "register_full_backward_hook", "register_full_backward_pre_hook"})
GLOBAL_HOOKS = frozenset({"register_module_forward_hook", "register_module_forward_pre_hook",
                          "register_module_backward_hook", "register_module_full_backward_hook",
                          "register_module_full_backward_pre_hook"})
EXITS = (ast.Continue, ast.Break, ast.Return, ast.Raise)


class HookRegisteredPerStep(Rule):
    """
    ## What it does
    Finds module hooks (`register_forward_hook`, `register_forward_pre_hook`,
    `register_full_backward_hook`, `register_backward_hook`, and the global
    `register_module_*_hook` functions) registered inside a loop that repeats training or
    data steps (it runs a backward pass, steps an optimizer, or iterates a data loader),
    on a module that is the same object in every iteration, with the returned handle
    dropped (or bound to a name never read). Also a module's own `forward` registering a
    hook on itself or its submodules with the handle dropped: once per call.
    Not reported: a registration under an `if` (a register-once guard), on a module
    built or picked inside the loop (`for m in model.modules():`, one model per trial),
    or with the handle kept.

    ## Why is this bad
    A module keeps every registered hook until its handle's `remove()` is called. One more
    hook per step means every forward (or backward) pass runs all hooks registered so far,
    so steps get slower and slower, and each hook keeps its closure (and whatever
    tensors it captured) alive for the life of the model.

    ## Example
    ```python
    for x, y in loader:
        model.encoder.register_forward_hook(save_activation)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    handle = model.encoder.register_forward_hook(save_activation)
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    handle.remove()
    ```

    ## Fix safety
    When the registration is a statement of the loop body itself and the body has no
    `continue`, `break`, `return` or `raise`, the fix keeps the handle
    (`hook_handle = model.encoder.register_forward_hook(...)`) and removes it at the end
    of the iteration. It is **unsafe**: the hook no longer runs after its iteration (for
    example in an evaluation pass after the loop); hoisting the registration out of the
    loop instead is a decision left to the author.

    ## Memory impact
    One hook (a dict entry, its closure and anything it captured) per step for the life of
    the model, and a forward/backward pass whose hook calls grow linearly with the step
    count: after 100k steps, 100k Python calls per forward.
    """

    code = "TLL013"
    name = "hook-registered-per-step"
    summary = "A module hook is registered every step and never removed"
    fix_availability = "sometimes"
    repro = "tll013_hook_per_step"

    VALID = [
        """
import torch
handle = model.encoder.register_forward_hook(save_activation)
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
handle.remove()
""",
        """
import torch
for m in model.modules():
    m.register_forward_hook(count_flops)
""",
    ]
    INVALID = [
        Invalid(
            """
import torch
for x, y in loader:
    model.encoder.register_forward_hook(save_activation)
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
""",
            """
import torch
for x, y in loader:
    hook_handle = model.encoder.register_forward_hook(save_activation)
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    hook_handle.remove()
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        if not ctx.uses_torch:
            return
        analysis = ctx.analysis
        index = analysis.index
        for scope in index.scopes:
            for call, stmt in scope.calls:
                kind = _hook_kind(call, index.imports)
                if kind is None or not _handle_dropped(scope, call, stmt):
                    continue
                where = index.ctx(stmt)
                if where is None:
                    continue
                loop, evidence = _repeating_loop(analysis, scope, where, call, kind)
                if evidence is None:
                    continue
                hook = ast.unparse(call.func)
                message = (f"`{hook}(...)` registers one more hook every time ({evidence}) and its handle is "
                           f"dropped: hooks and their closures accumulate and every pass runs all of them")
                fix = _fix(ctx, index, stmt, call, loop) if loop is not None else None
                yield self.diagnostic(ctx, call, message, fix, [evidence])


def _hook_kind(call: ast.Call, imports) -> Optional[str]:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in MODULE_HOOKS:
        return "module"
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if "hook" not in name:
        return None  # only a name spelled like a hook can be one (aliases keep the word or are rare)
    qual = imports.qualname(func) or ""
    if qual.rsplit(".", 1)[-1] in GLOBAL_HOOKS and qual.startswith("torch"):
        return "global"
    return None


def _handle_dropped(scope, call, stmt) -> bool:
    """The call is its own statement, or its result is bound to a local name nothing reads."""
    if isinstance(stmt, ast.Expr) and stmt.value is call:
        return True
    if isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], ast.Name):
        name = stmt.targets[0].id
        reads = [n for n in ast.walk(scope.node) if isinstance(n, ast.Name) and n.id == name
                 and isinstance(n.ctx, ast.Load)]
        return not reads and name not in _globals(scope)
    return False


def _globals(scope):
    return {n for node in ast.walk(scope.node) if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}


def _repeating_loop(analysis, scope, where, call, kind):
    """(loop, evidence): the innermost step loop around the call in which the hooked module
    is the same object every iteration; (None, evidence) for a module's own ``forward``."""
    receiver = call.func.value if kind == "module" else None
    loop, evidence = step_loop_around(analysis, scope, where, receiver)
    if loop is not None or where.conditional:
        return loop, evidence
    if where.loops or not scope.is_function or scope.name != "forward" or scope.class_name is None:
        return None, None
    root = dotted(receiver) if receiver is not None else None
    if receiver is not None and (root is None or not (root == "self" or root.startswith("self."))):
        return None, None
    return None, f"in `{scope.class_name}.forward`, once per call"


def _fix(ctx, index, stmt, call, loop) -> Optional[Fix]:
    """Keep the handle and remove it as the iteration's last statement."""
    if not (isinstance(stmt, ast.Expr) and any(s is stmt for s in loop.body)):
        return None
    for node in ast.walk(loop):
        if isinstance(node, EXITS) and node is not loop:
            return None  # an iteration could end before the removal
    used = {n.id for n in ast.walk(index.tree) if isinstance(n, ast.Name)}
    name = next(n for n in ("hook_handle", "hook_handle_", "forward_hook_handle") + tuple(
        f"hook_handle{i}" for i in range(2, 100)) if n not in used)
    indent = indentation_of(ctx, stmt)
    last = loop.body[-1]
    if indent is None or indentation_of(ctx, last) != indent:
        return None
    remove = line_after(ctx, last, f"{name}.remove()", indent)
    if remove is None:
        return None
    keep = ctx.insert_before(stmt, f"{name} = ")
    if start_of(last) < start_of(stmt):
        return None
    return Fix(UNSAFE, "Keep the hook's handle and remove the hook at the end of the iteration", (keep, remove))
