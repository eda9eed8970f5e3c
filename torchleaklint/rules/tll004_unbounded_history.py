"""TLL004 unbounded-history."""

from __future__ import annotations

import ast
from typing import List, Optional

from ..analysis.gated_runs import at_most_once
from ..analysis.epochs import called_per_epoch, runs_per_epoch
from ..analysis.figures import run_once
from ..analysis.flag_arms import dead_arm
from ..analysis.history_output import handed_to_writer, written_out_whole, written_out_whole_elsewhere
from ..analysis.hook_buffers import hook_buffers
from ..analysis.instance_lifetime import built_per_call, short_lived
from ..analysis.names import dotted, words
from ..analysis.repetition import setup_only
from ..analysis.stores import store_in_stmt
from ..analysis.training_runs import outside_training_steps
from ..analysis.unused_classes import never_built
from ..analysis.windows import tail_window_only
from ..diagnostics import UNSAFE, Edit, Fix
from .base import Invalid, Rule, RuleContext
from .insertions import import_edit

# Methods that run once per step, update, episode or batch: what they append grows with
# the run. (Hooks and wrappers run once per forward or call.)
PER_STEP_WORDS = frozenset({"step", "update", "forward", "act", "learn", "observe", "optimize",
                            "train", "remember", "push", "store", "record", "track", "log", "hook",
                            "wrapper", "clip", "predict", "infer"})
# Objects with a finalising method accumulate for one evaluation or epoch, then are
# summarised and dropped or reset: their lists are bounded by that unit of work.
FINALIZER_WORDS = frozenset({"compute", "summarize", "summarise", "finalize",
                             "accumulate", "result", "results", "flush", "dump"})
ML_ROOTS = frozenset({"torch", "numpy", "gym", "gymnasium", "pytorch_lightning", "lightning",
                      "tensorflow", "jax", "transformers", "stable_baselines3"})
BOUNDING = frozenset({"clear", "pop", "popleft", "popitem", "remove"})
# Methods that configure an object (``register_hook``, ``setup_logger``): a few calls per run,
# whatever else their name says.
SETUP_WORDS = frozenset({"register", "setup", "build", "configure", "init", "initialize", "install"})


class UnboundedHistory(Rule):
    """
    ## What it does
    Finds a list held by a long-lived object (`self.x = []` in `__init__`) or at module
    level that a per-step method or function (`step`, `update`, `forward`, `log_*`,
    `on_*`, …) appends to on every call, and that is never cleared, popped, truncated
    (`del x[:n]`, `x = x[-n:]`), reassigned outside `__init__`, or length-checked.
    Not reported when every growth adds only values not already in the list (`if k not in
    self.keys`, `set(new) - set(self.keys)`): it is bounded by the distinct values; nor
    for a private class whose every instance is built in a function (not a constructor)
    and neither returned nor stored on `self` or in module globals: it lives for one call
    (one search, one fit).
    Also a list appended in any method (not only a per-step one), or a dict of lists
    (`self.stats = defaultdict(list)`, grown by `self.stats[key].append((t, v))`), when
    every read is a tail (`xs[-n:]`, `xs[-1]`): the entries older than the window are never
    read again.
    Not reported for a list appended once per epoch (by a method named for the epoch or
    registered for an epoch event, or in a loop each iteration of which runs a function
    that steps in a loop of its own: `for epoch in ...: loss = self.train_epoch(loader)`):
    the run's epoch count bounds it. Nor for a list the
    program plots or writes out whole (`plt.plot(self.losses)`, `np.savetxt(path,
    self.rewards)`, `pd.DataFrame(np.array(self.evals)).to_csv(path)`, through a local
    name bound to it whole, or handed whole to a project function that plots that
    parameter whole: `visualize.plot_loss(self.loss_history)`), in its own file
    (also through another name of the object: `plt.plot(solver.regrets)`) or in
    a file that imports it (`plt.plot(agent.losses)`, or looked up by its name:
    `var = getattr(dqn, "weights_over_time"); plt.plot(var)`): every entry is read, the full
    history is what it is kept for.
    Also a list a forward hook appends to on the hooked module (`layer.inputs.append(x)`) that
    only a backward hook drains (`layer.inputs.pop()`), when the forward hook never checks grad
    mode: forwards under `torch.no_grad()` leave their entries (reported on the append).
    Not reported for growth that happens once per training run, task, round or epoch of a
    function that steps in a loop of its own (after that loop, or around it), for a method
    every call of which is set-up code run once (`driver.on_step(callback)`), nor under a
    flag every caller turns off (`if val:` where each call passes `val=False`), nor when
    every call path runs the append once at most or never: behind a private flag nothing
    sets (`if self._log_tabular_only:` with only `False` stored, or a module's
    `_table_only` global), or under the flags the callers pass. Nor for a class nothing in
    the linted files builds, subclasses, imports or names (dead code keeps nothing).
    Reported on the list's creation; when the proof is the tail reads, on the append.

    ## Why is this bad
    Histories of rewards, actions and losses look tiny per step but a training run makes
    millions of steps: the list only ever grows (seed incident: episode histories on the
    environment, 15–20 GB per generation; loss histories on the agent). If the entries are
    tensors, each also pins its storage and device memory.

    ## Example
    ```python
    class Agent:
        def __init__(self):
            self.loss_history = []

        def update(self, batch):
            ...
            self.loss_history.append(loss.item())

        def stats(self):
            return np.mean(self.loss_history[-1000:])
    ```

    ## Use instead
    ```python
    class Agent:
        def __init__(self):
            self.loss_history = collections.deque(maxlen=1000)
        ...
        def stats(self):
            return np.mean(list(self.loss_history)[-1000:])
    ```

    ## Fix safety
    The fix replaces the list with `collections.deque(maxlen=N)` (adding the import), with
    N taken from how the list is read (`x[-1000:]` gives 1000, and such slices become
    `list(x)[-1000:]` since deques do not slice) or from `history-maxlen` (default 10000).
    It is always **unsafe**: older entries are dropped, and code outside the file may index
    or serialise the list. No fix when the list is sliced in other ways.

    ## Memory impact
    Linear in the number of steps for the life of the process.
    """

    code = "TLL004"
    name = "unbounded-history"
    summary = "A long-lived list grows on every step and is never bounded"
    fix_availability = "sometimes"
    repro = "tll004_episode_history"
    default_options = {"history-maxlen": 10000}

    VALID = [
        """
import torch
class Env:
    def __init__(self):
        self.rewards = []
    def step(self, action):
        self.rewards.append(1.0)
    def reset(self):
        self.rewards = []
""",
    ]
    INVALID = [
        Invalid(
            """
import numpy as np
class Agent:
    def __init__(self):
        self.loss_history = []

    def update(self, loss):
        self.loss_history.append(loss)

    def stats(self):
        return np.mean(self.loss_history[-1000:])
""",
            fixed="""
import numpy as np
import collections
class Agent:
    def __init__(self):
        self.loss_history = collections.deque(maxlen=1000)

    def update(self, loss):
        self.loss_history.append(loss)

    def stats(self):
        return np.mean(list(self.loss_history)[-1000:])
""",
        ),
    ]

    @classmethod
    def validate_option(cls, option, value):
        problem = super().validate_option(option, value)
        if problem is None and option == "history-maxlen" and value < 1:
            return f"expected a positive whole number, got {value!r}"
        return problem

    def check(self, ctx: RuleContext):
        analysis = ctx.analysis
        index = analysis.index
        if not any(t.split(".")[0] in ML_ROOTS for t in index.imports.aliases.values()):
            return
        if ctx.in_test_file:
            return  # a test builds its objects for one run of a few steps
        candidates = []
        for class_name, methods in index.class_scopes.items():
            inside = [s for s in index.scopes if _owner_class(s) == class_name and s.name != "__init__"]
            for method in methods:
                if method.name != "__init__":
                    continue
                for key, defs in method.defs.items():
                    if key.startswith("self.") and key.count(".") == 1:
                        for d in defs:
                            if d.kind == "assign" and d.index is None and _empty_list(d.value):
                                candidates.append((key, d, inside))
                            elif d.kind == "assign" and d.index is None and _dict_of_lists(d.value):
                                candidates.append((key, d, inside, True))
        for key, defs in index.module_scope.defs.items():
            for d in defs:
                if d.kind == "assign" and d.index is None and _empty_list(d.value):
                    functions = [s for s in index.scopes if s.is_function and key not in s.params
                                 and not s.defs_of(key)]
                    candidates.append((key, d, functions))
        for key, creation, scopes, *nested in candidates:
            window = None
            appender = self._per_step_appender(key, scopes, bool(nested))
            if appender is None or nested:
                appender = appender or self._per_step_appender(key, scopes, bool(nested), any_method=True)
                window = tail_window_only(index.tree, key, bool(nested)) if appender else None
                if window is None:
                    continue  # no per-step name, and older entries may be read: not proven to be waste
            if self._bounded(analysis, key, creation):
                continue
            if written_out_whole(index.tree, key) is not None or written_out_whole_elsewhere(analysis, key) \
                    or handed_to_writer(analysis, key):
                continue  # plotted or written whole: every entry is read, the full history is the product
            owner = _owner_class(analysis.index.ctx(creation.stmt).scope) if "." in key else None
            if owner and (short_lived(analysis, owner) or built_per_call(analysis, owner) or never_built(analysis, owner)
                          or _finalized(analysis, owner) or _handed_out(analysis, owner, key)):
                continue
            scope, stmt = appender
            if _deduplicated(analysis, key, scopes):
                continue
            if _periodic(analysis, stmt) or setup_only(analysis, scope) or _sibling_len_check(analysis, scope, key):
                continue
            loops = analysis.index.ctx(stmt).loops
            if not loops and (runs_per_epoch(analysis, scope) or called_per_epoch(analysis, scope)):
                continue  # one entry per epoch: bounded by the epoch count the run sets
            if dead_arm(analysis, scope, stmt) is not None:
                continue  # under ``if val:`` where every caller passes ``val=False``: never grows
            if outside_training_steps(analysis, scope, stmt):
                continue  # once per run, task, round or epoch of a function that trains in its own loop
            if not loops and run_once(analysis, scope, methods=True):
                continue  # every call is set-up code run once (``driver.on_step(callback)``): a fixed count
            if not loops and at_most_once(analysis, scope, stmt):
                continue  # every call path passes flags that let it run once, or never (``if self._table_only:``)
            fix = None if nested else self._fix(ctx, key, creation)
            grows = f"one of the lists in `{key}`" if nested else f"`{key}`"
            if loops and scope.is_function:
                message = (f"{grows} grows by one entry on every iteration of the loop at line {loops[-1].lineno} "
                           f"in `{scope.name}()` (line {stmt.lineno}), on every call, and is never cleared, "
                           f"truncated or bounded: 1M iterations keep 1M entries")
            else:
                message = (f"{grows} grows by one entry on every `{scope.name}()` call (line {stmt.lineno}) and is "
                           f"never cleared, truncated or bounded: 1M calls keep 1M entries")
            notes = [f"append: line {stmt.lineno} in `{scope.name}`", "bounds: no clear/pop/del/reassignment/len check"]
            if window is not None:
                message += f", though {window}"
                notes.append(f"reads: {window}")
            # Proven by the tail reads, the growth is shown where it happens: the append.
            yield self.diagnostic(ctx, stmt if window is not None else creation.stmt, message, fix, notes)

        for buffer in hook_buffers(analysis):
            message = (f"`{buffer.key}` grows by one entry (`{ast.unparse(buffer.value)}`) on every forward through a "
                       f"hooked module (forward hook "
                       f"`{buffer.forward_hook}`) and only the backward hook `{buffer.backward_hook}` takes entries "
                       f"back (line {buffer.drained_at}): every forward that no backward follows (under "
                       f"`torch.no_grad()`/`torch.inference_mode()`, evaluation in training mode) leaves its entry "
                       f"for the life of the module; 1M such forwards keep 1M entries — return early from the hook "
                       f"when `not torch.is_grad_enabled()`")
            notes = [f"append: line {buffer.stmt.lineno} in the forward hook `{buffer.forward_hook}`",
                     f"drained: line {buffer.drained_at}, run by the backward hook `{buffer.backward_hook}` only",
                     "grad mode: the forward hook never checks it"]
            yield self.diagnostic(ctx, buffer.stmt, message, None, notes)

    @staticmethod
    def _per_step_appender(key, scopes, nested=False, any_method=False):
        """The first growth of the list (of one list of the dict, ``nested``) in a method run
        once per step, or in any method (``any_method``)."""
        for scope in scopes:
            named = set(words(scope.name))
            if named & SETUP_WORDS or (not any_method and not named & PER_STEP_WORDS):
                continue
            for stmt in scope.statements:
                if any(site.container == key and site.how != "setitem" and _grown(site.target, key, nested)
                       for site in store_in_stmt(stmt)):
                    return scope, stmt
        return None

    @staticmethod
    def _bounded(analysis, key, creation) -> bool:
        attr = key.rsplit(".", 1)[-1]
        for scope in analysis.index.scopes:
            for stmt in scope.statements:
                if stmt is creation.stmt or isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                for node in ast.walk(stmt):
                    if node is creation.stmt or isinstance(node, (ast.Name, ast.Attribute)):
                        continue
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                            and node.func.attr in BOUNDING and _same(node.func.value, key, attr):
                        return True
                    if isinstance(node, ast.Delete) and any(_same(_base(t), key, attr) for t in node.targets):
                        return True
                    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                        targets = [e for t in targets for e in _unpacked(t)]  # ``self.a, self.b = [], []``
                        if any(_same(t, key, attr) for t in targets) and not isinstance(node, ast.AugAssign):
                            return True
                    if isinstance(node, ast.Compare):
                        for side in [node.left] + list(node.comparators):
                            if isinstance(side, ast.Call) and getattr(side.func, "id", None) == "len" \
                                    and side.args and (_same(side.args[0], key, attr)
                                                       or _own_length(analysis, scope, side.args[0], key, attr)):
                                return True
        return False

    def _fix(self, ctx, key, creation) -> Optional[Fix]:
        analysis = ctx.analysis
        maxlen = None
        slices: List[ast.Subscript] = []
        attr = key.rsplit(".", 1)[-1]
        for node in ast.walk(analysis.index.tree):
            if isinstance(node, ast.Subscript) and _same(node.value, key, attr) and isinstance(node.slice, ast.Slice):
                sl = node.slice
                n = _negative_int(sl.lower)
                if n is None or sl.upper is not None or sl.step is not None or not isinstance(node.ctx, ast.Load):
                    return None  # sliced in a way a deque cannot serve
                maxlen = max(maxlen or 0, n)
                slices.append(node)
        maxlen = maxlen or int(ctx.options.get("history-maxlen", 10000))
        aliases = analysis.index.imports.aliases
        edits = []
        if aliases.get("deque") == "collections.deque":
            ctor = "deque"
        else:
            local = next((k for k, v in aliases.items() if v == "collections"), None)
            if local is None:
                local = "collections"
                edit = import_edit(ctx, "import collections")
                if edit is not None:
                    edits.append(edit)
            ctor = f"{local}.deque"
        edits.append(Edit(ctx.start(creation.value), ctx.end(creation.value), f"{ctor}(maxlen={maxlen})"))
        for node in slices:
            edits.append(ctx.insert_before(node.value, "list("))
            edits.append(ctx.insert_after(node.value, ")"))
        return Fix(UNSAFE, f"Bound the history with `{ctor}(maxlen={maxlen})`", tuple(edits))


def _own_length(analysis, scope, expr, key, attr) -> bool:
    """``len(self)`` in a class whose ``__len__`` returns ``len(self.pool)``: the length of
    the list itself (a replay memory's ``if len(self) < self.capacity``)."""
    if not (key.startswith("self.") and isinstance(expr, ast.Name) and expr.id == "self" and scope.class_name):
        return False
    for method in analysis.index.methods(scope.class_name):
        if method.name == "__len__":
            return any(isinstance(r, ast.Call) and getattr(r.func, "id", None) == "len" and r.args
                       and _same(r.args[0], key, attr) for r in method.returns)
    return False


def _deduplicated(analysis, key, scopes) -> bool:
    """Every growth of the list adds only values not already in it (``if k not in self.keys:
    self.keys.append(k)``, ``self.keys.extend(set(new) - set(self.keys))``): the list is
    bounded by the number of distinct values, not by the number of steps."""
    attr = key.rsplit(".", 1)[-1]
    found = False
    for scope in scopes:
        for stmt in scope.statements:
            for site in store_in_stmt(stmt):
                if site.container != key or site.how == "setitem":
                    continue
                found = True
                if not (_guarded_not_in(analysis, stmt, key, attr)
                        or _excludes_own(_resolve_local(scope, site.value, stmt), key, attr)):
                    return False
    return found


def _guarded_not_in(analysis, stmt, key, attr) -> bool:
    ctx = analysis.index.ctx(stmt)
    for branch in (ctx.blocks if ctx else ()):
        owner = getattr(branch, "owner", None)
        if isinstance(owner, ast.If) and any(stmt is n for b in owner.body for n in ast.walk(b)):  # true arm
            for node in ast.walk(owner.test):
                if isinstance(node, ast.Compare) and any(isinstance(op, ast.NotIn) for op in node.ops) \
                        and any(_mentions(c, key, attr) for c in node.comparators):
                    return True
    return False


def _excludes_own(value, key, attr) -> bool:
    """The value is a set difference against the list itself, or a comprehension filtered
    by ``not in`` the list."""
    if value is None:
        return False
    for node in ast.walk(value):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and _mentions(node.right, key, attr):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "difference" \
                and any(_mentions(a, key, attr) for a in node.args):
            return True
        if isinstance(node, ast.comprehension) and any(
                isinstance(c, ast.Compare) and any(isinstance(op, ast.NotIn) for op in c.ops)
                and any(_mentions(x, key, attr) for x in c.comparators) for c in node.ifs):
            return True
    return False


def _resolve_local(scope, value, stmt):
    """A local name's value from its last plain assignment before ``stmt`` in the scope."""
    if not isinstance(value, ast.Name):
        return value
    found = None
    for other in scope.statements:
        if other is stmt or getattr(other, "lineno", 0) > stmt.lineno:
            break
        if isinstance(other, ast.Assign) and len(other.targets) == 1 and isinstance(other.targets[0], ast.Name) \
                and other.targets[0].id == value.id:
            found = other.value
    return found


def _mentions(node, key, attr) -> bool:
    return any(isinstance(n, (ast.Name, ast.Attribute)) and _same(n, key, attr) for n in ast.walk(node))


def _periodic(analysis, stmt) -> bool:
    """An append under ``if step % every == 0``: one entry per evaluation, a log by design."""
    ctx = analysis.index.ctx(stmt)
    for branch in (ctx.blocks if ctx else ()):
        owner = getattr(branch, "owner", None)
        if isinstance(owner, ast.If) and any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)
                                             for n in ast.walk(owner.test)):
            return True
    return False


def _handed_out(analysis, class_name, key) -> bool:
    """Does a method of the class return the list itself (``def get_episode_rewards(self):
    return self.episode_rewards``, or ``return self.macs, self.params``)? Then it is the
    object's record, kept whole on purpose."""
    for scope in analysis.index.class_scopes.get(class_name, ()):
        for node in ast.walk(scope.node):
            if isinstance(node, ast.Return) and node.value is not None:
                values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                if any(dotted(v) == key for v in values):
                    return True
    return False


def _unpacked(target):
    """The targets a tuple or list assignment binds, one by one (the target itself otherwise)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [e for elt in target.elts for e in _unpacked(elt)]
    return [target]


def _sibling_len_check(analysis, scope, key) -> bool:
    """``if len(self.key_cache) <= layer: self.key_cache.append(k); self.value_cache.append(v)``:
    a length check on a list appended together with this one bounds both."""
    appended = set()
    for stmt in scope.statements:
        for site in store_in_stmt(stmt):
            if site.how != "setitem":
                appended.add(site.container)
    if key not in appended:
        return False
    for node in ast.walk(scope.node):
        if isinstance(node, ast.Compare):
            for side in [node.left] + list(node.comparators):
                if isinstance(side, ast.Call) and getattr(side.func, "id", None) == "len" and side.args \
                        and dotted(side.args[0]) in appended:
                    return True
    return False


def _finalized(analysis, class_name) -> bool:
    return any(any(w in FINALIZER_WORDS for w in words(m.name)) for m in analysis.index.methods(class_name))


def _owner_class(scope):
    """The class whose method (or a function nested in one) this scope is."""
    while scope is not None:
        if scope.class_name:
            return scope.class_name
        scope = scope.parent
    return None


def _grown(target, key, nested) -> bool:
    if nested:
        return isinstance(target, ast.Subscript) and dotted(target.value) == key
    return dotted(target) == key


def _dict_of_lists(value) -> bool:
    """``defaultdict(list)``, ``defaultdict(lambda: [])``: a dict whose items are lists."""
    if not (isinstance(value, ast.Call) and (dotted(value.func) or "").rsplit(".", 1)[-1] == "defaultdict"
            and len(value.args) == 1):
        return False
    factory = value.args[0]
    if isinstance(factory, ast.Lambda):
        return _empty_list(factory.body)
    return isinstance(factory, ast.Name) and factory.id == "list"


def _empty_list(value) -> bool:
    if isinstance(value, ast.List) and not value.elts:
        return True
    return isinstance(value, ast.Call) and getattr(value.func, "id", None) == "list" and not value.args


def _base(node):
    while isinstance(node, ast.Subscript):
        node = node.value
    return node


def _same(node, key, attr) -> bool:
    path = dotted(node)
    if path is None:
        return False
    if "." in key:
        return path == key or path.endswith("." + attr)
    return path == key


def _negative_int(node) -> Optional[int]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, int):
        return node.operand.value
    return None
