"""Which cross-file facts one file's findings depend on.

A file's findings depend on its own text and on what the project told the analysis about
other files: their symbol tables (class bases, imports, functions), the answers of
project-wide lookups (every call site spelled ``update``, every function named
``compute_loss``) and the full analysis of callee modules (function summaries). While a
file is linted, :class:`RecordingProjectIndex` writes down each of these consultations;
the cache stores them with the findings and re-lints the file when any of them changed.

Each file is also linted from a clean cross-file state (no summaries or oracle memos left
over from other files), so its findings are a function of its text and the project alone:
the same whichever files were linted before it, in this process or another.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Set, Tuple

from ..analysis.project import ProjectIndex, SymbolTable
from .digests import blake2b, digest

ABSENT = "-"


def answer_digest(answer) -> str:
    """Digest of a lookup's answer: lists in their (file) order, sets sorted. ``repr`` of
    lists, tuples, strings and dataclasses of strings is the same in every process."""
    text = repr(sorted(answer)) if isinstance(answer, (set, frozenset)) else repr(answer)
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


@dataclass
class Dependencies:
    """What one file's lint consulted about other files (module names and query answers)."""

    tables: Set[str] = field(default_factory=set)  # modules whose symbol table was read (or looked for)
    analyses: Set[str] = field(default_factory=set)  # modules analysed in full (summaries)
    queries: Dict[Tuple[str, str], str] = field(default_factory=dict)  # (lookup, argument) -> answer digest


class _RecordingTables(dict):
    """``ProjectIndex.tables`` that notes which modules' tables are read."""

    def __init__(self, owner: "RecordingProjectIndex") -> None:
        super().__init__()
        self._owner = owner

    def _note(self, module) -> None:
        deps = self._owner.recording
        if deps is not None and self._owner._quiet == 0:
            deps.tables.add(module)

    def get(self, module, default=None):
        self._note(module)
        return super().get(module, default)

    def __getitem__(self, module):
        self._note(module)
        return super().__getitem__(module)

    def __contains__(self, module) -> bool:
        self._note(module)
        return super().__contains__(module)

    def _note_all(self) -> None:
        deps = self._owner.recording
        if deps is not None and self._owner._quiet == 0:
            deps.queries[("all-tables", "")] = self._owner.all_tables_digest()

    # A lookup that walks every table depends on the whole project.
    def values(self):
        self._note_all()
        return super().values()

    def items(self):
        self._note_all()
        return super().items()

    def keys(self):
        self._note_all()
        return super().keys()

    def __iter__(self):
        self._note_all()
        return super().__iter__()


class RecordingProjectIndex(ProjectIndex):
    """A project index that records, per linted file, the cross-file facts it hands out,
    and keeps parsed modules (not their analyses) between files."""

    QUERIES = ("find_module", "functions_named", "call_sites", "instance_names", "attribute_classes", "classes_named",
               "import_component", "imported_modules", "importers_of_name", "importers_of_module")

    def __init__(self, loader=None, cache_size: int = 64) -> None:
        super().__init__(loader=self._load_tracked if loader is not None else None, cache_size=cache_size)
        self._load_module = loader
        # Analyses made for the file being linted (callees, callers, the file itself): they
        # are released together when it ends (see ``ModuleAnalysis.release``).
        self._made: list = []
        self.tables = _RecordingTables(self)
        self.recording: Optional[Dependencies] = None
        self._quiet = 0
        self._own_module: Optional[str] = None
        self._table_digests: Dict[str, str] = {}
        self._all_digest: Optional[str] = None
        self._query_digests: Dict[Tuple[str, str], str] = {}
        # Project-wide answers computed outside this class (name -> () -> answer).
        self.derived: Dict[str, Callable[[], object]] = {}
        # module -> what its table is a function of (content hash, name, path), when known:
        # cheaper to digest than the table itself.
        self.table_identity: Optional[Callable[[str], object]] = None

    def add(self, table: SymbolTable) -> None:
        self._quiet += 1
        try:
            super().add(table)
        finally:
            self._quiet -= 1
        self._table_digests.pop(table.module, None)
        self._all_digest = None
        self._query_digests.clear()

    # -- one file at a time --------------------------------------------------------------
    def begin_file(self, module: str, record: bool) -> None:
        """Forget every cross-file result computed for the previous file."""
        self.memo.clear()
        self.in_progress.clear()
        self._cache = OrderedDict()
        self._release_made()
        self._own_module = module
        self.recording = Dependencies() if record else None

    def end_file(self) -> Optional[Dependencies]:
        deps, self.recording = self.recording, None
        self.memo.clear()
        self._cache = OrderedDict()
        self._release_made()
        if deps is not None and self._own_module is not None:
            deps.tables.discard(self._own_module)
            deps.analyses.discard(self._own_module)
        return deps

    def pin(self, module: str, analysis: object) -> None:
        super().pin(module, analysis)
        self._made.append(analysis)

    def _load_tracked(self, module: str):
        analysis = self._load_module(module)
        if analysis is not None:
            self._made.append(analysis)
        return analysis

    def _release_made(self) -> None:
        """Break the analysis <-> oracle cycles of the finished file, so its analyses and
        memos are freed at once by reference counting instead of by a full cyclic
        collection (which the engine keeps rare: see :mod:`.collector`)."""
        made, self._made = self._made, []
        for analysis in made:
            release = getattr(analysis, "release", None)
            if release is not None:
                release()

    # -- recorded lookups ------------------------------------------------------------------
    def _answer(self, kind: str, arg, fn):
        self._quiet += 1
        try:
            answer = fn(arg)
        finally:
            self._quiet -= 1
        if self.recording is not None and self._quiet == 0:
            key = (kind, str(arg))
            found = self._query_digests.get(key)
            if found is None:
                found = self._query_digests[key] = answer_digest(answer)
            self.recording.queries[key] = found
        return answer

    def find_module(self, dotted_name: str):
        return self._answer("find_module", dotted_name, super().find_module)

    def functions_named(self, name: str):
        return self._answer("functions_named", name, super().functions_named)

    def call_sites(self, name: str):
        return self._answer("call_sites", name, super().call_sites)

    def instance_names(self, class_name: str):
        return self._answer("instance_names", class_name, super().instance_names)

    def attribute_classes(self, attr: str):
        return self._answer("attribute_classes", attr, super().attribute_classes)

    def classes_named(self, name: str):
        return self._answer("classes_named", name, super().classes_named)

    def import_component(self, module: str):
        return self._answer("import_component", module, super().import_component)

    def imported_modules(self, module: str):
        return self._answer("imported_modules", module, super().imported_modules)

    def importers_of_name(self, qualified: str):
        return self._answer("importers_of_name", qualified, super().importers_of_name)

    def importers_of_module(self, module: str):
        return self._answer("importers_of_module", module, super().importers_of_module)

    def analysis(self, module: str):
        if self.recording is not None and self._quiet == 0:
            self.recording.analyses.add(module)
        return super().analysis(module)

    # -- checking a stored record against this project ---------------------------------------
    def table_digest(self, module: str) -> str:
        found = self._table_digests.get(module)
        if found is None:
            table = dict.get(self.tables, module)
            if table is None:
                found = ABSENT
            elif self.table_identity is not None:
                found = digest(self.table_identity(module))
            else:
                found = digest(table)
            self._table_digests[module] = found
        return found

    def all_tables_digest(self) -> str:
        if self._all_digest is None:
            self._all_digest = digest([(m, self.table_digest(m)) for m in sorted(dict.keys(self.tables))])
        return self._all_digest

    def query_digest(self, kind: str, arg: str) -> str:
        found = self._query_digests.get((kind, arg))
        if found is None:
            found = self._query_digests[(kind, arg)] = self._compute_query_digest(kind, arg)
        return found

    def _compute_query_digest(self, kind: str, arg: str) -> str:
        if kind == "all-tables":
            return self.all_tables_digest()
        if kind in self.derived:
            return digest(self.derived[kind]())
        if kind not in self.QUERIES:
            return ABSENT + kind  # an unknown lookup never matches: re-lint
        saved, self.recording = self.recording, None
        try:
            return answer_digest(getattr(self, kind)(arg))
        finally:
            self.recording = saved
