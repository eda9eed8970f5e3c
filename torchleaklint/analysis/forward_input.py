"""A module's forward input carries a graph in training.

``forward(self, x)`` of an ``nn.Module`` receives the output of the layers before it (or
of a model whose parameters record autograd): unless every caller runs it under
``no_grad``, its inputs carry a graph. The same holds for the arguments a ``forward``
hands to the module's own helper methods (``self.update_stats(x.mean(0))``), followed a
few calls deep. This is a convention, not a proof: an observation normalizer fed raw
environment data receives no graph, so the evidence is marked as such."""

from __future__ import annotations

import ast
from typing import Optional

from .callers import has_known_callers
from .frozen_construction import built_frozen, requires_grad_values
from .graph import CONVENTION, Evidence
from .module_index import Scope, calls_named, start_of
from .objects import PARALLEL_WRAPPERS
from .names import dotted
from .summaries import argument_for, stmt_of

MAX_DEPTH = 3
LOSS_SUFFIXES = ("loss", "criterion")
REASON = (" (a module's forward input carries a graph in training; no caller in the linted files passes it "
          "or runs it under `no_grad`)")


def forward_input_evidence(analysis, scope: Scope, param: str, depth: int = 0) -> Optional[Evidence]:
    """Evidence that ``param`` of ``scope`` is (computed from) a module's forward input."""
    project = analysis.project
    if project is None or not scope.is_function or not scope.class_name or param in ("self", "cls"):
        return None
    if param not in scope.params or analysis.grad.scope_off(scope):
        return None
    if not project.is_module_class(analysis.index.module_name, scope.class_name):
        return None
    if scope.class_name.lower().endswith(LOSS_SUFFIXES):
        return None  # a loss module's inputs include targets and teacher outputs
    if scope.name == "forward":
        if has_known_callers(analysis, scope):
            return None  # callers in view decide (``argument_evidence``): raw observations carry none
        return Evidence(f"`{param}`, an input of `{scope.class_name}.forward`{REASON}", scope.node.lineno,
                        strength=CONVENTION)
    if depth >= MAX_DEPTH:
        return None
    return _from_own_methods(analysis, scope, param, depth)


def _from_own_methods(analysis, scope: Scope, param: str, depth: int) -> Optional[Evidence]:
    """``self.helper(arg)`` from another method of the class whose forward input reaches ``arg``."""
    params = list(scope.params)
    position = params.index(param) - 1
    if position < 0 or params[0] != "self":
        return None
    for caller in analysis.index.methods(scope.class_name):
        if caller is scope:
            continue
        for call, stmt in calls_named(caller, scope.name):
            if not (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "self"):
                continue
            arg = argument_for(call, position, param)
            if arg is None:
                continue
            for name in caller.params:
                outer = forward_input_evidence(analysis, caller, name, depth + 1)
                if outer is None:
                    continue
                if analysis.graph.assuming(caller, name).carrying(arg, stmt) is not None:
                    origin = outer.text[: -len(REASON)] if outer.text.endswith(REASON) else outer.text
                    return Evidence(f"`{param}`, passed by `self.{scope.name}(...)` at line {stmt.lineno} from "
                                    f"{origin}{REASON}", stmt.lineno, strength=CONVENTION)
    return None


def frozen_module(analysis, scope: Scope, module: str, stmt, depth: int = 0) -> bool:
    """Is the module spelled ``module`` frozen where it reaches ``stmt``? Built frozen
    (``Net(...).requires_grad_(False)``), frozen by a statement before it
    (``sampler.eval().requires_grad_(False).to(device)``, ``for p in net.parameters():
    p.requires_grad = False``), or a deep copy of a frozen module (``ema = deepcopy(G)``).
    Its parameters then record no autograd."""
    frozen_here = False
    for call, at in scope.calls:
        if _lightning_freeze(analysis, call, module) and isinstance(at, ast.Expr) and at.lineno < stmt.lineno:
            frozen_here = True  # ``model.freeze()``: LightningModule's, every parameter frozen
            continue
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "requires_grad_"):
            continue
        if _chain_root(call.func.value) != module:
            continue
        if not _false(call.args[0] if call.args else None):
            return False  # unfrozen again by name
        if isinstance(at, ast.Expr) and at.lineno < stmt.lineno:
            frozen_here = True
    if frozen_here or _parameters_frozen(scope, module, stmt.lineno):
        return True
    if _switched_off_by_own_method(analysis, scope, module, stmt):
        return True
    if module.startswith("self.") and scope.class_name and frozen_attribute(analysis, scope.class_name, module):
        return True
    for d in analysis.flow.reaching(scope, module, stmt):
        node = d.value
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr != "deepcopy":
            if node.func.attr == "requires_grad_" and node.args and _false(node.args[0]):
                return True
            node = node.func.value
        if built_frozen(analysis, scope, node):
            return True  # ``InceptionV3([idx])``: frozen by its own constructor
        if depth < 3 and isinstance(node, ast.Call) and (dotted(node.func) or "").rsplit(".", 1)[-1] == "deepcopy" \
                and node.args and dotted(node.args[0]) and \
                frozen_module(analysis, scope, dotted(node.args[0]), d.stmt, depth + 1):
            return True
    if depth < 3 and "." not in module:
        defs = analysis.flow.reaching(scope, module, stmt)
        if defs and all(_frozen_where_made(analysis, scope, d, depth) for d in defs):
            return True
    owner = module.rpartition(".")[0]
    if depth < 3 and owner and owner != "self":
        # ``G.mapping(z)`` after ``G = G.eval().requires_grad_(False)``: a submodule of a frozen module
        return frozen_module(analysis, scope, owner, stmt, depth + 1)
    return False


def _switched_off_by_own_method(analysis, scope: Scope, module: str, stmt) -> bool:
    """``self.R.train_mode(False)`` before the forward, where the module's own method sets
    every parameter's ``requires_grad`` from its argument (``for p in self.parameters():
    p.requires_grad = flag``): the last such call on the module before ``stmt``, in the
    same block as ``stmt`` or one around it, passes False."""
    index = analysis.index
    where = index.ctx(stmt)
    if where is None:
        return False
    last = None
    for call, at in scope.calls:
        if not (isinstance(call.func, ast.Attribute) and dotted(call.func.value) == module
                and isinstance(at, ast.Expr) and at.value is call and start_of(at) < start_of(stmt)):
            continue
        placed = index.ctx(at)
        if placed is None or tuple(placed.blocks) != tuple(where.blocks)[:len(placed.blocks)]:
            continue  # under a branch the forward is not in
        value = _requires_grad_argument(analysis, scope, call, at)
        if value is not None and (last is None or start_of(at) > start_of(last[0])):
            last = (at, value)
    return last is not None and _false(last[1])


def _requires_grad_argument(analysis, scope: Scope, call: ast.Call, at):
    """The argument ``call`` passes for the flag its project method sets every parameter's
    ``requires_grad`` to, or None when the method does no such thing."""
    project = analysis.project
    if project is None:
        return None
    refs = analysis.graph.kinds.resolve_functions(call.func, scope, at)
    if not refs:
        # a module the analysis cannot type (``self.R = Refiner(cfg).cuda(n)``): the
        # project's methods of that name, when there are few and all of them agree
        refs = [ref for ref in project.functions_named(call.func.attr) if "." in ref.qualname]
    if not refs or len(refs) > 3:
        return None
    args = []
    for ref in refs:
        found = project.scope_for(ref)
        arg = _flag_passed(found[1], call) if found is not None else None
        if arg is None:
            return None
        args.append(arg)
    return args[0] if all(ast.dump(a) == ast.dump(args[0]) for a in args) else None


def _flag_passed(method: Scope, call: ast.Call):
    """What ``call`` passes for the parameter ``method`` sets every parameter's
    ``requires_grad`` to (its default when the call passes nothing), or None."""
    params = [p for p in method.params if p != "self"]
    for loop in method.loops:
        values = requires_grad_values(loop, "self")
        if not values or len(values) != 1 or not isinstance(values[0], ast.Name) or values[0].id not in params:
            continue
        name = values[0].id
        arg = argument_for(call, params.index(name), name)
        if arg is None:
            spec = method.node.args
            defaults = {a.arg: d for a, d in zip(spec.args[::-1], spec.defaults[::-1])}
            arg = defaults.get(name)
        return arg
    return None


def _lightning_freeze(analysis, call, module: str) -> bool:
    """``model.freeze()`` with no arguments on ``module``, when no project function is named
    ``freeze`` (LightningModule.freeze sets every ``requires_grad`` to False; a project's own
    ``freeze`` may freeze a part only)."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "freeze" and not call.args
            and not call.keywords and _chain_root(call.func.value) == module):
        return False
    project = analysis.project
    return project is not None and not project.functions_named("freeze") \
        and any(root in ("pytorch_lightning", "lightning") for root in
                (q.split(".")[0] for q in analysis.index.imports.aliases.values()))


def _frozen_where_made(analysis, scope: Scope, d, depth: int) -> bool:
    """``vae, ema_vae = load_vaes(H)`` where the factory freezes what it returns second, or
    a parameter for which every caller in the linted files passes a frozen module."""
    if d.kind == "param":
        return _every_caller_passes_frozen(analysis, scope, d.key, depth)
    if d.kind != "assign" or not isinstance(d.value, ast.Call):
        return False
    found = analysis.graph.kinds.only_callee(d.value.func, scope, d.stmt)
    if found is None:
        return False
    factory_analysis, factory = found
    returns = [(r, stmt_of(factory_analysis, factory, r)) for r in factory.returns]
    if not returns:
        return False
    for value, at in returns:
        if d.index is not None:
            if not isinstance(value, ast.Tuple) or d.index >= len(value.elts) or d.arity != len(value.elts):
                return False
            value = value.elts[d.index]
        name = dotted(value)
        if name is None or at is None or not frozen_module(factory_analysis, factory, name, at, depth + 1):
            return False
    return True


def _every_caller_passes_frozen(analysis, scope: Scope, param: str, depth: int) -> bool:
    project = analysis.project
    if project is None or not scope.is_function or scope.class_name or param not in scope.params:
        return False
    callers = project.callers(scope.name, module=analysis.index.module_name)
    if not callers or any(entry is None for entry in callers):
        return False
    position = scope.params.index(param)
    seen = 0
    for caller_analysis, caller_scope in callers:
        for call, at in calls_named(caller_scope, scope.name):
            arg = argument_for(call, position, param)
            name = dotted(arg) if arg is not None else None
            if name is None or not frozen_module(caller_analysis, caller_scope, name, at, depth + 1):
                return False
            seen += 1
    return seen > 0


_CHAIN_METHODS = frozenset({"eval", "train", "to", "cuda", "cpu", "float", "half", "double"})


def frozen_attribute(analysis, class_name: str, key: str) -> bool:
    """Is the module the class keeps at ``key`` (``self.avgG``) frozen wherever it is set?
    Every method that binds it freezes it afterwards (``for p in self.avgG.parameters():
    p.requires_grad = False``), or binds it to itself wrapped or moved
    (``nn.DataParallel(self.avgG)``, ``self.avgG.to(device)``), and nothing unfreezes it."""
    memo = analysis.__dict__.setdefault("_frozen_attribute_memo", {})
    if (class_name, key) not in memo:
        memo[(class_name, key)] = _frozen_attribute(analysis, class_name, key)
    return memo[(class_name, key)]


def _frozen_attribute(analysis, class_name: str, key: str) -> bool:
    methods = analysis.index.methods(class_name)
    bound = False
    for method in methods:
        for call, _ in method.calls:
            if isinstance(call.func, ast.Attribute) and call.func.attr == "requires_grad_" \
                    and _chain_root(call.func.value) == key and not _false(call.args[0] if call.args else None):
                return False  # unfrozen by name
        for node in ast.walk(method.node):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is True \
                    and any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in node.targets):
                return False  # ``p.requires_grad = True`` somewhere in the class: not provably frozen
        defs = [d for d in method.defs_of(key) if d.kind == "assign"]
        for d in defs:
            bound = True
            if _rewraps(d.value, key):
                continue
            end = (method.node.end_lineno or d.stmt.lineno) + 1
            if not (_parameters_frozen(method, key, end) or any(
                    isinstance(call.func, ast.Attribute) and call.func.attr == "requires_grad_"
                    and _chain_root(call.func.value) == key and _false(call.args[0] if call.args else None)
                    and call.lineno > d.stmt.lineno for call, _ in method.calls)
                    or _local_frozen_before(analysis, method, d)):
                return False
    return bound


def _local_frozen_before(analysis, method: Scope, d) -> bool:
    """``self.lpips = lpips_net.eval()`` after ``self.freeze_model(lpips_net)`` (or a loop
    setting ``requires_grad = False`` on its parameters): the local module was frozen before
    it was stored."""
    local = _chain_root(d.value)
    if local is None or "." in local:
        return False
    if _parameters_frozen(method, local, d.stmt.lineno):
        return True
    kinds = analysis.graph.kinds
    for call, at in method.calls:
        if at.lineno >= d.stmt.lineno or not isinstance(at, ast.Expr):
            continue
        if isinstance(call.func, ast.Attribute) and call.func.attr == "requires_grad_" \
                and dotted(call.func.value) == local and _false(call.args[0] if call.args else None):
            return True
        for position, arg in enumerate(call.args):
            if dotted(arg) != local:
                continue
            refs = kinds.resolve_functions(call.func, method, at)
            if refs and len(refs) == 1 and _helper_freezes(analysis.project, refs[0], position,
                                                           isinstance(call.func, ast.Attribute)):
                return True
    return False


def _helper_freezes(project, ref, position: int, bound: bool) -> bool:
    """Does the project function set ``requires_grad = False`` on every parameter of the
    argument at ``position`` (``def freeze_model(self, net): for p in net.parameters():
    p.requires_grad = False``)?"""
    found = project.scope_for(ref) if project is not None else None
    if found is None:
        return False
    _, scope = found
    params = list(scope.params)
    if bound and params and params[0] in ("self", "cls"):
        params = params[1:]
    if position >= len(params):
        return False
    return _parameters_frozen(scope, params[position], (scope.node.end_lineno or scope.node.lineno) + 1)


def _rewraps(value, key: str) -> bool:
    """``nn.DataParallel(self.avgG)`` or ``self.avgG.to(device)``: the same module again."""
    if _chain_root(value) == key and value is not None and not isinstance(value, (ast.Name, ast.Attribute)):
        return True
    return (isinstance(value, ast.Call) and (dotted(value.func) or "").rsplit(".", 1)[-1] in PARALLEL_WRAPPERS
            and bool(value.args) and dotted(value.args[0]) == key)


def _chain_root(node) -> Optional[str]:
    """``sampler.eval().to(device)`` → ``sampler``."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CHAIN_METHODS:
        node = node.func.value
    return dotted(node)


def _parameters_frozen(scope: Scope, module: str, before: int) -> bool:
    """``for p in module.parameters(): p.requires_grad = False`` before line ``before``, with
    no test around the assignment."""
    for loop in scope.loops:
        if not isinstance(loop, ast.For) or loop.lineno >= before:
            continue
        values = requires_grad_values(loop, module)
        if values and any(value is not None and _false(value) for value in values):
            return True
    return False


def _false(arg) -> bool:
    return isinstance(arg, ast.Constant) and arg.value is False


def defines_module_class(analysis) -> bool:
    """Does the file define an ``nn.Module`` subclass? Such a file works on tensors even
    when it imports nothing from torch (a layer file of a project whose ``nn`` comes from
    the notebook or script that runs it)."""
    project = analysis.project
    if project is None:
        return False
    module = analysis.index.module_name
    return any(project.is_module_class(module, name) for name in analysis.index.classes)


PARAMETER_ATTRS = frozenset({"weight", "bias"})
MAX_PARAMETER_DEPTH = 6


def parameter_read(analysis, scope: Scope, expr, stmt, depth: int = 0) -> Optional[Evidence]:
    """Is ``expr`` computed (through local names) from a submodule's ``weight`` or ``bias``
    read with its graph (``y = F.conv2d(x, self.conv.weight)``)? A parameter records
    autograd, so anything computed from it carries a graph while grad is on."""
    if depth > MAX_PARAMETER_DEPTH or expr is None:
        return None
    for node in _graph_reads(expr):
        if isinstance(node, ast.Attribute) and node.attr in PARAMETER_ATTRS:
            kind = analysis.graph.kinds.kind_of(node.value, scope, stmt)
            if kind is not None and kind.kind == "module":
                why = kind.why
            elif _submodule_of_module(analysis, scope, node.value):
                why = f"an attribute of the nn.Module `{scope.class_name}`"
            else:
                continue
            return Evidence(f"computed from `{dotted(node)}`, a parameter of the module `{dotted(node.value)}` "
                            f"({why}), which records autograd", node.lineno, strength=CONVENTION)
        elif isinstance(node, ast.Name):
            for d in analysis.flow.reaching(scope, node.id, stmt):
                if d.kind == "assign" and d.value is not None and not analysis.grad.stmt_off(d.stmt):
                    found = parameter_read(analysis, scope, d.value, d.stmt, depth + 1)
                    if found is not None:
                        return found
    return None


def _graph_reads(expr):
    """Names and attributes read by ``expr`` outside detaching calls and metadata."""
    from .detachers import DETACH_BUILTINS, DETACH_METHODS, NON_CARRYING_ATTRS

    todo = [expr]
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.Attribute):
            if node.attr in NON_CARRYING_ATTRS:
                continue
            yield node
            todo.append(node.value)
            continue
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in DETACH_METHODS:
                continue
            if isinstance(func, ast.Name) and func.id in DETACH_BUILTINS:
                continue
            todo.extend(node.args)
            todo.extend(k.value for k in node.keywords)
            if isinstance(func, ast.Attribute):
                todo.append(func.value)
            continue
        if isinstance(node, ast.Name):
            yield node
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        todo.extend(ast.iter_child_nodes(node))


def _submodule_of_module(analysis, scope: Scope, node) -> bool:
    """``self.conv`` in a method of an nn.Module subclass: an attribute whose ``weight`` is read."""
    path = dotted(node)
    project = analysis.project
    return bool(path and path.count(".") == 1 and path.startswith("self.") and scope.class_name
                and project is not None and project.is_module_class(analysis.index.module_name, scope.class_name))
