"""TLL009 eval-forward-with-grad."""

from __future__ import annotations

import ast
from typing import Optional

from ..analysis.backpropagated_results import backpropagated_result
from ..analysis.call_arity import call_fits
from ..analysis.backward_reach import gradient_points, gradient_reaching
from ..analysis.dropped_results import callers_drop_graph
from ..analysis.eval_callers import evaluation_callers
from ..analysis.eval_mode import eval_mode_call, eval_mode_calls
from ..analysis.figure_repetition import repetition_seen
from ..analysis.figures import dispatched_once, never_called, run_once
from ..analysis.flag_arms import flag_bindings, grad_switched_by, phase_values, ruled_out_by, skipped_backward
from ..analysis.grad_callers import called_with_grad, class_calls_only_without_grad
from ..analysis.forward_input import frozen_module
from ..analysis.graph import STRONG, parameterless_layer
from ..analysis.grad_enabled import grad_enabled_on_purpose
from ..analysis.inference import graph_stays_inside, harmless_call, shape_probe
from ..analysis.model_methods import every_candidate, model_method_evidence
from ..analysis.module_index import LOOP_TYPES, contains
from ..analysis.names import dotted, words
from ..analysis.numpy_proof import bound_then_read_as_numpy, read_as_numpy
from ..analysis.parameterless import holds_no_parameters, plain_construction_args
from ..analysis.reachability import unreachable
from ..analysis.returned_graph import returned_for_training, submodule_frozen_in_model
from ..analysis.repetition import repeated_call_site, setup_only
from ..analysis.summaries import parameter_defaults, short_path
from ..analysis.volatile import volatile_input
from ..diagnostics import UNSAFE, Fix
from ..analysis.unused_classes import never_built
from .base import Invalid, Rule, RuleContext
from .insertions import import_edit, line_before, torch_name

EVAL_WORDS = frozenset({"eval", "evaluate", "evaluation", "validate", "validation", "val", "valid", "test",
                        "predict", "prediction", "infer", "inference"})
# ``run_evaluation``, ``perform_test``, ``do_eval``: a verb that only says "run it".
RUN_WORDS = frozenset({"run", "do", "perform"})


HELPER_METHOD_PREFIXES = ("init", "get_", "set_", "reset", "load", "save", "num_", "zero", "register",
                          "parameters", "named_", "to", "cuda", "cpu", "train", "eval")


class EvalForwardWithGrad(Rule):
    """
    ## What it does
    Finds evaluation code — a function that puts a module in eval mode (`model.eval()`,
    directly or through a project helper such as `self.eval_mode()`), is named like
    evaluation (evaluate/validate/valid/test/predict/infer/inference, also after
    run/do/perform), or is only ever called after its callers put the model in eval mode —
    that runs forward passes with autograd recording while no gradient computation can use
    them: no `backward()`/`autograd.grad` in the same iteration or after it (a `train()`
    that ends with a validation loop after `model.eval()` is reported at the validation
    forward; batch-norm layers frozen with `m.eval()` before a training loop are not).
    Quiet when the forward runs under `torch.no_grad()`/`torch.inference_mode()`, the
    function is decorated with them, every caller in the linted files runs it with grad
    disabled, or every `self.<name>()` call that reaches the method through its class
    hierarchy does (a framework base class whose `batch_act` wraps `self.eval_step()` in
    `no_grad`); also when its inputs are built with `Variable(..., volatile=True)` (code
    for PyTorch before 0.4). A forward may also be a project helper whose summary returns
    module outputs (`out = self._forward(batch)`) or whose result a training step in the
    same module backpropagates (`self.get_g_loss(batch)`), or a model method such as
    `model.infer(x)` when every project module class defining it returns module outputs;
    a direct module call whose output is dropped at once (`model(calibration_batch)`), or
    of a project module proven to hold no parameters (a tokenizer, a metric that holds
    buffers or a threshold it only compares), records no graph that matters and is not
    reported (a layer built where it runs, `ROIAlign((s, s), 1.0,
    0).forward(masks, boxes)`, is judged with the plain values it is built from). A model
    method called on an object of unknown class (`model.encoder.encode(obs, extra)`) is
    not a forward when every project method of that name whose parameters take the call's
    arguments is decorated `@torch.no_grad()`. When the arms of an `if` run different forwards, each is
    reported. Also reported: a call that passes a training function the flag that rules
    out every backward pass in it (`run_epoch(valid_loader, model, ..., mode="eval")` where
    the backward sits under `if mode == "train":`, `self.iteration(loader, train=False)`),
    with grad on: the arms are decided from the constants the call passes or the
    parameters' defaults (also for the phases of `for split in ["train", "valid"]:` around
    the batch loop, when the backward sits under `if split == "train":`), and a
    `with torch.set_grad_enabled(train):` (or any grad context
    the flag computes) around the forward keeps it quiet. A module frozen before the
    forward (`net.requires_grad_(False)`, `p.requires_grad = False` for its parameters, a
    deep copy of a frozen module, a module frozen by a project helper it is handed to
    before it is stored: `self.freeze_model(net); self.net = net.eval()`; also the methods
    of a frozen model: `G.mapping(z)` after `G = copy.deepcopy(G).requires_grad_(False)`),
    a forward through a project function that differentiates what it runs (an encoder's
    `infer` taking `torch.autograd.grad` of its own score, two calls down), a function of a
    script whose entry block calls `torch.set_grad_enabled(False)` before running any of
    its own functions, or a forward whose output reaches `.numpy()` with no
    detach on the way (which raises on a graph), in the same statement or through a name
    only it binds (`out = seg_model(x); out.cpu().numpy()`), records none (an index or sign
    of the output, `out.argmax(1).numpy()`, proves nothing). A `.eval()` counts only for the
    forwards after it on some path, not those in the other arm of its `if`. An acting function that
    returns its forward's output is reported when every caller reads only graph-free values
    from it at once (`action = select_action(s); action = action.data[0].numpy()`); one
    caller that keeps the result (a log-probability for REINFORCE) keeps it quiet. Modules that import only
    their own project (whose modules import torch) are checked; a file named `test_*.py`
    is skipped only when it defines tests, and calls from test modules never make a
    function evaluation code. A single forward outside any loop is reported only when the
    function may run again and again: not when its only calls are statements outside loops
    at module level or in functions that run once that way (`main()` calling `run_task()`
    calling `train()`, which predicts once after training; a method counts by the calls
    spelled with its name), nor when nothing in the linted files calls it at all while its
    module's users are linted, nor for an argparse command only handed to
    `set_defaults(func=generate)` (`args.func(args)` runs it once per process), nor in a
    method of a class nothing in the linted files builds while its module's users are
    linted. The message says where a loop repeats the call. Nor is a
    function whose forward reaches its `return` when a caller trains with it: a caller
    backpropagates what it returns, or a module's `forward` returns it (directly or through
    one or two callers, as a rendering helper named `inference` inside `render_rays` does);
    nor a model method that puts one of its own submodules in eval mode (`self.backbone.eval()`,
    `for m in self.modules(): m.eval()`, freezing batch norm) and returns what it computes.

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
    outside the linted files. A function that also computes gradients (a `train()` that
    validates at the end, a training loop that saves samples) gets no fix: wrap the
    evaluation part in `with torch.no_grad():` by hand.

    ## Memory impact
    All activations of every forward pass are kept until the outputs die; with outputs or
    losses kept across the loop, one full graph per evaluated batch.
    """

    code = "TLL009"
    name = "eval-forward-with-grad"
    summary = "An evaluation function runs forward passes with autograd recording"
    fix_availability = "sometimes"
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
        if not ctx.in_torch_project:
            return  # other frameworks record gradients on their own terms
        if ctx.in_test_module:
            return  # a test runs its forwards once (``tools/test_net.py``, a script, is not one)
        for scope in analysis.index.scopes:
            yield from self._flag_skips_backward(ctx, scope)
            yield from self._phase_skips_backward(ctx, scope)
            found = self._evaluation_forward(analysis, scope)
            if isinstance(found, str):
                continue  # why not: kept as text for debugging the analysis
            scope_name, why, stmt, evidence = found
            if scope.class_name and never_built(analysis, scope.class_name):
                continue  # a method of a class nothing in the linted files builds: it never runs
            if not _repeating_loops(analysis, stmt) and _not_repeated(analysis, scope):
                continue  # one forward, in a function the program runs once: a one-off cost, nothing repeats
            # Decorating a function that also trains (a validation loop at the end of
            # ``train()``) would switch its training off: no fix there.
            fix = None if gradient_points(analysis, scope) else self._fix(ctx, scope)
            for stmt, evidence in [(stmt, evidence), *_other_arms(analysis, scope, stmt)]:
                loops = _repeating_loops(analysis, stmt)
                often = f"once per iteration of the loop at line {loops[-1].lineno}" if loops else _how_often(analysis, scope)
                message = (f"`{scope_name}` {why} and runs a forward pass with autograd recording, {often}: its "
                           f"activations are kept for a backward pass that never uses them")
                notes = [f"forward: {evidence.describe()}",
                         ("kept: every activation the forward saves for backward, for as long as its output or "
                          "anything computed from it lives"),
                         "no gradient: no `.backward()`/`autograd.grad` can reach the forward's output",
                         ("grad mode: no `no_grad`/`inference_mode` around it, and no caller in the linted files "
                          "disables grad for every call")]
                yield self.diagnostic(ctx, stmt, message, fix, notes)

    def _flag_skips_backward(self, ctx, scope):
        """``run_epoch(valid_loader, model, ..., mode="eval")`` with grad on, where the flag
        the call passes rules out every backward pass of ``run_epoch`` but none of its
        forwards: the forwards of the whole loop record graphs that are never used."""
        analysis = ctx.analysis
        project = analysis.project
        if project is None or not scope.calls:
            return
        index = analysis.index
        kinds = analysis.graph.kinds
        for call, stmt in scope.calls:
            if not (call.args or call.keywords) or index.ctx(stmt) is None or index.ctx(stmt).grad_off:
                continue
            if not any(isinstance(a, ast.Constant) for a in list(call.args) + [k.value for k in call.keywords]):
                continue  # the arms are decided by a constant the call passes
            name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
            if name is None or index.imports.qualname(call.func) is not None or not project.functions_named(name):
                continue  # a library call, or no project function of that name
            found = kinds.only_callee(call.func, scope, stmt)
            if found is None:
                continue
            callee_analysis, callee = found
            if callee is scope or callee_analysis.grad.scope_off(callee) or volatile_input(callee_analysis, callee):
                continue
            bindings = {name: value for name, value in flag_bindings(call, callee).items()
                        if all(d.kind == "param" for d in callee.defs_of(name))}
            skipped = skipped_backward(callee_analysis, callee, bindings, gradient_points(callee_analysis, callee))
            if skipped is None:
                continue
            forward = next(((stmt_, ev) for stmt_, ev, _ in self._forwards(callee_analysis, callee)
                            if callee_analysis.index.ctx(stmt_).loops
                            and ruled_out_by(callee_analysis, stmt_, stmt_, bindings) is None), None)
            if forward is None:
                continue  # the forwards that run under these flags sit in no loop, or under no_grad
            if grad_switched_by(callee, forward[0], bindings):
                continue  # ``with torch.set_grad_enabled(train):`` around it: the flag turns grad off too
            if _result_backpropagated(analysis, scope, stmt) or analysis.grad.scope_off(scope):
                continue
            where = f"{callee.qualname} ({short_path(callee_analysis.path)}:{forward[0].lineno})"
            message = (f"`{ast.unparse(call.func)}(...)` is called with {skipped.flags}, which skips every backward "
                       f"pass in `{callee.name}` (`{ast.unparse(skipped.test)}` at line {skipped.line}), with grad on: "
                       f"the forward passes of its loop record autograd graphs that are never used")
            notes = [f"forward: {forward[1].describe()} in {where}",
                     f"no gradient: `{ast.unparse(skipped.test)}` is false for {skipped.flags}",
                     "grad mode: no `no_grad`/`inference_mode` around the call, and no caller disables grad"]
            yield self.diagnostic(ctx, stmt, message, None, notes)

    def _phase_skips_backward(self, ctx, scope):
        """``for split in ["train", "valid"]:`` around a loop over batches whose backward sits
        under ``if split == "train":``: the other phases run every forward with grad on."""
        analysis = ctx.analysis
        if not scope.is_function or not scope.loops:
            return
        phases = [(loop, values) for loop in scope.loops for values in [phase_values(analysis, scope, loop)] if values]
        if not phases or analysis.grad.scope_off(scope):
            return
        points = gradient_points(analysis, scope)
        if not points:
            return
        for loop, values in phases:
            inside = [p for p in points if contains(loop, p[0])]
            if not inside or len(inside) != len(points):
                continue  # a backward elsewhere in the function may use these forwards
            name = loop.target.id
            for value in dict.fromkeys(values):
                skipped = skipped_backward(analysis, scope, {name: value}, inside)
                if skipped is None:
                    continue
                forward = self._phase_forward(analysis, scope, loop, {name: value})
                if forward is None:
                    break
                stmt, evidence = forward
                message = (f"`{scope.name}`: in the `{name} = {value!r}` iterations of the loop at line {loop.lineno}, every backward "
                           f"pass is skipped (`{ast.unparse(skipped.test)}` at line {skipped.line}) while this forward "
                           f"runs with autograd recording, once per batch: its activations are kept for a backward "
                           f"pass that never uses them")
                notes = [f"forward: {evidence.describe()}",
                         f"no gradient: `{ast.unparse(skipped.test)}` is false for {name}={value!r}",
                         "grad mode: no `no_grad`/`inference_mode`/`set_grad_enabled` for that phase"]
                yield self.diagnostic(ctx, stmt, message, None, notes)
                break

    def _phase_forward(self, analysis, scope, loop, bindings):
        """The first forward of the phase loop, in a loop nested in it (the batches)."""
        index = analysis.index
        for stmt, evidence, direct in self._forwards(analysis, scope):
            ctx = index.ctx(stmt)
            if not direct or loop not in ctx.loops or ctx.loops[-1] is loop:
                continue  # a forward of the batches inside the phase loop
            if ruled_out_by(analysis, stmt, stmt, bindings) is not None:
                continue  # ``if phase == "train": out = model(x)``: not run in this phase
            if _layer_fed_no_graph_in_phase(analysis, scope, stmt, bindings):
                continue  # ``nn.Softmax(dim=1)(outputs)`` where this phase made ``outputs`` under no_grad
            if grad_switched_by(scope, stmt, bindings):
                return None  # ``with torch.set_grad_enabled(phase == "train"):``
            return stmt, evidence
        return None

    def _evaluation_forward(self, analysis, scope):
        """(name, why it is evaluation, statement, evidence) of the evaluation forward the
        scope runs with grad on, or a string saying why there is none."""
        if not scope.is_function or scope.name == "forward":
            return "not a function, or a forward"  # a forward hands its outputs to whoever called it
        found = self._candidate(analysis, scope)
        if isinstance(found, str):
            return found
        volatile = volatile_input(analysis, scope)
        if volatile is not None:
            return f"grad off: inputs built with `volatile=True` at line {volatile.lineno}"
        asked = _requests_input_grad(scope)
        if asked is not None:
            return f"asks for gradients: `{ast.unparse(asked)}` at line {asked.lineno}"
        # Grad mode through the callers is asked last: it reads other files.
        off = analysis.grad.scope_off(scope)
        if off:
            return "grad off: " + off
        if class_calls_only_without_grad(analysis, scope):
            return "grad off: its class calls it only under no_grad"
        return found

    def _candidate(self, analysis, scope):
        index = analysis.index
        eval_calls = eval_mode_calls(scope, analysis)
        if eval_calls:
            for eval_call in eval_calls:  # ``m.eval()`` freezing batch norm while training comes first
                found = self._forward_without_gradient(analysis, scope, eval_call)
                if not isinstance(found, str):
                    stmt, evidence = found
                    kept = submodule_frozen_in_model(analysis, scope, eval_call, stmt) \
                        or returned_for_training(analysis, scope, stmt)
                    if kept:
                        return kept
                    why = f"calls `{ast.unparse(eval_call)}` at line {eval_call.lineno}"
                    return scope.name, why, stmt, evidence
            return self._handed_over(analysis, scope)
        # A name, or callers that run the function in evaluation, are evidence enough with a
        # loop over data inside; without one, the function must also let no graph out. The
        # function's own forward is looked at first: the cross-file questions come after.
        named = self._named_evaluation(analysis, scope)
        # Outside evaluation proper only direct module calls count as forwards: following
        # every project helper of every function would cost more than it finds.
        forward = self._main_forward(analysis, scope, None, direct_only=not named)
        if forward is None:
            return "no forward"
        stmt, evidence = forward
        if _gradient_for(analysis, scope, stmt):
            return self._handed_over(analysis, scope)  # the main forward trains
        if index.ctx(stmt).loops:
            if named:
                kept = returned_for_training(analysis, scope, stmt)
                if kept:
                    return kept
                return scope.name, f"is named like evaluation (`{scope.name}`)", stmt, evidence
            callers = _called_in_evaluation(analysis, scope)
            if callers:
                return scope.name, f"is only called in evaluation ({callers})", stmt, evidence
        return self._inference(analysis, scope, stmt, evidence)

    def _inference(self, analysis, scope, stmt, evidence):
        """A function with grad-on callers that lets no graph out: its forwards are inference."""
        project = analysis.project
        if project is None or scope.name.startswith("__") or gradient_points(analysis, scope):
            return self._handed_over(analysis, scope)
        if shape_probe(scope, stmt):
            return "a shape probe"  # ``self.conv(torch.zeros(1, *shape)).numel()``: built once, freed at once
        if setup_only(analysis, scope):
            return "called only while an object is built"  # once per construction, nothing repeats it
        if not _firm(evidence, stmt):
            return "a forward known by its name only"
        if not called_with_grad(analysis, scope):
            return self._handed_over(analysis, scope)
        if scope.parent is analysis.index.module_scope and not analysis.index.ctx(stmt).loops \
                and repetition_seen(analysis, scope) is None:
            return "run once or never"  # a debug helper the ``__main__`` block calls once: nothing repeats
        reason = graph_stays_inside(analysis, scope)
        if reason is None and graph_stays_inside(analysis, scope, but_returns=True) is not None:
            dropped = callers_drop_graph(analysis, scope)
            if dropped is not None:
                return scope.name, f"returns a graph that every caller drops at once ({dropped})", stmt, evidence
        if reason is None:
            return self._handed_over(analysis, scope)
        return scope.name, f"lets no graph out of the call ({reason})", stmt, evidence

    def _handed_over(self, analysis, scope):
        """A forward whose output is handed straight to a call that keeps nothing, in a
        statement whose result is dropped (``self.save_grid(self.gen(fixed_z), path)`` in a
        training loop): its graph dies with the statement, whatever backward runs later."""
        if not scope.is_function or scope.name.startswith("__"):
            return "not evaluation"
        index = analysis.index
        kinds = analysis.graph.kinds
        for call, stmt in scope.calls:
            if not (isinstance(stmt, ast.Expr) and stmt.value is call) or index.ctx(stmt).grad_off:
                continue
            for arg in call.args:
                if not isinstance(arg, ast.Call) or index.imports.qualname(arg.func) is not None:
                    continue
                evidence = kinds.module_call(arg, scope, stmt)
                if evidence is None or not _firm(evidence, arg):
                    continue
                if not harmless_call(analysis, scope, call, stmt, set()):
                    continue
                why = f"hands the output of a forward straight to `{ast.unparse(call.func)}`, which keeps no graph,"
                return scope.name, why, stmt, evidence
        return "not evaluation"

    def _forward_without_gradient(self, analysis, scope, after):
        """(statement, evidence) of the forward to report after ``after``, or why none."""
        forward = self._main_forward(analysis, scope, after)
        if forward is None:
            return "no forward"
        stmt, evidence = forward
        gradient = _gradient_for(analysis, scope, stmt)
        if gradient:
            return "gradients: " + gradient  # wanted here (saliency, test-time adaptation)
        return stmt, evidence

    @staticmethod
    def _named_evaluation(analysis, scope) -> bool:
        """``evaluate(...)``/``validate_epoch(...)``… as a function or a method of a class that
        is not itself a model (a model's ``predict_*`` method is part of its forward)."""
        parts = words(scope.name)
        if parts[:1] and parts[0] in RUN_WORDS:
            parts = parts[1:]
        if not parts or parts[0] not in EVAL_WORDS:
            return False
        project = analysis.project
        if scope.class_name and project is not None and project.is_module_class(analysis.index.module_name,
                                                                                   scope.class_name):
            return False
        return True

    @staticmethod
    def _main_forward(analysis, scope, after=None, direct_only=False):
        """The forward that runs on every pass: among the forwards of the first loop (or
        straight-line stretch) with one, the first that no ``if`` inside it guards
        (``scores = decoder(imgs)`` rather than ``if encoder: imgs = encoder(imgs)``), a
        module call rather than a model method that runs one (``mask = model.decoder(z)``
        rather than ``z = model.encode(x)``)."""
        index = analysis.index
        same = []
        for stmt, evidence, direct in EvalForwardWithGrad._forwards(analysis, scope, after, direct_only):
            loops = index.ctx(stmt).loops
            if same and loops != index.ctx(same[0][0]).loops:
                break  # the first loop with a forward is over
            same.append((stmt, evidence, direct))
        if not same:
            return None
        # The forward every pass runs, proven by a module call, and by the firmest evidence
        # (a module the project binds, not one named like a model).
        stmt, evidence, _ = min(same, key=lambda f: (_guards(index.ctx(f[0])), not f[2], f[1].strength != STRONG))
        return stmt, evidence

    @staticmethod
    def _forwards(analysis, scope, after=None, direct_only=False):
        index = analysis.index
        kinds = analysis.graph.kinds
        chosen = grad_enabled_on_purpose(analysis, scope)
        after_stmt = next((stmt for call, stmt in scope.calls if call is after), None) if after is not None else None
        after_ctx = index.ctx(after_stmt) if after_stmt is not None else None
        for call, stmt in sorted(scope.calls, key=lambda cs: (cs[0].lineno, cs[0].col_offset)):
            ctx = index.ctx(stmt)
            if ctx is None or ctx.grad_off or ctx.scope is not scope or id(stmt) in chosen:
                continue
            if after is not None and (call.lineno, call.col_offset) < (after.lineno, after.col_offset):
                continue  # forwards before `.eval()` are training
            if after_ctx is not None and _exclusive(after_ctx, ctx):
                continue  # ``if vae: encoder.eval() ... else: state = encoder(obs)``: the other arm trains
            if isinstance(call.func, ast.Attribute) and call.func.attr.startswith(HELPER_METHOD_PREFIXES):
                # ``model.init_hidden(bsz)`` builds state; it is not a forward pass, unless a
                # training step backpropagates what it returns (``self.get_g_loss(batch)``).
                evidence = None if direct_only else backpropagated_result(analysis, call, scope, stmt)
                if evidence is not None:
                    yield stmt, evidence, False
                continue
            dropped = (isinstance(stmt, ast.Expr) and _is_value(stmt.value, call)) or (
                isinstance(stmt, ast.Assign) and _is_value(stmt.value, call)
                and all(isinstance(t, ast.Name) and t.id == "_" for t in stmt.targets))  # ``_ = model(dummy)``
            evidence = kinds.module_call(call, scope, stmt)
            direct = evidence is not None
            if direct and dropped:
                continue  # output dropped at once (calibration, ``embed(...)`` for side effects): no graph kept
            if direct and _parameterless_module(analysis, call, scope, stmt):
                continue  # a tokenizer written as an nn.Module: no parameter, no graph
            if direct and (read_as_numpy(call, stmt) or bound_then_read_as_numpy(analysis, scope, call, stmt)
                           or _frozen(analysis, scope, call, stmt)
                           or (parameterless_layer(analysis, call.func, scope, stmt)
                               and analysis.graph.carrying(call, stmt) is None)):
                continue  # ``.numpy()`` raises on a graph; a frozen module, or a layer without parameters fed no graph, records none
            if evidence is None and not direct_only:
                # A project helper that runs the forward itself (``out = self._forward(batch)``):
                # its summary says what it returns; one that disables grad inside returns no graph.
                summary = kinds.call_summary(call, scope, stmt, 0, oracle=analysis.graph)
                if summary is not None and not any(
                        eval_mode_call(s.scope) or (s.scope.loops and (
                            EvalForwardWithGrad._named_evaluation(s.analysis, s.scope)
                            or _called_in_evaluation(s.analysis, s.scope)))
                        for s in summary.summaries):
                    evidence = every_candidate(summary)  # an evaluation helper is reported on its own
                    if evidence is not None and evidence.strength != STRONG and "of the module `self." not in evidence.text:
                        # Through a helper, a local value named like a model may be anything
                        # the helper's caller built (``ac = actor_critic(obs_space, act_space)``);
                        # a model the object holds (``self.model``) is one.
                        evidence = None
                    if evidence is None:  # ``g_loss = self.get_g_loss(batch); g_loss.backward()`` elsewhere
                        evidence = backpropagated_result(analysis, call, scope, stmt)
                elif summary is None:
                    evidence = model_method_evidence(analysis, call, scope, stmt)  # ``model.infer(x)``
            if evidence is not None and not direct and _frozen(analysis, scope, call, stmt):
                continue  # ``G.synthesis(ws)`` of a frozen ``G``: its parameters record nothing
            if evidence is not None and not unreachable(scope.node, stmt):  # not after an unconditional return
                yield stmt, evidence, direct

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


def _repeating_loops(analysis, stmt) -> list:
    """The loops around ``stmt`` that repeat the forward: not a walk over the model's own
    layers that chains one input through them (``for h in self.hidden: xs = h(xs)``),
    which is one forward pass."""
    return [loop for loop in analysis.index.ctx(stmt).loops if not _layer_walk(loop)]


def _layer_walk(loop) -> bool:
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or not isinstance(loop.target, ast.Name):
        return False
    if not _of_self(loop.iter):
        return False
    layer = loop.target.id
    for node in ast.walk(loop):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "forward":
                func = func.value
            if isinstance(func, ast.Name) and func.id == layer:
                return True
    return False


def _of_self(expr) -> bool:
    """``self.hidden``, ``self.blocks.children()``, ``self.modules()``."""
    root = dotted(expr.func if isinstance(expr, ast.Call) else expr)
    return root is not None and root.split(".")[0] == "self"


def _is_value(expr, call) -> bool:
    """Is ``call`` the value of ``expr``, or of an arm of it (``model(img) if cuda else None``)?"""
    if expr is call:
        return True
    return isinstance(expr, ast.IfExp) and (_is_value(expr.body, call) or _is_value(expr.orelse, call))


def _how_often(analysis, scope) -> str:
    """``once per call`` and, when a loop shows it, where the calls repeat."""
    where = repeated_call_site(analysis, scope)
    return f"once per call ({where})" if where else "once per call"


def _not_repeated(analysis, scope) -> bool:
    """Does nothing show the function running more than once per process? Its only calls
    are statements outside loops at module level or in functions that run once that way
    (a method counts by the calls spelled with its name: ``model.embed(x)`` once after
    training), or it is a module-level function that no loop, no step counter and no
    caller in the linted files calls at all (its module's users are linted, or it is a
    script), and that no step counter shows repeating. One forward per process is a
    one-off cost: nothing grows with steps or calls."""
    if run_once(analysis, scope, methods=True) or dispatched_once(analysis, scope):
        return True
    return not scope.class_name and never_called(analysis, scope) is not None \
        and repetition_seen(analysis, scope) is None


def _firm(evidence, node) -> bool:
    """Evidence of a forward firm enough without an evaluation context: proven, or a
    component of the object named like a model (``self.learner.actor(s)``), not any value
    named so (``x.head(5)`` on a data frame in a lambda)."""
    if evidence.strength == STRONG:
        return True
    call = node.value if isinstance(node, (ast.Assign, ast.Expr, ast.Return)) else node
    for found in ast.walk(call):
        name = dotted(found.func) if isinstance(found, ast.Call) and found.lineno == evidence.line else None
        if name and f"`{name}`" in evidence.text:
            return name.startswith("self.")
    return False


def _called_in_evaluation(analysis, scope):
    return evaluation_callers(analysis, scope, lambda a, s: eval_mode_calls(s, a),
                              EvalForwardWithGrad._named_evaluation)


def _layer_fed_no_graph_in_phase(analysis, scope, stmt, bindings) -> bool:
    """A layer without parameters whose inputs, in this phase, come only from definitions
    under no_grad (the others sit in arms the phase rules out)."""
    for call in (n for n in ast.walk(stmt) if isinstance(n, ast.Call)):
        if not parameterless_layer(analysis, call.func, scope, stmt):
            continue
        names = [a for a in call.args if isinstance(a, ast.Name)]
        if not names or len(names) != len(call.args):
            return False
        for arg in names:
            for d in analysis.flow.reaching(scope, arg.id, stmt):
                ctx = analysis.index.ctx(d.stmt)
                if ruled_out_by(analysis, d.stmt, d.stmt, bindings) is None and not (ctx and ctx.grad_off):
                    return False
        return True
    return False


def _result_backpropagated(analysis, scope, stmt) -> bool:
    """Does what the statement binds reach a backward pass of the scope?"""
    if not isinstance(stmt, ast.Assign):
        return False
    names = {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return any(analysis.flow.attached_into_backward(scope, name) is not None for name in sorted(names))


def _frozen(analysis, scope, call, stmt) -> bool:
    """Is the module called frozen, or the model it belongs to (``G.mapping(z, c)`` after
    ``G = copy.deepcopy(G).eval().requires_grad_(False)``: every parameter of ``G``,
    its submodules' too, records no autograd)?"""
    name = dotted(call.func)
    return name is not None and (frozen_module(analysis, scope, name, stmt)
                                 or analysis.graph.frozen_receiver(call, scope, stmt))


def _parameterless_module(analysis, call, scope, stmt) -> bool:
    project = analysis.project
    if project is None:
        return False
    built = call.func.value if isinstance(call.func, ast.Attribute) and call.func.attr == "forward" else call.func
    if isinstance(built, ast.Call):  # ``Layer(...).forward(x)``, ``Layer(...)(x)``: built where it runs
        cls = analysis.graph.kinds.resolve_class(built.func, scope)
        return cls is not None and holds_no_parameters(project, cls, plain_construction_args(analysis, cls, built, scope))
    return analysis.graph.parameter_free(call, scope, stmt)


def _other_arms(analysis, scope, reported):
    """The forwards that run instead of the reported one, in the other arms of an ``if``
    in the same loop (``preds = model(x, boxes)`` when detecting, ``preds = model(x)``
    otherwise): which arm runs is configuration, so each is reported where it is. An
    ``if`` on an optional argument (``if critic is None:``, default None) is a mode the
    caller picks, often never: only the reported arm counts there."""
    index = analysis.index
    taken = [index.ctx(reported)]
    optional = _optional_params(scope.node)
    for stmt, evidence, _ in EvalForwardWithGrad._forwards(analysis, scope, reported, direct_only=True):
        ctx = index.ctx(stmt)
        if ctx.loops != taken[0].loops or not all(_exclusive(ctx, other) for other in taken):
            continue
        fork = _fork(ctx, taken[0])
        if fork is None or any(isinstance(n, ast.Name) and n.id in optional for n in ast.walk(fork.test)):
            continue
        if _arm_trains(fork, stmt):
            continue  # ``else: model.train(); return model(x)``: the training arm
        if _gradient_for(analysis, scope, stmt):
            continue
        taken.append(ctx)
        yield stmt, evidence


def _arm_trains(fork: ast.If, stmt) -> bool:
    """Does the arm of ``fork`` that holds ``stmt`` switch a module back to training mode
    (``m.train()``, ``m.train(True)``) before it?"""
    for arm in (fork.body, fork.orelse):
        if not any(s is stmt or contains(s, stmt) for s in arm):
            continue
        for node in (n for s in arm for n in ast.walk(s)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "train"
                    and not node.keywords and (not node.args or (isinstance(node.args[0], ast.Constant)
                                                                 and node.args[0].value is True))
                    and (node.lineno, node.col_offset) < (stmt.lineno, stmt.col_offset)):
                return True
    return False


def _exclusive(a, b) -> bool:
    """Do two statements sit in different arms of one ``if`` (never both run in one pass)?"""
    return _fork(a, b) is not None


def _fork(a, b):
    """The ``if`` in whose different arms two statements sit, or None."""
    for x, y in zip(a.blocks, b.blocks):
        if x is y:
            continue
        owner = getattr(x, "owner", None)
        return owner if owner is not None and owner is getattr(y, "owner", None) and isinstance(owner, ast.If) else None
    return None


def _optional_params(func) -> set:
    """Parameters whose default is None."""
    return {name for name, d in parameter_defaults(func).items() if isinstance(d, ast.Constant) and d.value is None}


def _guards(ctx) -> int:
    """How many ``if``/``try`` branches inside the function may skip the statement."""
    return sum(1 for block in ctx.blocks if not isinstance(block, LOOP_TYPES))


def _requests_input_grad(scope):
    """``x.requires_grad_(True)`` or ``x.requires_grad = True`` in the function: it asks for
    gradients with respect to its inputs (a gradient penalty, a saliency map, input
    perturbation), which a metric or caller takes with ``autograd.grad``; grad must stay on."""
    over_parameters = set()
    for loop in ast.walk(scope.node):
        if isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Attribute) \
                and loop.iter.func.attr in ("parameters", "named_parameters"):
            over_parameters |= {id(n) for n in ast.walk(loop)}  # unfreezing weights asks nothing of inputs
    # inputs: what the function hands to calls (``model(x)``), not the modules it calls
    passed = {dotted(a) for c in ast.walk(scope.node) if isinstance(c, ast.Call)
              for a in list(c.args) + [k.value for k in c.keywords]} - {None}
    for node in ast.walk(scope.node):
        if id(node) in over_parameters:
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_":
            arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "requires_grad"), None)
            if (arg is None or (isinstance(arg, ast.Constant) and arg.value is True)) and dotted(node.func.value) in passed:
                return node
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is True \
                and any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" and dotted(t.value) in passed
                        for t in node.targets):
            return node
    return None


MAX_NAMESAKES = 3  # project methods a call by name alone may reach
MAX_DIFFERENTIATION_DEPTH = 3  # calls followed to a gradient computation


def _gradient_for(analysis, scope, stmt) -> Optional[str]:
    """A gradient computation that uses what ``stmt`` computes: later in the function, or
    inside a project function the statement calls."""
    return gradient_reaching(analysis, scope, stmt) or _differentiating_callee(analysis, scope, stmt)


def _differentiating_callee(analysis, scope, stmt) -> Optional[str]:
    """A project function called in ``stmt`` that differentiates what it computes, itself
    or through the project functions it calls (``model.generate_new_arch(x)`` whose
    ``self.encoder.infer(x)`` runs ``torch.autograd.grad(score, embedding)`` to move in
    embedding space): the forward needs grad on."""
    project = analysis.project
    if project is None:
        return None
    for call, where in scope.calls:
        if where is not stmt:
            continue
        found = [project.scope_for(ref) for ref in analysis.graph.kinds.resolve_functions(call.func, scope, stmt)]
        if not found and isinstance(call.func, ast.Attribute):
            # ``model.generate_new_arch(x, step, direction=d)`` on a model of unknown class: the
            # project methods of that name, in this program, whose parameters take these arguments
            own = analysis.index.module_name
            found = [f for f in (project.scope_for(ref) for ref in project.functions_named(call.func.attr)
                                 if project.import_connected(own, ref.module))
                     if f is None or call_fits(f[1], call)]
            if len(found) > MAX_NAMESAKES:
                found = []
        if found and all(f is not None and _differentiates(*f, set()) for f in found):
            return f"`{ast.unparse(call.func)}(...)` computes gradients of what it runs"
    return None


def _differentiates(analysis, scope, seen, depth: int = 0) -> bool:
    if scope.backward_sites:
        return True
    if depth >= MAX_DIFFERENTIATION_DEPTH or id(scope.node) in seen:
        return False
    seen.add(id(scope.node))
    project = analysis.project
    for call, stmt in scope.calls:
        for ref in analysis.graph.kinds.resolve_functions(call.func, scope, stmt):
            found = project.scope_for(ref)
            if found is not None and _differentiates(*found, seen, depth + 1):
                return True
    return False
