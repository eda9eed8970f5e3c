"""Loop-carried state: a name rebuilt in a loop body from its own previous value
(``out, hidden = model(x, hidden)``, ``history = torch.cat([history, new])``,
``state = 0.9 * state + f(x)``), and whether the carried value is cut from its past
graph (detached or re-initialised) on every iteration."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator, List, Optional

from .detachers import DETACH_METHODS
from .free_reads import free_reads
from .graph import Evidence
from .lifetimes import every_iteration
from .module_index import LOOP_TYPES, Scope, contains, container_key, if_arms, key_bases, start_of, within
from .names import dotted, words

DETACHING_HELPER_WORDS = frozenset({"detach", "repackage", "truncate", "cut", "stop"})


@dataclass(frozen=True)
class CarriedState:
    key: str
    stmt: ast.AST  # the carrying assignment
    loop: ast.AST
    evidence: Evidence
    references: List[ast.AST]  # reads of the previous value in the assignment's right side


def carried_states(analysis, scope: Scope, loop: ast.AST) -> Iterator[CarriedState]:
    """Carrying assignments in ``loop`` (at any depth) whose new value carries a graph."""
    index = analysis.index
    for stmt in scope.statements:
        ctx = index.ctx(stmt)
        if ctx is None or not any(l is loop for l in ctx.loops):
            continue  # inner loops too: a sequence unrolled per iteration carries its state on
        if not isinstance(stmt, ast.Assign):
            continue
        for key in _rebuilt_keys(stmt):
            if _loop_target_between(ctx.loops, loop, key):
                continue  # ``for imgs, caps in loader: imgs = encoder(imgs)``: the loop rebinds it first
            refs = [n for n in _reads(stmt.value, key)]
            if not refs or all(_detached_read(n, stmt.value) or _detached_by_callee(analysis, scope, stmt, n)
                               for n in refs):
                continue
            if _moved_only(stmt.value, key):
                continue  # ``memory = memory.to(device)``: the same tensor, no new step of graph
            if _cut_each_iteration(analysis, scope, loop, key, stmt):
                continue
            if _rebound_earlier_in_iteration(analysis, scope, loop, key, stmt):
                continue  # ``x = f(); ...; x = x / k``: the previous value is this iteration's
            if _higher_order(scope, loop):
                continue  # ``create_graph=True``: a deliberate differentiable unroll (MAML, unrolled optimisation)
            evidence = bound_value(analysis, scope, stmt, key)
            if evidence is None:
                continue
            yield CarriedState(key, stmt, loop, evidence, refs)


def bound_value(analysis, scope: Scope, stmt, key: str) -> Optional[Evidence]:
    """What the statement binds to ``key``: its element when unpacked
    (``loss, mean_len, lengths = regularize(img, mean_len)`` where the helper returns
    ``mean.detach()`` second), else the whole right side."""
    flat = len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Tuple, ast.List)) and any(
        isinstance(e, (ast.Name, ast.Attribute)) and dotted(e) == key for e in stmt.targets[0].elts)
    if flat:  # ``(hx, cx)`` nested in the target: the whole right side decides
        for d in scope.defs.get(key, ()):
            if d.stmt is stmt and d.index is not None:
                return analysis.graph.def_carrying(d, scope)
    return analysis.graph.carrying(stmt.value, stmt)


def _detached_by_callee(analysis, scope: Scope, stmt, node) -> bool:
    """``y, memory = model(x, memory)`` whose forward detaches ``memory`` on entry."""
    from .entry_detach import callee_parameter, detached_on_entry

    for call in ast.walk(stmt.value):
        if isinstance(call, ast.Call) and (any(a is node for a in call.args)
                                           or any(k.value is node for k in call.keywords)):
            found = callee_parameter(analysis, scope, stmt, call, node)
            return found is not None and detached_on_entry(*found)
    return False


MOVES = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "contiguous", "type"})


def _loop_target_between(loops, loop, key: str) -> bool:
    """Is ``key`` a target of ``loop`` or of a loop nested in it around the statement? Each
    iteration then binds it afresh before the statement reads it."""
    inside = False
    for candidate in loops:
        inside = inside or candidate is loop
        if inside and isinstance(candidate, (ast.For, ast.AsyncFor)) and any(
                isinstance(n, ast.Name) and n.id == key for n in ast.walk(candidate.target)):
            return True
    return False


def _moved_only(value, key) -> bool:
    """``x.to(device)``, ``x.cuda().float()``: the carried value moved or cast, nothing added."""
    node = value
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MOVES:
        node = node.func.value
    return node is not value and dotted(node) == key


def _rebuilt_keys(stmt: ast.Assign) -> List[str]:
    reads = {dotted(n) for n in free_reads(stmt.value)}
    out = []
    for target in stmt.targets:
        for node in ast.walk(target):
            if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Store):
                key = dotted(node)
                if key and key in reads and key != "self":
                    out.append(key)
    return out


def _reads(expr, key):
    for node in free_reads(expr):
        if isinstance(node.ctx, ast.Load) and dotted(node) == key:
            yield node


def _detached_read(node, root) -> bool:
    """Is this read of the carried value wrapped in ``.detach()`` or a detaching helper?"""
    for parent in _parents(root, node):
        if isinstance(parent, ast.Attribute) and parent.value is node and parent.attr in DETACH_METHODS | {"data"}:
            return True
        if isinstance(parent, ast.Call):
            name = dotted(parent.func) or ""
            if any(w in DETACHING_HELPER_WORDS for w in words(name.rsplit(".", 1)[-1])):
                return True
            if isinstance(parent.func, ast.Attribute) and parent.func.attr in ("detach", "detach_"):
                return True
    return False


def _parents(root, target):
    """Ancestors of ``target`` inside ``root``, nearest first."""
    path = []

    def visit(node):
        if node is target:
            return True
        for child in ast.iter_child_nodes(node):
            if visit(child):
                path.append(node)
                return True
        return False

    visit(root)
    return path


def _cut_each_iteration(analysis, scope: Scope, loop, key: str, carrying) -> bool:
    """Is ``key`` detached, re-initialised or detached in place somewhere in the loop?"""
    for stmt in scope.statements:
        if stmt is carrying or not contains(loop, stmt):
            continue
        if isinstance(stmt, (ast.For, ast.AsyncFor)) and stmt is not loop and dotted(stmt.iter) == key \
                and isinstance(stmt.target, ast.Name) and any(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "detach_"
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == stmt.target.id
                    for b in stmt.body for n in ast.walk(b)):
            return True  # ``for s in state: s.detach_()``: every element detached in place
        if isinstance(stmt, LOOP_TYPES):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            if isinstance(func, ast.Attribute) and func.attr in ("detach_", "zero_") and container_key(func.value) == key:
                return True  # ``hidden.detach_()``, or element by element: ``hidden[0].detach_()``
            name = dotted(func) or ""
            if stmt.value.args and dotted(stmt.value.args[0]) == key and any(
                    w in DETACHING_HELPER_WORDS for w in words(name.rsplit(".", 1)[-1])):
                return True  # ``detach_hidden(hidden)`` in place
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            continue
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        bound = {dotted(n) for t in targets for n in ast.walk(t) if isinstance(n, (ast.Name, ast.Attribute))}
        if key not in bound or stmt.value is None:
            continue
        refs = list(_reads(stmt.value, key))
        if not refs:
            # Re-initialised (``hidden = model.init_hidden(bsz)``) — on every iteration; a reset
            # at episode ends still lets a whole episode's graphs pile up.
            if (every_iteration(analysis, stmt, loop) or _runs_before(analysis, stmt, carrying)
                    or _same_guard_before(analysis, scope, loop, stmt, carrying)):
                return True
            continue
        if all(_detached_read(n, stmt.value) for n in refs):
            return True
        if analysis.graph.carrying(stmt.value, stmt) is None:
            return True  # ``hidden = tuple(h.detach() for h in hidden)``
    return False


def _rebound_earlier_in_iteration(analysis, scope: Scope, loop, key: str, stmt) -> bool:
    """Is ``key`` assigned earlier in the same iteration on every path (directly, or on
    both arms of an ``if``/``else``)? Rebinding its base counts too: after ``action =
    actor(s)``, ``action.grad`` belongs to this iteration's tensor."""
    arms = {}
    for d in [d for k in [key] + key_bases(key) for d in scope.defs_of(k) if k == key or d.kind == "assign"]:
        if d.stmt is stmt or not contains(loop, d.stmt) or isinstance(d.stmt, LOOP_TYPES):
            continue
        if (d.stmt.lineno, d.stmt.col_offset) >= (stmt.lineno, stmt.col_offset):
            continue
        if _runs_before(analysis, d.stmt, stmt):
            return True
        ctx = analysis.index.ctx(d.stmt)
        branch = ctx.blocks[-1] if ctx and ctx.blocks else None
        owner = getattr(branch, "owner", None)
        if isinstance(owner, ast.If) and owner.orelse:
            arms.setdefault(id(owner), set()).add(id(branch))
    if any(len(branches) >= 2 for branches in arms.values()):
        return True
    # ``if args.fb == 0: loss = ... elif args.fb == 1: loss = ...`` (every arm of a chain)
    earlier = [d for d in scope.defs_of(key) if d.stmt is not stmt and contains(loop, d.stmt)
               and start_of(d.stmt) < start_of(stmt)]
    return "." not in key and bool(earlier) and bool(analysis.flow.rebinding_arms(scope, key, stmt, earlier, loop))


def _higher_order(scope: Scope, loop) -> bool:
    for call, _ in scope.calls:
        if contains(loop, call) and any(
                k.arg == "create_graph" and not (isinstance(k.value, ast.Constant) and not k.value.value)
                for k in call.keywords):
            return True
    return False


def _runs_before(analysis, first, second) -> bool:
    """Does ``first`` run before every execution of ``second`` (same or enclosing block)?"""
    a, b = analysis.index.ctx(first), analysis.index.ctx(second)
    if a is None or b is None or (first.lineno, first.col_offset) >= (second.lineno, second.col_offset):
        return False
    return within(b.blocks, a.blocks)


def _same_guard_before(analysis, scope: Scope, loop, first, second) -> bool:
    """Does ``first`` run before ``second`` whenever ``second`` runs, because both sit
    under ``if`` tests that are the same expression and nothing in the loop rebinds
    (``if model.recurrent: memory = init`` ... ``if model.recurrent: memory = step(memory)``)?"""
    a, b = analysis.index.ctx(first), analysis.index.ctx(second)
    if a is None or b is None or start_of(first) >= start_of(second):
        return False
    shared = 0
    while shared < min(len(a.blocks), len(b.blocks)) and a.blocks[shared] is b.blocks[shared]:
        shared += 1
    extra = a.blocks[shared:]
    if not extra:
        return False
    tests = {ast.dump(t) for t in _if_tests_holding(b.blocks[shared:], second)}
    for block in extra:
        guard = _if_tests_holding([block], first)
        if not guard or ast.dump(guard[0]) not in tests or _rebound_in(analysis, scope, loop, guard[0]):
            return False
    return True


def _if_tests_holding(blocks, stmt) -> List[ast.AST]:
    """The tests of the ``if`` statements among ``blocks`` whose body (not ``else``) holds ``stmt``."""
    return [owner.test for owner, in_body in if_arms(blocks, stmt) if in_body]


def _rebound_in(analysis, scope: Scope, loop, test) -> bool:
    """Is a name or attribute the test reads (or a prefix of it) bound inside ``loop``?"""
    keys = {dotted(n) for n in ast.walk(test) if isinstance(n, (ast.Name, ast.Attribute))} - {None}
    if any(isinstance(n, ast.Call) for n in ast.walk(test)):
        return True  # a call may answer differently each time
    return analysis.flow.bound_in(scope, loop, keys)


def initial_value(analysis, scope: Scope, loop, key: str) -> Optional[ast.AST]:
    """The value ``key`` holds when the loop starts, when one definition before it says."""
    defs = [d for d in scope.defs_of(key) if d.start < (loop.lineno, loop.col_offset) and d.kind == "assign"]
    if defs:
        return defs[-1].value if defs[-1].index is None else None
    return None


# The carrying-assignment helpers, for state carried across calls as well as iterations.
rebuilt_keys = _rebuilt_keys
reads_of = _reads
detached_read = _detached_read
