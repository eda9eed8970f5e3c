"""Per-function summaries that other functions (and files) consult:

* what a function returns — graph-carrying or not, position by position for tuples;
* which of its parameters it accumulates or stores into ``self`` state (AverageMeter).

Summaries are computed the first time they are asked for, from the callee's own
analysis, and memoised on the project index.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

from .branches import every_branch
from .module_index import Scope, container_key, expr_keys
from .names import dotted, looks_like_loss_name


@dataclass
class ParamSink:
    index: int  # position among the call's arguments (``self`` not counted)
    name: str
    line: int
    how: str  # "accumulates it into `self.sum`"


class FunctionSummary:
    def __init__(self, project, ref, analysis, scope: Scope) -> None:
        self.project = project
        self.ref = ref
        self.analysis = analysis
        self.scope = scope
        self._positions = {}

    @property
    def where(self) -> str:
        return f"{self.ref.qualname} ({short_path(self.analysis.path)}:{self.scope.node.lineno})"

    def can_unpack(self, arity: int) -> bool:
        for expr in self.scope.returns:
            if isinstance(expr, (ast.Tuple, ast.List)):
                if len(expr.elts) == arity:
                    return True
            elif not isinstance(expr, ast.Constant):
                return True
        return False

    def position(self, index: Optional[int]):
        """Evidence that the returned value (or its element ``index``) carries a graph."""
        if index not in self._positions:
            self._positions[index] = self._evaluate(self.analysis.graph, index, "returns")
        return self._positions[index]

    def param_flow(self, index: Optional[int]) -> List[Tuple[int, str, bool]]:
        """Parameters whose argument's graph reaches the returned value at ``index``:
        ``def loss_function(recon, x, mu, logvar): ... return bce + kld, kld``; with each,
        whether every return gives a tensor when that argument is one."""
        key = ("param_flow", index)
        if key in self._positions:
            return self._positions[key]
        self._positions[key] = []
        params = list(self.scope.params)
        offset = 1 if params and params[0] in ("self", "cls") else 0
        found = []
        for i, name in enumerate(params[offset:]):
            oracle = self.analysis.graph.assuming(self.scope, name)
            ev = self._evaluate(oracle, index, ("param", name))
            if ev is not None:
                found.append((i, name, ev.tensor))
        self._positions[key] = found
        return found

    MAX_NESTED = 6  # summaries evaluated inside summaries, across files

    def _evaluate(self, oracle, index: Optional[int], tag):
        key = (tag, self.ref, index)
        project = self.project
        if key in project.in_progress:
            return None
        nested = sum(1 for k in project.in_progress if k and k[0] in ("returns", "param") or (isinstance(k[0], tuple)))
        if nested > self.MAX_NESTED:
            return None
        project.in_progress.add(key)
        try:
            found = []  # every return: a tensor only if each one returns a tensor
            for expr in self.scope.returns:
                stmt = stmt_of(self.analysis, self.scope, expr)
                if stmt is None:
                    continue
                target = expr
                if index is not None and isinstance(expr, (ast.Tuple, ast.List)):
                    if index >= len(expr.elts):
                        continue
                    target = expr.elts[index]
                found.append(oracle.carrying(target, stmt))
            return every_branch(found)
        finally:
            project.in_progress.discard(key)

    def returned_kind(self):
        """The object the function builds, when every value it returns is an nn.Module
        (or an instance of one project class) by strong evidence: a factory such as
        ``def make_mlp(...): ... return nn.Sequential(*layers)``. None otherwise."""
        from .objects import STRONG

        key = ("kind", self.ref)
        if key in self._positions:
            return self._positions[key]
        project = self.project
        if key in project.in_progress:
            return None
        project.in_progress.add(key)
        found = None
        try:
            kinds = self.analysis.graph.kinds
            for expr in self.scope.returns:
                stmt = stmt_of(self.analysis, self.scope, expr)
                kind = kinds.value_kind(expr, self.scope, stmt) if stmt is not None else None
                if (kind is None or kind.strength != STRONG or not (kind.is_module or kind.kind == "instance")
                        or (found is not None and found.kind != kind.kind)):
                    found = None
                    break
                if found is not None and found.class_ref != kind.class_ref:
                    if not kind.is_module:
                        found = None  # instances of two different project classes
                        break
                    found = replace(found, class_ref=None)  # modules of several classes: still a module
                found = found or kind
        finally:
            project.in_progress.discard(key)
        self._positions[key] = found
        return found

    def param_sinks(self) -> List[ParamSink]:
        """Parameters this method accumulates or appends into ``self`` state."""
        cached = self.__dict__.get("_sinks")
        if cached is not None:
            return cached
        sinks: List[ParamSink] = []
        params = list(self.scope.params)
        offset = 1 if params and params[0] in ("self", "cls") else 0
        elements = _element_names(self.scope)
        for stmt in self.scope.statements:
            how = None
            target = None
            value = None
            if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, (ast.Add, ast.Sub)):
                target, value = container_key(stmt.target), stmt.value
                how = "accumulates it into `{}`"
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = dotted(stmt.targets[0])
                if target and target in expr_keys(stmt.value) and isinstance(stmt.value, ast.BinOp):
                    value = stmt.value
                    how = "accumulates it into `{}`"
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                func = stmt.value.func
                if isinstance(func, ast.Attribute) and func.attr in ("append", "extend", "insert", "appendleft"):
                    target = dotted(func.value)
                    value = stmt.value.args[-1] if stmt.value.args else None
                    how = "stores it in `{}`"
            if not how or not target or not target.startswith("self.") or value is None:
                continue
            used = expr_keys(value)
            used = used | {elements[n] for n in used if n in elements}
            for i, name in enumerate(params[offset:]):
                rebound = any(d.kind != "param" for d in self.scope.defs_of(name))
                if name in used and not rebound and self._keeps_graph_of(name, value, stmt):
                    sinks.append(ParamSink(i, name, stmt.lineno, how.format(target)))
        self.__dict__["_sinks"] = sinks
        return sinks


    def _keeps_graph_of(self, param: str, value, stmt) -> bool:
        """Would the stored value carry the argument's graph? ``self.sum += val.item() * n``
        and ``self.values.append(val.detach())`` keep none of it."""
        oracle = self.analysis.graph.assuming(self.scope, param)
        return oracle.carrying(value, stmt) is not None


class CallSummary:
    """The summaries a call may reach (several when resolved by method name only)."""

    def __init__(self, callee: str, summaries: List[FunctionSummary], ambiguous: bool,
                 call=None, caller=None, stmt=None) -> None:
        self.callee = callee
        self.summaries = summaries
        self.ambiguous = ambiguous
        self.call = call
        self.caller = caller  # the graph oracle of the calling code
        self.stmt = stmt

    def position(self, index: Optional[int]):
        what = "its result" if index is None else f"element {index} of its result"
        found = None
        for summary in self.summaries:
            ev = summary.position(index)
            if ev is None:
                found = None
                break  # every candidate must agree
            found = found or (summary, ev)
        if found is not None:
            summary, ev = found
            via = " (resolved by method name)" if self.ambiguous or len(self.summaries) > 1 else ""
            return replace(ev, text=f"`{self.callee}(...)`{via} returns a graph-carrying value as {what}: "
                                    f"{ev.text} in {summary.where}")
        if len(self.summaries) == 1 and self.call is not None and self.caller is not None:
            return self._through_arguments(self.summaries[0], index, what)
        return None

    def _through_arguments(self, summary: FunctionSummary, index, what):
        for i, name, returns_tensor in summary.param_flow(index):
            arg = argument_for(self.call, i, name)
            if arg is None:
                continue
            ev = self.caller.carrying(arg, self.stmt)
            if ev is not None:
                loss_like = ev.loss_like or looks_like_loss_name(summary.scope.name)
                return replace(ev, scalar=False, tensor=ev.tensor and returns_tensor, loss_like=loss_like,
                               text=f"`{self.callee}(...)` computes {what} from its argument `{name}`, "
                                    f"and {ev.text}")
        return None

    def whole(self):
        return self.position(None)


def _element_names(scope: Scope) -> dict:
    """Loop variables that take the elements of a parameter: ``for v in values``,
    ``for i, v in enumerate(values)``, ``for a, b in zip(xs, ys)`` (name -> parameter).
    A meter's ``update(values)`` that sums a list element by element sums the list."""
    found = {}
    params = set(scope.params)
    for stmt in scope.statements:
        if not isinstance(stmt, (ast.For, ast.AsyncFor)):
            continue
        source, target = stmt.iter, stmt.target
        pairs = []
        if isinstance(source, ast.Name):
            pairs = [(target, source)]
        elif isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.args:
            how = source.func.id
            if how in ("reversed", "list", "tuple", "iter") and len(source.args) == 1:
                pairs = [(target, source.args[0])]
            elif how == "enumerate" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
                pairs = [(target.elts[1], source.args[0])]
            elif how == "zip" and isinstance(target, ast.Tuple) and len(target.elts) == len(source.args):
                pairs = list(zip(target.elts, source.args))
        for name, iterable in pairs:
            if isinstance(name, ast.Name) and isinstance(iterable, ast.Name) and iterable.id in params:
                found[name.id] = iterable.id
    return found


def argument_for(call: ast.Call, index: int, name: str):
    """The argument a call passes for parameter ``name`` at position ``index``."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
        return None
    if index < len(call.args):
        return call.args[index]
    return None


def passed_parameters(callee: Scope) -> List[str]:
    """The positional parameters a call fills, in order: those of ``callee`` without the
    receiver of a method (``self``/``cls``)."""
    spec = getattr(callee.node, "args", None)
    if not isinstance(spec, ast.arguments):
        return []
    positional = [a.arg for a in spec.posonlyargs + spec.args]
    if callee.class_name and positional and positional[0] in ("self", "cls"):
        return positional[1:]
    return positional


def parameter_defaults(func) -> Dict[str, ast.AST]:
    """Each parameter of the function node that has a default, with that default."""
    args = getattr(func, "args", None)
    if not isinstance(args, ast.arguments):
        return {}
    positional = args.posonlyargs + args.args
    defaults = {a.arg: d for a, d in zip(positional[len(positional) - len(args.defaults):], args.defaults)}
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return defaults


def argument_of(call: ast.Call, callee: Scope, param: str):
    """The argument ``call`` passes for ``callee``'s parameter ``param`` (by keyword or by
    position), or None when it passes none or a ``*args`` hides where it goes."""
    for kw in call.keywords:
        if kw.arg == param:
            return kw.value
    positional = passed_parameters(callee)
    return argument_for(call, positional.index(param), param) if param in positional else None


def parameter_of(call: ast.Call, callee: Scope, arg) -> Optional[str]:
    """The parameter of ``callee`` that receives the argument node ``arg`` of ``call``."""
    for kw in call.keywords:
        if kw.value is arg and kw.arg is not None:
            return kw.arg
    positional = passed_parameters(callee)
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            return None
        if a is arg:
            return positional[i] if i < len(positional) else None
    return None


def summary_for(project, ref) -> Optional[FunctionSummary]:
    key = ("summary", ref)
    if key in project.memo:
        return project.memo[key]
    found = project.scope_for(ref)
    summary = FunctionSummary(project, ref, found[0], found[1]) if found else None
    project.memo[key] = summary
    return summary


def stmt_of(analysis, scope: Scope, expr):
    """The statement of ``scope`` that holds ``expr`` (a returned value, an expression statement
    or a part of an assignment)."""
    for stmt in scope.statements:
        if isinstance(stmt, ast.Return) and stmt.value is expr:
            return stmt
        if isinstance(stmt, ast.Expr) and (stmt.value is expr or getattr(stmt.value, "value", None) is expr):
            return stmt
    for stmt in scope.statements:
        if isinstance(stmt, (ast.Assign, ast.Expr, ast.AugAssign)):
            for node in ast.walk(stmt):
                if node is expr:
                    return stmt
    return None


def short_path(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]
