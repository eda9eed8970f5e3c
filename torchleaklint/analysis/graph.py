"""Does an expression carry an autograd graph?

Sources: names that are backpropagated, loss results, module outputs, values returned by
project functions whose summary says so. Propagation: arithmetic, indexing, reductions,
tensor methods, ``torch.*`` functions of carrying values. Detachers: ``.item()``,
``.detach()``, ``.data``, ``.tolist()``, ``float()``… and anything computed with grad off.
Every positive answer comes with :class:`Evidence` that says why.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Dict, Optional

from .elementwise import rebound_elementwise
from .keyed_outputs import GRAPH_FREE, keyed_output, position_graph_free
from .last_writer import written_without_grad
from .module_index import Def, Scope
from .names import FUNCTIONAL_LOSSES, dotted, last_name, looks_like_loss_name
from .detachers import (COPYING_BUILTINS, DETACH_BUILTINS, DETACH_METHODS, DISTRIBUTION_DRAWS,  # noqa: F401
                        NON_CARRYING_ATTRS,
                        NUMERIC_NAMESPACES, TORCH_NON_CARRYING, VALUES_INDICES)
from .branches import every_branch
from .objects import ObjectKinds

STRONG = "strong"
CONVENTION = "convention"
# Functions whose result is computed from their tensor arguments, graph included
# (einops: ``rearrange``, ``reduce``, ``pack``, ``einsum`` on torch tensors).
TENSOR_FUNCTION_NAMESPACES = ("torch.", "einops.")


@dataclass(frozen=True)
class Evidence:
    text: str
    line: int
    strength: str = STRONG
    tensor: bool = True  # proven to be a torch.Tensor
    scalar: bool = False  # proven to hold one element
    loss_like: bool = False
    container: bool = False  # a list/dict holding graph-carrying values: nothing to detach

    def describe(self) -> str:
        return f"{self.text} (line {self.line})" if self.line else self.text


class GraphOracle:
    MAX_DEPTH = 40

    def __init__(self, analysis, assume_param: Optional[tuple] = None) -> None:
        self.analysis = analysis
        self.index = analysis.index
        self.kinds = ObjectKinds(analysis) if assume_param is None else analysis.graph.kinds
        self._def_memo: Dict[int, Optional[Evidence]] = {}
        self._in_progress: set = set()
        self._backprop: Optional[Dict[int, tuple]] = None
        # (scope node, parameter name): evaluate as if that argument carried a graph,
        # to learn which arguments a function's result is computed from.
        self.assume_param = assume_param
        self._assuming: Dict[tuple, "GraphOracle"] = {}

    def assuming(self, scope: Scope, param: str) -> "GraphOracle":
        key = (id(scope.node), param)
        oracle = self._assuming.get(key)
        if oracle is None:
            oracle = GraphOracle(self.analysis, assume_param=(scope.node, param))
            oracle._backprop = self._backprop_map()
            self._assuming[key] = oracle
        return oracle

    # -- public -------------------------------------------------------------------------
    def carrying(self, expr: ast.AST, stmt: ast.AST, bindings: Optional[dict] = None) -> Optional[Evidence]:
        """Evidence that ``expr`` (evaluated at ``stmt``) carries an autograd graph."""
        ctx = self.index.ctx(stmt)
        if ctx is None:
            return None
        if self.analysis.grad.stmt_off(stmt):
            return None
        return self._expr(expr, ctx.scope, stmt, bindings or {}, 0)

    def backprop_site(self, d: Def):
        """The backward call that backpropagates this definition's value, if any.

        Only the names in the backward's receiver count: operands of a backpropagated sum
        may be plain inputs or floats (``loss = (pred - y).pow(2).mean()``)."""
        return self._backprop_map().get(id(d))

    def _backprop_map(self) -> Dict[int, object]:
        if self._backprop is None:
            self._backprop = {}
            flow = self.analysis.flow
            for scope in self.index.scopes:
                for site in scope.backward_sites:
                    stmt = site.stmt
                    if stmt is None:
                        continue
                    for key in site.keys:
                        for reached in flow.reaching(scope, key, stmt):
                            self._backprop.setdefault(id(reached), site)
        return self._backprop

    MAX_DEF_CHAIN = 60

    def def_carrying(self, d: Def, scope: Scope) -> Optional[Evidence]:
        key = id(d)
        if key in self._def_memo:
            return self._def_memo[key]
        if key in self._in_progress or len(self._in_progress) > self.MAX_DEF_CHAIN:
            # A cycle, or a chain of re-definitions too long to follow: unknown.
            return None
        self._in_progress.add(key)
        try:
            result = self._def(d, scope)
        finally:
            self._in_progress.discard(key)
        self._def_memo[key] = result
        return result

    # -- definitions --------------------------------------------------------------------
    def _def(self, d: Def, scope: Scope) -> Optional[Evidence]:
        if d.kind == "param":
            if self.assume_param is not None and self.assume_param == (scope.node, d.key):
                return Evidence(f"argument `{d.key}`", 0)
        elif d.kind not in ("import", "def", "except", "unpack-star") and self.analysis.grad.stmt_off(d.stmt):
            return None
        value_ev = self._value(d, scope)
        bound = _bound_value(d)
        while isinstance(bound, ast.Subscript):
            bound = bound.value  # ``loss = loss.data[0]``: an element of a detached value
        if d.kind == "for" or _explicitly_detached(bound):
            return value_ev
        site = self.backprop_site(d)
        if site is None:
            return value_ev
        # ``loss.backward()`` proves a scalar loss; ``out.sum().backward()`` only a tensor.
        direct = d.key in site.direct_keys
        scalar = direct and site.scalar_proof
        if value_ev is not None and value_ev.strength == STRONG:
            return replace(value_ev, scalar=value_ev.scalar or scalar, loss_like=value_ev.loss_like or direct,
                           tensor=True)
        # A backward pass on the value proves what a naming convention only suggests.
        text = f"`{d.key}` is backpropagated by `.backward()`"
        if value_ev is not None:
            text += f"; it is the {value_ev.describe()}"
        return Evidence(text, site.call.lineno, scalar=scalar, loss_like=direct)

    def _value(self, d: Def, scope: Scope) -> Optional[Evidence]:
        if d.kind in ("param", "import", "def", "except", "unpack-star", "with"):
            return None
        value = d.value
        if value is None:
            return None
        if d.kind == "for":
            if d.index == 0 and isinstance(value, ast.Call) and isinstance(value.func, (ast.Attribute, ast.Name)) \
                    and last_name(value.func) in ("items", "enumerate") and (d.arity or 0) >= 2:
                return None  # ``for key, value in d.items()``, ``for i, x in enumerate(xs)``: a key, a count
            return self._elements(value, scope, d.stmt, 0)
        if d.index is not None:
            return self._unpacked(value, d.index, d.arity or 0, scope, d.stmt)
        return self._expr(value, scope, d.stmt, {}, 0)

    def _unpacked(self, value, index, arity, scope, stmt) -> Optional[Evidence]:
        if isinstance(value, (ast.Tuple, ast.List)):
            if index < len(value.elts) and not any(isinstance(e, ast.Starred) for e in value.elts):
                return self._expr(value.elts[index], scope, stmt, {}, 0)
            return None
        if isinstance(value, ast.Call):
            func = value.func
            if index == 1 and last_name(func) in VALUES_INDICES:
                return None
            if position_graph_free(self, value, index, scope, stmt):
                return None  # ``scores, lengths = decoder(x)`` where forward returns ``lengths.tolist()``
            summary = self.kinds.call_summary(value, scope, stmt, arity, oracle=self)
            if summary is not None:
                return summary.position(index)
        return self._expr(value, scope, stmt, {}, 0)

    # -- expressions --------------------------------------------------------------------
    def _expr(self, expr, scope: Scope, stmt, bindings: dict, depth: int) -> Optional[Evidence]:
        if depth > self.MAX_DEPTH or expr is None:
            return None
        nxt = depth + 1
        if isinstance(expr, (ast.Name, ast.Attribute)):
            return self._path(expr, scope, stmt, bindings, nxt)
        if isinstance(expr, ast.Call):
            return self._call(expr, scope, stmt, bindings, nxt)
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, ast.Mod) and isinstance(expr.left, (ast.Constant, ast.JoinedStr)) \
                    and isinstance(getattr(expr.left, "value", ""), str):
                return None  # ``"%s: %.3f" % (k, v)``: a string
            return self._expr(expr.left, scope, stmt, bindings, nxt) or self._expr(expr.right, scope, stmt, bindings, nxt)
        if isinstance(expr, ast.UnaryOp):
            if isinstance(expr.op, ast.Not):
                return None
            return self._expr(expr.operand, scope, stmt, bindings, nxt)
        if isinstance(expr, ast.BoolOp):  # the value is one of the operands
            return every_branch([self._expr(value, scope, stmt, bindings, nxt) for value in expr.values])
        if isinstance(expr, ast.IfExp):
            if _tensor_guard(expr):
                # ``x.item() if hasattr(x, "item") else x``: the other arm runs only on a non-tensor
                return self._expr(expr.body, scope, stmt, bindings, nxt)
            return every_branch([self._expr(expr.body, scope, stmt, bindings, nxt),
                                 self._expr(expr.orelse, scope, stmt, bindings, nxt)])
        if isinstance(expr, ast.Subscript):
            if rebound_elementwise(self, expr.value, scope, stmt):
                return None  # ``for i in range(len(xs)): xs[i] = xs[i].detach()`` before this read
            if isinstance(expr.slice, ast.Constant) and isinstance(expr.value, ast.Name):
                entry = keyed_output(self, expr, scope, stmt)  # ``model_out["reward"]`` from its forward
                if entry is GRAPH_FREE:
                    return None
                if entry is not None:
                    return entry
            return self._expr(expr.value, scope, stmt, bindings, nxt)
        if isinstance(expr, ast.Starred):
            return self._expr(expr.value, scope, stmt, bindings, nxt)
        if isinstance(expr, ast.NamedExpr):
            return self._expr(expr.value, scope, stmt, bindings, nxt)
        if isinstance(expr, ast.Await):
            return self._expr(expr.value, scope, stmt, bindings, nxt)
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            for elt in expr.elts:
                ev = self._expr(elt, scope, stmt, bindings, nxt)
                if ev:
                    return replace(ev, scalar=False, tensor=False)
            return None
        if isinstance(expr, ast.Dict):
            for value in expr.values:
                ev = self._expr(value, scope, stmt, bindings, nxt)
                if ev:
                    return replace(ev, scalar=False, tensor=False)
            return None
        if isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = dict(bindings)
            for gen in expr.generators:
                ev = self._elements(gen.iter, scope, stmt, nxt, inner)
                for node in ast.walk(gen.target):
                    if isinstance(node, ast.Name):
                        inner[node.id] = ev
            elt = expr.value if isinstance(expr, ast.DictComp) else expr.elt
            ev = self._expr(elt, scope, stmt, inner, nxt)
            return replace(ev, scalar=False, tensor=False) if ev else None
        return None

    def _elements(self, iterable, scope, stmt, depth, bindings=None) -> Optional[Evidence]:
        """Evidence that the items of ``iterable`` carry graphs (``for x in losses``)."""
        bindings = bindings or {}
        if isinstance(iterable, ast.Call):
            name = last_name(iterable.func)
            if name in ("enumerate", "zip", "reversed", "sorted", "list", "tuple", "iter", "chain"):
                for arg in iterable.args:
                    ev = self._elements(arg, scope, stmt, depth + 1, bindings)
                    if ev:
                        return replace(ev, scalar=False, tensor=False)
                return None
            if name in ("items", "values") and isinstance(iterable.func, ast.Attribute):
                return self._elements(iterable.func.value, scope, stmt, depth + 1, bindings)
            if name in ("range", "len", "keys", "parameters", "named_parameters", "modules",
                        "children", "named_modules", "named_children", "state_dict", "buffers",
                        "named_buffers", "split", "splitlines", "readlines", "glob", "listdir",
                        "walk", "iterdir", "rglob"):
                return None
        ev = self._expr(iterable, scope, stmt, bindings, depth + 1)
        if ev is not None:
            return replace(ev, scalar=False)
        return None

    def _path(self, expr, scope: Scope, stmt, bindings: dict, depth: int) -> Optional[Evidence]:
        key = dotted(expr)
        if key is not None and key in bindings:
            return bindings[key]
        if key is not None:
            defs = self.analysis.flow.reaching(scope, key, stmt)
            if defs and scope.loops and rebound_elementwise(self, expr, scope, stmt):
                return None  # every element replaced by a graph-free value before this read
            if defs:
                ev = every_branch([self.def_carrying(d, scope) for d in defs])
                if ev:
                    return ev
                stored = self._stored_evidence(scope, key, defs)
                return stored
            if key.startswith("self.") and written_without_grad(self.analysis, scope, key, stmt):
                return None  # ``self.test()`` just set it with grad off
            outer = self._nonlocal(key, scope)
            if outer is not None:
                return outer
        if isinstance(expr, ast.Attribute):
            if expr.attr in NON_CARRYING_ATTRS:
                return None
            base = self._expr(expr.value, scope, stmt, bindings, depth + 1)
            if base is not None:
                return replace(base, scalar=False, tensor=False) if not base.tensor else base
        return None

    def _stored_evidence(self, scope, key, defs) -> Optional[Evidence]:
        """A container whose reaching definition is empty but gets graph values stored."""
        guard = ("stored", id(scope.node), key)
        if guard in self._in_progress:
            return None
        self._in_progress.add(guard)
        try:
            return self._stored(scope, key, defs)
        finally:
            self._in_progress.discard(guard)

    def _stored(self, scope, key, defs) -> Optional[Evidence]:
        for d in defs:
            if d.kind == "assign" and isinstance(d.value, (ast.List, ast.Dict, ast.Tuple, ast.Call)):
                from .stores import stores_into

                for store in stores_into(self.analysis, scope, key):
                    ev = self.carrying(store.value, store.stmt)
                    if ev:
                        return Evidence(f"`{key}` holds graph-carrying values stored at line {store.stmt.lineno}: {ev.text}",
                                        ev.line, ev.strength, tensor=False, loss_like=ev.loss_like, container=True)
                return None
        return None

    def _nonlocal(self, key: str, scope: Scope) -> Optional[Evidence]:
        """``self.x`` set in another method, or a name from an enclosing/module scope."""
        if key.startswith("self.") and scope.class_name:
            for method in self.index.methods(scope.class_name):
                if method is scope:
                    continue
                for d in method.defs_of(key):
                    ev = self.def_carrying(d, method)
                    if ev:
                        return ev
            return None
        parent = scope.parent
        while parent is not None:
            defs = parent.defs_of(key)
            if defs:
                for d in defs:
                    ev = self.def_carrying(d, parent)
                    if ev:
                        return ev
                return None
            parent = parent.parent
        return None

    # -- calls --------------------------------------------------------------------------
    def _call(self, call: ast.Call, scope: Scope, stmt, bindings: dict, depth: int) -> Optional[Evidence]:
        func = call.func
        imports = self.index.imports
        qual = imports.qualname(func) or ""
        if isinstance(func, ast.Name) and func.id not in imports.aliases:
            name = func.id
            if name in DETACH_BUILTINS:
                return None
            if name in COPYING_BUILTINS and not self.kinds.is_project_callable(func, scope):
                for arg in call.args:
                    ev = self._elements(arg, scope, stmt, depth, bindings) if name != "max" and name != "min" else self._expr(arg, scope, stmt, bindings, depth)
                    if ev:
                        return replace(ev, scalar=False, tensor=name in ("sum", "max", "min"))
                return None
        if qual.startswith(NUMERIC_NAMESPACES) or qual.split(".")[0] in ("numpy", "math", "statistics"):
            return None
        if qual.startswith(("torch.optim.", "torch.utils.data.")):
            return None  # an optimizer, scheduler or loader object, not a tensor
        if isinstance(func, ast.Attribute):
            method = func.attr
            if method in DETACH_METHODS:
                return None
            if method in DISTRIBUTION_DRAWS and self._is_distribution(func.value, scope, stmt):
                return None
            if qual.startswith("torch.") and not qual.startswith(("torch.nn.functional", "torch.Tensor")):
                short = qual.rsplit(".", 1)[-1]
                if short in TORCH_NON_CARRYING or short.endswith("_like"):
                    return None
        loss = self._loss_call(call, qual, scope, stmt, bindings, depth)
        if loss is not None:
            return loss
        module = self.kinds.module_call(call, scope, stmt)
        if module is not None:
            if self._frozen(call, scope, stmt) or self.parameter_free(call, scope, stmt):
                # a frozen module, or one that holds no parameter (a metric or a wrapped
                # autograd Function): a graph only through what it is given
                return self._through_arguments(call, scope, stmt, bindings, depth)
            return module
        summary = self.kinds.call_summary(call, scope, stmt, 0, oracle=self)
        if summary is not None:
            whole = summary.whole()
            if whole is not None and self.frozen_receiver(call, scope, stmt):
                # ``ema_vae.forward_get_latents(x)`` on a frozen module
                return self._through_arguments(call, scope, stmt, bindings, depth)
            return whole
        if qual == "torch.autograd.grad" and not _creates_graph(call):
            return None  # gradients without ``create_graph=True`` are graph-free leaves
        if qual.startswith(TENSOR_FUNCTION_NAMESPACES):
            for arg in list(call.args) + [k.value for k in call.keywords]:
                ev = self._expr(arg, scope, stmt, bindings, depth)
                if ev is None:
                    ev = self._elements(arg, scope, stmt, depth, bindings)
                if ev:
                    return replace(ev, scalar=False, tensor=True)
            return None
        if isinstance(func, ast.Attribute):
            receiver = func.value
            if not (isinstance(receiver, ast.Name) and receiver.id in imports.aliases):
                ev = self._expr(receiver, scope, stmt, bindings, depth)
                if ev is not None:
                    if func.attr in VALUES_INDICES or func.attr in ("to", "cpu", "cuda", "clone", "float",
                                                                    "double", "half", "mean", "sum",
                                                                    "squeeze", "view", "reshape"):
                        keeps_scalar = func.attr in ("to", "cpu", "cuda", "clone", "float", "double", "half",
                                                     "squeeze", "view", "reshape")
                        full = func.attr in ("mean", "sum") and not call.args and not call.keywords
                        return replace(ev, scalar=(ev.scalar and keeps_scalar) or full, tensor=ev.tensor or full)
                    if ev.tensor:
                        return replace(ev, scalar=False)
                    return None
        return None

    def parameter_free(self, call, scope: Scope, stmt) -> bool:
        """Is the called module an instance of a project class that holds no parameter?"""
        from .parameterless import called_class, holds_no_parameters

        project = self.kinds.project
        cls = called_class(self.kinds, call, scope, stmt) if project is not None else None
        return cls is not None and holds_no_parameters(project, cls)

    def _frozen(self, call, scope: Scope, stmt) -> bool:
        """Is the called module frozen (``requires_grad_(False)``, its parameters' flags
        cleared) where this call runs, or a torch layer with no parameters at all
        (``nn.Softmax(dim=1)(outputs)``)? Its output then carries a graph only through its
        inputs."""
        if parameterless_layer(self.analysis, call.func, scope, stmt):
            return True
        name = dotted(call.func)
        if name is None:
            return False
        from .forward_input import frozen_module

        return frozen_module(self.analysis, scope, name, stmt)

    def _through_arguments(self, call, scope: Scope, stmt, bindings: dict, depth: int) -> Optional[Evidence]:
        """What a frozen module's call records: a graph only through its inputs."""
        for arg in list(call.args) + [k.value for k in call.keywords]:
            ev = self._expr(arg, scope, stmt, bindings, depth)
            if ev is not None:
                return ev
        return None

    def frozen_receiver(self, call, scope: Scope, stmt) -> bool:
        """A method called on a module instance that is frozen where it runs."""
        func = call.func
        if not isinstance(func, ast.Attribute):
            return False
        name = dotted(func.value)
        if name is None:
            return False
        kind = self.kinds.kind_of(func.value, scope, stmt)
        if kind is not None and not kind.is_module:
            return False  # a parameter's kind is unknown: its freezing, found through callers, says it
        from .forward_input import frozen_module

        return frozen_module(self.analysis, scope, name, stmt)

    def _passed_objects(self, func, scope: Scope) -> bool:
        """Is the callee a parameter for which every caller passes a project object with a
        ``__call__`` of its own? Its summary, not its name, says what the call returns."""
        if not isinstance(func, ast.Name) or func.id not in scope.params:
            return False
        from .passed_callables import passed_call_methods

        return passed_call_methods(self.analysis, scope, func.id) is not None

    def _is_distribution(self, receiver, scope: Scope, stmt) -> bool:
        """``dist`` bound to ``Categorical(...)``/``torch.distributions.Normal(...)``, or to
        what a forward pass returns (``dist, value = model(state)``): a tensor has no
        ``sample()``, so a forward's output that has one is a distribution object."""
        imports = self.index.imports
        defs = [(receiver, stmt)]
        key = dotted(receiver)
        if key is not None:
            defs = [(d.value, d.stmt) for d in self.analysis.flow.reaching(scope, key, stmt) if d.kind == "assign"]
        return bool(defs) and all(
            isinstance(v, ast.Call) and (
                (imports.qualname(v.func) or "").startswith("torch.distributions.")
                or self.kinds.module_call(v, scope, at) is not None)
            for v, at in defs)

    def _loss_call(self, call, qual, scope, stmt, bindings=None, depth=0) -> Optional[Evidence]:
        """A loss of inputs that carry a graph. A loss of detached or plain inputs (metrics
        computed from ``.detach()``-ed outputs, losses under an evaluator) carries none."""
        func = call.func
        reduction_none = any(
            k.arg == "reduction" and isinstance(k.value, ast.Constant) and k.value.value == "none"
            for k in call.keywords
        )
        short = qual.rsplit(".", 1)[-1] if qual else ""
        what = None
        strength = STRONG
        if qual.startswith("torch.nn.functional.") and (short in FUNCTIONAL_LOSSES or short.endswith("_loss")):
            what = f"the loss function `{dotted(func) or short}`"
        else:
            kind = self.kinds.kind_of(func, scope, stmt)
            if kind is not None and kind.is_loss_module:
                what = f"the loss module `{dotted(func)}` ({kind.why})"
                strength = kind.strength
                reduction_none = reduction_none or kind.reduction_none
            elif kind is None and self.index.torch_aware and not self.kinds.is_project_callable(func, scope):
                name = last_name(func)
                extra = self.analysis.project.loss_names if self.analysis.project is not None else frozenset()
                if name and looks_like_loss_name(name, extra) and not name.startswith(("get_", "log", "print", "plot", "save")) \
                        and not self._passed_objects(func, scope):
                    what = f"`{dotted(func) or name}(...)`, named like a loss function"
                    strength = CONVENTION
        if what is None:
            return None
        for arg in list(call.args) + [k.value for k in call.keywords]:
            ev = self._expr(arg, scope, stmt, bindings or {}, depth + 1)
            if ev is not None:
                weakest = CONVENTION if CONVENTION in (strength, ev.strength) else STRONG
                return Evidence(f"result of {what}, whose input carries a graph: {ev.text}", call.lineno,
                                strength=weakest, scalar=not reduction_none and strength == STRONG,
                                loss_like=True)
        return None


def _tensor_guard(expr: ast.IfExp) -> bool:
    """``a if hasattr(x, "item") else x`` (or ``isinstance(x, torch.Tensor)``): the else arm
    is the same expression, reached only when it is not a tensor."""
    test, other = expr.test, expr.orelse
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and len(test.args) == 2
            and isinstance(other, (ast.Name, ast.Attribute, ast.Subscript))
            and ast.dump(test.args[0]) == ast.dump(other)):
        return False  # the else arm must be the very expression probed (a name, ``d["k"]``, ``self.x``)
    probe = test.args[1]
    if test.func.id == "hasattr":
        return isinstance(probe, ast.Constant) and probe.value in ("item", "detach", "cpu", "numpy")
    if test.func.id == "isinstance":
        return (dotted(probe) or "").endswith("Tensor")
    return False


def _bound_value(d: Def):
    """The expression a definition binds: ``loss.item()`` for ``loss, acc = (loss.item(), acc.item())``."""
    value = d.value
    if d.index is not None and isinstance(value, (ast.Tuple, ast.List)) and d.index < len(value.elts) \
            and not any(isinstance(e, ast.Starred) for e in value.elts):
        return value.elts[d.index]
    return value


def _creates_graph(call: ast.Call) -> bool:
    """``create_graph=True`` (or a value not known to be false) on an ``autograd.grad`` call."""
    for k in call.keywords:
        if k.arg == "create_graph":
            return not (isinstance(k.value, ast.Constant) and not k.value.value)
        if k.arg is None:
            return True  # ``**kwargs``: unknown
    return len(call.args) >= 6  # positional create_graph


def _explicitly_detached(value) -> bool:
    """``x.item()``, ``float(x)``, a constant: a value that cannot carry a graph."""
    if value is None or isinstance(value, (ast.Constant, ast.JoinedStr, ast.Compare)):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in DETACH_METHODS:
            return True
        if isinstance(func, ast.Name) and func.id in DETACH_BUILTINS:
            return True
    if isinstance(value, ast.Attribute) and value.attr in NON_CARRYING_ATTRS:
        return True
    return False


# torch.nn layers that hold no parameters: what they return records a graph only through
# what they are given.
PARAMETERLESS_LAYERS = frozenset({"Softmax", "LogSoftmax", "Softmax2d", "Sigmoid", "Tanh", "ReLU", "ReLU6", "LeakyReLU",
                                  "ELU", "GELU", "SiLU", "Mish", "Softplus", "Hardtanh", "Identity", "Flatten",
                                  "Unflatten", "Dropout", "Dropout2d", "MaxPool1d", "MaxPool2d", "MaxPool3d",
                                  "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
                                  "AdaptiveMaxPool2d", "Upsample", "PixelShuffle", "CosineSimilarity",
                                  "PairwiseDistance"})


def parameterless_layer(analysis, func, scope: Scope, stmt, depth: int = 0) -> bool:
    """``nn.Softmax(dim=1)``, built where it is called or bound to a name: once, or in
    some arms of a choice whose other arms bind lambdas that run no module
    (``A = nn.AdaptiveAvgPool2d(s)`` for one degradation, ``A = lambda z: z * mask`` for
    another)."""
    if isinstance(func, (ast.Name, ast.Attribute)):
        key = dotted(func)
        defs = analysis.flow.reaching(scope, key, stmt) if key else []
        if not defs or any(d.kind != "assign" for d in defs):
            return False
        layers = [d for d in defs if _parameterless_construction(analysis, d.value)]
        return bool(layers) and all(d in layers or _lambda_without_module(analysis, scope, d, depth) for d in defs)
    return _parameterless_construction(analysis, func)


def _parameterless_construction(analysis, value) -> bool:
    if not isinstance(value, ast.Call):
        return False
    qual = analysis.index.imports.qualname(value.func) or ""
    return qual.startswith("torch.nn.") and qual.rsplit(".", 1)[-1] in PARAMETERLESS_LAYERS


def _lambda_without_module(analysis, scope: Scope, d, depth: int) -> bool:
    """A lambda whose body calls no module but layers without parameters (``lambda z:
    A3(A2(A1(z)))`` over pooling and masking): it records a graph only through its input."""
    value = d.value
    if not isinstance(value, ast.Lambda) or depth >= 3:
        return False
    kinds = analysis.graph.kinds
    return not any(isinstance(node, ast.Call) and kinds.module_call(node, scope, d.stmt) is not None
                   and not parameterless_layer(analysis, node.func, scope, d.stmt, depth + 1)
                   for node in ast.walk(value.body))

