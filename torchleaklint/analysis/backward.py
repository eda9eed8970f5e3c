"""Backward passes in the source: ``loss.backward()``, ``accelerator.backward(loss)``,
``scaler.scale(loss).backward()``, ``torch.autograd.backward/grad(...)`` — what they
backpropagate and whether they keep the graph (``retain_graph``)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional, Set, Tuple

from .names import ImportMap, dotted


@dataclass
class BackwardSite:
    call: ast.Call
    receiver: ast.AST
    keys: Tuple[str, ...]
    scalar_proof: bool  # backward() without a gradient argument needs a scalar
    retain_graph: bool
    direct_keys: Tuple[str, ...] = ()  # backpropagated as they are, not via a reduction
    kind: str = "backward"  # "grad" for torch.autograd.grad
    stmt: Optional[ast.AST] = None  # the statement holding the call



# Receivers of ``x.backward(loss)`` that are engines, not tensors.
_BACKWARD_ENGINES = frozenset({"accelerator", "fabric", "engine", "model_engine", "self", "trainer",
                               "deepspeed_engine", "ds_engine", "amp", "optimizer", "scaler",
                               "runner", "booster", "strategy", "model", "module"})


def backward_site(call: ast.Call, imports: ImportMap, stmt: Optional[ast.AST] = None) -> Optional[BackwardSite]:
    func = call.func
    receiver = None
    scalar_proof = False
    kind = "backward"
    qual = imports.qualname(func) or ""
    if qual in ("torch.autograd.backward", "torch.autograd.grad"):
        # Checked first: ``torch.autograd.backward(t, ...)`` is also an attribute named ``backward``.
        if call.args:
            receiver = call.args[0]
            kind = "grad" if qual.endswith(".grad") else "backward"
    elif isinstance(func, ast.Attribute) and func.attr in ("backward", "manual_backward"):
        owner = dotted(func.value)
        owner_last = owner.rsplit(".", 1)[-1] if owner else None
        if call.args and (func.attr == "manual_backward" or owner_last in _BACKWARD_ENGINES
                          or imports.is_module_alias(owner or "")):
            receiver = call.args[0]
            scalar_proof = True
        elif func.attr == "backward":
            receiver = func.value
            scalar_proof = not call.args and not any(k.arg in ("gradient", "grad_tensors") for k in call.keywords)
    elif _scaler_step(call):
        receiver = call.args[0]  # ``loss_scaler(loss, optimizer, clip_grad=...)``
        scalar_proof = True
    if receiver is None:
        return None
    retain = any(
        k.arg == "retain_graph" and not (isinstance(k.value, ast.Constant) and not k.value.value)
        for k in call.keywords
    )
    keys, direct = receiver_keys(receiver, imports)
    return BackwardSite(call, receiver, tuple(sorted(keys)), scalar_proof, retain, tuple(sorted(direct)), kind, stmt)


def _scaler_step(call: ast.Call) -> bool:
    """``loss_scaler(loss, optimizer, ...)``: a loss-scaler object called with the loss and
    the optimizer (timm's ``NativeScaler`` and the trainers that copy it) scales the loss,
    runs its backward and steps the optimizer."""
    name = dotted(call.func)
    if name is None or "scaler" not in name.rsplit(".", 1)[-1].lower() or not call.args:
        return False
    if not isinstance(call.args[0], (ast.Name, ast.Attribute, ast.BinOp)):
        return False
    optimizers = list(call.args[1:2]) + [k.value for k in call.keywords if k.arg == "optimizer"]
    return any((dotted(o) or "").rsplit(".", 1)[-1].lower().startswith(("optim", "opt")) for o in optimizers)


def receiver_keys(expr: ast.AST, imports: ImportMap) -> Tuple[Set[str], Set[str]]:
    """Names whose values are backpropagated by ``expr.backward()``: every value operand,
    but not the callee of a wrapper such as ``scaler.scale(loss)``. The second set holds
    the names backpropagated as they are (``loss``, ``loss / k``, ``scaler.scale(loss)``),
    not through a reduction (``out.sum()``), for which ``backward()`` proves a scalar."""
    out: Set[str] = set()
    direct: Set[str] = set()

    def visit(node, whole):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr not in ("scale",):
                base = dotted(func.value)
                if not (base and imports.is_module_alias(base.split(".")[0])):
                    visit(func.value, False)
            wrapper = isinstance(func, ast.Attribute) and func.attr == "scale"
            for arg in node.args:
                visit(arg, whole and wrapper)
            for kw in node.keywords:
                visit(kw.value, False)
        elif isinstance(node, (ast.Name, ast.Attribute)):
            path = dotted(node)
            if path is not None:
                out.add(path)
                if whole:
                    direct.add(path)
            elif isinstance(node, ast.Attribute):
                visit(node.value, False)
        elif isinstance(node, ast.BinOp):
            visit(node.left, whole)
            visit(node.right, whole)
        else:
            for child in ast.iter_child_nodes(node):
                visit(child, whole and isinstance(node, (ast.UnaryOp,)))

    visit(expr, True)
    out.discard("self")
    direct.discard("self")
    return out, direct
