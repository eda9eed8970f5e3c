"""Which call last wrote an object's attribute before it is read, and was grad off there?

``self.test(); fakes.append(self.fake_B.cpu())`` in an evaluation loop of a GAN model:
``test`` runs ``self.forward()`` under ``torch.no_grad()``, and ``forward`` sets
``self.fake_B``. The value read was made with grad off, whatever ``forward`` records when
the training step calls it.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from .module_index import grad_off_call
from .names import dotted

MAX_DEPTH = 2  # self-calls followed from the call before the read


def written_without_grad(analysis, scope, key: str, stmt) -> bool:
    """Is the nearest statement before ``stmt`` in its block that writes ``key``
    (``self.x``) a call of a method of the object that writes it only with grad off?"""
    project = analysis.project
    if project is None or not scope.class_name or not key.startswith("self.") or "." in key[5:]:
        return False
    found = _block_of(scope.node, stmt)
    if found is None:
        return False
    block, at = found
    for earlier in reversed(block[:at]):
        if any(dotted(t) == key for t in _targets(earlier)):
            return False  # assigned here: the ordinary flow speaks for it
        call = earlier.value if isinstance(earlier, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and dotted(call.func.value) == "self"):
            continue
        answer = _writes(analysis, scope.class_name, call.func.attr, key, False, 0)
        if answer is not None:
            return answer
    return False


def _writes(analysis, class_name: str, method: str, key: str, off: bool, depth: int) -> Optional[bool]:
    """None when the method does not write ``key``; else whether every write it makes
    (itself or through ``self.`` calls) runs with grad off."""
    project = analysis.project
    refs = project.methods_in_hierarchy(analysis.index.module_name, class_name, method)
    found = project.scope_for(refs[0]) if refs else None
    if found is None:
        return None
    owner, body = found
    off = off or any(grad_off_call(deco, owner.index.imports) for deco in body.decorators)
    answers: List[bool] = []
    for d in body.defs_of(key):
        ctx = owner.index.ctx(d.stmt)
        answers.append(off or bool(ctx is not None and ctx.grad_off))
    if depth < MAX_DEPTH:
        for call, at in body.calls:
            if isinstance(call.func, ast.Attribute) and dotted(call.func.value) == "self" and call.func.attr != method:
                ctx = owner.index.ctx(at)
                inner = _writes(analysis, class_name, call.func.attr, key,
                                off or bool(ctx is not None and ctx.grad_off), depth + 1)
                if inner is not None:
                    answers.append(inner)
    return all(answers) if answers else None


def _targets(stmt) -> List[ast.AST]:
    if isinstance(stmt, ast.Assign):
        return [n for t in stmt.targets for n in ast.walk(t)]
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return [stmt.target]
    return []


def _block_of(root, stmt) -> Optional[Tuple[list, int]]:
    """The statement list holding ``stmt`` and its position there."""
    for node in ast.walk(root):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                for i, s in enumerate(block):
                    if s is stmt:
                        return block, i
        for handler in getattr(node, "handlers", ()) or ():
            for i, s in enumerate(handler.body):
                if s is stmt:
                    return handler.body, i
    return None
