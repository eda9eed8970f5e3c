"""TLL012 legacy-autograd-function."""

from __future__ import annotations

import ast

from .autograd_functions import autograd_functions, is_static
from .base import Invalid, Rule, RuleContext


class LegacyAutogradFunction(Rule):
    """
    ## What it does
    Finds old-style custom autograd functions: a `torch.autograd.Function` subclass whose
    `forward` is an instance method (no `@staticmethod`), or that calls
    `self.save_for_backward(...)`.

    ## Why is this bad
    Legacy functions were instantiated per call and kept their saved tensors on the
    instance, which the output's graph refers to and which refers back to the output: a
    reference cycle per call that only the garbage collector frees. PyTorch deprecated
    them in 1.3 and has raised `RuntimeError: Legacy autograd function with non-static
    forward method is deprecated` since 1.5, so the code also no longer runs.

    ## Example
    ```python
    class Clamp(torch.autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x.clamp(min=0)

        def backward(self, grad):
            (x,) = self.saved_tensors
            return grad * (x > 0)

    y = Clamp()(x)
    ```

    ## Use instead
    ```python
    class Clamp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * (x > 0)

    y = Clamp.apply(x)
    ```

    ## Fix safety
    No automatic fix: constructor arguments and instance attributes set in `__init__`
    must become arguments of `apply` (and `backward` must return `None` for them), and
    every call site changes from `Clamp()(x)` to `Clamp.apply(x)`, possibly in other files.

    ## Memory impact
    On PyTorch before 1.5, each call's saved tensors and graph until the next cyclic
    collection; on current PyTorch the first call raises.
    """

    code = "TLL012"
    name = "legacy-autograd-function"
    summary = "An old-style autograd Function (instance forward or self.save_for_backward)"
    fix_availability = "never"
    repro = None

    VALID = [
        """
import torch
class Clamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)
""",
        """
import torch
class Block(torch.nn.Module):
    def forward(self, x):
        return x.relu()
""",
    ]
    INVALID = [
        Invalid(
            """
import torch
class Clamp(torch.autograd.Function):
    def forward(self, x):
        self.save_for_backward(x)
        return x.clamp(min=0)
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        for function in autograd_functions(ctx.analysis):
            forward = function.forward
            if forward is not None and not is_static(forward) \
                    and not any(_is_classmethod(d) for d in forward.decorator_list):
                first = forward.args.args[0].arg if forward.args.args else "self"
                message = (f"`{function.node.name}.forward` is an instance method: a legacy autograd Function, "
                           f"which current PyTorch refuses to run; make `forward`/`backward` static methods "
                           f"taking `ctx` and call `{function.node.name}.apply(...)`")
                # Point at the instance parameter, not the whole method.
                where = forward.args.args[0] if forward.args.args else forward
                yield self.diagnostic(ctx, where, message, None,
                                      [f"`forward({first}, ...)` has no `@staticmethod`"])
                continue
            for method in (function.forward, function.backward):
                if method is None or is_static(method):
                    continue
                for node in ast.walk(method):
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                            and node.func.attr == "save_for_backward" and isinstance(node.func.value, ast.Name) \
                            and node.func.value.id == "self":
                        message = (f"`self.save_for_backward(...)` in `{function.node.name}`: a legacy autograd "
                                   f"Function; save on `ctx` in a static `forward`")
                        yield self.diagnostic(ctx, node, message)
                        break


def _is_classmethod(decorator: ast.AST) -> bool:
    return isinstance(decorator, ast.Name) and decorator.id == "classmethod"
