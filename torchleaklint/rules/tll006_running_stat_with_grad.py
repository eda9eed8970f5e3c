"""TLL006 running-stat-with-grad."""

from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from ..analysis.callers import argument_evidence
from ..analysis.graph import STRONG
from ..analysis.module_index import expr_keys
from ..analysis.names import dotted
from ..diagnostics import SAFE, UNSAFE, Fix
from .base import Invalid, Rule, RuleContext
from .detach_fix import carrying_parts

INPLACE_UPDATES = frozenset({"mul_", "add_", "sub_", "div_", "copy_", "lerp_", "addcmul_", "addcdiv_",
                             "mul", "add", "sub", "lerp"})


class RunningStatWithGrad(Rule):
    """
    ## What it does
    Finds persistent state on an object — running means and variances, EMA values,
    normalizer statistics, registered buffers — updated from its own previous value and a
    graph-carrying tensor, outside `torch.no_grad()` and without `.detach()`:
    `self.running_mean = m * self.running_mean + (1 - m) * x.mean(0)`,
    `self.running_var.mul_(m).add_(v)`, `self.stats = self.stats + batch_stats`. The graph
    may come from the method itself or from what callers in the linted files pass in.

    ## Why is this bad
    The updated statistic references the graph of the batch that produced it, and through
    its previous value the graphs of every earlier batch. Statistics are descriptive, not
    learnable: nothing ever backpropagates through them, yet they keep every step's graph
    alive (seed incident: normalizer statistics accumulated gradients from every feature
    across all time steps).

    ## Example
    ```python
    def update(self, x):
        self.mean = 0.99 * self.mean + 0.01 * x.mean(0)
    ```

    ## Use instead
    ```python
    def update(self, x):
        self.mean = 0.99 * self.mean + 0.01 * x.mean(0).detach()
    ```

    ## Fix safety
    The fix appends `.detach()` to the graph-carrying operand(s) of the update. It is
    **safe** when the graph evidence is strong: the statistic is descriptive and gradients
    through it were never used by an optimizer step. It is unsafe when the evidence is a
    naming convention.

    ## Memory impact
    One graph per update for as long as the object lives (usually the whole run).
    """

    code = "TLL006"
    name = "running-stat-with-grad"
    summary = "Persistent running statistics are updated from graph-carrying tensors"
    fix_availability = "sometimes"
    repro = "tll006_normalizer"

    VALID = [
        """
import torch
import torch.nn as nn
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.register_buffer("mean", torch.zeros(4))
    def forward(self, x):
        h = self.enc(x)
        with torch.no_grad():
            self.mean = 0.9 * self.mean + 0.1 * h.mean(0)
        return h
""",
    ]
    INVALID = [
        Invalid(
            """
import torch
import torch.nn as nn
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.register_buffer("mean", torch.zeros(4))
    def forward(self, x):
        h = self.enc(x)
        self.mean = 0.9 * self.mean + 0.1 * h.mean(0)
        return h - self.mean
""",
            fixed="""
import torch
import torch.nn as nn
class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.register_buffer("mean", torch.zeros(4))
    def forward(self, x):
        h = self.enc(x)
        self.mean = 0.9 * self.mean + 0.1 * h.mean(0).detach()
        return h - self.mean
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        if not ctx.uses_torch:
            return
        analysis = ctx.analysis
        for scope in analysis.index.scopes:
            if not scope.is_function or not scope.class_name or scope.name in ("__init__", "reset_parameters"):
                continue
            if analysis.grad.scope_off(scope):
                continue
            for stmt in scope.statements:
                found = _update(stmt, analysis.flow, scope)
                if found is None or analysis.grad.stmt_off(stmt):
                    continue
                attr, operands, accumulation = found
                result = self._evidence(analysis, scope, stmt, operands, accumulation)
                if result is None:
                    continue
                evidence, graph, via = result
                parts = []
                for operand in operands:
                    parts.extend(carrying_parts(ctx, operand, stmt, graph))
                fix = None
                if parts:
                    edits = tuple(ctx.insert_after(expr, ".detach()") for expr, _ in parts)
                    fix = Fix(SAFE if evidence.strength == STRONG else UNSAFE,
                              "Detach the graph-carrying operand of the update", edits)
                message = (f"`{attr}` is updated from its previous value and a graph-carrying tensor without "
                           f"`.detach()` or `no_grad`; the statistic keeps every update's graph alive")
                notes = [f"graph: {evidence.describe()}"]
                if via:
                    notes.append(f"argument: {via}")
                yield self.diagnostic(ctx, stmt, message, fix, notes)

    @staticmethod
    def _evidence(analysis, scope, stmt, operands, accumulation):
        for operand in operands:
            ev = analysis.graph.carrying(operand, stmt)
            if ev is not None:
                if accumulation:
                    return None  # ``self.total += loss`` is TLL002's finding
                return ev, analysis.graph, None
        for param in scope.params:
            if param in ("self", "cls"):
                continue
            oracle = analysis.graph.assuming(scope, param)
            if not any(oracle.carrying(op, stmt) is not None for op in operands):
                continue
            ev = argument_evidence(analysis, scope, param)
            if ev is not None:
                return ev, oracle, f"callers pass a graph-carrying `{param}`: {ev.text}"
        return None


def _tensor_function(value) -> bool:
    """``torch.lerp(self.ema, x, w)``-style updates; not ``self.model = wrap(self.model)``."""
    if not isinstance(value, ast.Call):
        return False
    path = dotted(value.func) or ""
    return path.split(".")[0] in ("torch", "F") and path.rsplit(".", 1)[-1] in (
        "lerp", "add", "addcmul", "mul", "where", "cat", "stack", "maximum", "minimum", "clamp", "normalize")


def _computed_from(flow, scope, value, attr) -> bool:
    """Is ``value`` arithmetic on ``attr`` through local names (``new_mean = self.mean + d``;
    ``self.mean = new_mean``), not a re-binding (``model = wrap(self.model)``)?"""
    if isinstance(value, ast.Name):
        defs = scope.defs_of(value.id)
        if not defs or not all(isinstance(d.value, ast.BinOp) or _tensor_function(d.value) for d in defs):
            return False
    elif not isinstance(value, ast.BinOp):
        return False
    return any(attr in flow.sources_of(scope, [key]) for key in expr_keys(value) if key != attr)


def _update(stmt, flow=None, scope=None) -> Optional[Tuple[str, List[ast.AST], bool]]:
    """(attribute, operands besides its previous value, is a plain accumulation)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if isinstance(target, ast.Subscript):
            target = target.value  # ``self.prototypes[c] = m * self.prototypes[c] + ...``
            reads = [n for n in ast.walk(stmt.value) if isinstance(n, ast.Subscript) and dotted(n.value) == dotted(target)]
            attr = dotted(target)
            if not reads or not attr or not attr.startswith("self.") or attr.count(".") != 1:
                return None
            return attr, _operands_without_subscripts(stmt.value, attr), False
        attr = dotted(target)
        if not attr or not attr.startswith("self.") or attr.count(".") != 1:
            return None
        reads = [n for n in ast.walk(stmt.value) if isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) == attr]
        if reads and (isinstance(stmt.value, ast.BinOp) or _tensor_function(stmt.value)):
            return attr, _operands_without(stmt.value, attr), _pure_sum(stmt.value, attr)
        if not reads and flow is not None and _computed_from(flow, scope, stmt.value, attr):
            return attr, [stmt.value], False  # ``new_mean = self.mean + ...; self.mean = new_mean``
        return None
    if isinstance(stmt, ast.AugAssign):
        attr = dotted(stmt.target)
        if not attr or not attr.startswith("self.") or attr.count(".") != 1:
            return None
        return attr, [stmt.value], isinstance(stmt.op, (ast.Add, ast.Sub))
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        args: List[ast.AST] = []
        node = call
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in INPLACE_UPDATES:
            args.extend(node.args)
            args.extend(k.value for k in node.keywords)
            node = node.func.value
        attr = dotted(node)
        if node is call or not attr or not attr.startswith("self.") or attr.count(".") != 1:
            return None
        if not call.func.attr.endswith("_") and not _chain_has_inplace(call):
            return None
        return attr, args, False
    return None


def _operands_without_subscripts(expr, attr) -> List[ast.AST]:
    """Operands of the update other than reads of ``attr[...]``."""
    if isinstance(expr, ast.BinOp):
        out = []
        for side in (expr.left, expr.right):
            if isinstance(side, ast.Subscript) and dotted(side.value) == attr:
                continue
            if any(isinstance(n, ast.Subscript) and dotted(n.value) == attr for n in ast.walk(side)):
                out.extend(_operands_without_subscripts(side, attr))
            else:
                out.append(side)
        return out
    if isinstance(expr, ast.Call):
        out = []
        for arg in list(expr.args) + [k.value for k in expr.keywords]:
            out.extend(_operands_without_subscripts(arg, attr))
        return out
    return [expr]


def _chain_has_inplace(call) -> bool:
    node = call
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr.endswith("_"):
            return True
        node = node.func.value
    return False


def _operands_without(expr, attr) -> List[ast.AST]:
    """The operands of an update expression other than the attribute's previous value."""
    if isinstance(expr, ast.BinOp):
        out = []
        for side in (expr.left, expr.right):
            if dotted(side) == attr:
                continue
            if isinstance(side, ast.BinOp) and any(dotted(n) == attr for n in ast.walk(side)):
                out.extend(_operands_without(side, attr))
            else:
                out.append(side)
        return out
    if isinstance(expr, ast.Call):
        return [a for a in list(expr.args) + [k.value for k in expr.keywords] if dotted(a) != attr]
    return [expr]


def _pure_sum(expr, attr) -> bool:
    return (isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub))
            and (dotted(expr.left) == attr or dotted(expr.right) == attr))

