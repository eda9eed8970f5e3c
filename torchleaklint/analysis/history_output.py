"""A history the program writes out whole: ``plt.plot(self.losses)``,
``pd.DataFrame(np.array(self.evals)).to_csv(path)``, ``json.dump(self.rewards, f)``. Every
entry is read at the end (a learning curve, an evaluation log), so keeping all of them is
what the list is for, not waste."""

from __future__ import annotations

import ast
from typing import Optional

from .module_index import body_nodes
from .names import dotted, last_name
from .summaries import short_path

# Calls that draw or write every element of a sequence they are given.
OUTPUT_CALLS = frozenset({
    "plot", "scatter", "hist", "bar", "errorbar", "fill_between", "semilogy", "semilogx", "loglog", "stackplot",
    "boxplot", "violinplot", "lineplot", "histplot", "savetxt", "save", "savez",
    "savez_compressed", "dump", "dumps", "to_csv", "DataFrame", "writerows", "write_csv", "save_json",
    "dump_json", "pickle_dump", "add_histogram",
})
# Conversions that keep every element: ``np.array(self.evals)``.
WHOLE_CONVERSIONS = frozenset({"array", "asarray", "stack", "concatenate", "list", "tuple", "tensor", "Series",
                               "vstack", "hstack"})


def written_out_whole(tree: ast.AST, key: str) -> Optional[int]:
    """Line of a call that plots or writes the whole list ``key`` (``self.x`` or a module
    name), directly or through a local name bound to it whole (``positions =
    np.array([np.concatenate(self.preds), ...]); np.save(path, positions)``), or None."""
    for body in _bodies(tree):
        bound = None
        for node in body_nodes(body):
            if not isinstance(node, ast.Call) or last_name(node.func) not in OUTPUT_CALLS:
                continue
            for arg in list(node.args) + [k.value for k in node.keywords]:
                if _whole(arg, key):
                    return node.lineno
                if isinstance(arg, ast.Name):
                    if bound is None:
                        bound = _names_bound_whole(body, key)
                    if arg.id in bound:
                        return node.lineno
    return None


def _bodies(tree: ast.AST):
    """The module and every function in it, each walked without the functions it holds."""
    yield tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _names_bound_whole(body: ast.AST, key: str) -> frozenset:
    return frozenset(t.id for node in body_nodes(body) if isinstance(node, ast.Assign) and _whole(node.value, key)
                     for t in node.targets if isinstance(t, ast.Name))


def _whole(expr, key: str) -> bool:
    if isinstance(expr, (ast.Name, ast.Attribute)):
        return dotted(expr) == key
    if isinstance(expr, ast.Subscript) and _every_row(expr.slice):
        return _whole(expr.value, key)  # ``loss[:, 0]``: one column of every entry
    if isinstance(expr, ast.Call) and last_name(expr.func) in WHOLE_CONVERSIONS and expr.args:
        return _whole(expr.args[0], key)
    if isinstance(expr, (ast.List, ast.Tuple)):
        return any(_whole(e, key) for e in expr.elts)  # ``np.array([self.steps, self.rewards])``
    return False


def _every_row(index) -> bool:
    """``[:, 0]``: a full slice first, so every entry of the first axis is read."""
    return (isinstance(index, ast.Tuple) and bool(index.elts) and isinstance(index.elts[0], ast.Slice)
            and index.elts[0].lower is None and index.elts[0].upper is None and index.elts[0].step is None)


def handed_to_writer(analysis, key: str) -> Optional[str]:
    """Where the list is handed whole to a project function that plots or writes that
    parameter whole (``visualize.plot_loss(self.loss_history, ...)`` whose body does
    ``loss = np.array(loss); plt.plot(loss[:, 0])``), or None."""
    from .summaries import argument_of

    project = analysis.project
    if project is None:
        return None
    kinds = analysis.graph.kinds
    for scope in analysis.index.scopes:
        for call, stmt in scope.calls:
            if not any(dotted(arg) == key for arg in list(call.args) + [k.value for k in call.keywords]):
                continue
            for ref in kinds.resolve_functions(call.func, scope, stmt):
                found = project.scope_for(ref)
                if found is None:
                    continue
                callee_analysis, callee = found
                for param in callee.params:
                    arg = argument_of(call, callee, param)
                    if arg is not None and dotted(arg) == key and written_out_whole(callee.node, param) is not None:
                        return f"{short_path(callee_analysis.path)}:{callee.node.lineno}"
    return None


MAX_READER_MODULES = 16


def written_out_whole_elsewhere(analysis, key: str) -> Optional[str]:
    """Where the file itself, through another name of the object, or another file of the
    program (one importing this one) plots or writes the object's list whole: ``plt.plot(agent.losses)``, or looked up by its name
    (``for name in ["weights_over_time", ...]: var = getattr(dqn, name); plt.plot(var)``).
    ``key`` is ``self.x``; None when no such read is seen."""
    project = analysis.project
    if project is None or not key.startswith("self.") or "." in key[5:]:
        return None
    attr = key[5:]
    module = analysis.index.module_name
    line = _output_of_attribute(analysis.index.tree, attr)
    if line is not None:
        return f"{short_path(analysis.path)}:{line}"  # ``plt.plot(solver.regrets)`` beside the class
    for other_module in project.importers_of_module(module)[:MAX_READER_MODULES]:
        other = project.analysis(other_module)
        if other is None:
            continue
        line = _output_of_attribute(other.index.tree, attr)
        if line is not None:
            return f"{short_path(other.path)}:{line}"
    return None


def _output_of_attribute(tree, attr: str) -> Optional[int]:
    """Line of an output call in the file that takes ``<obj>.attr`` whole, or a name bound by
    ``getattr`` when the file spells ``attr`` as a string."""
    looked_up = set()
    if any(isinstance(n, ast.Constant) and n.value == attr for n in ast.walk(tree)):
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Call) and dotted(node.value.func) == "getattr" \
                    and len(node.value.args) >= 2:
                looked_up.add(node.targets[0].id)  # ``var = getattr(dqn, name)``
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and last_name(node.func) in OUTPUT_CALLS and any(
                _whole_attribute(arg, attr, looked_up) for arg in list(node.args) + [k.value for k in node.keywords]):
            return node.lineno
    return None


def _whole_attribute(expr, attr: str, looked_up) -> bool:
    if isinstance(expr, ast.Attribute):
        return expr.attr == attr and dotted(expr) is not None
    if isinstance(expr, ast.Name):
        return expr.id in looked_up
    if isinstance(expr, ast.Call) and last_name(expr.func) in WHOLE_CONVERSIONS and expr.args:
        return _whole_attribute(expr.args[0], attr, looked_up)
    if isinstance(expr, (ast.List, ast.Tuple)):
        return any(_whole_attribute(e, attr, looked_up) for e in expr.elts)
    return False

