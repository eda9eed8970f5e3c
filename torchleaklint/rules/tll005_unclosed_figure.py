"""TLL005 unclosed-figure."""

from __future__ import annotations

import ast

from ..analysis.figure_repetition import repetition_seen
from ..analysis.figures import (LEFT_FOR_CALLER, closed_after_loop, closed_by_callers, disposal, early_exit, figure_sites, finished_with,
                                made_only_without, never_called, pyplot_alias, repeating_loops, returns_figure, run_once)
from ..analysis.flag_arms import dead_arm
from ..analysis.gated_runs import at_most_once
from ..analysis.unused_classes import never_built
from ..analysis.module_index import enclosing_block, expr_keys
from ..analysis.summaries import summary_for
from ..diagnostics import SAFE, Edit, Fix
from .base import Invalid, Rule, RuleContext
from .insertions import indentation_of, line_after


class UnclosedFigure(Rule):
    """
    ## What it does
    Finds matplotlib figures created through pyplot (`plt.figure()`, `plt.subplots()`,
    `plt.subplot_mosaic()`) in a function or a loop that are never closed
    (`plt.close(fig)`, `plt.close()`, `plt.close("all")`), shown, returned, stored or
    handed to other code. Also a helper that returns a figure and a caller in a loop that
    drops the figure without closing it.
    Not reported for a function whose only calls are module-level statements outside
    loops (a script's one chart): it makes its figure once per process. Nor for a
    module-level function nothing shows to repeat: no loop calls it (in its own file, or
    through its callers), and it is neither named for nor handed the step, epoch or
    episode it runs in (`plot(values, epoch)`): a notebook helper or an uncalled utility
    keeps a handful of figures at most. A figure made under a test that holds on one
    iteration of its loop only (`if epoch == num_epochs - 1:`) is made once per run of
    that loop, not once per iteration. Nor when every call path that reaches the figure
    passes flags that let it run once: a trainer that plots under `if plots:` with
    `plots = not opt.evolve` (the evolution loop that calls it again and again runs only
    where `opt.evolve` is set) or evaluates every epoch with `plots=plots and final_epoch`
    (`final_epoch = epoch + 1 == epochs`), or when the figure sits under an object's flag
    that the same call switches off afterwards (`if self.visualize: ...; self.visualize =
    False`, set nowhere else but `__init__`): one call per object makes it. A method counts
    the calls whose arguments fit it (tensors' `x.view(-1)` is no call of a `view(self)`
    method) and makes no figure when nothing builds its class. A helper that closes its
    figure before returning it (`plt.close(); return fig`) hands its caller nothing pyplot
    holds. A method nothing in the linted files calls or names, of a class whose bases are
    all the project's own, makes no figure either. (Other methods are reported: their
    object's users, often a framework, call them through calls the linted files do not
    show.)

    ## Why is this bad
    pyplot keeps a reference to every figure it creates until it is closed, whether or not
    your code still holds one. A training loop that plots every few epochs accumulates
    figures (tens of MB each with their canvases and images) for the whole run; matplotlib
    warns only after 20 and never frees them.

    ## Example
    ```python
    def plot_progress(history, path):
        fig, ax = plt.subplots()
        ax.plot(history)
        fig.savefig(path)

    for epoch in range(epochs):
        history.append(train_one_epoch(model, loader))
        plot_progress(history, f"progress_{epoch}.png")
    ```

    ## Use instead
    ```python
    def plot_progress(history, path):
        fig, ax = plt.subplots()
        ax.plot(history)
        fig.savefig(path)
        plt.close(fig)
    ```

    ## Fix safety
    The fix inserts `plt.close(fig)` after the figure's last use in the block that created
    it (binding an unbound `plt.figure()` call to a name first). It is **safe**: nothing
    after that point uses the figure, and a closed figure that was saved is unchanged on disk.

    ## Memory impact
    One figure per call or iteration for the life of the process: canvases, artists and
    any images drawn, commonly 1–100 MB each.
    """

    code = "TLL005"
    name = "unclosed-figure"
    summary = "A pyplot figure is created in a function or loop and never closed"
    fix_availability = "sometimes"
    repro = "tll005_figures"

    VALID = [
        """
import matplotlib.pyplot as plt
def plot(values, path):
    fig, ax = plt.subplots()
    ax.plot(values)
    fig.savefig(path)
    plt.close(fig)
""",
        """
import matplotlib.pyplot as plt
def make_plot(values):
    fig, ax = plt.subplots()
    ax.plot(values)
    return fig
""",
    ]
    INVALID = [
        Invalid(
            """
import matplotlib.pyplot as plt
def plot(values, path):
    fig, ax = plt.subplots()
    ax.plot(values)
    fig.savefig(path)
for epoch in range(100):
    plot([epoch], f"loss_{epoch}.png")
""",
            fixed="""
import matplotlib.pyplot as plt
def plot(values, path):
    fig, ax = plt.subplots()
    ax.plot(values)
    fig.savefig(path)
    plt.close(fig)
for epoch in range(100):
    plot([epoch], f"loss_{epoch}.png")
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        analysis = ctx.analysis
        index = analysis.index
        plt = pyplot_alias(analysis)
        for scope in index.scopes:
            if plt is not None:
                for site in figure_sites(analysis, scope):
                    sctx = index.ctx(site.stmt)
                    if dead_arm(analysis, scope, site.stmt) is not None:
                        continue  # under ``if plot_flag:`` with ``plot_flag = False``: never runs
                    repeats = repeating_loops(analysis, sctx, stmt=site.stmt)
                    if not scope.is_function and not repeats:
                        continue  # one figure in a script is not a leak
                    if not repeats and (run_once(analysis, scope, methods=True, literal_ranges=True) or never_called(analysis, scope)
                                        or (scope.class_name and never_built(analysis, scope.class_name))
                                        or repetition_seen(analysis, scope) is None):
                        continue  # nor is one made by a function the script calls once, never, or not in a loop
                    if not repeats and at_most_once(analysis, scope, site.stmt):
                        continue  # every call path that reaches it passes flags that let it run once (``plots and final_epoch``)
                    disposed = disposal(analysis, scope, site.names, site.stmt, site.many) \
                        or closed_by_callers(analysis, scope)
                    leaky_exit = early_exit(analysis, scope, site, disposed)
                    if disposed is not None and leaky_exit is None:
                        continue
                    in_loop = bool(repeats)
                    what = "figures created by a comprehension" if site.many else "figure created"
                    where = "in a loop" if in_loop else f"in `{scope.name}`"
                    rate = "per iteration" if in_loop else "per call"
                    if sctx and sctx.loops and not in_loop:
                        rate = "per item of the loop's fixed items, per call"
                    if site.many:
                        rate = "per element, " + rate
                    growth = (f"pyplot keeps one more figure {rate} alive (canvas and artists, commonly 1-100 MB; "
                              f"every one until `plt.close()`)")
                    message = f"{what} {where} {'are' if site.many else 'is'} never closed; {growth}"
                    notes = [f"figure: `{ast.unparse(site.call.func)}()` at line {site.call.lineno}"]
                    if not in_loop:
                        notes.append(f"how often: {repetition_seen(analysis, scope) or 'once per call'}")
                    fix = None if site.many else self._fix(ctx, scope, site, plt)
                    last_only = closed_after_loop(analysis, scope, site)
                    if last_only is not None:
                        message = (f"{what} {where} {'are' if site.many else 'is'} closed only once, after the "
                                   f"{'comprehension' if site.many else 'loop'} (line {last_only}), which closes the "
                                   f"last figure; {growth}")
                        notes.append(f"close: line {last_only}, outside the loop that makes the figures")
                        fix = None
                    if leaky_exit is not None:
                        message = (f"figure created {where} is not closed on the path that returns at line "
                                   f"{leaky_exit}; pyplot keeps every open figure alive until `plt.close()`")
                        fix = None
                    yield self.diagnostic(ctx, site.call, message, fix, notes)
            yield from self._dropped_helper_figures(ctx, scope)

    def _dropped_helper_figures(self, ctx, scope):
        analysis = ctx.analysis
        project = analysis.project
        if project is None:
            return
        for call, stmt in scope.calls:
            sctx = analysis.index.ctx(stmt)
            value = getattr(stmt, "value", None)
            chained = (isinstance(stmt, ast.Expr) and isinstance(value, ast.Call)
                       and isinstance(value.func, ast.Attribute) and value.func.value is call)
            if not repeating_loops(analysis, sctx, stmt=stmt) or (value is not call and not chained):
                continue  # results dropped (``helper(...)``, ``helper(...).savefig(p)``) or bound in a loop
            refs = analysis.graph.kinds.resolve_functions(call.func, scope, stmt)
            if len(refs) != 1:
                continue
            summary = summary_for(project, refs[0])
            if summary is None or not returns_figure(summary.analysis, summary.scope):
                continue
            if made_only_without(summary.analysis, summary.scope, call):
                continue  # ``plot(..., ax=ax)``: it draws on the caller's axes, no figure of its own
            names = []
            if isinstance(stmt, ast.Assign):
                names = sorted(set().union(*(expr_keys(t) for t in stmt.targets)))
            disposed = disposal(analysis, scope, names, stmt) if names else None
            if disposed == LEFT_FOR_CALLER and finished_with(summary.analysis, summary.scope):
                disposed = None  # the helper already saved it: nothing is left for a caller to do
            if disposed is not None:
                continue
            message = (f"`{ast.unparse(call.func)}()` returns a figure that this loop drops without closing; "
                       f"pyplot keeps it alive")
            yield self.diagnostic(ctx, call, message, None, [f"helper: returns a figure ({summary.where})"])

    @staticmethod
    def _fix(ctx, scope, site, plt):
        block = enclosing_block(scope.node, site.stmt)
        indent = indentation_of(ctx, site.stmt)
        if block is None or indent is None:
            return None
        edits = []
        names = site.names
        if not names:
            taken = set(scope.defs) | set(ctx.analysis.index.module_scope.defs)
            name = "fig" if "fig" not in taken else "fig_"
            edits.append(Edit(ctx.start(site.call), ctx.start(site.call), f"{name} = "))
            fig = name
            watched = {plt}
        else:
            fig = names[0]
            watched = set(names) | {plt}
        position = next(i for i, s in enumerate(block) if s is site.stmt)
        last = site.stmt
        for stmt in block[position + 1:]:
            if watched & {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}:
                last = stmt
        if isinstance(last, (ast.Return, ast.Raise)):
            return None
        edit = line_after(ctx, last, f"{plt}.close({fig})", indent)
        if edit is None:
            return None
        edits.append(edit)
        return Fix(SAFE, f"Close the figure with `{plt}.close({fig})` after its last use", tuple(edits))
