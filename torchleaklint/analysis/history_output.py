"""A history the program writes out whole: ``plt.plot(self.losses)``,
``pd.DataFrame(np.array(self.evals)).to_csv(path)``, ``json.dump(self.rewards, f)``. Every
entry is read at the end (a learning curve, an evaluation log), so keeping all of them is
what the list is for, not waste."""

from __future__ import annotations

import ast
from typing import Optional

from .names import dotted, last_name

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
    name), or None."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or last_name(node.func) not in OUTPUT_CALLS:
            continue
        for arg in list(node.args) + [k.value for k in node.keywords]:
            if _whole(arg, key):
                return node.lineno
    return None


def _whole(expr, key: str) -> bool:
    if isinstance(expr, (ast.Name, ast.Attribute)):
        return dotted(expr) == key
    if isinstance(expr, ast.Call) and last_name(expr.func) in WHOLE_CONVERSIONS and expr.args:
        return _whole(expr.args[0], key)
    if isinstance(expr, (ast.List, ast.Tuple)):
        return any(_whole(e, key) for e in expr.elts)  # ``np.array([self.steps, self.rewards])``
    return False
