"""TLL002 graph-tensor-accumulated."""

from __future__ import annotations

import ast
from typing import List, Optional

from ..analysis.graph import CONVENTION
from ..analysis.lifetimes import legitimate_keep, outlives_iteration
from ..analysis.sampled_store import consumed_store
from ..analysis.volatile import volatile_input
from ..analysis.module_index import container_key
from ..analysis.names import dotted
from ..analysis.summaries import argument_for, summary_for
from ..analysis.uses import UNKNOWN, classify_uses
from .base import Invalid, Rule, RuleContext
from .detach_fix import FIX_STYLES, build_fix, carrying_parts
from .tll001_graph_tensor_stored import GraphTensorStored

ACC_OPS = (ast.Add, ast.Sub)


class GraphTensorAccumulated(Rule):
    """
    ## What it does
    Finds graph-carrying tensors accumulated across loop iterations into a name that
    lives across them — `total += loss`, `total = total + loss`, `sum_ += loss * n`,
    `self.running += loss` — when the accumulator is not itself backpropagated later.
    Also through a helper: `meter.update(loss)` where `update` (in the same or another
    linted file) does `self.sum += val * n` — the AverageMeter pattern.
    Not reported for a term added once per call to an attribute of an object the function
    is handed (`trainer.loss += penalty` in a hook) when the project both backpropagates
    that attribute and assigns it afresh outside constructors: the owner runs a
    per-iteration loss.
    Files that hold tests are not checked: a test keeps what it builds for one short run.

    ## Why is this bad
    `total + loss` is a new node in the autograd graph whose inputs are the previous
    total and this step's loss. After N steps the accumulator references N graphs —
    every step's autograd nodes, and with them whatever the backward pass did not
    free. Memory grows linearly and iterations get slower. This is the example the
    PyTorch FAQ gives for "my model uses too much memory".

    ## Example
    ```python
    total_loss = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss
    ```

    ## Use instead
    ```python
    total_loss = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    ```

    ## Fix safety
    `.item()` when the accumulated value is a scalar loss and every later use of the
    accumulator is numeric (safe when both are proven); `.detach()` (or
    `.detach().clone()` for scalar losses) when the accumulator is used as a tensor
    (safe when the value is proven to be a tensor). Calls into helpers such as
    `meter.update(loss)` get an **unsafe** fix: the helper's own uses are not followed.
    A value that is a tensor on some paths only is fixed on its tensor branch
    (`total += loss.item() if step % 2 == 0 else 0`, safe), or unsafely when the
    branches cannot be told apart (`loss or 0`, a name that a branch sets to `0.0`, a
    helper that returns a number on some calls).

    ## Memory impact
    One autograd graph per iteration kept reachable through the accumulator; with
    gradient accumulation or a loss that is not backpropagated, the saved activations
    of every step too.
    """

    code = "TLL002"
    name = "graph-tensor-accumulated"
    summary = "A graph-carrying tensor is accumulated into a value that lives across iterations"
    fix_availability = "sometimes"
    repro = "tll002_total_loss"
    default_options = {"fix-style": "auto"}
    option_choices = {"fix-style": FIX_STYLES}

    VALID = [
        """
import torch
total = 0.0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    total += loss.item()
""",
        # Gradient accumulation: the sum is what gets backpropagated.
        """
import torch
total = 0
for chunk in chunks:
    total = total + criterion(model(chunk), y)
total.backward()
""",
    ]
    INVALID = [
        Invalid(
            """
import torch
total_loss = 0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    total_loss += loss
print(total_loss / len(loader))
""",
            fixed="""
import torch
total_loss = 0
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    total_loss += loss.item()
print(total_loss / len(loader))
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        if not ctx.uses_torch or ctx.in_test_module:
            return  # a test keeps what it builds for one short run, not across training steps
        analysis = ctx.analysis
        for scope in analysis.index.scopes:
            if volatile_input(analysis, scope) is not None:
                continue  # inputs built volatile (PyTorch before 0.4): its forwards record no graph
            for stmt in scope.statements:
                found = self._accumulation(stmt)
                if found is not None:
                    diag = self._check_accumulation(ctx, scope, stmt, *found)
                    if diag is not None:
                        yield diag
                elif isinstance(stmt, (ast.Expr, ast.Assign)) and isinstance(stmt.value, ast.Call):
                    diag = self._check_helper(ctx, scope, stmt, stmt.value)
                    if diag is not None:
                        yield diag

    # -- total += loss ------------------------------------------------------------------
    @staticmethod
    def _accumulation(stmt):
        """(accumulator key, added expressions) for an accumulating statement."""
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ACC_OPS):
            key = dotted(stmt.target)
            if key is None or isinstance(stmt.value, (ast.List, ast.Tuple, ast.ListComp, ast.Set)):
                return None
            return key, [stmt.value]
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            key = dotted(stmt.targets[0])
            if key is None or not isinstance(stmt.value, ast.BinOp):
                return None
            operands = _sum_operands(stmt.value)
            if operands is None or not any(dotted(o) == key for o in operands):
                return None
            return key, [o for o in operands if dotted(o) != key]
        return None

    def _check_accumulation(self, ctx, scope, stmt, key, added) -> Optional[object]:
        analysis = ctx.analysis
        graph = analysis.graph
        parts = []
        evidence = None
        for expr in added:
            ev = graph.carrying(expr, stmt)
            if ev is not None:
                evidence = evidence or ev
                parts.extend(carrying_parts(ctx, expr, stmt))
        if evidence is None:
            return None
        if evidence.strength == CONVENTION and any(_count_like(ctx.text_of(e)) for e in added):
            return None  # ``n_samples += batch_count``: a count, by all appearances, not a tensor
        defs = scope.defs_of(key)
        if any(isinstance(d.value, (ast.List, ast.Dict, ast.ListComp)) for d in defs if d.kind == "assign"):
            return None  # a list: storing into it is TLL001's business
        own = [d for d in defs if self._accumulation(d.stmt) is not None and self._accumulation(d.stmt)[0] == key]
        escape = outlives_iteration(analysis, scope, stmt, key, own_defs=own)
        if escape is None or _owner_backpropagates_and_resets(analysis, scope, stmt, key):
            return None
        if legitimate_keep(analysis, scope, key, stmt, escape.loop) is not None:
            return None
        if not GraphTensorStored._trains(analysis, scope, escape.loop):
            return None  # no backward pass runs here: evaluation is TLL009's finding
        uses, why = classify_uses(analysis, scope, key, skip_stmts=[d.stmt for d in own])
        fix = build_fix(ctx, parts, uses, why)
        value = " ".join((", ".join(ctx.text_of(e) for e, _ in parts) or ctx.text_of(added[0])).split())
        if len(value) > 40:
            value = value[:37] + "..."
        lifetime = "iterations" if escape.loop is not None else "calls"
        message = (f"`{value}` carries an autograd graph and is accumulated into `{key}`, which lives "
                   f"across {lifetime}; the sum keeps every step's graph alive")
        if evidence.strength == CONVENTION:
            message += " (evidence is a naming convention)"
        notes = [f"graph: {evidence.describe()}", f"lifetime: {escape.text}"]
        if why:
            notes.append(f"fix: {why}")
        return self.diagnostic(ctx, stmt, message, fix, notes)

    # -- meter.update(loss) -------------------------------------------------------------
    def _check_helper(self, ctx, scope, stmt, call: ast.Call):
        func = call.func
        if not isinstance(func, ast.Attribute) or not (call.args or call.keywords):
            return None
        analysis = ctx.analysis
        kinds = analysis.graph.kinds
        refs = kinds.resolve_functions(func, scope, stmt)
        if not refs or len(refs) > 3 or analysis.project is None:
            return None
        sinks_by_ref = []
        for ref in refs:
            summary = summary_for(analysis.project, ref)
            if summary is None:
                return None
            sinks_by_ref.append((summary, summary.param_sinks()))
        if any(not sinks for _, sinks in sinks_by_ref):
            return None
        summary, sinks = sinks_by_ref[0]
        for sink in sinks:
            arg = argument_for(call, sink.index, sink.name)
            if arg is None:
                continue
            evidence = analysis.graph.carrying(arg, stmt)
            if evidence is None:
                continue
            receiver = container_key(func.value)
            if receiver is None:
                continue
            escape = outlives_iteration(analysis, scope, stmt, receiver)
            if escape is None or consumed_store(analysis, scope, receiver, stmt) is not None:
                continue
            if not GraphTensorStored._trains(analysis, scope, escape.loop):
                continue
            fix = build_fix(ctx, carrying_parts(ctx, arg, stmt), UNKNOWN, None)
            if fix is not None and fix.is_safe:
                fix = type(fix)("unsafe", fix.message, fix.edits)
            value = " ".join(ctx.text_of(arg).split())
            if len(value) > 40:
                value = value[:37] + "..."
            message = (f"`{value}` carries an autograd graph and `{ctx.text_of(func)}()` {sink.how} "
                       f"({summary.where}); `{receiver}` lives across iterations, so every step's graph stays alive")
            notes = [f"graph: {evidence.describe()}", f"helper: `{sink.name}` {sink.how} in {summary.where}",
                     f"lifetime: {escape.text}"]
            return self.diagnostic(ctx, stmt, message, fix, notes)
        return None


def _owner_backpropagates_and_resets(analysis, scope, stmt, key) -> bool:
    """``strategy.loss += penalty`` in a hook, once per call, into an attribute of an
    object the function was handed: the object's owner decides its lifetime. When the
    project both backpropagates that attribute (``x.loss.backward()``) and assigns it
    afresh outside constructors (``x.loss = new_empty()``), the owner is running a
    per-iteration loss that the hook adds a term to, not a growing sum."""
    root, _, attr = key.partition(".")
    if not attr or "." in attr or root in ("self", "cls") or root not in scope.params:
        return False
    ctx = analysis.index.ctx(stmt)
    if ctx is None or ctx.loops or any(d.kind != "param" for d in analysis.flow.reaching(scope, root, stmt)):
        return False
    project = analysis.project
    if project is None:
        return False
    memo = project.__dict__.setdefault("_backprop_reset_memo", {})
    if attr not in memo:
        memo[attr] = _project_backprops_and_resets(project, attr)
    return memo[attr]


def _project_backprops_and_resets(project, attr) -> bool:
    import re

    assign = re.compile(r"\.%s\s*(?::[^=\n]*)?=(?!=)" % re.escape(attr))
    backward = re.compile(r"\.%s\.backward\(" % re.escape(attr))
    reset = backprop = False
    for table in list(project.tables.values()):
        try:
            with open(table.path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        backprop = backprop or bool(backward.search(text))
        if not reset and assign.search(text):
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError):
                continue
            reset = _assigned_outside_init(tree, attr)
        if reset and backprop:
            return True
    return False


def _assigned_outside_init(tree, attr) -> bool:
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) or func.name in ("__init__", "__post_init__"):
            continue
        for node in ast.walk(func):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
            if any(isinstance(t, ast.Attribute) and t.attr == attr for t in targets):
                return True
    return False


def _sum_operands(expr) -> Optional[List[ast.AST]]:
    """Flatten ``a + b - c`` into operands; None when other operators are involved."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ACC_OPS):
        left = _sum_operands(expr.left)
        return (left if left is not None else [expr.left]) + [expr.right]
    return None


COUNT_WORDS = frozenset({"count", "counts", "num", "n", "samples", "size", "length", "len", "idx", "index",
                         "steps", "tokens", "total", "seen", "batches"})


def _count_like(text: str) -> bool:
    from ..analysis.names import words

    return bool(text.isidentifier() and set(words(text)) & COUNT_WORDS)
