"""TLL003 redundant-state-copy."""

from __future__ import annotations

import ast
from typing import Optional

from ..analysis.figures import run_once
from ..analysis.module_index import enclosing_block
from ..analysis.lifetimes import outlives_iteration
from ..analysis.read_only_callee import read_only_by_callee
from ..analysis.repetition import setup_only
from ..analysis.single_pass import loop_counter
from ..analysis.names import dotted, words
from ..analysis.state_copies import (copied_again_by_callee, dead_source, flattened_copy, never_read,
                                     per_round_working_set, product_of_call, returns_copies, template_loop)
from ..analysis.summaries import summary_for
from ..analysis.stores import all_stores, bindings_of
from ..diagnostics import SAFE, UNSAFE, Edit, Fix
from .base import Invalid, Rule, RuleContext


class RedundantStateCopy(Rule):
    """
    ## What it does
    Finds `copy.deepcopy(...)` of a state dict or module where the copy is wasted or piles
    up: passed straight into `load_state_dict(...)` (directly or through a name used only
    there); a state dict copied only as a key template, whose every entry the loop right
    after replaces before reading it (`for k in w: w[k] = 0.0`); a copy passed to a project
    function that deep-copies that argument again and uses it no other way, or that only reads
    its weights (iterates `parameters()` and reads `p.data` into new tensors), directly or in a
    local list made for that one call (`pair.append(copy.deepcopy(m)); mix(pair)`); a module copied
    only to flatten its parameters (`parameters_to_vector(deepcopy(m).parameters())`); or a
    copy stored per iteration into a container that outlives the loop; a copy of this
    iteration's own fresh object that is not used after the copy (binding it would do); the
    deep copies a project function returns, gathered every iteration into a local list
    that nothing reads (`all_models += train_round(...)`). The single
    best-model snapshot (`best = copy.deepcopy(model.state_dict())`) is the recommended
    idiom and stays quiet, and so are snapshots that are the function's product (a local
    list or dict of copies that it returns) and one round's working set (a list re-created
    in each iteration of an enclosing loop and kept by nothing else). Nor are copies made
    while an object is built (`__init__`, or a helper only it calls: a model's repeated
    blocks) or stored by a loop's own counter (`models[i] = deepcopy(global_model)` for
    `i in range(K)`) in a loop nothing repeats: a fixed number of copies, the program's product.

    ## Why is this bad
    `load_state_dict` copies every tensor into the module's own parameters, so a deep copy
    made only to be loaded doubles the peak memory of the weights for nothing (seed
    incident: 720 MB per agent clone, 3–5 GB per generation lingering). Deep copies kept
    per iteration hold a full copy of the weights each, on the GPU when the model is there.

    ## Example
    ```python
    new_agent.actor.load_state_dict(copy.deepcopy(self.actor.state_dict()))
    ```

    ## Use instead
    ```python
    new_agent.actor.load_state_dict(self.actor.state_dict())
    ```

    ## Fix safety
    Dropping a deep copy that only feeds `load_state_dict` is **safe**: the copy is never
    seen by anything else. For accumulated state-dict copies the fix keeps a detached CPU
    copy (`{k: v.detach().to("cpu", copy=True) for k, v in sd.items()}`): **unsafe**, since
    the copies change device. Accumulated module copies get no fix. A key-template copy
    becomes a shallow `dict(...)` (**unsafe**: the dict loses the state dict's metadata); a
    copy the callee makes again is dropped (**unsafe**: later arguments could change the
    original before the callee copies it). Flattened copies get no fix.

    ## Memory impact
    A full copy of the weights per call (wasted copies: peak memory doubles on every call)
    or per iteration (accumulated ones: 1M iterations keep 1M copies).
    """

    code = "TLL003"
    name = "redundant-state-copy"
    summary = "A deep copy of a state dict or module is wasted or accumulates"
    fix_availability = "sometimes"
    repro = "tll003_agent_clone"

    VALID = [
        """
import copy
best = None
for epoch in range(10):
    if val_loss(epoch) < best_loss:
        best = copy.deepcopy(model.state_dict())
""",
    ]
    INVALID = [
        Invalid(
            """
import copy
def clone(self):
    new = Agent()
    new.actor.load_state_dict(copy.deepcopy(self.actor.state_dict()))
    return new
""",
            fixed="""
import copy
def clone(self):
    new = Agent()
    new.actor.load_state_dict(self.actor.state_dict())
    return new
""",
        ),
    ]

    def check(self, ctx: RuleContext):
        analysis = ctx.analysis
        imports = analysis.index.imports
        for scope in analysis.index.scopes:
            stores = all_stores(analysis, scope)
            yield from self._gathered_copies(ctx, scope, stores)
            for call, stmt in scope.calls:
                if imports.qualname(call.func) != "copy.deepcopy" or len(call.args) != 1:
                    continue
                what = self._copied(analysis, scope, stmt, call.args[0])
                wasted = self._wasted(analysis, scope, stmt, call, what)
                if wasted is not None:
                    message, fix, note = wasted
                    yield self.diagnostic(ctx, call, message, fix(ctx) if fix else None, [note])
                    continue
                if what is None:
                    continue
                loaded = self._only_loaded(scope, stmt, call)
                if loaded is not None:
                    fix = Fix(SAFE, "Drop the deep copy: `load_state_dict` copies the tensors itself",
                              (Edit(ctx.start(call), ctx.end(call), ctx.text_of(call.args[0])),))
                    message = (f"deep copy of {what} is only passed to `load_state_dict`, which copies it "
                               f"again; the copy doubles the weights' memory for nothing")
                    yield self.diagnostic(ctx, call, message, fix, [f"load: line {loaded}"])
                    continue
                for site in stores:
                    if site.stmt is not stmt or not any(n is call for n in ast.walk(site.value)):
                        continue
                    if site.how == "setitem" and (_constant_key(site.key_expr)
                                                  or _list_container(analysis, scope, site.container, stmt)
                                                  or _slot_of_own_loop(analysis, stmt, site.container, site.key_expr)):
                        continue  # a fixed slot, or a slot of a list, is overwritten, not accumulated
                    own = [d for d in scope.defs_of(site.container) if d.kind == "aug"]
                    escape = outlives_iteration(analysis, scope, stmt, site.container, own_defs=own)
                    if escape is None or product_of_call(scope, site.container) \
                            or per_round_working_set(analysis, scope, stmt, site.container) \
                            or _snapshots_read_after(analysis, scope, site.container, escape.loop) \
                            or _guarded_by_fixed_list(analysis, scope, stmt):
                        continue  # snapshots the caller reads, one round's working set, or restored below
                    if _built_once(analysis, scope, stmt, site):
                        continue  # a constructor's blocks, or one slot per index of a loop the program runs once
                    fix = None
                    if what == "a state dict":
                        arg = ctx.text_of(call.args[0])
                        fix = Fix(UNSAFE, "Keep a detached CPU copy instead",
                                  (Edit(ctx.start(call), ctx.end(call),
                                        f'{{k: v.detach().to("cpu", copy=True) for k, v in {arg}.items()}}'),))
                    every = "iteration" if escape.loop is not None else "call"
                    message = (f"deep copy of {what} is stored in `{site.container}` on every {every}; the copies "
                               f"pile up: one more full copy of the weights per {every}, never released")
                    yield self.diagnostic(ctx, call, message, fix, [f"lifetime: {escape.text}"])
                    break

    def _gathered_copies(self, ctx, scope, stores):
        """``all_models += train_round(...)``: the copies a project function returns, gathered
        every iteration into a local that nothing reads."""
        analysis = ctx.analysis
        project = analysis.project
        if project is None:
            return
        gathered = [(site.stmt, site.container, site.value) for site in stores if site.how in ("append", "extend")]
        gathered += [(stmt, stmt.target.id, stmt.value) for stmt in scope.statements
                     if isinstance(stmt, ast.AugAssign) and isinstance(stmt.op, ast.Add)
                     and isinstance(stmt.target, ast.Name) and isinstance(stmt.value, (ast.Name, ast.Call))]
        for stmt, container, value in gathered:
            if not never_read(scope, container):
                continue
            if isinstance(value, ast.Name):
                defs = analysis.flow.reaching(scope, value.id, stmt)
                value = defs[0].value if len(defs) == 1 and defs[0].kind == "assign" else None
            if not isinstance(value, ast.Call):
                continue
            refs = analysis.graph.kinds.resolve_functions(value.func, scope, stmt)
            summary = summary_for(project, refs[0]) if len(refs) == 1 else None
            if summary is None or not returns_copies(summary.analysis, summary.scope):
                continue
            own = [d for d in scope.defs_of(container) if d.kind == "aug"]
            escape = outlives_iteration(analysis, scope, stmt, container, own_defs=own)
            if escape is None or escape.loop is None:
                continue
            message = (f"the deep copies returned by `{ast.unparse(value.func)}()` are gathered into "
                       f"`{container}` on every iteration and never read: they pile up, a full copy of the "
                       f"weights each, for the whole loop")
            yield self.diagnostic(ctx, stmt, message, None,
                                  [f"copies: `{summary.scope.name}` returns deep copies ({summary.where})",
                                   f"lifetime: {escape.text}"])

    @staticmethod
    def _wasted(analysis, scope, stmt, call, what):
        """(message, fix maker or None, note) for a copy whose tensors nobody reads."""
        source = ast.unparse(call.args[0])
        if what == "a state dict":
            loop = template_loop(scope, stmt, call)
            if loop is not None:
                def fix(ctx):
                    return Fix(UNSAFE, "Copy the dict, not its tensors: every entry is replaced anyway",
                               (Edit(ctx.start(call.func), ctx.end(call.func), "dict"),))
                return (f"deep copy of {what} whose every entry the loop at line {loop} replaces before reading it: "
                        f"a full copy of the weights is made and dropped on every call",
                        fix, f"template: `for` at line {loop} rebinds every key")
        for outer, _ in scope.calls:
            if call in outer.args:
                again = copied_again_by_callee(analysis, scope, stmt, call, outer)
                if again is not None:
                    def fix(ctx):
                        # Unsafe: arguments evaluated after the copy could change the original first.
                        return Fix(UNSAFE, "Pass the original: the callee copies it itself",
                                   (Edit(ctx.start(call), ctx.end(call), ctx.text_of(call.args[0])),))
                    return (f"deep copy of {what or f'`{source}`'} is passed to `{ast.unparse(outer.func)}()`, "
                            f"which deep-copies it again and reads only its own copy: one full copy "
                            f"{'of the weights ' if what else ''}wasted per call",
                            fix, f"callee: {again}")
        read = read_only_by_callee(analysis, scope, stmt, call)
        if read is not None:
            callee, where = read
            ctx = analysis.index.ctx(stmt)
            repeated = (ctx is not None and ctx.loops) or any(
                isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp))
                and any(c is call for c in ast.walk(n)) for n in ast.walk(stmt))
            every = "iteration" if repeated else "call"
            return (f"deep copy of {what or f'`{source}`'} is handed to `{callee}()`, which only reads its weights "
                    f"(and copies what it keeps): the original would do, one full copy of the model is made and "
                    f"dropped on every {every}", None, f"callee: {where}")
        dead = dead_source(analysis, scope, stmt, call)
        if dead is not None:
            return (f"deep copy of {what or f'`{source}`'} whose original is not used after it: binding "
                    f"`{source}` would do, the copy doubles its memory on every iteration for nothing",
                    None, f"source: {dead}")
        if what in ("a module", None):
            flat = flattened_copy(analysis, call, scope)
            if flat is not None:
                return (f"deep copy of `{source}` (a module) is made only to read its parameters into a new vector "
                        f"({flat}): one full copy of the module, with its buffers and gradients, wasted per call",
                        None, f"flattened: {flat}")
        return None

    @staticmethod
    def _copied(analysis, scope, stmt, arg) -> Optional[str]:
        if _is_state_dict_call(arg):
            return "a state dict"
        key = dotted(arg)
        if key is not None:
            for d in analysis.flow.reaching(scope, key, stmt):
                value = d.value
                if isinstance(value, ast.Call) and analysis.index.imports.qualname(value.func) == "copy.deepcopy" \
                        and value.args:
                    value = value.args[0]  # a copy of a copy
                if d.kind == "assign" and _is_state_dict_call(value):
                    return "a state dict"
        kind = analysis.graph.kinds.kind_of(arg, scope, stmt)
        if kind is not None and kind.kind == "module":
            return "a module"
        return None

    @staticmethod
    def _only_loaded(scope, stmt, call) -> Optional[int]:
        """Line of the module ``load_state_dict`` whose argument is the copy, or None.

        Only the direct argument counts: a copy kept in a name may be loaded much later,
        after the source changed (the best-weights idiom). ``assign=True`` keeps the given
        tensors, and optimizers' ``load_state_dict`` may alias them: both need the copy."""
        for other, _ in scope.calls:
            func = other.func
            if not (isinstance(func, ast.Attribute) and func.attr == "load_state_dict"
                    and other.args and other.args[0] is call):
                continue
            if any(k.arg == "assign" for k in other.keywords):
                return None
            if _optimizer_like(func.value) or _optimizer_like(call.args[0]):
                return None
            return other.lineno
        return _loaded_next(scope, stmt, call)


def _loaded_next(scope, stmt, call) -> Optional[int]:
    """``w = copy.deepcopy(src.state_dict())`` immediately followed by the only use,
    ``dst.load_state_dict(w)``: nothing can change ``src`` in between."""
    if not (isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        return None
    name = stmt.targets[0].id
    block = enclosing_block(scope.node, stmt)
    if block is None:
        return None
    position = next(i for i, s in enumerate(block) if s is stmt)
    if position + 1 >= len(block):
        return None
    nxt = block[position + 1]
    load = nxt.value if isinstance(nxt, ast.Expr) else None
    if not (isinstance(load, ast.Call) and isinstance(load.func, ast.Attribute) and load.func.attr == "load_state_dict"
            and len(load.args) == 1 and not load.keywords and isinstance(load.args[0], ast.Name)
            and load.args[0].id == name and not _optimizer_like(load.func.value)):
        return None
    reads = [n for n in ast.walk(scope.node) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
    return load.lineno if len(reads) == 1 else None


def _optimizer_like(expr) -> bool:
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        expr = expr.func.value
    path = dotted(expr) or ""
    return any(w in _OPTIMIZER_WORDS for w in words(path.rsplit(".", 1)[-1]))


_OPTIMIZER_WORDS = frozenset({"optim", "optimizer", "opt", "optimiser", "scheduler", "sched", "scaler",
                              "lr"})


def _is_state_dict_call(value) -> bool:
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "state_dict"


def _constant_key(expr) -> bool:
    if isinstance(expr, ast.UnaryOp):
        expr = expr.operand
    return isinstance(expr, ast.Constant)


def _snapshots_read_after(analysis, scope, container: str, loop) -> bool:
    """``models_temp = []`` (or an ensemble's ``nets = []`` in a script) filled with one copy
    per client, member or saved epoch, then used as a whole after that loop: read item by
    item (``clone_model(models_temp[i], c.model)``), iterated (``for net in nets``) or
    handed to a call (``save_object(weight_samples, path)``). The copies are what the code
    set out to build, made once per run or call, not a history that grows with steps."""
    if "." in container or loop is None:
        return False
    defs = [d for d in scope.defs_of(container) if d.kind == "assign"]
    if not defs or any(analysis.index.ctx(d.stmt) is None or analysis.index.ctx(d.stmt).loops for d in defs):
        return False  # created once, outside any loop
    end = loop.end_lineno or loop.lineno
    for node in ast.walk(scope.node):
        if getattr(node, "lineno", 0) <= end:
            continue
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == container \
                and isinstance(node.ctx, ast.Load) and not isinstance(node.slice, (ast.Constant, ast.UnaryOp)):
            return True  # ``models_temp[i]``, not just the last one (``history[-1]``)
        if isinstance(node, ast.For) and _iterates(node.iter, container):
            return True  # ``for net in nets: preds.append(net(x))``: each member used
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) not in _REDUCERS and any(
                isinstance(a, ast.Name) and a.id == container for a in list(node.args) + [k.value for k in node.keywords]):
            return True  # ``save_object(weight_samples, path)``
    return False


# Reading the copies only through these (or a comprehension that averages them, as a
# manual SWA does) needs a running value, not every copy.
_REDUCERS = frozenset({"len", "sum", "min", "max", "sorted", "any", "all"})


def _iterates(items, container: str) -> bool:
    if isinstance(items, ast.Name):
        return items.id == container
    if isinstance(items, ast.Call) and getattr(items.func, "id", None) in ("enumerate", "zip", "reversed"):
        return any(isinstance(a, ast.Name) and a.id == container for a in items.args)
    return False


def _guarded_by_fixed_list(analysis, scope, stmt) -> bool:
    """``if epoch in save_epochs:`` with ``save_epochs = [20, 50, 80, 120]``: the copy is
    made once per listed value, a fixed number of times."""
    ctx = analysis.index.ctx(stmt)
    if ctx is None:
        return False
    for block in ctx.blocks:
        test = getattr(getattr(block, "owner", None), "test", None)
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.In)):
            continue
        items = test.comparators[0]
        if isinstance(items, ast.Name):
            defs = analysis.flow.reaching(scope, items.id, stmt) or analysis.index.module_scope.defs_of(items.id)
            items = defs[0].value if len(defs) == 1 and defs[0].kind == "assign" else None
        if isinstance(items, (ast.List, ast.Tuple, ast.Set)) and len(items.elts) <= 16 and all(
                isinstance(e, ast.Constant) for e in items.elts):
            return True
    return False


def _list_container(analysis, scope, key: str, stmt) -> bool:
    """Is ``key`` bound only to lists (``[None] * n``, ``[copy(g) for g in gens]``,
    ``list(...)``)? Item assignment replaces an element of a list, it never adds one: the
    copy it drops is released (``self.parents[i] = deepcopy(...)`` over a population)."""
    bindings = bindings_of(analysis, scope, key, stmt)
    if not bindings and key.startswith("self.") and key.count(".") == 1 and scope.class_name:
        # ``self.nns = [[] for _ in range(K)]`` in ``__init__``: every binding the class makes
        defs = [d for method in analysis.index.methods(scope.class_name) for d in method.defs_of(key)]
        return bool(defs) and all(d.kind == "assign" and d.index is None and _is_list(d.value) for d in defs)
    return bool(bindings) and all(d.kind == "assign" and d.index is None and _is_list(d.value) for d, _ in bindings)


def _is_list(value) -> bool:
    if isinstance(value, (ast.List, ast.ListComp)):
        return True
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        return _is_list(value.left) or _is_list(value.right)
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "list"


def _built_once(analysis, scope, stmt, site) -> bool:
    """Copies made while an object is built (``__init__`` or a helper only it calls: a
    model's repeated blocks in an ``nn.ModuleList``), or stored by the loop's own counter
    (``models[i] = deepcopy(global_model)`` for ``i in range(K)``) in a loop that nothing
    repeats (top-level code, or a function the program runs once): a fixed number of
    copies, the program's product, not one more per step."""
    if scope.is_function and (scope.name == "__init__" or setup_only(analysis, scope)):
        return True
    ctx = analysis.index.ctx(stmt)
    if site.how != "setitem" or not isinstance(site.key_expr, ast.Name) or ctx is None or len(ctx.loops) != 1:
        return False
    if loop_counter(ctx.loops[0]) != site.key_expr.id:
        return False
    return not scope.is_function or run_once(analysis, scope, methods=True) is not None


def _slot_of_own_loop(analysis, stmt, key: str, index) -> bool:
    """``for i, (parent, opt) in enumerate(zip(self.parents, opts)): self.parents[i] = ...``
    (or ``for i in range(len(self.parents))``): the index walks the container's own slots,
    so each assignment replaces one that exists."""
    if not isinstance(index, ast.Name):
        return False
    ctx = analysis.index.ctx(stmt)
    for loop in reversed(ctx.loops if ctx else ()):
        if loop_counter(loop) != index.id:
            continue
        call = loop.iter
        walked = call.args[0] if call.args else None
        if isinstance(walked, ast.Call) and isinstance(walked.func, ast.Name) and walked.func.id == "zip":
            walked = walked.args  # any of the zipped sequences bounds the index
        elif isinstance(walked, ast.Call) and isinstance(walked.func, ast.Name) and walked.func.id == "len" and walked.args:
            walked = [walked.args[0]]  # ``range(len(self.parents))``
        else:
            walked = [walked]
        return any(dotted(w) == key for w in walked if w is not None)
    return False
