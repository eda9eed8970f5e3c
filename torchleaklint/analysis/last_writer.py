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
from .parents import parent_map

MAX_DEPTH = 2  # self-calls followed from the call before the read


def written_without_grad(analysis, scope, key: str, stmt) -> bool:
    """Is the nearest statement before ``stmt`` that writes ``key`` (``self.x``) a call of
    a method of the object that writes it only with grad off (``self.test()``, or
    ``self.forward(i)`` inside ``with torch.no_grad():``)? Searched back through the
    statement's block and the ``if``/``with`` blocks around it, not across a loop."""
    project = analysis.project
    if project is None or not scope.class_name or not key.startswith("self.") or "." in key[5:]:
        return False
    for block, at, owner in _enclosing_blocks(scope.node, stmt):
        for earlier in reversed(block[:at]):
            answer = _judge(analysis, scope, earlier, key, False)
            if answer is not None:
                return answer
        if isinstance(owner, (ast.For, ast.AsyncFor, ast.While)) or owner is scope.node:
            return False  # the loop's previous iteration, or the function's caller, may have written it
    return False


def _judge(analysis, scope, stmt, key: str, off: bool) -> Optional[bool]:
    """None when ``stmt`` does not write ``key``; else whether it writes it with grad off."""
    if any(dotted(t) == key for t in _targets(stmt)):
        return False  # assigned here: the ordinary flow speaks for it
    if isinstance(stmt, ast.Expr):
        call = stmt.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and dotted(call.func.value) == "self":
            return _writes(analysis, scope.class_name, call.func.attr, key, off, 0)
        return None
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        inner_off = off or any(grad_off_call(item.context_expr, analysis.index.imports) for item in stmt.items)
        for inner in reversed(stmt.body):
            answer = _judge(analysis, scope, inner, key, inner_off)
            if answer is not None:
                return answer
        return None
    if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try)):
        for node in ast.walk(stmt):
            if isinstance(node, ast.stmt) and node is not stmt and _judge(analysis, scope, node, key, off) is not None:
                return False  # may write it on some path: cannot say which write is last
    return None


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


def _enclosing_blocks(root, stmt) -> List[Tuple[list, int, ast.AST]]:
    """(statement list, position, the node owning the list) from the list holding ``stmt``
    out to the function body."""
    parents = parent_map(root)
    out = []
    current = stmt
    while current is not root and current in parents:
        owner = parents[current]
        block = next((b for b in (getattr(owner, f, None) for f in ("body", "orelse", "finalbody"))
                      if isinstance(b, list) and any(s is current for s in b)), None)
        if block is None:
            break  # an expression's child, not a statement of a block
        out.append((block, next(i for i, s in enumerate(block) if s is current), owner))
        current = owner
    return out
