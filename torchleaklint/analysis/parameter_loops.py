"""Loop variables that walk over a module's own tensors, as in an EMA or target-network
update: ``for ema_p, p in zip(ema.parameters(), model.parameters()):``.

Each such name is a parameter (``parameters()``, the second element of
``named_parameters()``: a leaf that records autograd unless frozen) or a buffer
(``buffers()``, ``named_buffers()``: never a graph source), of the module spelled before
the call. ``state_dict()`` values are detached copies and are not followed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional

from .names import dotted

KINDS = {"parameters": "parameter", "named_parameters": "parameter", "buffers": "buffer", "named_buffers": "buffer"}
# Reads of a tensor that carry no graph: its data, a detached copy, a number, metadata.
GRAPHLESS_ATTRS = frozenset({"data", "detach", "item", "tolist", "numpy", "grad", "shape", "dtype", "device",
                             "size", "requires_grad", "dim", "numel"})


@dataclass(frozen=True)
class ModuleTensor:
    kind: str  # "parameter" or "buffer"
    module: str  # the module as written: `self.teacher`, `model`


def module_tensor_names(loops: Iterable[ast.AST]) -> Dict[str, ModuleTensor]:
    """The names bound by the given ``for`` loops to a module's parameters or buffers."""
    found: Dict[str, ModuleTensor] = {}
    for loop in loops:
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        pairs = _zipped(loop)
        for target, source in pairs:
            tensor = _module_tensor(source)
            name = _element_name(target, source)
            if tensor is not None and name is not None:
                found[name] = tensor
    return found


def _zipped(loop) -> List[tuple]:
    """(target, iterable) pairs: ``for a, b in zip(x, y)`` and ``for a in x``."""
    it, target = loop.iter, loop.target
    if isinstance(it, ast.Call) and dotted(it.func) == "zip" and isinstance(target, (ast.Tuple, ast.List)) \
            and len(target.elts) == len(it.args) and all(k.arg == "strict" for k in it.keywords):
        return list(zip(target.elts, it.args))
    return [(target, it)]


def _module_tensor(source: ast.AST) -> Optional[ModuleTensor]:
    if not (isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute)):
        return None
    kind = KINDS.get(source.func.attr)
    module = dotted(source.func.value)
    if kind is None or module is None:
        return None
    return ModuleTensor(kind, module)


def _element_name(target: ast.AST, source: ast.AST) -> Optional[str]:
    """The tensor's name: the target itself, or the second of ``(name, tensor)`` pairs."""
    named = source.func.attr.startswith("named_") if isinstance(source, ast.Call) and isinstance(
        source.func, ast.Attribute) else False
    if named:
        if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
            target = target.elts[1]
        else:
            return None
    return target.id if isinstance(target, ast.Name) else None


def bare_reads(expr: ast.AST, names: Iterable[str]) -> List[ast.Name]:
    """The reads of ``names`` in ``expr`` that keep their graph: not ``p.data``,
    ``p.detach()``, ``p.item()``, ``p.grad`` or metadata."""
    wanted = set(names)
    out: List[ast.Name] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in GRAPHLESS_ATTRS:
            return
        if isinstance(node, ast.Name) and node.id in wanted:
            out.append(node)
            return
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return  # evaluated elsewhere, or with names of their own
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(expr)
    return out
