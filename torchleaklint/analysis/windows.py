"""Histories of which only the last window is ever read.

When every read of a long-lived list is a tail (``xs[-n:]``, ``xs[-1]``), the entries older
than the window are dead the moment they leave it: keeping them is growth for nothing, and
``deque(maxlen=n)`` keeps everything that is read. The same holds for a dict of lists
(``self.stats[key].append((t, v))``, read as ``self.stats[key][-5:]``)."""

from __future__ import annotations

import ast
from typing import Dict, Optional

from .names import dotted
from .parents import parent_map

GROWING = frozenset({"append", "extend", "insert", "appendleft"})
KEY_VIEWS = frozenset({"keys", "__contains__", "get"})


def tail_window_only(tree: ast.AST, key: str, nested: bool = False) -> Optional[str]:
    """Evidence that ``key`` (``self.history``; any ``<obj>.history`` in the module counts)
    is read only through tails; None when some read may see the whole list, or when there
    is no read at all (a list nobody reads is another matter).

    ``nested``: ``key`` is a dict of lists, and the tails are taken of its items."""
    attr = key.rsplit(".", 1)[-1]
    parents = parent_map(tree)
    tails = []
    for node in ast.walk(tree):
        if not (isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load) and _same(node, key, attr)):
            continue
        use = node
        parent = parents.get(use)
        if nested:
            if isinstance(parent, ast.Subscript) and parent.value is use and not isinstance(parent.slice, ast.Slice):
                use, parent = parent, parents.get(parent)  # one item: ``self.stats[key]``
            elif _key_only(node, parent, parents):
                continue
            else:
                return None
        if isinstance(parent, ast.Attribute) and parent.value is use and parent.attr in GROWING \
                and isinstance(parents.get(parent), ast.Call):
            continue  # growth, not a read
        if isinstance(parent, ast.Subscript) and parent.value is use and _tail(parent.slice):
            tails.append(parent)
            continue
        return None
    if not tails:
        return None
    first = tails[0]
    return f"only its last entries are read (`{ast.unparse(first)}` at line {first.lineno})"


def _key_only(node, parent, parents: Dict[ast.AST, ast.AST]) -> bool:
    """A read of the dict that sees its keys only: ``k in d``, ``d.keys()``, ``for k in d``,
    ``for k, _ in d.items()`` whose value is never used."""
    if isinstance(parent, ast.Compare) and node in parent.comparators:
        return True
    if isinstance(parent, ast.Attribute) and parent.attr in KEY_VIEWS:
        return True
    if isinstance(parent, ast.For) and parent.iter is node:
        return True
    if isinstance(parent, ast.Attribute) and parent.attr == "items":
        loop = parents.get(parents.get(parent))
        while loop is not None and not isinstance(loop, (ast.For, ast.comprehension)):
            loop = parents.get(loop) if isinstance(loop, ast.Call) else None
        if loop is not None:
            target = loop.target
            if isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name):
                value = target.elts[1].id
                body = loop.body if isinstance(loop, ast.For) else []
                return not any(isinstance(n, ast.Name) and n.id == value and isinstance(n.ctx, ast.Load)
                               for s in body for n in ast.walk(s))
    return False


def _tail(index) -> bool:
    """``[-n:]``, ``[-(rows - 3):]``, ``[-1]``: a slice or an index from the end."""
    if isinstance(index, ast.Slice):
        return index.upper is None and index.step is None and _negative(index.lower)
    return _negative(index)


def _negative(node) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)


def _same(node, key: str, attr: str) -> bool:
    path = dotted(node)
    if path is None:
        return False
    return path == key or ("." in key and isinstance(node, ast.Attribute) and node.attr == attr)
