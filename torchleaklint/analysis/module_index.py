"""One walk over a module's AST that records what every rule asks about.

For each function (and the module body) it records: definitions of names and dotted
attribute paths in source order, the loops around each statement, whether the statement
runs with autograd switched off by a surrounding block, the backward calls, returns and
data-flow edges. Rules and the graph oracle read these facts; nothing re-walks the tree.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from .backward import BackwardSite, backward_site
from .names import ImportMap, dotted
from .single_pass import first_iteration_only, runs_once

LOOP_TYPES = (ast.For, ast.AsyncFor, ast.While)
FUNC_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft",
                      "extendleft", "put", "put_nowait"})


def start_of(node: ast.AST) -> Tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def end_of(node: ast.AST) -> Tuple[int, int]:
    return (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)


def contains(outer: ast.AST, inner: ast.AST) -> bool:
    return start_of(outer) <= start_of(inner) and end_of(inner) <= end_of(outer)


def within(inner: Tuple[ast.AST, ...], outer: Tuple[ast.AST, ...]) -> bool:
    """Are the blocks (or loops) ``outer`` those around ``inner``'s, from the outermost on:
    does a statement with the context ``inner`` sit in the same block as one with
    ``outer``, or in a block nested in it?"""
    return len(outer) <= len(inner) and all(a is b for a, b in zip(outer, inner))


def body_nodes(root: ast.AST):
    """The nodes of a module's or function's body, not descending into the functions,
    classes and lambdas defined in it."""
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    stack = [node for node in root.body if not isinstance(node, nested)]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, nested))


@dataclass
class StmtContext:
    """Where a statement sits: its scope, the loops around it (outermost first) and the
    innermost grad-disabling block, if any."""

    scope: "Scope"
    loops: Tuple[ast.AST, ...]
    grad_off: Optional[str]
    # Enclosing compound statements that may skip or repeat this one (if, loops,
    # except/else/finally branches), outermost first. ``with`` and ``try`` bodies are
    # left out: they run straight through.
    blocks: Tuple[ast.AST, ...]

    @property
    def conditional(self) -> bool:
        return any(not isinstance(b, LOOP_TYPES) for b in self.blocks)


@dataclass
class Def:
    """One binding of a name or dotted path (``loss``, ``self.total``)."""

    key: str
    stmt: ast.AST
    value: Optional[ast.AST]
    kind: str  # assign | aug | for | with | param | import | def | unpack-star
    index: Optional[int] = None  # position when unpacking a tuple target
    arity: Optional[int] = None  # number of targets when unpacking

    @property
    def start(self) -> Tuple[int, int]:
        return start_of(self.stmt)

    @property
    def end(self) -> Tuple[int, int]:
        return end_of(self.stmt)


@dataclass
class Scope:
    node: ast.AST
    name: str
    qualname: str
    parent: Optional["Scope"]
    class_name: Optional[str] = None
    params: List[str] = field(default_factory=list)
    decorators: List[ast.AST] = field(default_factory=list)
    defs: Dict[str, List[Def]] = field(default_factory=dict)
    statements: List[ast.AST] = field(default_factory=list)
    backward_sites: List[BackwardSite] = field(default_factory=list)
    returns: List[ast.AST] = field(default_factory=list)  # returned / yielded expressions
    calls: List[Tuple[ast.Call, ast.AST]] = field(default_factory=list)  # (call, stmt)
    deps: Dict[str, Set[str]] = field(default_factory=dict)
    loops: List[ast.AST] = field(default_factory=list)

    @property
    def is_function(self) -> bool:
        return isinstance(self.node, FUNC_TYPES)

    def defs_of(self, key: str) -> List[Def]:
        return self.defs.get(key, [])


# Fields that never hold a node the index asks about: identifiers, numbers and flags, and the
# expression context (Load/Store/Del), a childless marker no fact is made of.
_SKIPPED_FIELDS = frozenset({"ctx", "id", "attr", "arg", "asname", "module", "level", "kind",
                             "type_comment", "conversion", "is_async", "simple"})
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {ast.Constant: ()}  # a constant's value is data
_AST = ast.AST


def walk_nodes(root: ast.AST) -> List[ast.AST]:
    """The nodes ``ast.walk(root)`` yields, in the same breadth-first order, less the
    expression contexts, as a list: about twice as fast (no generator per node, no look at
    fields that hold names or numbers), and the index walks every statement."""
    out = [root]
    append = out.append
    child_fields = _CHILD_FIELDS
    i = 0
    while i < len(out):
        node = out[i]
        i += 1
        cls = node.__class__
        fields = child_fields.get(cls)
        if fields is None:
            fields = child_fields[cls] = tuple(f for f in cls._fields if f not in _SKIPPED_FIELDS)
        for name in fields:
            value = getattr(node, name, None)
            if isinstance(value, _AST):
                append(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, _AST):
                        append(item)
    return out


def own_nodes(stmt: ast.AST):
    """The nodes of a statement's own expressions, not of the statements nested in it."""
    for child in ast.iter_child_nodes(stmt):
        if not isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
            yield from ast.walk(child)


def if_arms(blocks, node: ast.AST):
    """(the ``if`` statement, whether ``node`` is in its body rather than its ``else``) for
    each ``if`` among ``blocks``, the blocks around ``node`` (a statement context's)."""
    for block in blocks:
        owner = getattr(block, "owner", None)
        if isinstance(owner, ast.If):
            yield owner, any(contains(s, node) for s in owner.body)


def conjuncts(test) -> List[ast.AST]:
    """The parts of an ``and`` that must all hold (the test itself when it is no ``and``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [part for value in test.values for part in conjuncts(value)]
    return [test]


def key_bases(key: str) -> List[str]:
    """The keys an attribute key hangs from: ``a.b.c`` gives ``a`` and ``a.b``."""
    parts = key.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def expr_keys(expr: Optional[ast.AST]) -> Set[str]:
    """Names and dotted paths an expression reads (``self.x`` gives ``self.x``)."""
    out: Set[str] = set()
    if expr is None:
        return out
    for node in walk_nodes(expr):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            path = dotted(node)
            if path is not None:
                out.add(path)
    out.discard("self")
    return out


def enclosing_block(scope_node: ast.AST, stmt: ast.AST) -> Optional[list]:
    """The statement list (body, orelse, finalbody, handler body) that holds ``stmt``."""
    for node in ast.walk(scope_node):
        for attr_name in ("body", "orelse", "finalbody"):
            block = getattr(node, attr_name, None)
            if isinstance(block, list) and any(s is stmt for s in block):
                return block
        for handler in getattr(node, "handlers", []) or []:
            if any(s is stmt for s in handler.body):
                return handler.body
    return None


def called_name(call: ast.Call) -> Optional[str]:
    """``f`` for ``f(...)`` and ``obj.f(...)``; None for other callees."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def calls_named(scope: "Scope", name: str):
    """The (call, statement) pairs of a scope whose callee is spelled ``name``."""
    for call, stmt in scope.calls:
        if called_name(call) == name:
            yield call, stmt


def container_key(expr: ast.AST) -> Optional[str]:
    """The name or dotted path of the container in ``c.append``, ``c[k]``, ``c[k].append``."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    return dotted(expr)


class ModuleIndex:
    """Facts about one module, computed in a single walk."""

    def __init__(self, tree: ast.Module, module_name: str = "", package: str = "") -> None:
        self.tree = tree
        self.module_name = module_name
        self.package = package
        self.imports = ImportMap()
        self.scopes: List[Scope] = []
        self.scope_of_node: Dict[int, Scope] = {}
        self.stmt_ctx: Dict[int, StmtContext] = {}
        self.classes: Dict[str, ast.ClassDef] = {}
        self.class_scopes: Dict[str, List[Scope]] = {}
        self.module_scope = Scope(tree, "<module>", module_name or "<module>", None)
        self.scopes.append(self.module_scope)
        self.scope_of_node[id(tree)] = self.module_scope
        self.has_backward = False
        _Builder(self, package).run()
        self.torch_aware = self.imports.imports_torch() or self.has_backward

    def ctx(self, stmt: ast.AST) -> Optional[StmtContext]:
        return self.stmt_ctx.get(id(stmt))

    def methods(self, class_name: str) -> List[Scope]:
        return self.class_scopes.get(class_name, [])


_GRAD_OFF_QUALNAMES = frozenset(
    {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad",
     "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode",
     "torch.autograd.inference_mode"}
)


def grad_off_call(expr: ast.AST, imports: ImportMap) -> Optional[str]:
    """Describe ``torch.no_grad()``-like context managers and decorators, else None."""
    target = expr.func if isinstance(expr, ast.Call) else expr
    qual = imports.qualname(target) or dotted(target) or ""
    short = qual.rsplit(".", 1)[-1]
    if qual in _GRAD_OFF_QUALNAMES or (short in ("no_grad", "inference_mode") and qual.startswith(("torch", "no_grad", "inference_mode"))):
        if isinstance(expr, ast.Call) and short == "inference_mode" and expr.args:
            if isinstance(expr.args[0], ast.Constant) and expr.args[0].value is False:
                return None
        return f"{short}()"
    if (short in ("no_grad", "inference_mode") and imports.star_imported and isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name) and target.value.id not in imports.aliases):
        # ``with th.no_grad():`` where ``th`` comes from ``from utils import *`` (``import torch as th`` there)
        return f"{short}()"
    if short == "set_grad_enabled" and isinstance(expr, ast.Call) and expr.args:
        arg = expr.args[0]
        if isinstance(arg, ast.Constant) and arg.value is False:
            return "set_grad_enabled(False)"
    return None


_NO_OP_MANAGERS = frozenset({"contextlib.suppress", "contextlib.nullcontext", "contextlib.ExitStack"})


def _grad_off_helpers(tree: ast.Module, imports: ImportMap) -> Dict[str, str]:
    """Module-level functions that return a grad-off context manager (``torch.no_grad()``),
    or on other paths only a no-op one (``contextlib.suppress()`` for old PyTorch)."""
    found = {}
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.args.args:
            continue
        returns = [r.value for r in ast.walk(node) if isinstance(r, ast.Return)]
        reasons = [grad_off_call(v, imports) for v in returns if v is not None]
        if returns and any(reasons) and all(
                reason or (isinstance(v, ast.Call) and (imports.qualname(v.func) or dotted(v.func) or "") in _NO_OP_MANAGERS)
                for v, reason in zip(returns, reasons)):
            found[node.name] = f"{node.name}() (returns torch.{next(r for r in reasons if r)})"
    return found


class _Branch:
    """A branch of a compound statement (an if arm, a handler, a loop's else)."""

    __slots__ = ("owner",)

    def __init__(self, owner: ast.AST) -> None:
        self.owner = owner


class _Builder:
    def __init__(self, index: ModuleIndex, package: str) -> None:
        self.ix = index
        self.package = package

    def run(self) -> None:
        tree = self.ix.tree
        self.grad_off_helpers: Optional[Dict[str, str]] = None  # found when first asked: imports come first
        self.block(tree.body, self.ix.module_scope, (), None, ())

    def _helper_off(self, expr) -> Optional[str]:
        """``with no_grad_ctx():`` where the module's own function returns ``torch.no_grad()``."""
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and not expr.args and not expr.keywords:
            if self.grad_off_helpers is None:
                self.grad_off_helpers = _grad_off_helpers(self.ix.tree, self.ix.imports)
            return self.grad_off_helpers.get(expr.func.id)
        return None

    # -- statements ---------------------------------------------------------------------
    def block(self, body, scope: Scope, loops, grad_off, blocks) -> None:
        for stmt in body:
            self.stmt(stmt, scope, loops, grad_off, blocks)
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                reason = grad_off_call(stmt.value, self.ix.imports)
                if reason == "set_grad_enabled(False)":
                    grad_off = reason  # the rest of this block runs without autograd

    def stmt(self, stmt, scope: Scope, loops, grad_off, blocks) -> None:
        ix = self.ix
        ix.stmt_ctx[id(stmt)] = StmtContext(scope, loops, grad_off, blocks)
        scope.statements.append(stmt)
        if isinstance(stmt, FUNC_TYPES):
            self.define(scope, stmt.name, stmt, None, "def")
            self.function(stmt, scope)
            return
        if isinstance(stmt, ast.ClassDef):
            self.define(scope, stmt.name, stmt, None, "def")
            if scope is ix.module_scope:
                ix.classes[stmt.name] = stmt
            for inner in stmt.body:
                if isinstance(inner, FUNC_TYPES):
                    ix.stmt_ctx[id(inner)] = StmtContext(scope, loops, grad_off, blocks)
                    self.function(inner, scope, class_name=stmt.name)
                else:
                    self.stmt(inner, scope, loops, grad_off, blocks)
            return
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            ix.imports.add(stmt, self.package)
            for alias in stmt.names:
                local = alias.asname or alias.name.split(".")[0]
                self.define(scope, local, stmt, None, "import")
            return
        self.expressions(stmt, scope)
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                self.bind(scope, target, stmt, stmt.value, "assign")
            self.flow(scope, stmt.targets, stmt.value)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.bind(scope, stmt.target, stmt, stmt.value, "assign")
                self.flow(scope, [stmt.target], stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            key = dotted(stmt.target)
            if key is not None:
                self.define(scope, key, stmt, stmt.value, "aug")
            self.flow(scope, [stmt.target], stmt.value)
        elif isinstance(stmt, LOOP_TYPES):
            if runs_once(stmt):
                inner = loops  # ``if i > 0: break``: the body runs once per pass
            else:
                scope.loops.append(stmt)
                inner = loops + (stmt,)
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                self.bind(scope, stmt.target, stmt, stmt.iter, "for")
                self.flow(scope, [stmt.target], stmt.iter)
            self.block(stmt.body, scope, inner, grad_off, blocks + (stmt,))
            self.block(stmt.orelse, scope, loops, grad_off, blocks + (_Branch(stmt),))
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            inner_off = grad_off
            for item in stmt.items:
                reason = grad_off_call(item.context_expr, ix.imports) or self._helper_off(item.context_expr)
                if reason:
                    inner_off = reason
                elif _enables_grad(item.context_expr, ix.imports):
                    inner_off = None
                if item.optional_vars is not None:
                    self.bind(scope, item.optional_vars, stmt, item.context_expr, "with")
                    self.flow(scope, [item.optional_vars], item.context_expr)
            self.block(stmt.body, scope, loops, inner_off, blocks)
        elif isinstance(stmt, ast.If):
            once = loops[:-1] if loops and first_iteration_only(stmt.test, loops[-1]) else loops
            self.block(stmt.body, scope, once, grad_off, blocks + (_Branch(stmt),))
            self.block(stmt.orelse, scope, loops, grad_off, blocks + (_Branch(stmt),))
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self.block(stmt.body, scope, loops, grad_off, blocks)
            for handler in stmt.handlers:
                if handler.name:
                    self.define(scope, handler.name, handler, None, "except")
                self.block(handler.body, scope, loops, grad_off, blocks + (_Branch(handler),))
            self.block(stmt.orelse, scope, loops, grad_off, blocks + (_Branch(stmt),))
            self.block(stmt.finalbody, scope, loops, grad_off, blocks)
        elif type(stmt).__name__ == "Match":
            for case in stmt.cases:
                self.block(case.body, scope, loops, grad_off, blocks + (_Branch(case),))
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None:
                scope.returns.append(stmt.value)
        elif isinstance(stmt, ast.Expr):
            call = stmt.value
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
                if call.func.attr in MUTATORS:
                    key = container_key(call.func.value)
                    if key is not None:
                        vals = list(call.args) + [k.value for k in call.keywords]
                        scope.deps.setdefault(key, set()).update(*(expr_keys(v) for v in vals))

    def function(self, node, parent: Scope, class_name: Optional[str] = None) -> None:
        ix = self.ix
        qual = f"{parent.qualname}.{node.name}" if parent is not ix.module_scope else node.name
        if class_name:
            qual = f"{class_name}.{node.name}"
        scope = Scope(node, node.name, qual, parent, class_name=class_name,
                      decorators=list(node.decorator_list))
        ix.scopes.append(scope)
        ix.scope_of_node[id(node)] = scope
        if class_name:
            ix.class_scopes.setdefault(class_name, []).append(scope)
        args = node.args
        every = list(getattr(args, "posonlyargs", [])) + list(args.args) + list(args.kwonlyargs)
        for extra in (args.vararg, args.kwarg):
            if extra is not None:
                every.append(extra)
        for arg in every:
            scope.params.append(arg.arg)
            self.define(scope, arg.arg, arg, None, "param")
        for deco in node.decorator_list:
            self.expressions_of(deco, scope, node)
        self.block(node.body, scope, (), None, ())

    # -- bindings and flow --------------------------------------------------------------
    def define(self, scope: Scope, key: str, stmt, value, kind, index=None, arity=None) -> None:
        scope.defs.setdefault(key, []).append(Def(key, stmt, value, kind, index, arity))

    def bind(self, scope: Scope, target, stmt, value, kind) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            arity = len(target.elts)
            for i, elt in enumerate(target.elts):
                if isinstance(elt, ast.Starred):
                    self.bind(scope, elt.value, stmt, value, "unpack-star")
                    continue
                key = dotted(elt)
                if key is not None:
                    self.define(scope, key, stmt, value, kind, index=i, arity=arity)
                elif isinstance(elt, (ast.Tuple, ast.List)):
                    self.bind(scope, elt, stmt, None, kind)
            return
        key = dotted(target)
        if key is not None:
            self.define(scope, key, stmt, value, kind)
        elif isinstance(target, ast.Subscript):
            ckey = container_key(target)
            if ckey is not None:
                scope.deps.setdefault(ckey, set()).update(expr_keys(value))

    def flow(self, scope: Scope, targets, value) -> None:
        sources = expr_keys(value)
        for target in targets:
            for node in walk_nodes(target):
                key = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
                if key is not None and key != "self":
                    scope.deps.setdefault(key, set()).update(sources)

    # -- expressions --------------------------------------------------------------------
    def expressions(self, stmt, scope: Scope) -> None:
        """Record calls, backward sites, yields and walrus bindings in a simple statement
        (compound statements: only their header expressions)."""
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            roots = [stmt.iter]
        elif isinstance(stmt, ast.While):
            roots = [stmt.test]
        elif isinstance(stmt, ast.If):
            roots = [stmt.test]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            roots = [item.context_expr for item in stmt.items]
        elif isinstance(stmt, (ast.Try, ast.ClassDef)) or type(stmt).__name__ in ("TryStar", "Match"):
            roots = [stmt.subject] if type(stmt).__name__ == "Match" else []
        else:
            roots = [stmt]
        for root in roots:
            self.expressions_of(root, scope, stmt)

    def expressions_of(self, root, scope: Scope, stmt) -> None:
        ix = self.ix
        for node in walk_nodes(root):
            if isinstance(node, ast.Call):
                scope.calls.append((node, stmt))
                site = backward_site(node, ix.imports, stmt)
                if site is not None:
                    scope.backward_sites.append(site)
                    ix.has_backward = True
            elif isinstance(node, (ast.Yield, ast.YieldFrom)) and node.value is not None:
                scope.returns.append(node.value)
            elif isinstance(node, ast.NamedExpr):
                self.define(scope, node.target.id, stmt, node.value, "assign")


def _enables_grad(expr, imports: ImportMap) -> bool:
    target = expr.func if isinstance(expr, ast.Call) else expr
    qual = imports.qualname(target) or dotted(target) or ""
    short = qual.rsplit(".", 1)[-1]
    if short == "enable_grad":
        return True
    if short == "set_grad_enabled" and isinstance(expr, ast.Call) and expr.args:
        arg = expr.args[0]
        return not (isinstance(arg, ast.Constant) and arg.value is False)
    return False
