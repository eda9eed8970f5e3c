"""The parent of every node under a root: for the questions asked from a use upwards
(is this read the receiver of ``.append``? the argument of ``copy.deepcopy``?)."""

from __future__ import annotations

import ast
from typing import Dict


def parent_map(root: ast.AST) -> Dict[ast.AST, ast.AST]:
    out: Dict[ast.AST, ast.AST] = {}
    for parent in ast.walk(root):
        for child in ast.iter_child_nodes(parent):
            out[child] = parent
    return out
