"""Does a function let any autograd graph out? An action-selection step
(``return self.q_net(state).argmax().detach().cpu().numpy()``) or a sampling script that
only saves what it generates runs its forward passes for their values alone: when the
function computes no gradient, returns nothing that carries a graph and stores nothing
that does anywhere that outlives the call, no gradient can ever be taken of what its
forwards record.

Every way out is checked: returned and yielded values, assignments to attributes and to
items of containers the function did not create, mutating calls on such containers
(``self.buffer.append(q)``, ``self.w.add_(out)``), and graph-carrying arguments handed to
project functions that may store or backpropagate them.
"""

from __future__ import annotations

import ast
from typing import Optional

from .detachers import COPYING_BUILTINS, DISTRIBUTION_DRAWS
from .module_index import FUNC_TYPES, Scope, walk_nodes
from .names import dotted

# Builtins that keep nothing of their arguments beyond the value they return (which the
# assignments and returns of the function are checked for).
_READ_ONLY_ROOTS = frozenset({"print", "len", "isinstance", "repr", "str", "format", "float", "int", "round",
                              "enumerate"}) | COPYING_BUILTINS


MAX_DEPTH = 2


def graph_stays_inside(analysis, scope: Scope, depth: int = 0, graph=None, but_returns: bool = False) -> Optional[str]:
    """Why no graph recorded in ``scope`` can leave it, or None when one may. ``graph``
    is the oracle to ask (one that assumes an argument carries a graph, for a callee).
    With ``but_returns``, what the function returns is left to its callers to judge."""
    if not scope.is_function or scope.backward_sites or depth > MAX_DEPTH:
        return None
    graph = graph or analysis.graph
    local = _local_names(scope)
    from_calls = _bound_from_calls(scope)
    for node in walk_nodes(scope.node):
        if node is not scope.node and isinstance(node, FUNC_TYPES + (ast.ClassDef,)):
            return None  # a closure (``optimizer.step(closure)``) may take the graph elsewhere
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal)):
            return None
    for stmt in _statements(scope):
        if isinstance(stmt, ast.Return) and stmt.value is not None and not but_returns:
            # What leaves must be free of graphs by its own spelling (``.item()``, ``.data``,
            # ``.numpy()``...): the oracle failing to prove a graph is not proof of none.
            if graph.carrying(stmt.value, stmt) is not None or not spelled_graph_free(analysis, scope, stmt.value,
                                                                                        stmt):
                return None
        elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(_outlives_call(t, local) for t in targets) and (
                    _holds_graph(analysis, scope, graph, stmt.value, stmt)
                    or _carried_by(analysis, scope, graph, stmt.value, stmt, from_calls)):
                return None
    for call, stmt in scope.calls:
        args = list(call.args) + [k.value for k in call.keywords]
        if not args or not any(_may_carry(analysis, scope, graph, arg, stmt, from_calls) for arg in args):
            continue
        if not harmless_call(analysis, scope, call, stmt, local, depth):
            return None
    return "it computes no gradient, returns no graph and stores none where it outlives the call"


def _holds_graph(analysis, scope: Scope, graph, value, stmt) -> bool:
    """Does a value stored where it outlives the call hold a graph: carry one itself, or
    wrap one (``batch.policy = Batch(act_hat=act_hat, loss=loss)``, a record built by a
    constructor the oracle cannot see into), unless spelled graph-free?"""
    if graph.carrying(value, stmt) is not None:
        return True
    if spelled_graph_free(analysis, scope, value, stmt):
        return False
    return any(graph.carrying(node, stmt) is not None for node in ast.walk(value)
               if node is not value and isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)))


def spelled_graph_free(analysis, scope: Scope, expr, stmt, depth: int = 0) -> bool:
    """Is ``expr`` free of any graph by how it is written: a constant, a chain through a
    detaching method or attribute (``q.max(1)[1].data[0]``, ``out.cpu().numpy()``), a
    draw (``sample()``) from anything but a model, a Python conversion, or a name every
    reaching definition of which is such a value."""
    from .graph import _explicitly_detached

    if depth > 4:
        return False
    if isinstance(expr, (ast.Tuple, ast.List)):
        return all(spelled_graph_free(analysis, scope, e, stmt, depth + 1) for e in expr.elts)
    if isinstance(expr, ast.Dict):
        return all(spelled_graph_free(analysis, scope, v, stmt, depth + 1) for v in expr.values)
    if isinstance(expr, ast.UnaryOp):  # ``-(p * log_p).sum().item()``
        return spelled_graph_free(analysis, scope, expr.operand, stmt, depth + 1)
    if isinstance(expr, ast.BinOp):  # ``loss.item() / n``
        return all(spelled_graph_free(analysis, scope, e, stmt, depth + 1) for e in (expr.left, expr.right))
    if isinstance(expr, ast.IfExp):  # ``a.cpu().numpy() if deterministic else b.cpu().numpy()``
        return all(spelled_graph_free(analysis, scope, e, stmt, depth + 1) for e in (expr.body, expr.orelse))
    node = expr
    while True:
        if _explicitly_detached(node):  # a constant, ``.item()``, ``.data``, ``float(x)`` on the chain
            return True
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            func = node.func
            qual = analysis.index.imports.qualname(func) or ""
            if qual.split(".")[0] in ("numpy", "math", "statistics", "random"):
                return True  # a NumPy array or a Python number
            if qual in COPYING_CONSTRUCTORS and not any(k.arg == "requires_grad" for k in node.keywords):
                return True  # ``torch.tensor([i, j])``: a new leaf copied from the data, whatever it is given
            if qual.startswith("torch.") and node.args and all(
                    spelled_graph_free(analysis, scope, a, stmt, depth + 1) for a in node.args):
                return True  # ``F.softmax(logits.detach(), dim=1)``: a torch function of graph-free inputs
            if _project_function_graph_free(analysis, scope, node, stmt, depth):
                return True  # ``utils.to_np(action)``: a helper whose every return is graph-free
            if not isinstance(func, ast.Attribute):
                return False
            if func.attr in DISTRIBUTION_DRAWS and not _is_module(analysis, scope, func.value, stmt):
                return True  # a draw from a distribution or an action space (a model's own ``sample()`` is not)
            node = func.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            break
    if isinstance(node, ast.Name):  # the chain's root (or ``expr`` itself): judged by its definitions
        defs = analysis.flow.reaching(scope, node.id, stmt)
        return bool(defs) and all(_def_graph_free(analysis, scope, node.id, d, depth) for d in defs)
    return False


def _def_graph_free(analysis, scope: Scope, key: str, d, depth: int) -> bool:
    """Is what the definition binds graph-free by its spelling: an assignment of such a
    value, an empty container filled only with such values, or the target of a ``for`` over
    such an iterable (``for sample in G(z).data.cpu().numpy(): ...``)?"""
    if d.kind == "for":
        return d.value is not None and spelled_graph_free(analysis, scope, d.value, d.stmt, depth + 1)
    if d.kind == "aug":  # ``hit1 += 1``: graph-free when what is added is (the other bindings are judged too)
        return d.value is not None and spelled_graph_free(analysis, scope, d.value, d.stmt, depth + 1)
    if d.kind == "assign" and d.index is not None and isinstance(d.value, ast.Call):
        # ``features, edge_index, ... = batch_graphify(...)``: item ``index`` of every tuple
        # the project function returns
        return d.arity is not None and _returned_item_graph_free(analysis, scope, d.value, d.index, d.arity, d.stmt,
                                                                   depth)
    value = d.value
    if d.kind == "assign" and d.index is not None and isinstance(value, (ast.Tuple, ast.List)) \
            and len(value.elts) == d.arity and not any(isinstance(e, ast.Starred) for e in value.elts):
        value = value.elts[d.index]  # ``edge_index, edge_type = [], []``: each name its own item
    elif d.kind != "assign" or d.index is not None:
        return False
    if _empty_container(value):
        return _filled_graph_free(analysis, scope, key, value, depth)
    return (spelled_graph_free(analysis, scope, value, d.stmt, depth + 1)
            or _filled_graph_free(analysis, scope, key, value, depth))


def _empty_container(value) -> bool:
    return (isinstance(value, ast.List) and not value.elts) or (isinstance(value, ast.Dict) and not value.keys)


def _filled_graph_free(analysis, scope: Scope, key: str, value, depth: int) -> bool:
    """``logits = torch.zeros(n, k)`` (or ``[]``) whose every store (``logits[idx] =
    net(x).detach()``, ``out.append(f.cpu().numpy())``) writes a value graph-free by its
    spelling: the tensor or list it builds holds no graph."""
    from .stores import stores_into

    if _empty_container(value):
        pass  # ``losses = {}`` then ``losses["pi"] = -(ratio * adv).mean()``: judged by what is stored
    elif isinstance(value, ast.Call):
        qual = analysis.index.imports.qualname(value.func) or ""
        if not (qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in FRESH_TENSORS) or any(
                k.arg == "requires_grad" for k in value.keywords):
            return False
    else:
        return False
    stores = stores_into(analysis, scope, key)
    return bool(stores) and all(spelled_graph_free(analysis, scope, site.value, site.stmt, depth + 1)
                                for site in stores)


# Constructors that copy their data into a new tensor with ``requires_grad=False``: given
# a tensor, ``torch.tensor`` copies it detached (and warns).
COPYING_CONSTRUCTORS = frozenset({"torch.tensor", "torch.LongTensor", "torch.FloatTensor", "torch.BoolTensor",
                                  "torch.IntTensor", "torch.DoubleTensor", "torch.from_numpy"})


def _returned_item_graph_free(analysis, scope: Scope, call: ast.Call, index: int, arity: int, stmt,
                              depth: int) -> bool:
    """Is item ``index`` graph-free in every tuple of ``arity`` items that the project
    functions ``call`` resolves to return?"""
    def item_free(callee_analysis, callee, r) -> bool:
        value = r.value
        return (isinstance(value, ast.Tuple) and len(value.elts) == arity
                and not any(isinstance(e, ast.Starred) for e in value.elts)
                and spelled_graph_free(callee_analysis, callee, value.elts[index], r, depth + 1))

    return _every_return(analysis, scope, call, stmt, depth, item_free, arity)


def _every_return(analysis, scope: Scope, call: ast.Call, stmt, depth: int, judge, arity: int = 0) -> bool:
    """Does ``judge(callee analysis, callee, return node)`` hold for every ``return`` of
    the few project functions ``call`` resolves to (and is there one)?"""
    project = analysis.project
    if project is None or depth > 2:
        return False
    refs = analysis.graph.kinds.resolve_functions(call.func, scope, stmt, arity)
    if not refs or len(refs) > 3:
        return False
    for ref in refs:
        found = project.scope_for(ref)
        if found is None:
            return False
        callee_analysis, callee = found
        returns = [node for node in walk_nodes(callee.node) if isinstance(node, ast.Return)]
        if not returns or not all(judge(callee_analysis, callee, r) for r in returns):
            return False
    return True


FRESH_TENSORS = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like"})


def _project_function_graph_free(analysis, scope: Scope, call: ast.Call, stmt, depth: int) -> bool:
    """Does ``call`` reach only project functions whose every ``return`` is graph-free by
    its spelling (``def to_np(t): return t.detach().cpu().numpy()``)?"""
    return _every_return(analysis, scope, call, stmt, depth, lambda callee_analysis, callee, r: (
        r.value is None or spelled_graph_free(callee_analysis, callee, r.value, r, depth + 1)))


def _carried_by(analysis, scope: Scope, graph, value, stmt, from_calls: set) -> bool:
    """Could the value stored, or an item of the tuple, list or dict it builds
    (``self.transition = [state, log_prob]``), carry a graph (see :func:`_may_carry`)?"""
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return any(_carried_by(analysis, scope, graph, e.value if isinstance(e, ast.Starred) else e, stmt, from_calls)
                   for e in value.elts)
    if isinstance(value, ast.Dict):
        return any(_carried_by(analysis, scope, graph, v, stmt, from_calls) for v in value.values)
    if graph.carrying(value, stmt) is not None:
        return True
    return _may_carry(analysis, scope, graph, value, stmt, from_calls) and \
        not spelled_graph_free(analysis, scope, value, stmt)


def _is_module(analysis, scope: Scope, node, stmt) -> bool:
    kind = analysis.graph.kinds.kind_of(node, scope, stmt)
    return kind is not None and kind.kind == "module"


def _bound_from_calls(scope: Scope) -> set:
    """Names the function binds to the result of a call: values whose graph the oracle may
    fail to prove (a model whose class it cannot see), so they are not assumed graph-free."""
    return {key for key, defs in scope.defs.items()
            if any(d.kind in ("assign", "aug") and any(isinstance(n, ast.Call) for n in walk_nodes(d.value))
                   for d in defs if d.value is not None)}


def _may_carry(analysis, scope: Scope, graph, arg, stmt, from_calls: set) -> bool:
    """Could ``arg`` carry a graph? Proven by the oracle, or not excluded: it reads a name
    bound from a call's result. Only values the oracle cannot prove and that come from
    parameters, constants or attributes count as graph-free."""
    if graph.carrying(arg, stmt) is not None:
        return True
    from .graph import _explicitly_detached
    from .module_index import expr_keys

    if _explicitly_detached(arg):
        return False
    if isinstance(arg, ast.Name):
        # ``state = self.preprocess(state)``: the call's argument is still the parameter.
        defs = analysis.flow.reaching(scope, arg.id, stmt)
        if defs and all(d.kind == "param" for d in defs):
            return False
    return bool(analysis.flow.sources_of(scope, expr_keys(arg)) & from_calls)


def _statements(scope: Scope):
    for node in walk_nodes(scope.node):
        if isinstance(node, ast.stmt) and node is not scope.node:
            yield node


def _local_names(scope: Scope) -> set:
    """Names the function binds itself (not parameters): containers it created."""
    return {key for key, defs in scope.defs.items()
            if "." not in key and any(d.kind not in ("param", "import", "def") for d in defs)
            and not any(d.kind == "param" for d in defs)}


def _outlives_call(target, local: set) -> bool:
    """An assignment target that is not a plain local name: ``self.x``, ``out[k]`` of a
    container that came from outside."""
    if isinstance(target, ast.Name):
        return False
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_outlives_call(e, local) for e in target.elts)
    if isinstance(target, ast.Starred):
        return _outlives_call(target.value, local)
    if isinstance(target, ast.Subscript):
        base = dotted(target.value)
        return base is None or base not in local
    if isinstance(target, ast.Attribute) and target.attr == "data":
        return False  # ``z.data = ...`` takes the values only, never a graph
    return True  # an attribute: state on an object


def harmless_call(analysis, scope: Scope, call: ast.Call, stmt, local: set, depth: int = 0) -> bool:
    """A call that takes a graph-carrying argument and can neither keep nor backpropagate it."""
    func = call.func
    imports = analysis.index.imports
    if analysis.graph.kinds.module_call(call, scope, stmt) is not None:
        return True  # a forward pass: what it returns is followed through the function
    if isinstance(func, ast.Name):
        if func.id in _READ_ONLY_ROOTS:
            return True
        refs = analysis.graph.kinds.resolve_functions(func, scope, stmt)
        if not refs and func.id in imports.aliases:
            return True  # a library function (``save_image(out, path)``)
        return _project_function_harmless(analysis, scope, refs, depth)
    if not isinstance(func, ast.Attribute):
        return False
    receiver = dotted(func.value)
    root = receiver.split(".")[0] if receiver else None
    if root is not None and root in imports.aliases:
        refs = analysis.graph.kinds.resolve_functions(func, scope, stmt)
        if refs:
            return _project_function_harmless(analysis, scope, refs, depth)  # ``Grid.save(images)``
        return True  # a library function (``torch.cat``, ``np.save``, ``plt.imshow``): it keeps nothing
    if root is not None and root in local and "." not in receiver:
        return True  # a method of a value the function built (``samples.append(out)``, ``out.argmax()``)
    if root is None and isinstance(func.value, ast.Call):
        return True  # ``model(x).argmax()``: a method of a fresh result
    if root == "self":
        refs = analysis.graph.kinds.resolve_functions(func, scope, stmt)
        return bool(refs) and _project_function_harmless(analysis, scope, refs, depth)  # a static helper
    return False


def _project_function_harmless(analysis, scope: Scope, refs, depth: int) -> bool:
    """A free project function that neither calls ``backward()`` nor is a method that could
    store the value on its object: ``save_grid(images, path)``."""
    project = analysis.project
    if project is None:
        return False
    if not refs or len(refs) > 3:
        return False
    for ref in refs:
        found = project.scope_for(ref)
        if found is None or project.calls_backward(ref):
            return False
        callee_analysis, callee = found
        if callee.class_name and callee.params[:1] in (["self"], ["cls"]):
            return False  # a method may keep the value on its object
        for param in callee.params or [None]:
            # Each argument in turn is taken to carry a graph: the callee must let none out.
            oracle = callee_analysis.graph.assuming(callee, param) if param else None
            if graph_stays_inside(callee_analysis, callee, depth + 1, oracle) is None:
                return False
    return True


_SHAPE_METHODS = frozenset({"size", "numel", "dim", "nelement"})


def shape_probe(scope: Scope, stmt) -> bool:
    """Is the forward at ``stmt`` run only to learn a shape? Every later use of the names it
    binds reads ``.shape``/``.size()``/``.numel()``/``len()``, or it is returned as such."""
    targets = [t for t in getattr(stmt, "targets", [getattr(stmt, "target", None)]) if t is not None]
    names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(stmt, ast.Return) and stmt.value is not None:
        return _reads_shape_only(stmt.value)
    if not names:
        return False
    parents = {}
    for node in walk_nodes(scope.node):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    used = False
    for node in walk_nodes(scope.node):
        if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load):
            used = True
            if not _shape_use(node, parents):
                return False
    return used


def _reads_shape_only(expr) -> bool:
    """``self.body(x).view(-1).shape[0]``: a chain that ends in a shape read."""
    node = expr
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and node.attr in ("shape", "ndim"):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SHAPE_METHODS


def _shape_use(node, parents) -> bool:
    parent = parents.get(id(node))
    while isinstance(parent, ast.Attribute) and parent.attr not in ("shape", "ndim"):
        # ``out.view(-1).shape``: methods that reshape keep the question about shape
        call = parents.get(id(parent))
        if not (isinstance(call, ast.Call) and call.func is parent and parent.attr in ("view", "reshape", "flatten",
                                                                                         "squeeze", "unsqueeze")):
            break
        node, parent = call, parents.get(id(call))
    if isinstance(parent, ast.Attribute) and parent.attr in ("shape", "ndim"):
        return True
    if isinstance(parent, ast.Attribute) and parent.attr in _SHAPE_METHODS:
        return isinstance(parents.get(id(parent)), ast.Call)
    call = parent
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "len"
