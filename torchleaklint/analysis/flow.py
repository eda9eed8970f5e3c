"""Which definitions of a name reach a statement, and what a name's value flows into.

Reaching definitions are approximated from source order and block structure, which is
exact for straight-line code and loops and conservative across branches: walk back from
the use to the nearest definition that runs on every path to it, collecting the
conditional ones on the way; inside a loop, definitions later in the body also reach
the use from the previous iteration.
"""

from __future__ import annotations

import ast
from typing import Iterable, List, Optional, Set, Tuple

from .module_index import LOOP_TYPES, Def, Scope, contains, key_bases, start_of, within


class Flow:
    def __init__(self, analysis) -> None:
        self.analysis = analysis
        self._closure_memo = {}

    # -- reaching definitions -----------------------------------------------------------
    def dominates(self, d: Def, use_stmt) -> bool:
        ix = self.analysis.index
        dctx, uctx = ix.ctx(d.stmt), ix.ctx(use_stmt)
        if d.kind == "param":
            return True
        if dctx is None or uctx is None:
            return False
        if dctx.scope is not uctx.scope:
            return False
        blocks = dctx.blocks
        if isinstance(d.stmt, LOOP_TYPES):
            # The target of ``for x in xs`` is bound inside the loop only.
            return any(b is d.stmt for b in uctx.blocks)
        return within(uctx.blocks, blocks)

    def reaching(self, scope: Scope, key: str, use_stmt) -> List[Def]:
        defs = scope.defs_of(key)
        if not defs:
            return []
        use_pos = start_of(use_stmt)
        before = [d for d in defs if d.start < use_pos or (d.kind == "param")]
        out: List[Def] = []
        for d in reversed(before):
            if isinstance(d.stmt, LOOP_TYPES) and not contains(d.stmt, use_stmt):
                # A finished loop's target keeps its last value.
                out.append(d)
                continue
            if any(self._overwrites(later, d, scope) for later in out):
                continue  # ``loss = f(x); loss.backward(); loss = loss.item()`` in one branch
            out.append(d)
            if self.dominates(d, use_stmt):
                break
        if len(out) >= 2 and "." not in key:
            out = self._past_rebinding_arms(key, use_stmt, out)
        ctx = self.analysis.index.ctx(use_stmt)
        if ctx is not None and ctx.loops:
            outer = ctx.loops[0]
            # A binding before the use in the same iteration, on every path, kills what the
            # previous iteration bound: ``loss = f(x); loss.backward(); ...; loss = loss.item()``.
            killers = [k for k in out if k.kind != "param" and self.dominates(k, use_stmt)]
            # ``action = actor(s)`` at the top of the iteration makes ``action.grad`` a new
            # object's: rebinding a base kills what the previous iteration bound to its attributes.
            for base in key_bases(key):
                killers.extend(k for k in scope.defs_of(base) if k.kind == "assign" and k.start < use_pos
                               and not isinstance(k.stmt, LOOP_TYPES) and self.dominates(k, use_stmt))
            arms = None
            for d in defs:
                if d.start >= use_pos and contains(outer, d.stmt) and d not in out:
                    carrier = next((loop for loop in reversed(ctx.loops) if contains(loop, d.stmt)), outer)
                    if any(k.stmt is carrier or contains(carrier, k.stmt) for k in killers):
                        continue
                    if arms is None:
                        arms = self.rebinding_arms(scope, key, use_stmt, out, outer) if "." not in key else []
                    if any(contains(carrier, arm) for arm in arms):
                        continue
                    out.append(d)
        return out

    def rebinding_arms(self, scope: Scope, key: str, use_stmt, out: List[Def], outer) -> list:
        """The ``if`` statements before the use, in the same iteration, that rebind the name
        on every path: each arm of an ``if``/``else`` binds it, or each arm of an
        ``if``/``elif`` chain without ``else`` whose tests the loop never changes, for a
        name bound nowhere before the loop (on the first iteration an arm must bind it, or
        the read fails; the same arm runs on every later one)."""
        uctx = self.analysis.index.ctx(use_stmt)
        # Bound nowhere before the outermost loop: the first time the chain runs, one arm
        # must bind it; with tests nothing in that loop changes, the same arm binds it
        # every time after.
        outermost = uctx.loops[0] if uctx is not None and uctx.loops else outer
        unbound_before = all(d.kind not in ("param", "import", "global") and d.start > start_of(outermost)
                             for d in scope.defs_of(key))
        return [owner for owner in self._ifs_on_the_way(use_stmt, [d for d in out if contains(outer, d.stmt)])
                if _arms_rebind(owner, key) or (unbound_before and _chain_rebinds(owner, key)
                                                and self._invariant_tests(scope, owner, outermost))]

    def _ifs_on_the_way(self, use_stmt, defs: List[Def]) -> list:
        """The ``if`` statements around some of ``defs`` that the use is not in, and that
        sit in the use's block or one around it: each runs on the way to the use."""
        ix = self.analysis.index
        uctx = ix.ctx(use_stmt)
        found = []
        if uctx is None:
            return found
        for d in defs:
            dctx = ix.ctx(d.stmt)
            for block in (dctx.blocks if dctx is not None else ()):
                owner = getattr(block, "owner", None)
                if not isinstance(owner, ast.If) or owner in found or contains(owner, use_stmt):
                    continue
                octx = ix.ctx(owner)
                if octx is not None and within(uctx.blocks, octx.blocks):
                    found.append(owner)
        return found

    def _invariant_tests(self, scope: Scope, chain: ast.If, loop) -> bool:
        """Does nothing in the loop rebind what the chain's tests read (``args.fb``)?"""
        from .module_index import expr_keys

        read = set()
        node = chain
        while isinstance(node, ast.If):
            read |= expr_keys(node.test)
            node = node.orelse[0] if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If) else None
        return bool(read) and not self.bound_in(scope, loop, read)

    def bound_in(self, scope: Scope, loop, keys) -> bool:
        """Is one of ``keys`` (names or attribute paths), or an object it hangs from, bound
        inside ``loop``?"""
        return any(contains(loop, d.stmt) for key in keys for k in key_bases(key) + [key] for d in scope.defs_of(k))

    def _past_rebinding_arms(self, key: str, use_stmt, out: List[Def]) -> List[Def]:
        """Drop the definitions made before an ``if``/``else`` whose every arm rebinds the
        name (or leaves) on the way to the use: ``if a: loss = loss.item() else: loss, err
        = (loss.item(), err.item())`` kills the graph-carrying ``loss`` bound before it."""
        starts = [start_of(owner) for owner in self._ifs_on_the_way(use_stmt, out) if _arms_rebind(owner, key)]
        if not starts:
            return out
        cutoff = max(starts)
        return [d for d in out if d.start >= cutoff]

    def _overwrites(self, later: Def, d: Def, scope: Scope) -> bool:
        """Does ``later`` rebind the name whenever ``d`` ran? It does when ``later`` sits in
        the block of ``d`` or in one around it (``if gpus > 1: loss = all_reduce(loss)``
        then ``loss = loss.item()``), after ``d``, with no jump (break, continue, return,
        raise) between them."""
        if later.kind != "assign" or d.kind == "param" or later.start <= d.start:
            return False
        ix = self.analysis.index
        lctx, dctx = ix.ctx(later.stmt), ix.ctx(d.stmt)
        if lctx is None or dctx is None or lctx.scope is not dctx.scope:
            return False
        if not within(dctx.blocks, lctx.blocks):
            return False
        after, before = d.end, later.start
        return not any(after <= start_of(jump) < before for jump in self._jumps(scope))

    def _jumps(self, scope: Scope) -> List[ast.AST]:
        found = self._closure_memo.get(("jumps", id(scope.node)))
        if found is None:
            found = [s for s in scope.statements if isinstance(s, (ast.Break, ast.Continue, ast.Return, ast.Raise))]
            self._closure_memo[("jumps", id(scope.node))] = found
        return found

    # -- data flow ----------------------------------------------------------------------
    def sources_of(self, scope: Scope, keys: Iterable[str]) -> Set[str]:
        """Every name whose value may flow into one of ``keys`` (transitively)."""
        seen: Set[str] = set()
        todo = list(keys)
        deps = scope.deps
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            todo.extend(deps.get(key, ()))
            # ``self.x`` read through its base object, and ``a.b`` written via ``a``.
            if "." in key:
                todo.append(key.rsplit(".", 1)[0])
        return seen

    def attached_sources_of(self, scope: Scope, keys: Iterable[str]) -> Set[str]:
        """Like :meth:`sources_of`, but a value reaches ``keys`` only through definitions
        that keep its graph: ``old = torch.stack(memory.logprobs).detach()`` cuts the path
        from ``memory.logprobs``. Names without definitions here (object state, globals)
        are followed as :meth:`sources_of` follows them."""
        from .graph import _explicitly_detached
        from .module_index import expr_keys

        seen: Set[str] = set()
        todo = list(keys)
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            defs = scope.defs_of(key)
            if not defs:
                todo.extend(scope.deps.get(key, ()))
            for d in defs:
                if d.kind in ("assign", "aug", "for", "with") and not _explicitly_detached(d.value):
                    todo.extend(expr_keys(d.value))
            if "." in key:
                todo.append(key.rsplit(".", 1)[0])
        return seen

    def backward_roots(self, scope: Scope) -> Set[str]:
        roots: Set[str] = set()
        for site in scope.backward_sites:
            roots.update(site.keys)
        return roots

    def flows_into_backward(self, scope: Scope, key: str) -> Optional[int]:
        """Line of a backward call whose graph includes the value of ``key``, else None."""
        for site in scope.backward_sites:
            if key in self.sources_of(scope, site.keys):
                return site.call.lineno
        return None

    def attached_into_backward(self, scope: Scope, key: str) -> Optional[int]:
        """Like :meth:`flows_into_backward`, through definitions that keep the graph only
        (not through ``torch.from_numpy(w)`` of a NumPy result, see :meth:`attached_sources_of`)."""
        for site in scope.backward_sites:
            if key in self.attached_sources_of(scope, site.keys):
                return site.call.lineno
        return None

    def flows_into_return(self, scope: Scope, key: str) -> Optional[int]:
        for expr in scope.returns:
            from .module_index import expr_keys

            if key in self.sources_of(scope, expr_keys(expr)):
                return getattr(expr, "lineno", 0)
        return None

    def loop_of(self, stmt) -> Tuple[ast.AST, ...]:
        ctx = self.analysis.index.ctx(stmt)
        return ctx.loops if ctx is not None else ()


def _arms_rebind(stmt: ast.If, key: str) -> bool:
    """Does every arm of the ``if`` (it has an ``else``) rebind ``key`` at its own level,
    or leave (``return``, ``raise``, ``break``, ``continue``) before reaching its end?"""
    return bool(stmt.orelse) and _block_rebinds(stmt.body, key) and _block_rebinds(stmt.orelse, key)


def _chain_rebinds(stmt: ast.If, key: str) -> bool:
    """Does every arm of an ``if``/``elif`` chain rebind ``key`` (or leave), the chain
    ending without an ``else``?"""
    while True:
        if not _block_rebinds(stmt.body, key):
            return False
        if not stmt.orelse:
            return True
        if len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If):
            stmt = stmt.orelse[0]
            continue
        return _block_rebinds(stmt.orelse, key)


def _block_rebinds(body, key: str) -> bool:
    for stmt in body:
        if isinstance(stmt, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
            return True
        if isinstance(stmt, ast.Assign) and any(_binds_name(t, key) for t in stmt.targets):
            return True
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and _binds_name(stmt.target, key):
            return True
        if isinstance(stmt, ast.If) and _arms_rebind(stmt, key):
            return True
    return False


def _binds_name(target, key: str) -> bool:
    if isinstance(target, ast.Name):
        return target.id == key
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_binds_name(e, key) for e in target.elts)
    return False
