"""TLL006 running-stat-with-grad."""

from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from ..analysis.callers import argument_evidence
from ..analysis.forward_input import defines_module_class, forward_input_evidence, frozen_module, parameter_read
from ..analysis.graph import STRONG
from ..analysis.module_index import expr_keys
from ..analysis.names import dotted
from ..analysis.parameter_loops import ModuleTensor, bare_reads, module_tensor_names
from ..analysis.unused_classes import never_built, unused_module
from ..analysis.statistic_lifetime import detached_in_place, rebound_earlier, reset_beside_every_update, reset_every_forward
from ..diagnostics import SAFE, UNSAFE, Diagnostic, Fix
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
    `self.running_var.mul_(m).add_(v)`, `self.stats = self.stats + batch_stats`,
    `self.stored_mean[:] = self.stored_mean * (1 - m) + mean * m`, a submodule's statistic
    (`self.bn.running_mean = ...`), a helper handed the statistic
    (`self.embed_avg = lerp(self.embed_avg, embed_sum, decay)`) or a buffer re-registered
    from its old value (`self.register_buffer(name, getattr(self, name) * d + new * (1 - d))`).
    The graph may come from the method itself, from what callers in the linted files pass
    in, from a submodule's `weight` or `bias` (batch norm folded into a convolution), or from
    a module's forward input: in training it carries a graph unless a caller in the linted
    files shows otherwise (passes plain data or runs it under `no_grad`). That assumption
    alone does not report a class nothing in the linted files builds when the modules
    importing its module use nothing they import from it (a metrics module left imported
    and never named): no object of it holds a statistic. Nor a statistic fed through a
    method argument when every loop of steps that calls the method on an object also
    resets that object (`loss_rec.reset()` every `print_interval` steps): it holds a few
    steps' values, not the run's; a reset once per epoch, outside the loop of steps, is
    still reported.

    It also finds EMA and target-network copies that walk two modules' tensors and update
    one from the other's parameters in place, outside `no_grad`:
    `for t, p in zip(target.parameters(), model.parameters()): t.mul_(d).add_(p, alpha=1 - d)`.
    A parameter records autograd, so each update links the copy into the model's graph
    and onto the previous update's: the chain grows by a few nodes per tensor and step.

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
    naming convention, and for a copy of another module's parameters (a forward of the
    copy outside `no_grad` could have backpropagated into the model through it).

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
        if not ctx.uses_torch and not defines_module_class(ctx.analysis):
            return
        if ctx.in_test_module:
            return  # a test builds its objects for a few calls, not a training run
        analysis = ctx.analysis
        for scope in analysis.index.scopes:
            if not scope.is_function or scope.name in ("__init__", "reset_parameters"):
                continue
            for stmt in scope.statements:
                copied = _parameter_update(stmt, analysis.index.ctx(stmt))
                if copied is not None and not analysis.grad.stmt_off(stmt) \
                        and not frozen_module(analysis, scope, copied[3].module, stmt):
                    yield self._parameter_diagnostic(ctx, stmt, *copied)
            if not scope.class_name or analysis.grad.scope_off(scope):
                continue
            for stmt in scope.statements:
                found = _update(stmt, analysis.flow, scope, analysis.graph.kinds)
                if found is None or analysis.grad.stmt_off(stmt) or rebound_earlier(analysis, scope, found[0], stmt):
                    continue
                if reset_every_forward(analysis, scope, found[0]):
                    continue  # per-sequence recurrent state (attention, decoder memory), not a running statistic
                attr, operands, accumulation = found
                result = self._evidence(analysis, scope, stmt, operands, accumulation)
                if result is None:
                    continue
                evidence, graph, via = result
                if via is not None and reset_beside_every_update(analysis, scope, attr):
                    continue  # every loop feeding it resets the object every few steps: bounded, no growth
                if evidence.strength != STRONG and scope.class_name and never_built(analysis, scope.class_name) \
                        and unused_module(analysis):
                    continue  # a graph only assumed, in a module its importers leave unused: no object, no statistic
                parts = []
                for operand in operands:
                    if graph is None:  # computed from a parameter: detach the names that lead to it
                        parts.extend((n, None) for n in ast.walk(operand) if isinstance(n, ast.Name)
                                     and parameter_read(analysis, scope, n, stmt) is not None)
                    else:
                        parts.extend(carrying_parts(ctx, operand, stmt, graph))
                fix = None
                if parts:
                    edits = tuple(ctx.insert_after(expr, ".detach()") for expr, _ in parts)
                    # A parameter may be a tensor from one caller and a number from another
                    # (``meter.update(loss.item())``): ``.detach()`` then raises there.
                    from_parameter = any(isinstance(n, ast.Name) and n.id in scope.params
                                         for expr, _ in parts for n in ast.walk(expr))
                    proven = evidence.strength == STRONG and all(ev.tensor for _, ev in parts) and not from_parameter
                    fix = Fix(SAFE if proven else UNSAFE,
                              "Detach the graph-carrying operand of the update", edits)
                shown = attr if attr.startswith("the ") else f"`{attr}`"
                often = "every training step" if scope.name == "forward" else f"every call of `{scope.name}`"
                message = (f"{shown} is updated from its previous value and a graph-carrying tensor without "
                           f"`.detach()`, and no caller path runs it under `no_grad`; the statistic keeps the "
                           f"graph of {often} alive, chained onto all earlier ones")
                notes = [f"graph: {evidence.describe()}"]
                if via:
                    notes.append(f"argument: {via}")
                    message += f" (the graph comes in as an argument: {via})"
                yield self.diagnostic(ctx, stmt, message, fix, notes)

    def _parameter_diagnostic(self, ctx: RuleContext, stmt, name: str, target: ModuleTensor,
                              reads: List[ast.Name], source: ModuleTensor) -> Diagnostic:
        # Unsafe: a later backward through the copy (a teacher forward outside no_grad)
        # would have reached the source parameters, and no longer does.
        fix = Fix(UNSAFE, "Detach the parameter the update reads",
                  tuple(ctx.insert_after(read, ".detach()") for read in reads))
        read = reads[0].id
        message = (f"`{name}`, a {target.kind} of `{target.module}`, is updated in place from `{read}`, a "
                   f"parameter of `{source.module}`, without `.detach()` or `no_grad`; every update extends "
                   f"a graph that the copy keeps alive")
        notes = [f"graph: `{read}` iterates over `{source.module}.parameters()`, leaves that record autograd",
                 "a loop over two modules' tensors updating one from the other: an EMA or target-network copy"]
        return self.diagnostic(ctx, stmt, message, fix, notes)

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
            ev = forward_input_evidence(analysis, scope, param)
            if ev is not None:
                return ev, oracle, None
        for operand in operands:
            ev = parameter_read(analysis, scope, operand, stmt)
            if ev is not None:
                return None if accumulation else (ev, None, None)
        return None


def _tensor_function(value) -> bool:
    """``torch.lerp(self.ema, x, w)``-style updates; not ``self.model = wrap(self.model)``."""
    if not isinstance(value, ast.Call):
        return False
    path = dotted(value.func) or ""
    return path.split(".")[0] in ("torch", "F") and path.rsplit(".", 1)[-1] in (
        "lerp", "add", "addcmul", "mul", "where", "cat", "stack", "maximum", "minimum", "clamp", "normalize")


def _self_path(attr: str) -> bool:
    """``self.mean`` or a submodule's statistic, ``self.bn.running_mean``."""
    parts = attr.split(".")
    # Writes through ``.data`` (or into ``.grad``) record no autograd history.
    return parts[0] == "self" and 2 <= len(parts) <= 3 and not {"data", "grad"} & set(parts[1:])


def _plain_function_of(value, attr, kinds, scope) -> bool:
    """``self.avg = lerp(self.avg, new, decay)``: a project function (not a class, not a
    module) handed the statistic itself and returning its next value."""
    if kinds is None or not isinstance(value, ast.Call) or not isinstance(value.func, ast.Name):
        return False
    if not any(dotted(arg) == attr for arg in value.args):
        return False
    return bool(kinds.resolve_functions(value.func, scope, None)) and kinds.resolve_class(value.func, scope) is None


def _buffer_reregistered(stmt, scope) -> Optional[Tuple[str, List[ast.AST], bool]]:
    """``old = getattr(self, name); new = old * d + x * (1 - d); self.register_buffer(name, new)``:
    the update is the assignment of ``new``."""
    if scope is None or not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 \
            or not isinstance(stmt.targets[0], ast.Name) or not isinstance(stmt.value, ast.BinOp):
        return None
    new = stmt.targets[0].id
    names = set()
    for call, _ in scope.calls:
        if dotted(call.func) == "self.register_buffer" and len(call.args) == 2 \
                and isinstance(call.args[0], ast.Name) and dotted(call.args[1]) == new:
            names.add(call.args[0].id)
    if not names:
        return None
    for node in ast.walk(stmt.value):
        if not isinstance(node, ast.Name):
            continue
        old = scope.defs_of(node.id)
        if len(old) == 1 and isinstance(old[0].value, ast.Call) and dotted(old[0].value.func) == "getattr" \
                and len(old[0].value.args) >= 2 and dotted(old[0].value.args[0]) == "self" \
                and dotted(old[0].value.args[1]) in names:
            name = dotted(old[0].value.args[1])
            return (f"the buffer named by `{name}`", _operands_without(stmt.value, node.id),
                    _pure_sum(stmt.value, node.id))
    return None


def _computed_from(flow, scope, value, attr, stmt) -> bool:
    """Is ``value`` arithmetic on ``attr`` through local names (``new_mean = self.mean + d``;
    ``self.mean = new_mean``), not a re-binding (``model = wrap(self.model)``)? Followed
    through the definitions that reach the statement, so a later write of another
    attribute from ``attr`` does not count."""
    if isinstance(value, ast.Name):
        defs = scope.defs_of(value.id)
        if not defs or not all(isinstance(d.value, ast.BinOp) or _tensor_function(d.value) for d in defs):
            return False
    elif not isinstance(value, ast.BinOp):
        return False
    todo = [(key, stmt) for key in expr_keys(value) if key != attr]
    seen = set()
    while todo and len(seen) < MAX_SOURCES:
        key, at = todo.pop()
        if (key, id(at)) in seen:
            continue
        seen.add((key, id(at)))
        for d in flow.reaching(scope, key, at):
            found = expr_keys(d.value) if getattr(d, "value", None) is not None else set()
            if attr in found:
                return True
            todo.extend((k, d.stmt) for k in found)
    return False


MAX_SOURCES = 64


def _update(stmt, flow=None, scope=None, kinds=None) -> Optional[Tuple[str, List[ast.AST], bool]]:
    """(attribute, operands besides its previous value, is a plain accumulation)."""
    registered = _buffer_reregistered(stmt, scope)
    if registered is not None:
        return registered
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if isinstance(target, ast.Subscript):
            target = target.value  # ``self.prototypes[c] = m * self.prototypes[c] + ...``
            reads = [n for n in ast.walk(stmt.value) if isinstance(n, ast.Subscript) and dotted(n.value) == dotted(target)]
            attr = dotted(target)
            if not attr or not _self_path(attr):
                return None
            if not reads and isinstance(stmt.value, ast.BinOp) and any(
                    dotted(n) == attr for n in ast.walk(stmt.value) if isinstance(n, ast.Attribute)):
                # ``self.stored_mean[:] = self.stored_mean * (1 - m) + mean * m``: in place, whole
                return attr, _operands_without(stmt.value, attr), _pure_sum(stmt.value, attr)
            if not reads:
                return None
            return attr, _operands_without_subscripts(stmt.value, attr), False
        attr = dotted(target)
        if not attr or not _self_path(attr):
            return None
        reads = [n for n in ast.walk(stmt.value) if isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) == attr]
        if reads and (isinstance(stmt.value, ast.BinOp) or _tensor_function(stmt.value)
                      or _plain_function_of(stmt.value, attr, kinds, scope)):
            return attr, _operands_without(stmt.value, attr), _pure_sum(stmt.value, attr)
        if not reads and flow is not None and _computed_from(flow, scope, stmt.value, attr, stmt):
            return attr, [stmt.value], False  # ``new_mean = self.mean + ...; self.mean = new_mean``
        return None
    if isinstance(stmt, ast.AugAssign):
        attr = dotted(stmt.target)
        if not attr or not attr.startswith("self.") or attr.count(".") != 1:
            return None
        return attr, [stmt.value], isinstance(stmt.op, (ast.Add, ast.Sub))
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        node, args = _update_chain(call)
        attr = dotted(node)
        if node is call or not attr or not _self_path(attr):
            return None
        if not call.func.attr.endswith("_") and not _chain_has_inplace(call):
            return None
        return attr, args, False
    return None


def _parameter_update(stmt, where) -> Optional[Tuple[str, ModuleTensor, List[ast.Name], ModuleTensor]]:
    """``for ema_p, p in zip(ema.parameters(), model.parameters()): ema_p.mul_(d).add_(p)``:
    an in-place update of one module's tensor from another module's parameter, read with its
    graph. (name, its module tensor, the reads of the parameter, the parameter's module)."""
    if where is None or not where.loops or not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    call = stmt.value
    node, args = _update_chain(call)
    if node is call or not isinstance(node, ast.Name) or not _chain_has_inplace(call):
        return None
    names = module_tensor_names(where.loops)
    target = names.get(node.id)
    if target is None or detached_in_place(where.loops[-1], node.id):
        return None
    sources = {n: t for n, t in names.items()
               if t.kind == "parameter" and t.module != target.module and n != node.id}
    reads = [read for arg in args for read in bare_reads(arg, sources)]
    if not reads:
        return None
    return node.id, target, reads, sources[reads[0].id]


def _update_chain(call: ast.Call) -> Tuple[ast.AST, List[ast.AST]]:
    """``x.mul_(m).add_(v, alpha=a)``: the tensor updated (``x``) and the chain's arguments."""
    args: List[ast.AST] = []
    node: ast.AST = call
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in INPLACE_UPDATES:
        args.extend(node.args)
        args.extend(k.value for k in node.keywords)
        node = node.func.value
    return node, args


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
