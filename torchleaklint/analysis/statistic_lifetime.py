"""Is an object's statistic really kept from one call to the next? Updates that look
like running statistics but hold one call's (or one forward pass's) value: recomputed
earlier in the same call, detached in place before each update, or re-initialised by a
method that every ``forward`` runs (per-sequence attention or decoder state)."""

from __future__ import annotations

import ast

from .names import dotted


def rebound_earlier(analysis, scope, attr, stmt) -> bool:
    """``self.latent = self.net(x); self.latent[:, d:] = f(self.latent[:, d:])``: the value
    updated was computed earlier in the same call, not kept from the previous one."""
    for d in scope.defs_of(attr):
        if d.stmt is stmt or not isinstance(d.stmt, ast.Assign) or d.start >= (stmt.lineno, stmt.col_offset):
            continue
        if any(dotted(t) == attr for t in d.stmt.targets) and analysis.flow.dominates(d, stmt):
            return True
    return False


def detached_in_place(loop, name: str) -> bool:
    """``target_param.detach_()`` in the loop: each update starts from a graph-free tensor."""
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "detach_" \
                and dotted(node.func.value) == name:
            return True
    return False


def reset_every_forward(analysis, scope, attr) -> bool:
    """Is ``attr`` re-initialised (assigned afresh, not from itself) by a method that a
    ``forward`` calls: ``Decoder.forward -> self.attention.init_states(x)`` setting
    ``self.mu_prev = zeros(...)``? Then it lives for one forward pass, which a backward
    consumes, like an RNN's hidden state within a sequence."""
    project = analysis.project
    if project is None or not scope.class_name:
        return False
    for method in analysis.index.methods(scope.class_name):
        if method is scope or method.name == "__init__":
            continue
        fresh = any(isinstance(d.stmt, ast.Assign) and any(dotted(t) == attr for t in d.stmt.targets)
                    and not any(dotted(n) == attr for n in ast.walk(d.stmt.value)) for d in method.defs_of(attr))
        if not fresh:
            continue
        if _called_from_forward(project, method.name):
            return True
    return False


def _called_from_forward(project, name: str, depth: int = 0) -> bool:
    """Is a function spelled ``name`` a ``forward`` or called from one (two calls deep)?"""
    if name == "forward":
        return True
    if depth >= 2:
        return False
    return any(_called_from_forward(project, caller.rsplit(".", 1)[-1], depth + 1)
               for _, caller, _ in project.call_sites(name)[:8])
