"""Cross-file knowledge: which modules, classes and functions the linted tree defines,
who calls whom under ``no_grad``, and per-function summaries computed on demand.

A first pass turns every file into a small :class:`SymbolTable` (cheap, cacheable by
content hash). Function summaries ("returns graph-carrying values at positions …",
"accumulates parameter N into ``self``") are computed lazily, when a rule first asks,
by analysing the callee's module; parsed modules are kept in a bounded cache.
"""

from __future__ import annotations

import ast
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, List, Optional, Set, Tuple

from .module_index import FUNC_TYPES, ModuleIndex, Scope
from .names import dotted

LIGHTNING_NO_GRAD_HOOKS = frozenset(
    {"validation_step", "test_step", "predict_step", "validation_step_end", "test_step_end",
     "on_validation_epoch_end", "on_test_epoch_end", "validation_epoch_end", "test_epoch_end",
     "on_validation_batch_end", "on_test_batch_end", "on_predict_batch_end"}
)

MODULE_BASES = frozenset(
    {"torch.nn.Module", "torch.nn.modules.module.Module", "pytorch_lightning.LightningModule",
     "lightning.LightningModule", "lightning.pytorch.LightningModule",
     "pytorch_lightning.core.LightningModule", "lightning.pytorch.core.LightningModule",
     "transformers.PreTrainedModel", "transformers.modeling_utils.PreTrainedModel"}
)


MAX_CALL_SITES = 8  # beyond this, a name is too common to say which function a call reaches
_PASSTHROUGH = frozenset({"to", "cuda", "cpu", "eval", "train", "half", "float", "double", "bfloat16"})


@dataclass
class CallSite:
    caller: str  # "<module>:<qualname>"
    grad_off: bool


STAR = "*"  # key prefix of star imports in a symbol table's imports


MAX_REEXPORT_HOPS = 3  # ``pkg/__init__.py`` re-exporting ``pkg.sub``'s names, and so on
MAX_LINEAGE = 12  # project classes walked up from one class


@dataclass
class SymbolTable:
    """What one module contributes to the project, without its syntax tree."""

    module: str
    path: str
    functions: Dict[str, str] = field(default_factory=dict)  # qualname -> simple name
    classes: Dict[str, List[str]] = field(default_factory=dict)  # class -> base names
    imports: Dict[str, str] = field(default_factory=dict)
    call_sites: Dict[str, List[Tuple[str, bool]]] = field(default_factory=dict)
    backward_functions: Set[str] = field(default_factory=set)
    # functions that compute gradients: ``backward()`` or ``torch.autograd.grad``
    gradient_functions: Set[str] = field(default_factory=set)
    callees: Dict[str, Set[str]] = field(default_factory=dict)  # qualname -> simple names called
    # class name -> names its instances are bound to (``self.norm = RunningNorm(...)`` -> norm)
    instances: Dict[str, Set[str]] = field(default_factory=dict)


def module_symbols(index: ModuleIndex, path: str) -> SymbolTable:
    table = SymbolTable(module=index.module_name, path=path)
    table.imports = dict(index.imports.aliases)
    for i, star in enumerate(index.imports.star_modules):
        table.imports[f"{STAR}{i}"] = star  # ``from models import *``: no identifier starts with it
    for name, node in index.classes.items():
        table.classes[name] = [
            index.imports.qualname(b) or dotted(b) or "" for b in node.bases
        ]
    for scope in index.scopes:
        if scope.is_function:
            table.functions[scope.qualname] = scope.name
            if any(site.kind != "grad" for site in scope.backward_sites):
                table.backward_functions.add(scope.qualname)
            if scope.backward_sites:
                table.gradient_functions.add(scope.qualname)
        for key, defs in scope.defs.items():
            for d in defs:
                value = d.value
                while (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                       and value.func.attr in _PASSTHROUGH):
                    value = value.func.value  # ``Net(...).to(device)``
                if d.kind == "assign" and d.index is None and isinstance(value, ast.Call):
                    cls = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
                    qual = index.imports.qualname(value.func) or ""
                    if qual.startswith("torch.nn.") and qual.count(".") == 2:
                        cls = qual  # ``nn.LSTMCell(...)``: a torch layer, not a project class of that name
                    if cls[:1].isupper() or cls.startswith("torch.nn."):
                        table.instances.setdefault(cls, set()).add(key.rsplit(".", 1)[-1])
        called = table.callees.setdefault(scope.qualname, set())
        for call, stmt in scope.calls:
            name = call.func.attr if isinstance(call.func, ast.Attribute) else (
                call.func.id if isinstance(call.func, ast.Name) else None)
            if name is None:
                continue
            called.add(name)
            ctx = index.ctx(stmt)
            off = bool(ctx and ctx.grad_off) or _lambda_run_without_grad(index, stmt, call)
            table.call_sites.setdefault(name, []).append((scope.qualname, off))
    return table


def _lambda_run_without_grad(index: ModuleIndex, stmt, call: ast.Call) -> bool:
    """``eval_model = lambda model: test(model, ...)`` where every call of ``eval_model``
    in the module runs under no_grad (and the name is used for nothing else): the call
    inside the lambda runs there, not where the lambda is written."""
    if not (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Lambda) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)):
        return False
    if not any(node is call for node in ast.walk(stmt.value.body)):
        return False
    name = stmt.targets[0].id
    memo = index.__dict__.setdefault("_lambda_off_memo", {})
    if name not in memo:
        calls = uses = 0
        all_off = True
        for scope in index.scopes:
            for other, at in scope.calls:
                if isinstance(other.func, ast.Name) and other.func.id == name:
                    calls += 1
                    placed = index.ctx(at)
                    all_off = all_off and bool(placed and placed.grad_off)
        for node in ast.walk(index.tree):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                uses += 1
        memo[name] = calls > 0 and all_off and uses == calls
    return memo[name]


def rename_module(table: SymbolTable, module: str) -> None:
    """Give a table built under another module name (in a worker, or read from the cache,
    before a file of the same name took that one) its name in this run, with the calls its
    top-level code makes (recorded under the module's name) moved along."""
    old = table.module
    table.module = module
    if old in table.functions:
        return  # a function named like its module (``def main`` in ``main.py``): its calls stay its own
    if old in table.callees:
        table.callees[module] = table.callees.pop(old)
    for name, sites in table.call_sites.items():
        if any(caller == old for caller, _ in sites):
            table.call_sites[name] = [(module if caller == old else caller, off) for caller, off in sites]


@dataclass(frozen=True)
class FunctionRef:
    module: str
    qualname: str


class ProjectIndex:
    """All modules of one lint run. ``loader(module) -> ModuleAnalysis`` re-parses on demand."""

    # Configured extra names (lower case) that mean an nn.Module / a loss function.
    model_names: FrozenSet[str] = frozenset()
    loss_names: FrozenSet[str] = frozenset()

    def __init__(self, loader: Optional[Callable[[str], object]] = None, cache_size: int = 64) -> None:
        self.tables: Dict[str, SymbolTable] = {}
        self._suffixes: Dict[str, List[str]] = {}
        self._path_suffixes: Dict[str, List[str]] = {}  # dotted file paths, for namespace packages
        self._loader = loader
        self._cache: "OrderedDict[str, object]" = OrderedDict()
        self._cache_size = cache_size
        self._pinned: Dict[str, object] = {}
        self.in_progress: Set[Tuple] = set()
        self.memo: Dict[Tuple, object] = {}
        self._by_simple: Optional[Dict[str, List[FunctionRef]]] = None
        self._call_sites: Optional[Dict[str, List[Tuple[str, str, bool]]]] = None
        self._by_attribute: Optional[Dict[str, List[Tuple[str, str]]]] = None
        self._classes_by_name: Optional[Dict[str, List[str]]] = None
        # Answers that depend on the symbol tables alone, kept across files until a table changes
        self._imported: Dict[str, FrozenSet[str]] = {}
        self._lineages: Dict[Tuple[str, str], Tuple[Tuple[str, str], ...]] = {}
        self._components: Optional[Dict[str, FrozenSet[str]]] = None
        self._importers: Optional[Dict[str, List[str]]] = None

    # -- building -----------------------------------------------------------------------
    def add(self, table: SymbolTable) -> None:
        self.tables[table.module] = table
        parts = table.module.split(".")
        for i in range(len(parts)):
            self._suffixes.setdefault(".".join(parts[i:]), []).append(table.module)
        # Folders without ``__init__.py`` are namespace packages to Python: a script run
        # from the repository root imports ``runners/misc.py`` as ``runners.misc``.
        folders = _path_parts(getattr(table, "path", "") or "")
        for i in range(len(folders) - 1):
            self._path_suffixes.setdefault(".".join(folders[i:]), []).append(table.module)
        self._by_simple = None
        self._call_sites = None
        self._by_attribute = None
        self._classes_by_name = None
        self._imported = {}
        self._lineages = {}
        self._components = None
        self._importers = None

    def pin(self, module: str, analysis: object) -> None:
        """Keep the analysis of the file being linted so lookups reuse it."""
        self._pinned[module] = analysis

    def unpin(self, module: str) -> None:
        self._pinned.pop(module, None)

    def analysis(self, module: str):
        if module in self._pinned:
            return self._pinned[module]
        if module in self._cache:
            self._cache.move_to_end(module)
            return self._cache[module]
        if self._loader is None or module not in self.tables:
            return None
        result = self._loader(module)
        self._cache[module] = result
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return result

    # -- lookups ------------------------------------------------------------------------
    def find_module(self, dotted_name: str) -> Optional[str]:
        if dotted_name in self.tables:
            return dotted_name
        found = self._suffixes.get(dotted_name)
        if found and len(found) == 1:
            return found[0]
        if not found:
            found = self._path_suffixes.get(dotted_name)
            if found and len(found) == 1:
                return found[0]
        return None

    def resolve_symbol(self, qualified: str, hops: int = 0) -> Optional[Tuple[str, str]]:
        """Split ``pkg.mod.Name.attr`` into (project module, symbol) when the module is ours.
        A name the module only imports (``from evals.evals import evaluate`` in
        ``evals/__init__.py``) resolves to the module that defines it."""
        parts = qualified.split(".")
        for k in range(len(parts) - 1, 0, -1):
            module = self.find_module(".".join(parts[:k]))
            if module is not None:
                if hops < MAX_REEXPORT_HOPS:
                    table = self.tables[module]
                    head = parts[k]
                    target = table.imports.get(head)
                    if target is not None and head not in table.functions and head not in table.classes:
                        found = self.resolve_symbol(".".join([target, *parts[k + 1:]]), hops + 1)
                        if found is not None:
                            return found
                return module, ".".join(parts[k:])
        return None

    def functions_named(self, name: str) -> List[FunctionRef]:
        if self._by_simple is None:
            by: Dict[str, List[FunctionRef]] = {}
            for table in self.tables.values():
                for qual, simple in table.functions.items():
                    by.setdefault(simple, []).append(FunctionRef(table.module, qual))
            self._by_simple = by
        return self._by_simple.get(name, [])

    def call_sites(self, name: str) -> List[Tuple[str, str, bool]]:
        """(module, caller qualname, called under no_grad there) for calls spelled ``name``."""
        if self._call_sites is None:
            sites: Dict[str, List[Tuple[str, str, bool]]] = {}
            for table in self.tables.values():
                for callee, entries in table.call_sites.items():
                    bucket = sites.setdefault(callee, [])
                    bucket.extend((table.module, caller, off) for caller, off in entries)
            self._call_sites = sites
        return self._call_sites.get(name, [])

    def is_test_module(self, module: str) -> bool:
        """Does the module hold tests (``rules.testpaths.holds_tests``, answered from its
        symbol table)?"""
        from ..rules.testpaths import declares_tests, holds_tests

        table = self.tables.get(module)
        return table is not None and holds_tests(table.path, lambda: declares_tests(
            table.imports.values(), [qual for qual in table.functions if "." not in qual], table.classes))

    def is_test_caller(self, module: str, caller: str) -> bool:
        """Is the call site in a test: a test module, or a method of a ``unittest.TestCase``
        class whatever its file is named (``test.py`` beside the code it checks)?"""
        if self.is_test_module(module):
            return True
        table = self.tables.get(module)
        if table is None or "." not in caller:
            return False
        return any(base.rsplit(".", 1)[-1] == "TestCase" for base in table.classes.get(caller.split(".")[0], ()))

    def call_sites_of(self, module: str, name: str) -> List[Tuple[str, str, bool]]:
        """``call_sites(name)`` for the function ``name`` of ``module``, without the calls in
        modules that do not import ``module`` but define a function of that name themselves
        or import another project module that does: those run their own (a script with its
        own ``Actor.get_action``)."""
        sites = self.call_sites(name)
        table = self.tables.get(module)
        if table is not None and name in table.functions and len(sites) <= 4 * MAX_CALL_SITES:
            # A module-level function is out of reach of the modules its own module imports
            # unless they import it back: ``utils.py``'s ``dist.sample()`` is not ``main.sample``.
            below = self.imported_modules(module)
            sites = [site for site in sites if site[0] == module or site[0] not in below
                     or module in self.imported_modules(site[0])]
        definers = {ref.module for ref in self.functions_named(name)} | set(self.classes_named(name))
        if len(definers) <= 1 or len(sites) > 4 * MAX_CALL_SITES:
            return sites  # one module defines it (every call may reach it), or too common to sort out
        out = []
        for site in sites:
            caller_module = site[0]
            if caller_module != module:
                imported = self.imported_modules(caller_module)
                if module not in imported and any(m == caller_module or m in imported for m in definers):
                    continue
                if not self.import_connected(caller_module, module):
                    continue  # another program in the same tree: no object of ``module`` reaches it
            out.append(site)
        return out

    def import_connected(self, first: str, second: str) -> bool:
        """Are the two modules linked by a chain of project imports, in either direction
        (one imports the other, or both are imported by one program)? Scripts side by side
        in one tree that share nothing are separate programs: an object built in one never
        reaches a call in the other."""
        if first not in self.tables or second not in self.tables:
            return True
        own = self.import_component(first)
        if second in own:
            return True
        # a file that imports nothing at all (pasted or exec'd into a notebook, its names
        # provided there): any program may hold it
        return not self.tables[first].imports or not self.tables[second].imports

    def import_component(self, module: str) -> FrozenSet[str]:
        """The modules linked to ``module`` by project imports (and package membership)."""
        if self._components is None:
            parent: Dict[str, str] = {m: m for m in dict.keys(self.tables)}

            def root(m: str) -> str:
                while parent[m] != m:
                    parent[m] = parent[parent[m]]
                    m = parent[m]
                return m

            for name in list(parent):
                linked = set(self.imported_modules(name))
                if "." in name:
                    linked.add(name.rsplit(".", 1)[0])  # importing ``pkg.sub`` runs ``pkg/__init__.py``
                for other in linked:
                    if other in parent:
                        parent[root(name)] = root(other)
            groups: Dict[str, Set[str]] = {}
            for name in parent:
                groups.setdefault(root(name), set()).add(name)
            self._components = {name: frozenset(groups[root(name)]) for name in parent}
        return self._components.get(module, frozenset({module}))

    def classes_named(self, name: str) -> List[str]:
        """The modules that define a class called ``name``, in table order."""
        if self._classes_by_name is None:
            by: Dict[str, List[str]] = {}
            for table in self.tables.values():
                for cls in table.classes:
                    by.setdefault(cls, []).append(table.module)
            self._classes_by_name = by
        return self._classes_by_name.get(name, [])

    def name_imported(self, module: str, name: str) -> bool:
        """Does some project module import ``name`` from ``module`` (or ``module`` with a
        star import)?"""
        return bool(self.importers_of_name(f"{module}.{name}"))

    def importers_of_name(self, qualified: str) -> List[str]:
        """The project modules that import ``qualified`` (``pkg.utils.plot``) by name or
        import every name of its module with ``*``."""
        module, name = qualified.rsplit(".", 1)
        out = []
        for table in self.tables.values():
            for local, target in table.imports.items():
                if local.startswith(STAR):
                    if self.find_module(target) == module:
                        out.append(table.module)
                        break
                elif target.rsplit(".", 1)[-1] == name and (
                        target == qualified or self.resolve_symbol(self.local_target(table.module, target)) == (module, name)):
                    out.append(table.module)
                    break
        return out

    def importers_of_module(self, module: str) -> List[str]:
        """The other project modules that import ``module`` (or names from it)."""
        if self._importers is None:
            found: Dict[str, List[str]] = {}
            for name in dict.keys(self.tables):
                for other in self.imported_modules(name):
                    if other != name:
                        found.setdefault(other, []).append(name)
            self._importers = found
        return list(self._importers.get(module, ()))

    def imported_modules(self, module: str) -> FrozenSet[str]:
        """The project modules ``module`` imports (or imports names from)."""
        if module not in self._imported:
            table = self.tables.get(module)
            found = set()
            for qualified in (table.imports.values() if table is not None else ()):
                qualified = self.local_target(module, qualified)
                target = self.find_module(qualified)
                if target is None:
                    resolved = self.resolve_symbol(qualified)
                    target = resolved[0] if resolved is not None else None
                    importer = self.resolve_symbol(qualified, MAX_REEXPORT_HOPS)  # the package that re-exports it
                    if importer is not None:
                        found.add(importer[0])
                if target is not None:
                    found.add(target)
            self._imported[module] = frozenset(found)
        return self._imported[module]

    def local_target(self, module: str, qualified: str) -> str:
        """What an import of ``qualified`` in ``module`` names: ``from env import Env``
        beside ``env.py`` names that file (``env__2`` among the tree's modules), and
        ``from model.Generator import Generator`` beside ``model/`` that folder's
        ``Generator.py``, not a namesake in another folder."""
        table = self.tables.get(module)
        if table is None or not table.path:
            return qualified
        parts = qualified.split(".")
        for k in range(len(parts), 0, -1):
            prefix = ".".join(parts[:k])
            if prefix not in self.tables:
                continue
            sibling = self._sibling_variant(table, prefix)
            return qualified if sibling is None else sibling + qualified[len(prefix):]
        return qualified

    def _sibling_variant(self, table, dotted_module: str) -> Optional[str]:
        """The module a script's top-level import names when several files of the tree share
        that dotted name (``env``, ``env__2``; ``model.Generator``, ``model.Generator__2``):
        the one beside the importing file, which is first on ``sys.path`` when the script
        runs."""
        if f"{dotted_module}__2" not in self.tables:
            return None  # one module of that name: nothing to choose
        folder = os.path.dirname(os.path.normpath(table.path))
        relative = os.path.join(*dotted_module.split("."))
        beside = (os.path.join(folder, relative + ".py"), os.path.join(folder, relative, "__init__.py"))
        n = 1
        while True:
            name = dotted_module if n == 1 else f"{dotted_module}__{n}"
            other = self.tables.get(name)
            if other is None:
                return None
            if os.path.normpath(other.path or "") in beside:
                return name
            n += 1

    def instance_names(self, class_name: str) -> Set[str]:
        out: Set[str] = set()
        for table in self.tables.values():
            out |= table.instances.get(class_name, set())
        return out

    def attribute_classes(self, attr: str) -> List[Tuple[str, str]]:
        """(module, class name as called) for every binding of a name spelled ``attr`` to an
        instance of a class (``self.decoder1 = Decoder(...)``), in file order."""
        if self._by_attribute is None:
            by: Dict[str, List[Tuple[str, str]]] = {}
            for table in self.tables.values():
                for cls, names in table.instances.items():
                    for name in sorted(names):  # a set: the same order in every process
                        by.setdefault(name, []).append((table.module, cls))
            self._by_attribute = by
        return self._by_attribute.get(attr, [])

    def callers(self, name: str, limit: int = MAX_CALL_SITES, module: Optional[str] = None):
        """The scopes that call something spelled ``name``, one per caller: a list of
        (analysis, scope), with None for a caller that cannot be analysed. None when no
        call exists or the name is too common to follow. With ``module``, the callers of
        that module's function ``name`` (see :meth:`call_sites_of`)."""
        sites = self.call_sites_of(module, name) if module is not None else self.call_sites(name)
        if not sites or len(sites) > limit:
            return None
        out = []
        seen = set()
        for module, caller, _ in sites:
            if (module, caller) not in seen:
                seen.add((module, caller))
                out.append(self.scope_for(FunctionRef(module, caller)))
        return out

    def class_table(self, module: str, class_name: str) -> Optional[List[str]]:
        table = self.tables.get(module)
        if table is None:
            return None
        return table.classes.get(class_name)

    def resolve_class(self, module: str, name: str, hops: int = 0) -> Optional[Tuple[str, str]]:
        """Find the project class a name refers to from ``module`` (local or imported,
        also through a package ``__init__`` that re-exports it)."""
        table = self.tables.get(module)
        if table is None:
            return None
        if name in table.classes:
            return module, name
        head, _, rest = name.partition(".")
        target = table.imports.get(head)
        if target is not None:
            target = self.local_target(module, target)
            full = f"{target}.{rest}" if rest else target
            found = self.resolve_symbol(full)
            if found and found[1] in self.tables[found[0]].classes:
                return found
            if found and hops < 3 and found[0] != module:
                return self.resolve_class(found[0], found[1], hops + 1)  # ``from .models import Net``
        if target is None and not rest:
            found = self.star_symbol(module, name)
            if found is not None and found[1] in self.tables[found[0]].classes:
                return found
        return None

    def base_class(self, module: str, base: str) -> Optional[Tuple[str, str]]:
        """The project class a base of a class of ``module`` names: as spelled there, or by
        its qualified name (bases are kept qualified: ``models.model_base.ModelBase``)."""
        found = self.resolve_class(module, base)
        if found is None and "." in base:
            found = self.qualified_class(base)
        return found

    def qualified_class(self, qualified: str) -> Optional[Tuple[str, str]]:
        """The project class a qualified name refers to, also when the module it names only
        re-exports it (``pkg.decoders.ConditionalDecoder`` from ``from .conditional import
        ConditionalDecoder`` in ``pkg/decoders/__init__.py``)."""
        found = self.resolve_symbol(qualified)
        if found is None:
            return None
        if found[1] in self.tables[found[0]].classes:
            return found
        found = self.resolve_class(found[0], found[1])
        return found if found is not None and found[1] in self.tables[found[0]].classes else None

    def star_symbol(self, module: str, name: str) -> Optional[Tuple[str, str]]:
        """The project module and name that ``name`` comes from through ``from X import *``
        in ``module`` (the last such import defining it wins, as at run time)."""
        table = self.tables.get(module)
        if table is None:
            return None
        stars = [target for key, target in table.imports.items() if key.startswith(STAR)]
        for star in reversed(stars):
            found = self.resolve_symbol(f"{star}.{name}")
            if found is None or found[0] == module:
                continue
            other = self.tables[found[0]]
            if found[1] in other.classes or found[1] in other.functions:
                return found
        return None

    def class_bases(self, module: str, name: str, seen: Optional[Set] = None) -> Set[str]:
        """All base names (qualified where known) of a project class, transitively."""
        seen = seen if seen is not None else set()
        if (module, name) in seen:
            return set()
        seen.add((module, name))
        out: Set[str] = set()
        for base in self.class_table(module, name) or []:
            out.add(base)
            found = self.base_class(module, base)
            if found:
                out |= self.class_bases(found[0], found[1], seen)
        return out

    def class_lineage(self, module: str, name: str) -> Tuple[Tuple[str, str], ...]:
        """The class and its project bases, as (module, class), nearest first, from the
        symbol tables (kept until a table changes)."""
        key = (module, name)
        found = self._lineages.get(key)
        if found is None:
            out = [key]
            todo = [key]
            while todo and len(out) < MAX_LINEAGE:
                current = todo.pop(0)
                for base in self.class_table(*current) or []:
                    parent = self.base_class(current[0], base)
                    if parent is not None and parent not in out:
                        out.append(parent)
                        todo.append(parent)
            found = self._lineages[key] = tuple(out)
        return found

    def is_module_class(self, module: str, name: str) -> bool:
        bases = self.class_bases(module, name)
        return any(b in MODULE_BASES or b.endswith(("nn.Module", "LightningModule", "PreTrainedModel"))
                   for b in bases)

    def is_lightning_class(self, module: str, name: str) -> bool:
        return name == "LightningModule" or any(b.endswith("LightningModule") for b in self.class_bases(module, name))

    def methods_in_hierarchy(self, module: str, class_name: str, method: str) -> List[FunctionRef]:
        """The method as defined on the class or the nearest project base defining it."""
        todo = [(module, class_name)]
        seen = set()
        while todo:
            mod, cls = todo.pop(0)
            if (mod, cls) in seen:
                continue
            seen.add((mod, cls))
            table = self.tables.get(mod)
            if table is None:
                continue
            qual = f"{cls}.{method}"
            if qual in table.functions:
                return [FunctionRef(mod, qual)]
            for base in table.classes.get(cls, []):
                found = self.base_class(mod, base)
                if found:
                    todo.append(found)
        return []

    def calls_backward(self, ref: FunctionRef) -> bool:
        """Does the function call ``backward()`` itself or through project callees?"""
        return self._reaches(ref, "backward_functions")

    def computes_gradients(self, ref: FunctionRef) -> bool:
        """Does the function call ``backward()`` or ``torch.autograd.grad`` itself or
        through project callees (a Hessian-vector product, a Jacobian helper)?"""
        return self._reaches(ref, "gradient_functions")

    def _reaches(self, ref: FunctionRef, table_set: str, depth: int = 0) -> bool:
        """Is the function in the tables' ``table_set``, or does it call one that is?"""
        key = (table_set, ref)
        if key in self.memo:
            return bool(self.memo[key])
        if key in self.in_progress or depth > 3:
            return False
        table = self.tables.get(ref.module)
        if table is None:
            return False
        if ref.qualname in getattr(table, table_set):
            self.memo[key] = True
            return True
        self.in_progress.add(key)
        try:
            found = False
            for name in sorted(table.callees.get(ref.qualname, ())):  # a set: the same order in every process
                targets = self.functions_named(name)
                if len(targets) != 1:
                    continue  # a common name: which function runs is not known
                if self._reaches(targets[0], table_set, depth + 1):
                    found = True
                    break
        finally:
            self.in_progress.discard(key)
        self.memo[key] = found
        return found

    def scope_for(self, ref: FunctionRef) -> Optional[Tuple[object, Scope]]:
        analysis = self.analysis(ref.module)
        if analysis is None:
            return None
        by_name = analysis.__dict__.get("_functions_by_qualname")
        if by_name is None:
            by_name = {}
            for scope in analysis.index.scopes:
                if isinstance(scope.node, FUNC_TYPES):
                    by_name.setdefault(scope.qualname, scope)
            analysis.__dict__["_functions_by_qualname"] = by_name
        scope = by_name.get(ref.qualname)
        if scope is not None:
            return analysis, scope
        module_scope = analysis.index.module_scope
        if ref.qualname == module_scope.qualname:
            return analysis, module_scope  # calls made by the module's own top-level code (scripts, notebooks)
        return None


def _path_parts(path: str) -> List[str]:
    """``runners/misc.py`` -> ["runners", "misc"]; ``pkg/__init__.py`` -> ["pkg"]."""
    names = [n for n in path.replace("\\", "/").split("/") if n not in ("", ".", "..")]
    if not names or not names[-1].endswith((".py", ".pyi", ".ipynb")):
        return []
    stem = names[-1].rsplit(".", 1)[0]
    names = names[:-1] if stem == "__init__" else names[:-1] + [stem]
    start = len(names)
    while start > 0 and names[start - 1].isidentifier():
        start -= 1  # only the trailing run of names that can be imported
    return names[start:]
