"""matplotlib figures created through pyplot: where they are made, which names hold
them, and whether the code closes them, shows them, or hands them to someone else."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from typing import Iterator, List, Optional

from .callers import resolved_refs
from .module_index import Scope, contains, expr_keys, if_arms, start_of, walk_nodes
from .names import dotted, last_name
from .single_pass import single_iteration_only
from .summaries import argument_of

FIGURE_MAKERS = frozenset({"matplotlib.pyplot.figure", "matplotlib.pyplot.subplots",
                           "matplotlib.pyplot.subplot_mosaic"})
CLOSE = "matplotlib.pyplot.close"
SHOW = "matplotlib.pyplot.show"
CLOSING_CALLEES = ("close", "add_figure", "figure_to_image")  # tensorboard's add_figure and figure_to_image close by default


@dataclass(frozen=True)
class FigureSite:
    stmt: ast.AST
    call: ast.Call
    names: List[str]  # names bound to the figure and its axes (empty when unbound)
    many: bool = False  # a comprehension makes one figure per element (``[plt.subplots() for _ in xs]``)


def pyplot_alias(analysis) -> Optional[str]:
    for local, target in analysis.index.imports.aliases.items():
        if target == "matplotlib.pyplot":
            return local
    return None


def figure_sites(analysis, scope: Scope) -> Iterator[FigureSite]:
    imports = analysis.index.imports
    for stmt in scope.statements:
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
        many = isinstance(value, (ast.ListComp, ast.GeneratorExp, ast.SetComp))
        if many:
            value = value.elt
            if isinstance(value, ast.Tuple) and value.elts:
                value = value.elts[0]
        if not isinstance(value, ast.Call) or imports.qualname(value.func) not in FIGURE_MAKERS:
            continue
        if _reuses_named_figure(value, imports.qualname(value.func)):
            continue  # ``plt.figure("loss")`` returns the same figure every time
        names: List[str] = []
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for node in ast.walk(target):
                    if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Store):
                        key = dotted(node)
                        if key:
                            names.append(key)
        yield FigureSite(stmt, value, names, many)


def returns_figure(analysis, scope: Scope) -> bool:
    """Does the function hand a figure it made to its caller?"""
    imports = analysis.index.imports
    if any((imports.qualname(c.func) or "") == SHOW for c, _ in scope.calls):
        return False  # it shows the figure itself
    sites = list(figure_sites(analysis, scope))
    # ``plt.close()`` before ``return fig``: the caller gets a figure pyplot no longer holds
    made = {n for site in sites for n in site.names
            if not (disposal(analysis, scope, site.names, site.stmt, site.many) or "").startswith("closed at line ")}
    for expr in scope.returns:
        if isinstance(expr, ast.Call) and imports.qualname(expr.func) in FIGURE_MAKERS:
            return True
        if made & expr_keys(expr):
            return True
    return False


def made_only_without(analysis, scope: Scope, call: ast.Call) -> bool:
    """Does the helper make its figure only when a parameter is None (``if ax is None: fig,
    ax = plt.subplots()``) and ``call`` passes that parameter? It then draws on the caller's
    axes and makes no figure."""
    sites = list(figure_sites(analysis, scope))
    if not sites or not isinstance(scope.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for site in sites:
        guard = next((node for node in ast.walk(scope.node) if isinstance(node, ast.If) and _none_test(node.test)
                      and any(contains(inner, site.stmt) for inner in node.body)), None)
        if guard is None:
            return False
        passed = argument_of(call, scope, guard.test.left.id)
        if passed is None or (isinstance(passed, ast.Constant) and passed.value is None):
            return False
    return True


def _none_test(test) -> bool:
    """``ax is None``."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Is) and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None)


def disposal(analysis, scope: Scope, names: List[str], after, many: bool = False) -> Optional[str]:
    """How the figure held by ``names`` is closed, shown or handed off; None if never.

    A figure made in a loop (or many made by a comprehension) is closed only by a
    ``plt.close(...)`` that runs once per figure: inside that loop, or ``plt.close("all")``.
    One ``plt.close(fig)`` after the loop closes the last figure and leaves the others open."""
    imports = analysis.index.imports
    held = set(names)
    begin = start_of(after)
    made_in = _creating_loop(analysis, after)
    if any("." in name for name in held):
        return "stored on an object"
    for call, stmt in scope.calls:
        if start_of(call) < begin:
            continue
        qual = imports.qualname(call.func) or ""
        args = list(call.args) + [k.value for k in call.keywords]
        if qual == CLOSE:
            closes_all = any(isinstance(a, ast.Constant) and a.value == "all" for a in args)
            if many and _in_loop_after(analysis, stmt, after, held):
                return f"closed one by one at line {call.lineno}"
            if not (closes_all or (not many and (made_in is None or contains(made_in, call)))):
                continue
            if not args or any(isinstance(a, ast.Constant) for a in args) or held & set().union(*map(expr_keys, args)):
                return f"closed at line {call.lineno}"
        if qual == SHOW:
            return f"shown at line {call.lineno}"
        if held and any(held & expr_keys(a) for a in args):
            # ``self.writer["val"].add_figure(tag, fig)``: the method's name, whatever the receiver
            name = last_name(call.func) or ""
            if any(word in name for word in CLOSING_CALLEES) and not any(
                    k.arg == "close" and isinstance(k.value, ast.Constant) and not k.value.value for k in call.keywords):
                return f"closed by `{ast.unparse(call.func)}` at line {call.lineno}"
            if isinstance(call.func, ast.Attribute) and dotted(call.func.value) in held:
                continue  # a method of the figure itself (``fig.savefig``)
            if analysis.graph.kinds.resolve_functions(call.func, scope, None):
                # A helper of the linted project owns it now (and may close it).
                return f"handed to `{dotted(call.func) or 'a call'}` at line {call.lineno}"
            if (name[:1].isupper() or analysis.graph.kinds.resolve_class(call.func, scope)) and \
                    name not in ("Image", "Figure"):
                # ``ArtistAnimation(fig, ...)``: an object built around the figure now holds it.
                return f"held by the `{dotted(call.func)}` built at line {call.lineno}"
            # Library consumers (wandb.Image, mlflow.log_figure, PdfPages.savefig) do not close it.
    if held:
        for expr in scope.returns:
            if held & expr_keys(expr):
                return "returned to the caller"
        for stmt in scope.statements:
            if start_of(stmt) < begin:
                continue
            if isinstance(stmt, ast.Assign) and held & expr_keys(stmt.value):
                targets = {dotted(t) for t in stmt.targets}
                if any(t and "." in t for t in targets) or any(isinstance(t, ast.Subscript) for t in stmt.targets):
                    return f"stored at line {stmt.lineno}"
    for call, _ in analysis.index.module_scope.calls:
        if (imports.qualname(call.func) or "") == SHOW:
            return f"the script shows figures (line {call.lineno})"
    if not _finished_with(analysis, scope, begin):
        # Drawn but never saved or logged here: a plotting helper that leaves the figure
        # for its caller to show or save (pyplot's current-figure style).
        return LEFT_FOR_CALLER
    return None


LEFT_FOR_CALLER = "left for the caller to show or save"


def finished_with(analysis, scope: Scope) -> bool:
    """Does the function save or log the figures it makes?"""
    return _finished_with(analysis, scope, (0, 0))


FINISHING_CALLS = frozenset({"savefig", "log_figure", "add_figure", "print_figure", "buffer_rgba",
                             "tostring_rgb", "tostring_argb", "log_image", "Image", "figure_to_image"})


def _finished_with(analysis, scope: Scope, begin) -> bool:
    """Does the function save or log the figure (after which it has no more use)?"""
    for call, _ in scope.calls:
        if start_of(call) < begin:
            continue
        name = (dotted(call.func) or getattr(call.func, "attr", "") or "").rsplit(".", 1)[-1]
        if name in FINISHING_CALLS:
            return True
    return False


def closed_after_loop(analysis, scope: Scope, site: FigureSite) -> Optional[int]:
    """Line of a ``plt.close(fig)``/``plt.close()`` after the loop (or comprehension) that
    makes the figures: it closes only the last one."""
    made_in = _creating_loop(analysis, site.stmt)
    if made_in is None and not site.many:
        return None
    imports = analysis.index.imports
    held = set(site.names)
    for call, stmt in scope.calls:
        if start_of(call) <= start_of(site.stmt) or (imports.qualname(call.func) or "") != CLOSE:
            continue
        if made_in is not None and contains(made_in, call):
            continue
        args = list(call.args) + [k.value for k in call.keywords]
        if not args or held & set().union(*map(expr_keys, args)):
            return call.lineno
    return None


FEW = 20  # a loop over this many fixed items makes a fixed number of figures per call (pyplot warns past 20 open)


def repeating_loops(analysis, ctx, literal_ranges: bool = True, stmt=None) -> list:
    """The loops around a statement that repeat without a fixed bound: not those over a
    short literal (``for name in ("loss", "acc")``) or over a module-level constant built
    from one (``for fname, info in FILES.items()``), which run a fixed number of times per call.
    With ``stmt``, nor a loop the statement runs in on one iteration only (under ``if epoch
    == num_epochs - 1:``)."""
    if ctx is None:
        return []
    return [loop for loop in ctx.loops if not _fixed_items(analysis, loop, literal_ranges)
            and not (stmt is not None and _on_one_iteration(ctx, loop, stmt))]


def _on_one_iteration(ctx, loop, stmt) -> bool:
    """Is ``stmt`` in the body of an ``if`` inside ``loop`` whose test holds on one
    iteration at most?"""
    return any(in_body and owner is not loop and contains(loop, owner) and single_iteration_only(owner.test, loop)
               for owner, in_body in if_arms(ctx.blocks, stmt))


def _fixed_items(analysis, loop, literal_ranges: bool = True) -> bool:
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    return _fixed_iterable(analysis, loop, loop.iter, literal_ranges=literal_ranges)


# Listings of files on disk: a loop over them makes one figure per file found, however
# long the run that wrote them (``for f in sorted(glob.glob("results*.txt")):``).
FILE_LISTINGS = frozenset({"glob", "iglob", "listdir", "scandir", "rglob", "iterdir"})


def _fixed_iterable(analysis, loop, items, depth: int = 0, literal_ranges: bool = True) -> bool:
    if isinstance(items, ast.BinOp) and isinstance(items.op, ast.Add) and depth < 3:
        return _fixed_iterable(analysis, loop, items.left, depth + 1, literal_ranges) and \
            _fixed_iterable(analysis, loop, items.right, depth + 1, literal_ranges)
    if isinstance(items, ast.Call) and last_name(items.func) in FILE_LISTINGS:
        return True
    if isinstance(items, ast.Call) and isinstance(items.func, ast.Name) and items.args and depth < 3:
        name = items.func.id
        if name in ("enumerate", "reversed", "sorted", "list", "tuple"):
            return _fixed_iterable(analysis, loop, items.args[0], depth + 1, literal_ranges)  # ``enumerate(YLABELS)``
        if name == "zip":
            return any(_fixed_iterable(analysis, loop, a, depth + 1, literal_ranges) for a in items.args)  # the shortest bounds it
    if literal_ranges and isinstance(items, ast.Call) and isinstance(items.func, ast.Name) \
            and items.func.id == "range" and items.args and not items.keywords:
        count = _literal_range_length(items)  # ``for context_size in range(1, 16)``
        return count is not None and count <= FEW
    if isinstance(items, ast.Call) and isinstance(items.func, ast.Attribute) and not items.args \
            and items.func.attr in ("items", "keys", "values"):
        items = items.func.value
    if isinstance(items, ast.Subscript) and isinstance(items.slice, ast.Slice):
        items = items.value  # ``DATASETS[-2:]``: a slice of a fixed collection is fixed
    if _submodules(analysis, loop, items):
        return True  # ``for cnf in model.chain``: the model's own layers, fixed by its architecture
    if isinstance(items, ast.Name):
        ctx = analysis.index.ctx(loop)
        owner = ctx.scope if ctx is not None else analysis.index.module_scope
        defs = owner.defs_of(items.id) or analysis.index.module_scope.defs_of(items.id)
        module_level = owner is analysis.index.module_scope or not owner.defs_of(items.id)
        if len(defs) != 1 or defs[0].kind != "assign" or (module_level and any(
                items.id in s.defs for s in analysis.index.scopes
                if s is not analysis.index.module_scope and s is not owner and s.node is not None
                and contains(s.node, loop))):
            return False
        if items.id in _grown_names(analysis.index):
            return False  # grown somewhere: not fixed
        items = defs[0].value
        if isinstance(items, ast.Call) and depth < 3:
            # ``x = list(range(320, 800, 64))`` then ``for i in x``
            return _fixed_iterable(analysis, loop, items, depth + 1, literal_ranges)
    if isinstance(items, (ast.List, ast.Tuple, ast.Set)):
        return len(items.elts) <= FEW and not any(isinstance(e, ast.Starred) for e in items.elts)
    if isinstance(items, ast.Dict):
        return len(items.keys) <= FEW and None not in items.keys
    return False


GROWING_METHODS = frozenset({"append", "extend", "update", "insert", "setdefault", "add"})


def _grown_names(index) -> frozenset:
    """The names of the module that some statement grows (``xs.append(...)``), found once
    per module (a fact of its syntax)."""
    found = index.__dict__.get("_grown_names")
    if found is None:
        found = frozenset(n.value.id for n in walk_nodes(index.tree)
                          if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                          and n.attr in GROWING_METHODS)
        index.__dict__["_grown_names"] = found
    return found


def _literal_range_length(call: ast.Call) -> Optional[int]:
    """Length of ``range(...)`` over integer literals (``range(1, 16)``, ``range(10, -1, -1)``),
    else None."""
    try:
        values = [ast.literal_eval(arg) for arg in call.args]
    except ValueError:
        return None
    if len(values) > 3 or any(type(v) is not int for v in values) or (len(values) == 3 and values[2] == 0):
        return None
    return len(range(*values))


def _submodules(analysis, loop, items) -> bool:
    """``model.chain``, ``model.children()``, ``self.blocks``: the layers of a module."""
    if isinstance(items, ast.Call) and isinstance(items.func, ast.Attribute) and not items.args \
            and items.func.attr in ("children", "modules"):
        owner = items.func.value
    elif isinstance(items, ast.Attribute):
        owner = items.value
    else:
        return False
    ctx = analysis.index.ctx(loop)
    if ctx is None:
        return False
    kind = analysis.graph.kinds.kind_of(owner, ctx.scope, loop)
    return kind is not None and kind.kind == "module" and kind.strength != "convention"


def _creating_loop(analysis, stmt):
    """The innermost loop of the function around ``stmt``, or None."""
    ctx = analysis.index.ctx(stmt)
    return ctx.loops[-1] if ctx is not None and ctx.loops else None


def _in_loop_after(analysis, stmt, after, held) -> bool:
    """Does ``stmt`` sit in a loop, after ``after``, over the figures held in ``held``
    (``for fig, _ in figs: plt.close(fig)``)?"""
    ctx = analysis.index.ctx(stmt)
    return ctx is not None and any(start_of(loop) > start_of(after) and isinstance(loop, (ast.For, ast.AsyncFor))
                                   and held & expr_keys(loop.iter) for loop in ctx.loops)


def early_exit(analysis, scope: Scope, site: FigureSite, disposed: Optional[str]) -> Optional[int]:
    """Line of a ``return`` between the figure's creation and its closing that neither
    closes nor returns it (a path that leaks the figure), when the figure is closed later."""
    if disposed is None or not disposed.startswith("closed at line "):
        return None
    closed_at = int(disposed.rsplit(" ", 1)[-1])
    begin = start_of(site.stmt)
    held = set(site.names)
    for stmt in scope.statements:
        if isinstance(stmt, ast.Return) and begin < start_of(stmt) and stmt.lineno < closed_at:
            if _inside_try_closing(scope, stmt, closed_at):
                continue
            if stmt.value is not None and held & expr_keys(stmt.value):
                continue
            return stmt.lineno
    return None


def closed_by_callers(analysis, scope: Scope) -> Optional[str]:
    """Every caller in the linted files runs ``plt.close("all")``/``plt.close()`` itself."""
    project = analysis.project
    if project is None or not scope.is_function:
        return None
    callers = project.callers(scope.name)
    if callers is None or None in callers:
        return None
    for caller_analysis, caller_scope in callers:
        imports = caller_analysis.index.imports
        if not any((imports.qualname(c.func) == CLOSE and (not c.args or isinstance(c.args[0], ast.Constant)))
                   or imports.qualname(c.func) == SHOW for c, _ in caller_scope.calls):
            return None
    return f"every caller of `{scope.name}` closes or shows the figures"


def _inside_try_closing(scope: Scope, stmt, closed_at: int) -> bool:
    """Is ``stmt`` in the body of a ``try`` whose ``finally`` holds the closing call?"""
    for node in ast.walk(scope.node):
        if isinstance(node, ast.Try) and node.finalbody:
            if any(s.lineno <= closed_at <= (s.end_lineno or s.lineno) for s in node.finalbody):
                if node.lineno <= stmt.lineno <= (node.end_lineno or node.lineno):
                    return True
    return False


def _reuses_named_figure(call: ast.Call, qual: str) -> bool:
    """``plt.figure("loss")`` / ``num=`` give back the existing figure with that number or name."""
    if qual.endswith(".figure") and call.args and isinstance(call.args[0], ast.Constant) \
            and call.args[0].value is not None:
        return True
    return any(k.arg == "num" and isinstance(k.value, ast.Constant) and k.value.value is not None
               for k in call.keywords)


MAX_ONCE_DEPTH = 2  # callers of callers followed: ``train_classifier`` <- ``task_a`` <- ``main()``


def run_once(analysis, scope: Scope, depth: int = 0, methods: bool = False,
             literal_ranges: bool = False) -> Optional[str]:
    """Every call of the function in the linted files is a statement outside any loop, at
    module level (``run_comparison(...)`` at the bottom of a script) or in a top-level
    function that itself runs once that way (``main()`` under ``if __name__ ...``): it
    makes its figures once per process, which do not accumulate. With ``methods``, a method
    counts the same way, by the calls spelled with its name (``env.plot_stat(rewards)`` at
    the end of the script); a bound method handed on as a value is not a call the tables see."""
    project = analysis.project
    if project is None or not scope.is_function or scope.parent is not analysis.index.module_scope:
        return None
    if scope.class_name and not methods:
        return None
    me = analysis.index.module_name
    sites = project.call_sites_of(me, scope.name)
    # another script's function of the same name (every script's ``main``): its calls are its own
    sites = [site for site in sites if site[0] == me or scope.name not in (
        project.tables[site[0]].functions if site[0] in project.tables else ())]
    # another program of the same tree (a copy of the scripts per algorithm): its calls are its own
    sites = [site for site in sites if project.import_connected(site[0], me)]
    if methods and scope.class_name and len(sites) <= MAX_SCANNED_SITES:
        # ``x.view(-1)`` on tensors is no call of ``ViewImage.view(self)``
        sites = [site for site in sites if _may_call_method(project, site, scope)]
    if not sites or len(sites) > 8:
        return None
    own = 0
    via = None
    for module, caller, _ in sites:
        caller_analysis = project.analysis(module)
        if caller_analysis is None:
            return None
        top = caller_analysis.index.module_scope
        own += 1
        caller_scope = top
        functions = [s for s in caller_analysis.index.scopes if s.is_function and s.qualname == caller]
        # ``train.py``'s function ``train`` and its module-level code share a name: the
        # caller is whichever of them holds the call.
        at_top = caller == top.qualname and any(
            (c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", None)) == scope.name
            for c, _ in top.calls)
        holder = top if at_top else (functions[0] if len(functions) == 1 else None)
        if methods and scope.class_name and holder is not None and _calls_reach_others(
                caller_analysis, holder, scope, (me, scope.qualname)):
            own -= 1
            continue  # every call there reaches another class's method of that name (``trainer.test()``)
        if not at_top:
            # Called from a function (``train`` in ``train.py``): once only if that function runs once.
            if depth >= MAX_ONCE_DEPTH or len(functions) != 1 or run_once(caller_analysis, functions[0], depth + 1,
                                                             methods, literal_ranges) is None:
                return None
            caller_scope = functions[0]
            via = caller_scope.name
        for call, stmt in caller_scope.calls:
            name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
            if name != scope.name:
                continue
            if methods and scope.class_name and _reaches_other(caller_analysis, caller_scope, call, stmt,
                                                               (me, scope.qualname)):
                continue  # ``trainer.test()`` beside ``net.test()``: another class's method
            ctx = caller_analysis.index.ctx(stmt)
            if ctx is None or repeating_loops(caller_analysis, ctx, literal_ranges):
                return None  # a loop over a short literal (``for split in ("train", "test")``) is a fixed count
    if not own or own > 8:
        return None
    if via is not None:
        return f"`{scope.name}` is only called once, from `{via}`, which runs once"
    return f"`{scope.name}` is only called once, at module level"


MAX_SCANNED_SITES = 256  # call sites of a common method name sorted out by their arguments


def _may_call_method(project, site, scope: Scope) -> bool:
    """Does the site's caller hold a call of the method's name whose arguments fit its
    parameters, on something other than a library object?"""
    from .call_arity import call_fits
    from .callers import library_object
    from .project import FunctionRef

    found = project.scope_for(FunctionRef(site[0], site[1]))
    if found is None:
        return True
    caller_analysis, caller = found
    for call, stmt in caller.calls:
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
        if name == scope.name and call_fits(scope, call) and not (
                isinstance(call.func, ast.Attribute) and library_object(caller_analysis, caller, call.func.value, stmt)):
            return True
    return False


def _calls_reach_others(analysis, holder: Scope, scope: Scope, me) -> bool:
    """Does every call spelled with the method's name in ``holder`` resolve to methods of
    other classes?"""
    found = False
    for call, stmt in holder.calls:
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
        if name != scope.name:
            continue
        found = True
        if not _reaches_other(analysis, holder, call, stmt, me):
            return False
    return found


def _reaches_other(analysis, holder: Scope, call, stmt, me) -> bool:
    """Does the call resolve to project functions, none of them ``me``?"""
    refs = resolved_refs(analysis, holder, call, stmt)
    return bool(refs) and me not in refs


def never_called(analysis, scope: Scope) -> Optional[str]:
    """A module-level function that nothing in the linted files calls, imports or names:
    dead code, a helper whose only calls are commented out, or one kept for the interactive
    prompt. No repetition of it is in view. In a module that is not a script, only when the
    linted files hold modules that import it: they are its users, and none uses this one."""
    if scope.is_function and scope.class_name:
        return _method_never_called(analysis, scope)
    if not scope.is_function or scope.class_name or scope.parent is not analysis.index.module_scope:
        return None
    if not unreferenced(analysis, scope.name):
        return None
    return f"nothing in the linted files calls `{scope.name}`"


def _method_never_called(analysis, scope: Scope) -> Optional[str]:
    """A method that nothing in the linted files calls or names, of a class whose bases are
    all the project's own (no framework can call it as a hook): its object's users are in
    view, as for a module-level function, and none runs it."""
    project = analysis.project
    name = scope.name
    if project is None or name.startswith("__") or scope.qualname != f"{scope.class_name}.{name}" \
            or scope.class_name not in analysis.index.classes:
        return None  # a method of a module-level class
    if not _own_lineage(project, analysis.index.module_name, scope.class_name):
        return None  # a framework base may call it (a callback, a Lightning hook)
    if project.call_sites(name):
        return None
    module = analysis.index.module_name
    importers = project.importers_of_module(module)
    if not is_script(analysis.index.tree) and not program_importers(project, module):
        return None  # no user of this module is linted (or only tests): unknown
    if _mentions(analysis.index.tree, name):
        return None  # handed on as a value (``callback=self.plot``), or named in a string table
    for importer in importers:
        other = project.analysis(importer)
        if other is None or _mentions(other.index.tree, name):
            return None
    if any(isinstance(node, ast.Constant) and node.value == name for node in ast.walk(analysis.index.tree)):
        return None  # ``getattr(self, "plot_" + kind)`` spelled whole
    return f"nothing in the linted files calls `{scope.class_name}.{name}`"


def _own_lineage(project, module: str, class_name: str, depth: int = 0) -> bool:
    """Are all the class's bases, all the way up, project classes (or ``object``)?"""
    if depth > 8:
        return False
    for base in project.class_table(module, class_name) or []:
        if base in ("", "object"):
            continue
        found = project.resolve_class(module, base)
        if found is None or not _own_lineage(project, found[0], found[1], depth + 1):
            return False
    return True


def unreferenced(analysis, name: str, own=None) -> bool:
    """Does nothing in the linted files call, import or name the module-level ``name``
    (a function or a class of ``analysis``'s module)? In a module that is not a script,
    only when the linted files hold modules that import it: they are its users. Names
    inside ``own`` (the class's own body: ``super(Logger, self).__init__()``) do not count."""
    project = analysis.project
    if project is None:
        return False
    inside = {id(n) for n in walk_nodes(own)} if own is not None else set()
    sites = project.call_sites(name)
    if sites and not (own is not None and all(
            site[0] == analysis.index.module_name and site[1].split(".")[0] == name for site in sites)):
        return False
    if not is_script(analysis.index.tree):
        module = analysis.index.module_name
        if not program_importers(project, module):
            return False  # no user of this module is linted (one file in an editor or a hook, or only tests): unknown
        if _named_by_importers(project, module, name):
            return False  # imported by another module, which may hand it on as a value
    return not _mentions(analysis.index.tree, name, skip=inside)  # nor handed on as a value (a callback, a registry entry)


def program_importers(project, module: str) -> list:
    """The modules importing ``module`` that are part of a program, not tests: a library
    whose only importers in view are its tests has its users elsewhere."""
    return [m for m in project.importers_of_module(module) if not project.is_test_module(m)]


def _named_by_importers(project, module: str, name: str) -> bool:
    """Does a module that imports ``name`` from ``module`` name it: an explicit import, or
    a star import followed by a use of the name (``from torch_utils import *`` for other
    helpers does not use this one)?"""
    # The importers of the module too: two imports bound to one alias (``from trainer
    # import GANTrainer as trainer`` in one arm, ``... condGANTrainer as trainer`` in the
    # other) leave only the last in the symbol table.
    importers = dict.fromkeys(project.importers_of_name(f"{module}.{name}") + project.importers_of_module(module))
    for importer in importers:
        other = project.analysis(importer)
        if other is None:
            return True
        local = {(a.asname or a.name).split(".")[-1] for a in walk_nodes(other.index.tree)
                 if isinstance(a, ast.alias) and a.name.split(".")[-1] == name} or {name}
        if any(_mentions(other.index.tree, n) for n in local):
            return True  # used by name (an import alone binds the name without using it)
        if _mentions(other.index.tree, name, imported=True) and (
                os.path.basename(other.path) == "__init__.py" or _exported(other.index.tree, name)):
            return True  # a package's ``__init__`` (or an ``__all__``) hands it on to its own importers
    return False


def _exported(tree, name: str) -> bool:
    """Is ``name`` listed in the module's ``__all__``?"""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return any(isinstance(e, ast.Constant) and e.value == name for e in ast.walk(node.value))
    return False


def _mentions(tree, name: str, skip=frozenset(), imported: bool = False) -> bool:
    """Does the tree name ``name`` (``name``, ``x.name``; with ``imported``, an import of
    it), outside the nodes in ``skip``?"""
    for node in walk_nodes(tree):
        if id(node) in skip:
            continue
        if (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name):
            return True
        if imported and isinstance(node, ast.alias) and (node.asname or node.name).split(".")[-1] == name:
            return True
    return False


def dispatched_once(analysis, scope: Scope) -> Optional[str]:
    """A command of an ``argparse`` program: the function is only handed to a
    sub-parser's ``set_defaults(func=...)``, outside any loop, and called by nothing else.
    ``args.func(args)`` runs the one command the user picked, once per process."""
    project = analysis.project
    if project is None or not scope.is_function or scope.class_name or scope.parent is not analysis.index.module_scope:
        return None
    if project.call_sites(scope.name) or project.name_imported(analysis.index.module_name, scope.name):
        return None
    index = analysis.index
    handed = 0
    for other in index.scopes:
        for call, stmt in other.calls:
            if not (isinstance(call.func, ast.Attribute) and call.func.attr == "set_defaults"):
                continue
            for kw in call.keywords:
                if isinstance(kw.value, ast.Name) and kw.value.id == scope.name:
                    ctx = index.ctx(stmt)
                    if ctx is None or ctx.loops:
                        return None
                    handed += 1
    if not handed:
        return None
    named = sum(1 for node in ast.walk(index.tree) if isinstance(node, ast.Name) and node.id == scope.name)
    if named != handed:
        return None  # named somewhere else too: it may be called from there
    return f"`{scope.name}` is an argparse command (`set_defaults(func={scope.name})`), run once per process"


def is_script(tree) -> bool:
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare) \
                and any(isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(stmt.test)):
            return True
    return False
