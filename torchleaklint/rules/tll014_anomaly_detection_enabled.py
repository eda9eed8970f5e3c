"""TLL014 anomaly-detection-enabled."""

from __future__ import annotations

import ast
from typing import Optional

from ..analysis.module_index import start_of
from ..analysis.names import dotted, words
from .base import Invalid, Rule, RuleContext
from .call_sites import calls_of

# Words of an ``if`` test that make it a debugging switch (``if args.debug:``,
# ``if cfg.detect_anomaly:``).
DEBUG_WORDS = frozenset({"debug", "debugging", "anomaly", "anomalies", "detect", "nan", "nans", "check", "sanity",
                         "verbose", "dev", "profile", "profiling", "diagnose", "diagnostics"})

# Words of a function or class name that make it a debugging tool or a test.
DEBUG_TOOL_WORDS = frozenset({"debug", "debugging", "test", "anomaly", "anomalies", "detect", "sanity", "check",
                              "diagnose", "inspect"})


class AnomalyDetectionEnabled(Rule):
    """
    ## What it does
    Finds autograd anomaly detection switched on outside a debugging guard:
    `torch.autograd.set_detect_anomaly(True)` and `with torch.autograd.detect_anomaly():`.
    Not reported in test files, under an `if` whose test names a debugging switch
    (`if args.debug:`, `if cfg.detect_anomaly:`), with a computed flag
    (`set_detect_anomaly(args.detect_anomaly)`), when it is switched off again later in
    the same function or in another method of the same class (a training callback's
    `before_train_iter`/`after_train_iter` pair), or inside a function or class named as
    a debugging tool or a test (`debug_step`, `class DetectAnomalyHook`).

    ## Why is this bad
    Anomaly mode records the Python traceback of the forward call that created every
    autograd node and checks every backward result for NaN. Each graph's nodes carry
    their stack traces (tens of KB per node in deep models) until the graph is freed, and
    steps run several times slower. It is a debugging tool that PyTorch documents as not
    for training; left on, it costs memory and time on every step of every run.

    ## Example
    ```python
    torch.autograd.set_detect_anomaly(True)
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
    ```

    ## Use instead
    ```python
    torch.autograd.set_detect_anomaly(args.detect_anomaly)
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
    ```

    ## Fix safety
    No automatic fix: whether the switch was left on by mistake or is wanted for this run
    is the author's decision; the fix is to delete it or put it behind a flag.

    ## Memory impact
    A stack trace per autograd node of every live graph (a training step's graph holds
    thousands of nodes), and a step time several times longer; the extra memory is
    held while each graph lives, so code that keeps graphs (TLL001, TLL007) grows faster.
    """

    code = "TLL014"
    name = "anomaly-detection-enabled"
    summary = "Autograd anomaly detection is left on outside a debugging guard"
    fix_availability = "never"
    repro = None

    VALID = [
        """
import torch
if args.debug:
    torch.autograd.set_detect_anomaly(True)
""",
        """
import torch
torch.autograd.set_detect_anomaly(args.detect_anomaly)
""",
        """
import torch
torch.autograd.set_detect_anomaly(True)
loss = step(batch)
torch.autograd.set_detect_anomaly(False)
""",
    ]
    INVALID = [
        Invalid(
            """
import torch
torch.autograd.set_detect_anomaly(True)
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
""",
        ),
        Invalid(
            """
from torch import autograd
def train(model, loader):
    with autograd.detect_anomaly():
        for x, y in loader:
            criterion(model(x), y).backward()
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        if ctx.in_test_file:
            return
        index = ctx.analysis.index
        for scope, call, stmt, qual in calls_of(index, _is_anomaly_switch, ANOMALY_SWITCHES):
            kind = "set" if qual.endswith("set_detect_anomaly") else "context"
            if kind == "set" and not (_switches_on(call) and not _switched_off_later(scope, index, call, stmt)):
                continue
            if kind == "context" and not _is_with_item(stmt, call):
                continue
            where = index.ctx(stmt)
            if where is None or _debug_guarded(where) or _in_debug_function(scope):
                continue
            text = ast.unparse(call)
            message = (f"`{text}` turns on autograd anomaly detection outside a debugging guard: every autograd "
                       f"node keeps its forward's stack trace and steps run several times slower")
            yield self.diagnostic(ctx, call, message)


ANOMALY_SWITCHES = frozenset({"set_detect_anomaly", "detect_anomaly"})


def _is_anomaly_switch(qual: str) -> bool:
    return qual.startswith("torch") and qual.rsplit(".", 1)[-1] in ANOMALY_SWITCHES


def _anomaly_call(call: ast.Call, imports) -> Optional[str]:
    qual = imports.qualname(call.func) or ""
    if not _is_anomaly_switch(qual):
        return None
    return "set" if qual.endswith("set_detect_anomaly") else "context"


def _switches_on(call: ast.Call) -> bool:
    values = list(call.args[:1]) + [k.value for k in call.keywords if k.arg == "mode"]
    return any(isinstance(v, ast.Constant) and v.value is True for v in values)


def _is_with_item(stmt, call) -> bool:
    return isinstance(stmt, (ast.With, ast.AsyncWith)) and any(item.context_expr is call for item in stmt.items)


def _switched_off_later(scope, index, call, stmt) -> bool:
    """A ``set_detect_anomaly(False)`` later in the same scope, or in any method of the same
    class (``before_train_iter`` / ``after_train_iter`` callbacks): a debugging window."""
    scopes = [scope]
    if scope.class_name is not None:
        scopes = index.methods(scope.class_name)
    for other, _ in (pair for s in scopes for pair in s.calls):
        if other is call or _anomaly_call(other, index.imports) != "set":
            continue
        if scope.class_name is None and start_of(other) <= start_of(call):
            continue
        values = list(other.args[:1]) + [k.value for k in other.keywords if k.arg == "mode"]
        if any(isinstance(v, ast.Constant) and v.value is False for v in values):
            return True
    return False


def _debug_guarded(where) -> bool:
    for block in where.blocks:
        test = getattr(getattr(block, "owner", block), "test", None)
        if test is None:
            continue
        for node in ast.walk(test):
            name = None
            if isinstance(node, (ast.Name, ast.Attribute)):
                name = (dotted(node) or "").rsplit(".", 1)[-1] or getattr(node, "attr", None)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                name = node.value
            if name and any(w in DEBUG_WORDS for w in words(name)):
                return True
    return False


def _in_debug_function(scope) -> bool:
    """Inside a function or a class whose name makes it a debugging tool or a test
    (``debug_step``, ``test_grad``, ``class DetectAnomalyHook``)."""
    while scope is not None:
        names = [scope.name] if scope.is_function else []
        if scope.class_name:
            names.append(scope.class_name)
        if any(w in DEBUG_TOOL_WORDS for name in names for w in words(name)):
            return True
        scope = scope.parent
    return False
