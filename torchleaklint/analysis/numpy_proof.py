"""A forward whose output is turned into NumPy without a detach runs with grad off.

``images = torch.cat([G_ema(z) .cpu() for z in zs]).numpy()``: ``Tensor.numpy()`` raises
"Can't call numpy() on Tensor that requires grad" on any tensor that records autograd,
so code that works proves the module's output carries no graph (its parameters are
frozen, or a caller disabled grad). A ``.detach()`` or ``.data`` on the way proves
nothing: the graph may be there and dropped.
"""

from __future__ import annotations

import ast

from .names import dotted

_TORCH_ROOTS = ("torch", "th")


def read_as_numpy(call: ast.Call, stmt: ast.AST) -> bool:
    """Does ``stmt`` call ``.numpy()`` on ``call``'s result with no detach in between?"""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "numpy" \
                and not node.args and _reaches(node.func.value, call):
            return True
    return False


def _reaches(node, target) -> bool:
    if node is target:
        return True
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in ("detach", "detach_"):
                return False
            root = (dotted(func.value) or "").split(".")[0]
            if root in _TORCH_ROOTS:  # ``torch.cat([...])``: the result records autograd if an input does
                return any(_reaches(a, target) for a in node.args)
            return _reaches(func.value, target)  # ``out.cpu()``, ``out.squeeze(0)``
        return False
    if isinstance(node, ast.Attribute):
        return node.attr != "data" and _reaches(node.value, target)
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(_reaches(e, target) for e in node.elts)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        return _reaches(node.elt, target)
    if isinstance(node, ast.Subscript):
        return _reaches(node.value, target)
    if isinstance(node, ast.Starred):
        return _reaches(node.value, target)
    return False
