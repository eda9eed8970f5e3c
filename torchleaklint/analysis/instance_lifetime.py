"""How long the instances of a class live, judged from where the linted project builds
them: a local made in each loop iteration, or a private helper object built inside one call
and never returned or kept, lives for that iteration or call, and so do its lists."""

from __future__ import annotations

import ast

from .module_index import calls_named
from .names import dotted
from .repetition import repeated_call_site


def _constructors(analysis, class_name):
    """(analysis, scope) of every function that builds the class, or None when some are
    unknown."""
    project = analysis.project
    # Constructions in other scripts that define their own class of that name are theirs.
    callers = project.callers(class_name, module=analysis.index.module_name) if project is not None else None
    if callers is None or None in callers:
        return None
    return callers


def short_lived(analysis, class_name) -> bool:
    """Every construction of the class in the linted files makes a local object inside a
    loop iteration (``traj = Trajectory()`` per episode): its lists die with it."""
    callers = _constructors(analysis, class_name)
    if callers is None:
        return False
    for caller_analysis, scope in callers:
        for _, stmt in calls_named(scope, class_name):
            ctx = caller_analysis.index.ctx(stmt)
            local = isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets)
            if ctx is None or not ctx.loops or not local:
                return False
    return True


def built_per_call(analysis, class_name) -> bool:
    """A class whose every construction in the linted files (``Beam(...)`` in each decode,
    ``_RangeTestCallback()`` in each search) is in a function other than a constructor, and
    whose instance is kept in a local or handed on rather than returned, stored on ``self``
    or in a module global: each call of that function builds a fresh object, so its lists
    live for one call (one search, one fit), not for the process. A public class counts
    only when those functions are called over and over (a decode per batch) and their loops
    are counted (``range(max_len)``): one built by a function the program runs once
    (``train``) lives for the whole run, one built per video and updated per frame grows
    with the video."""
    if class_name[:2] == "__":
        return False
    callers = _constructors(analysis, class_name)
    if not callers:
        return False
    public = class_name[:1] != "_"
    for caller_analysis, scope in callers:
        if not scope.is_function or scope.name in ("__init__", "__new__", "setup", "__post_init__"):
            return False
        if public and (repeated_call_site(caller_analysis, scope) is None or not _counted_loops_only(scope)):
            # a public class built by a function run once (``train``) lives for the run; one
            # built per call of a function that walks data (a tracker per video, updated per
            # frame) grows with the data within the call
            return False
        glob = {n for node in ast.walk(scope.node) if isinstance(node, ast.Global) for n in node.names}
        for _, stmt in calls_named(scope, class_name):
            if isinstance(stmt, ast.Return) or any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(stmt)):
                return False  # a factory: the caller decides how long the object lives
            targets = stmt.targets if isinstance(stmt, ast.Assign) else \
                [stmt.target] if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else []
            bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            if bound & _returned_names(scope.node):
                return False  # built, then returned or yielded
            for target in targets:
                for node in ast.walk(target):
                    path = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
                    if path and (path.split(".")[0] in ("self", "cls") or path in glob):
                        return False
    return True


def _returned_names(func) -> set:
    return {n.id for node in ast.walk(func) if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom))
            and node.value is not None for n in ast.walk(node.value) if isinstance(n, ast.Name)}


def _counted_loops_only(scope) -> bool:
    """Are all the loops of the function counted (``for t in range(max_len)``, ``while``
    loops excepted), not walks over data?"""
    for node in ast.walk(scope.node):
        if isinstance(node, ast.While):
            return False
        if isinstance(node, (ast.For, ast.AsyncFor)):
            it = node.iter
            if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
                return False
    return True
