"""A forward whose output is turned into NumPy without a detach runs with grad off.

``images = torch.cat([G_ema(z) .cpu() for z in zs]).numpy()``: ``Tensor.numpy()`` raises
"Can't call numpy() on Tensor that requires grad" on any tensor that records autograd,
so code that works proves the module's output carries no graph (its parameters are
frozen, or a caller disabled grad). A ``.detach()`` or ``.data`` on the way proves
nothing: the graph may be there and dropped. The output may be bound first and read
later (``out = seg_model(x)`` then ``out.cpu().numpy()``, ``mesh, joints = layer(p)``
then ``mesh.numpy()``): a read of the name that only this binding reaches is the same
proof.
"""

from __future__ import annotations

import ast

from .module_index import own_nodes
from .names import dotted

_TORCH_ROOTS = ("torch", "th")
# Results that never require grad, whatever their input records (indices, signs, masks):
# ``logits.argmax(1).numpy()`` works on a graph and proves nothing.
_NO_GRAD_RESULTS = frozenset({"argmax", "argmin", "argsort", "sign", "round", "floor", "ceil", "trunc", "eq", "ne",
                              "gt", "lt", "ge", "le", "isnan", "isinf", "isfinite", "nonzero", "bucketize",
                              "searchsorted", "unique", "logical_and", "logical_or", "logical_not", "bincount",
                              "count_nonzero", "long", "int", "bool", "byte", "sample", "multinomial", "bernoulli"})


def read_as_numpy(call: ast.Call, stmt: ast.AST) -> bool:
    """Does ``stmt`` call ``.numpy()`` on ``call``'s result with no detach in between?"""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "numpy" \
                and not node.args and _reaches(node.func.value, call):
            return True
    return False


def bound_then_read_as_numpy(analysis, scope, call: ast.Call, stmt: ast.AST) -> bool:
    """Is every name ``stmt`` binds to ``call``'s result (or to its elements) read with
    ``.numpy()``, no detach in between, where only this binding reaches the read?"""
    if not (isinstance(stmt, ast.Assign) and stmt.value is call):
        return False
    names = {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Store)}  # ``action, _ = pi(s)``: the dropped element proves nothing
    if not names:
        return False
    proven = set()
    for other in scope.statements:
        if other is stmt or (other.lineno, other.col_offset) <= (stmt.lineno, stmt.col_offset):
            continue
        for node in own_nodes(other):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "numpy" and not node.args):
                continue
            for name in names - proven:
                read = _named_root(node.func.value, name)
                if read is not None and [d.stmt for d in analysis.flow.reaching(scope, name, other)] == [stmt]:
                    proven.add(name)
    # Each element of an unpacked output proves only itself: ``action, _, dist = actor(obs)``
    # with ``action.cpu().numpy()`` says the sampled action has no graph, not ``dist``.
    return proven == names


def _named_root(node, name: str):
    """The ``Name`` ``name`` that ``node`` reaches as in :func:`_reaches`, or None."""
    for found in ast.walk(node):
        if isinstance(found, ast.Name) and found.id == name and _reaches(node, found):
            return found
    return None


def _reaches(node, target) -> bool:
    if node is target:
        return True
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in ("detach", "detach_") or func.attr in _NO_GRAD_RESULTS:
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
