"""TLL011 output-tensor-on-ctx."""

from __future__ import annotations

import ast
from typing import Dict

from ..analysis.module_index import body_nodes
from .autograd_functions import autograd_functions, is_static
from .base import Invalid, Rule, RuleContext


class OutputTensorOnCtx(Rule):
    """
    ## What it does
    Finds a custom `torch.autograd.Function` whose static `forward` stores a tensor it
    returns as an attribute of `ctx` (`ctx.out = out` ... `return out`) instead of passing
    it to `ctx.save_for_backward(out)`. Only names that `forward` returns are reported:
    inputs, intermediate tensors and non-tensor settings (`ctx.scale = scale`) kept on
    `ctx` form no cycle, and detached copies (`ctx.out = out.detach()`) have no graph.

    ## Why is this bad
    The tensor that `forward` returns gets the function's graph node as its `grad_fn`,
    and that node is `ctx`: `out -> grad_fn (ctx) -> ctx.out -> out` is a reference cycle.
    Reference counting can never free it, so every call's output, its graph and all
    that `ctx` holds wait for the cyclic garbage collector; in a training loop they pile
    up between collections (PyTorch's documentation says outputs must be saved with
    `save_for_backward` for this reason). `save_for_backward` stores the tensor without
    its `grad_fn`, and also checks that it was not modified in place before `backward`.

    ## Example
    ```python
    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.out = out
            return out

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.out
    ```

    ## Use instead
    ```python
    class Exp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, grad):
            (out,) = ctx.saved_tensors
            return grad * out
    ```

    ## Fix safety
    No automatic fix: `backward` must read the tensor back from `ctx.saved_tensors`, in the
    order of a single `save_for_backward` call that may already save other tensors, and
    code outside the class may read the attribute; the rewrite spans both methods and is
    left to the author.

    ## Memory impact
    Each call's output, its autograd graph and every tensor on `ctx` stay alive until the
    next cyclic collection (generation 2 can be thousands of allocations away): in a
    training step, whole activations per call; on CUDA, the collector never runs on
    device memory pressure.
    """

    code = "TLL011"
    name = "output-tensor-on-ctx"
    summary = "A custom autograd Function keeps the tensor it returns on ctx: a reference cycle"
    fix_availability = "never"
    repro = None

    VALID = [
        """
import torch
class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        out = x * scale
        ctx.save_for_backward(out)
        return out
""",
        """
import torch
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.out = out.detach()
        return out
""",
    ]
    INVALID = [
        Invalid(
            """
import torch
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.out = out
        return out
""",
        ),
        Invalid(
            """
from torch.autograd import Function
class TopK(Function):
    @staticmethod
    def forward(ctx, x, k):
        values, indices = x.topk(k)
        ctx.values, ctx.k = values, k
        return values, indices
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        for function in autograd_functions(ctx.analysis):
            forward = function.forward
            if forward is None or not is_static(forward) or not forward.args.args:
                continue
            ctx_name = forward.args.args[0].arg
            returned = _returned_names(forward)
            if not returned:
                continue
            params = {a.arg for a in forward.args.args + forward.args.kwonlyargs}
            for stmt, attr, name in _ctx_stores(forward, ctx_name):
                # An input returned unchanged comes back as a new view, not as the object on ``ctx``.
                if name not in returned or name in params or _rebound_between(forward, name, stmt, returned[name]):
                    continue
                message = (f"`{ctx_name}.{attr} = {name}` keeps the tensor `{function.node.name}.forward` returns "
                           f"(line {returned[name]}) on `{ctx_name}`, its own `grad_fn`: a reference cycle that "
                           f"only the garbage collector frees; use `{ctx_name}.save_for_backward({name})`")
                yield self.diagnostic(ctx, stmt, message, None,
                                      [f"`{name}` is returned at line {returned[name]}"])


def _returned_names(function: ast.AST) -> Dict[str, int]:
    """Plain names returned by the function (alone or as tuple/list elements), with the line."""
    out: Dict[str, int] = {}
    for node in body_nodes(function):
        if isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            elts = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
            for elt in elts:
                if isinstance(elt, ast.Name):
                    out.setdefault(elt.id, node.lineno)
    return out


def _rebound_between(function: ast.AST, name: str, stmt: ast.AST, return_line: int) -> bool:
    """Is ``name`` assigned again after the ``ctx`` store and before the return, so that the
    returned tensor is another object?"""
    for node in body_nodes(function):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)) else []
        if not targets or node is stmt or not stmt.lineno < node.lineno <= return_line:
            continue
        if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
            return True
    return False


def _ctx_stores(function: ast.AST, ctx_name: str):
    """(statement, attribute, stored name) for ``ctx.attr = name`` and tuple forms of it."""
    for node in body_nodes(function):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = []
            if isinstance(target, (ast.Tuple, ast.List)) and isinstance(node.value, (ast.Tuple, ast.List)) \
                    and len(target.elts) == len(node.value.elts):
                pairs = list(zip(target.elts, node.value.elts))
            else:
                pairs = [(target, node.value)]
            for t, v in pairs:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == ctx_name \
                        and isinstance(v, ast.Name):
                    yield node, t.attr, v.id
