"""TLL009 eval-forward-with-grad."""

from __future__ import annotations

import ast

from ..analysis.loops import loop_calls_backward
from ..analysis.names import words
from ..diagnostics import UNSAFE, Fix
from .base import Invalid, Rule, RuleContext
from .insertions import import_edit, line_before, torch_name

EVAL_WORDS = frozenset({"eval", "evaluate", "evaluation", "validate", "validation", "val", "test",
                        "predict", "prediction", "infer", "inference"})


HELPER_METHOD_PREFIXES = ("init", "get_", "set_", "reset", "load", "save", "num_", "zero", "register",
                          "parameters", "named_", "to", "cuda", "cpu", "train", "eval")


class EvalForwardWithGrad(Rule):
    """
    ## What it does
    Finds evaluation code — a function that puts a module in eval mode (`model.eval()`) or
    is named like evaluation (evaluate/validate/test/predict/infer/inference) — that runs
    forward passes with autograd recording and never calls `backward()`. Quiet when the
    forward runs under `torch.no_grad()`/`torch.inference_mode()`, the function is
    decorated with them, or every caller in the linted files runs it with grad disabled.
    A forward may also be a project helper whose summary returns module outputs
    (`out = self._forward(batch)`); a forward whose output is dropped at once
    (`model(calibration_batch)`) keeps no graph and is not reported.

    ## Why is this bad
    With grad enabled, every forward pass saves its activations for a backward pass that
    never comes. Evaluation then needs several times the memory of inference, and any
    output or loss it keeps (`preds.append(out)`, `val_loss += loss`) keeps its whole graph
    alive: the largest leaks seen in real code are evaluation loops over a whole dataset.
    `model.eval()` does not switch autograd off; it only changes dropout and batch norm.

    ## Example
    ```python
    def evaluate(model, loader):
        model.eval()
        correct = 0
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
        return correct
    ```

    ## Use instead
    ```python
    @torch.no_grad()
    def evaluate(model, loader):
        model.eval()
        correct = 0
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
        return correct
    ```

    ## Fix safety
    The fix decorates the function with `@torch.no_grad()` (adding `import torch` when
    needed). It is always **unsafe**: a caller could rely on gradients of the returned
    values (saliency maps, adversarial examples), which the analysis cannot rule out
    outside the linted files.

    ## Memory impact
    All activations of every forward pass are kept until the outputs die; with outputs or
    losses kept across the loop, one full graph per evaluated batch.
    """

    code = "TLL009"
    name = "eval-forward-with-grad"
    summary = "An evaluation function runs forward passes with autograd recording"
    fix_availability = "always"
    repro = "tll009_eval_loop"

    VALID = [
        """
import torch
@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    return [model(x) for x in loader]
""",
        """
import torch
def evaluate(model, loader):
    model.eval()
    with torch.no_grad():
        for x in loader:
            model(x)
""",
    ]
    INVALID = [
        Invalid(
            """
import torch

def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct
""",
            fixed="""
import torch

@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        analysis = ctx.analysis
        index = analysis.index
        if not index.imports.imports_torch():
            return  # other frameworks record gradients on their own terms
        for scope in index.scopes:
            if not scope.is_function or scope.name == "forward" or analysis.grad.scope_off(scope):
                continue  # a forward hands its outputs to whoever called it
            if ctx.in_test_file:
                continue  # a test runs its forwards once
            eval_call = _eval_mode_call(scope)
            named = eval_call is None and self._named_evaluation(analysis, scope)
            if eval_call is None and not named:
                continue
            forward = self._first_forward(analysis, scope, after=eval_call)
            if forward is None:
                continue
            if named and not index.ctx(forward[1]).loops:
                continue  # a name alone is weak evidence: require a loop over data as well
            if loop_calls_backward(analysis, scope, scope.node, retained=True):
                continue  # gradients are wanted here (saliency, test-time adaptation)
            call, stmt, evidence = forward
            why = f"calls `{ast.unparse(eval_call.func)}()` at line {eval_call.lineno}" if eval_call else \
                f"is named like evaluation (`{scope.name}`)"
            message = (f"`{scope.name}` {why} and runs forward passes with autograd recording but never calls "
                       f"`backward()`: every activation is kept for a backward that never comes")
            notes = [f"forward: {evidence.describe()}", "grad mode: no `no_grad`/`inference_mode` around it, "
                     "and no caller in the linted files disables grad for every call"]
            yield self.diagnostic(ctx, stmt, message, self._fix(ctx, scope), notes)

    @staticmethod
    def _named_evaluation(analysis, scope) -> bool:
        """``evaluate(...)``/``validate_epoch(...)``… as a function or a method of a class that
        is not itself a model (a model's ``predict_*`` method is part of its forward)."""
        first = words(scope.name)[:1]
        if not first or first[0] not in EVAL_WORDS:
            return False
        project = analysis.project
        if scope.class_name and project is not None and project.is_module_class(analysis.index.module_name,
                                                                                   scope.class_name):
            return False
        return True

    @staticmethod
    def _first_forward(analysis, scope, after=None):
        index = analysis.index
        kinds = analysis.graph.kinds
        for call, stmt in sorted(scope.calls, key=lambda cs: (cs[0].lineno, cs[0].col_offset)):
            ctx = index.ctx(stmt)
            if ctx is None or ctx.grad_off or ctx.scope is not scope:
                continue
            if after is not None and (call.lineno, call.col_offset) < (after.lineno, after.col_offset):
                continue  # forwards before `.eval()` are training
            if isinstance(call.func, ast.Attribute) and call.func.attr.startswith(HELPER_METHOD_PREFIXES):
                continue  # ``model.init_hidden(bsz)`` builds state; it is not a forward pass
            if isinstance(stmt, ast.Expr) and stmt.value is call:
                continue  # output dropped at once (calibration, ``embed(...)`` for side effects): no graph kept
            evidence = kinds.module_call(call, scope, stmt)
            if evidence is None:
                # A project helper that runs the forward itself (``out = self._forward(batch)``):
                # its summary says what it returns; one that disables grad inside returns no graph.
                summary = kinds.call_summary(call, scope, stmt, 0, oracle=analysis.graph)
                evidence = None
                if summary is not None and not summary.ambiguous and not any(
                        _eval_mode_call(s.scope) or (s.scope.loops and
                                                     EvalForwardWithGrad._named_evaluation(s.analysis, s.scope))
                        for s in summary.summaries):
                    evidence = summary.whole()  # an evaluation helper is reported on its own
            if evidence is not None:
                return call, stmt, evidence
        return None

    @staticmethod
    def _fix(ctx, scope):
        torch = torch_name(ctx)
        edits = []
        if torch is None:
            torch = "torch"
            edit = import_edit(ctx, "import torch")
            if edit is not None:
                edits.append(edit)
        deco = line_before(ctx, scope.node, f"@{torch}.no_grad()")
        if deco is None:
            return None
        edits.append(deco)
        return Fix(UNSAFE, "Decorate the function with `@torch.no_grad()`", tuple(edits))


def _eval_mode_call(scope):
    for call, _ in scope.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "eval" and not call.args and not call.keywords:
            if not (isinstance(func.value, ast.Name) and func.value.id in ("builtins",)):
                return call
    return None
