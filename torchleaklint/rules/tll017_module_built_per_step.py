"""TLL017 module-built-per-step."""

from __future__ import annotations

import ast
from typing import Optional

from ..analysis.module_index import contains
from ..analysis.names import dotted
from .base import Invalid, Rule, RuleContext
from .step_loops import own_optimizer_step

# torch.nn layers that own parameters (or submodules that do): building one makes weights.
PARAMETER_LAYERS = frozenset({
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "Embedding", "EmbeddingBag", "RNN", "LSTM", "GRU",
    "RNNCell", "LSTMCell", "GRUCell", "MultiheadAttention", "Transformer", "TransformerEncoder",
    "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer", "BatchNorm1d", "BatchNorm2d",
    "BatchNorm3d", "LayerNorm", "GroupNorm", "RMSNorm", "PReLU",
})
CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})
MAX_DEPTH = 2


class ModuleBuiltPerStep(Rule):
    """
    ## What it does
    Finds a module with parameters (a `torch.nn` layer such as `nn.Linear(...)`, a
    `Sequential` of them, or a project class deriving `nn.Module` whose `__init__` builds
    layers or parameters) constructed in the iteration of a loop that steps an optimizer
    in that same iteration (`optimizer.step()` in the loop's own body, not in a loop
    nested in it). Not reported: a model built once per trial, fold, seed or run in an
    outer loop whose inner loop does the steps; modules without parameters
    (`nn.CrossEntropyLoss()`, `nn.ReLU()`); a construction under an `if` (built once,
    lazily); a module whose weights are loaded in the same iteration
    (`load_state_dict`, a reset by design, as in test-time adaptation).

    ## Why is this bad
    Every step allocates and randomly initialises every parameter of a new module. If the
    optimizer was built before the loop, it keeps updating the parameters of the first
    module while the forward uses a fresh one: the model never learns. If the optimizer is
    rebuilt too, each step trains new random weights once, and the optimizer's state
    (Adam's moments) starts over every step.

    ## Example
    ```python
    optimizer = torch.optim.Adam(model.parameters())
    for x, y in loader:
        head = nn.Linear(512, num_classes)
        loss = criterion(head(model(x)), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    ```

    ## Use instead
    ```python
    head = nn.Linear(512, num_classes)
    optimizer = torch.optim.Adam([*model.parameters(), *head.parameters()])
    for x, y in loader:
        loss = criterion(head(model(x)), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    ```

    ## Fix safety
    No automatic fix: moving the construction out of the loop changes what is trained
    (one module instead of a fresh one per step), and the optimizer must then be built on
    the moved module's parameters; both are the author's decisions.

    ## Memory impact
    No growth: the previous step's module is freed when its name is rebound (measured
    flat on CPU, so there is no `verify` reproduction). The cost is a second copy of the
    module's parameters alive while the new one is built (a higher peak per step), the
    time to allocate and initialise them on every step, and a training run that does not
    train what it seems to.

    This rule is opt-in (`--extend-select TLL017`): too few of its findings have been
    read on real code to measure its precision (none in 142 repository trees).
    """

    code = "TLL017"
    name = "module-built-per-step"
    summary = "A module with parameters is built again on every optimizer step"
    fix_availability = "never"
    repro = None

    VALID = [
        """
import torch
from torch import nn
for trial in range(trials):
    model = nn.Linear(16, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lrs[trial])
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        """
import torch
from torch import nn
for x, y in loader:
    criterion = nn.CrossEntropyLoss()
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn
optimizer = torch.optim.Adam(model.parameters())
for x, y in loader:
    head = nn.Linear(512, 10)
    loss = nn.functional.cross_entropy(head(model(x)), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        if not ctx.uses_torch:
            return
        analysis = ctx.analysis
        index = analysis.index
        for scope in index.scopes:
            if not scope.loops:
                continue
            for call, stmt in scope.calls:
                if not _spelled_like_a_class(call):
                    continue
                where = index.ctx(stmt)
                if where is None or not where.loops or where.conditional:
                    continue
                loop = where.loops[-1]
                step = own_optimizer_step(index, scope, loop)
                if step is None or _inside_other_construction(scope, call, loop):
                    continue
                what = _parameter_module(analysis, scope, stmt, call, 0)
                if what is None or _weights_loaded(scope, stmt, loop):
                    continue
                stepper = dotted(step.func) or "step"
                evidence = f"the loop at line {loop.lineno} calls `{stepper}()` at line {step.lineno}"
                message = (f"`{dotted(call.func)}(...)` builds a new module with freshly initialised parameters on "
                           f"every optimizer step ({evidence}): the weights trained by one step are not the ones "
                           f"the next step uses")
                yield self.diagnostic(ctx, call, message, None, [f"module: {what}", evidence])


def _spelled_like_a_class(call: ast.Call) -> bool:
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    return name[:1].isupper()


def _parameter_module(analysis, scope, stmt, call: ast.Call, depth: int) -> Optional[str]:
    """What makes this call build a module that owns parameters, or None."""
    qual = analysis.index.imports.qualname(call.func) or ""
    if qual.startswith("torch.nn."):
        short = qual.rsplit(".", 1)[-1]
        if short in PARAMETER_LAYERS:
            return f"`{dotted(call.func)}` owns parameters"
        if short in CONTAINERS:
            for arg in ast.walk(call):
                if isinstance(arg, ast.Call) and arg is not call and _spelled_like_a_class(arg) \
                        and _parameter_module(analysis, scope, stmt, arg, depth) is not None:
                    return f"`{dotted(call.func)}` holds `{dotted(arg.func)}`, which owns parameters"
        return None
    project = analysis.project
    if project is None or depth > MAX_DEPTH:
        return None
    kind = analysis.graph.kinds.value_kind(call, scope, stmt)
    if kind is None or kind.kind != "module" or kind.class_ref is None:
        return None
    module, name = kind.class_ref
    for ref in project.methods_in_hierarchy(module, name, "__init__"):
        found = project.scope_for(ref)
        if found is None:
            continue
        init_analysis, init = found
        for inner, inner_stmt in init.calls:
            inner_qual = init_analysis.index.imports.qualname(inner.func) or ""
            if inner_qual.rsplit(".", 1)[-1] == "Parameter" and inner_qual.startswith("torch.nn"):
                return f"`{name}.__init__` makes an `nn.Parameter`"
            if _spelled_like_a_class(inner) and \
                    _parameter_module(init_analysis, init, inner_stmt, inner, depth + 1) is not None:
                return f"`{name}` derives from nn.Module and its `__init__` builds `{dotted(inner.func)}`"
    return None


def _inside_other_construction(scope, call, loop) -> bool:
    """``nn.Sequential(nn.Linear(...))``: the outer call is the one reported."""
    for other, _ in scope.calls:
        if other is not call and contains(other, call) and contains(loop, other) and _spelled_like_a_class(other):
            return True
    return False


def _weights_loaded(scope, stmt, loop) -> bool:
    """``net = Net(); net.load_state_dict(state)`` in the same iteration: a reset on purpose."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return False
    name = dotted(stmt.targets[0])
    for call, _ in scope.calls:
        func = call.func
        if contains(loop, call) and isinstance(func, ast.Attribute) and func.attr == "load_state_dict" \
                and (dotted(func.value) or "").split(".")[0] == (name or "").split(".")[0]:
            return True
    return False
