"""Checking many files: pass 1 (symbol tables) and pass 2 (findings), in this process or
over worker processes, with the content-hash cache in front of both.

Pass 1 turns each changed file into a small picklable :class:`SymbolTable` plus its
prefilter words; the parent merges them, in file order, into one project. Each process
keeps the modules it parsed in pass 1, and pass 2 lints every file in the process that
parsed it (:mod:`.workers`), so a file is parsed once per run in the common case: again
only when a process that did not parse it looks it up, or when the kept modules outgrow
their bound. Results come back in file order and are yielded one file at a time. A file's
findings do not depend on the process or on the files linted before it (see
:mod:`.deps`), so ``--jobs 1`` and ``--jobs N`` report the same.

Workers are started only when the files to parse are enough work to pay for them
(:data:`PARALLEL_MIN_BYTES`): a small repository is checked in one process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..analysis.project import module_symbols
from ..config import Settings
from ..diagnostics import Diagnostic
from ..rules.testpaths import is_test_path
from . import collector
from .cache import Cache, Entry, StoredDependencies, content_hash, stat_key, trusted_stat
from .deps import ABSENT, Dependencies
from .digests import canonical, digest
from .file_gate import open_regular
from .lint import LintSession, parse_count, parsed_index, source_from_bytes
from .modules import forget_folders, module_name_for
from .parsed import ParsedModules
from .prefilter import trigger_words

# Less source than this to parse is not worth starting workers for: one process checks
# about 1.3 MB of source per CPU-second (pytorch-lightning, 5.4 MB, ~4 s), so this is at most
# ~0.3 s of work, and two workers cost ~30 ms to start and stop plus the modules each parses
# again when it looks up the other's (about a fifth more parses).
PARALLEL_MIN_BYTES = 400_000


@dataclass
class CheckedFile:
    path: str
    diagnostics: List[Diagnostic] = field(default_factory=list)
    internal_errors: List[str] = field(default_factory=list)
    cached: bool = False


@dataclass
class RunStats:
    """What a run did: files given, parses made (every process), processes used."""
    files: int = 0
    parses: int = 0
    processes: int = 1

    def line(self) -> str:
        per_file = self.parses / self.files if self.files else 0.0
        return (f"{self.files} files, {self.parses} parses ({per_file:.2f} per file), "
                f"{self.processes} process{'es' if self.processes > 1 else ''}")


# -- workers ----------------------------------------------------------------------------
def _origin(path: str) -> Tuple[str, str]:
    return module_name_for(path) if os.path.exists(path) else (os.path.splitext(os.path.basename(path))[0], "")


def _pass1(task, parsed: ParsedModules):
    """(path, stat, hash, origin, table, words), or None for an unreadable file; with the
    expected hash given and matched, table and words are not computed (``same``). The
    parsed module is kept in ``parsed`` for pass 2, while there is room."""
    path, origin, expected = task
    try:
        with open_regular(path) as fh:
            st = os.fstat(fh.fileno())
            data = fh.read()
    except OSError:
        return None
    stat = trusted_stat(st)
    digest_ = content_hash(data)
    if digest_ == expected:
        return path, stat, digest_, origin, "same", None
    source = source_from_bytes(path, data)
    if isinstance(source, Diagnostic):
        return path, stat, digest_, origin, None, frozenset()
    index = parsed_index(source.text, path, *origin)
    if index is None:
        return path, stat, digest_, origin, None, frozenset()
    parsed.keep(path, source.text, index, evict=False)
    return path, stat, digest_, origin, module_symbols(index, path), trigger_words(source.text, origin[0])


def _pass2(session: LintSession, path: str):
    result = session.lint_file(path)
    return path, result.diagnostics, result.internal_errors, result.dependencies


# -- worker processes (engine.workers): what each one keeps is in ``state`` -------------
def _started(state: dict) -> None:
    if "parses" not in state:
        collector.tune()
        state["parses"] = parse_count()  # inherited from the parent on fork
        state["parsed"] = ParsedModules()


def _worker_pass1(state: dict, tasks):
    _started(state)
    return [_pass1(task, state["parsed"]) for task in tasks]


def _worker_project(state: dict, payload) -> None:
    _started(state)
    settings, record, prefilter, registrations = payload
    session = LintSession(settings, record_dependencies=record, prefilter=prefilter, parsed=state.pop("parsed"))
    for path, module, package, table, words in registrations:
        session._modules[path] = (module, package)
        if table is not None:
            session.add_table(path, table, words)
    state["session"] = session


def _worker_pass2(state: dict, paths):
    session = state["session"]
    return (_pass2(session, path) for path in paths)


def _worker_parses(state: dict, _) -> int:
    _started(state)
    return parse_count() - state["parses"]


HANDLERS = {"pass1": _worker_pass1, "project": _worker_project, "pass2": _worker_pass2,
            "parses": _worker_parses}


# -- the run ------------------------------------------------------------------------------
def symbol_entries(files: Sequence[str], cache: Optional[Cache], jobs: int = 1,
                   parsed: Optional[ParsedModules] = None, workers: Optional[list] = None,
                   owner: Optional[Dict[str, int]] = None) -> dict:
    """Pass 1: each readable file's cache entry (symbol table, prefilter words, hash) by
    absolute path, computed for new or changed files only; the cache is updated. Modules
    parsed here are kept in ``parsed``; with ``workers`` (a list to start them in) and
    enough source to parse, the work goes to worker processes and ``owner`` records which
    worker parsed each file."""
    from .workers import Workers

    entries = cache.entries if cache is not None else {}
    parsed = parsed if parsed is not None else ParsedModules()
    owner = owner if owner is not None else {}
    current: dict = {}
    tasks = []
    to_parse = 0  # bytes
    for path in files:
        key = os.path.abspath(path)
        origin = _origin(path)
        entry = entries.get(key)
        try:
            st = os.stat(path)
            stat = stat_key(st)
        except OSError:
            continue
        if entry is not None and entry.origin == origin and entry.stat == stat:
            current[key] = entry
        else:
            tasks.append((path, origin, entry.hash if entry is not None and entry.origin == origin else None))
            to_parse += st.st_size
    if workers is not None and jobs > 1 and to_parse >= PARALLEL_MIN_BYTES:
        workers.append(Workers(jobs, HANDLERS))
        chunk = max(1, len(tasks) // (jobs * 4))  # consecutive files: neighbours share a worker
        pass1 = _owned(workers[0].map("pass1", tasks, chunk), tasks, owner)
    else:
        pass1 = (_pass1(task, parsed) for task in tasks)
    for done in pass1:
        if done is None:
            continue
        path, stat, hash_, origin, table, words = done
        key = os.path.abspath(path)
        if table == "same":
            entry = entries[key]
            entry.stat = stat
        else:
            entry = Entry(stat, hash_, origin, table, words)
        current[key] = entry
        if cache is not None:
            entries[key] = entry
            cache.dirty = True
    return current


def check_files(files: Sequence[str], settings: Settings, jobs: int = 1, cache: Optional[Cache] = None,
                prefilter: bool = True, stats: Optional[RunStats] = None) -> Iterator[CheckedFile]:
    """Lint ``files`` as one project; yields one :class:`CheckedFile` per file, in order.
    ``stats``, when given, is filled in once the last file is yielded."""
    from .workers import Workers

    stats = stats if stats is not None else RunStats()
    started = parse_count()
    workers: List[Workers] = []  # started when the work pays for them
    try:
        with collector.tuned_for_linting():
            yield from _check_files(files, settings, jobs, cache, prefilter, workers)
        stats.files = len(files)
        stats.parses = parse_count() - started
        if workers:
            stats.parses += sum(workers[0].ask("parses"))
            stats.processes = jobs
    finally:
        for pool in workers:
            pool.close()


def _check_files(files: Sequence[str], settings: Settings, jobs: int, cache: Optional[Cache],
                 prefilter: bool, workers: list) -> Iterator[CheckedFile]:
    from .workers import Workers

    forget_folders()
    keys = [os.path.abspath(p) for p in files]
    parsed = ParsedModules()  # modules parsed in this process in pass 1
    owner: Dict[str, int] = {}  # path -> the worker that parsed it
    current = symbol_entries(files, cache, jobs, parsed=parsed, workers=workers, owner=owner)

    session = LintSession(settings, record_dependencies=cache is not None, prefilter=prefilter,
                          parsed=None if workers else parsed)
    for path, key in zip(files, keys):
        entry = current.get(key)
        if entry is not None and entry.table is not None:
            session.add_table(path, entry.table, entry.words)
    settings_key = canonical(settings)

    def hash_of(module: str) -> str:
        path = session._paths.get(module)
        entry = current.get(os.path.abspath(path)) if path else None
        return entry.hash if entry is not None else ABSENT

    def table_identity(module: str):
        path = session._paths[module]
        return (hash_of(module), module, session._modules[path], path)

    session.project.table_identity = table_identity

    def result_key(path: str) -> str:
        # What rules read of the path as given (whether the file is a test): the same file
        # can be named from another folder, `tests/x.py` there and `x.py` inside `tests/`.
        module, package = session._module_of(path)
        return digest((settings_key, is_test_path(path), module, package, sorted(session._ignored_codes(path))))

    def still_valid(deps: StoredDependencies) -> bool:
        project = session.project
        return (all(project.table_digest(m) == d for m, d in deps.tables.items())
                and all(hash_of(m) == h for m, h in deps.analyses.items())
                and all(project.query_digest(kind, arg) == d for (kind, arg), d in deps.queries.items()))

    # Pass 2: findings of the files whose cached findings do not hold any more.
    reusable: dict = {}
    to_lint: List[str] = []
    for path, key in zip(files, keys):
        entry = current.get(key)
        if (entry is not None and entry.dependencies is not None and entry.result_key == result_key(path)
                and still_valid(entry.dependencies)):
            reusable[key] = entry
        else:
            to_lint.append(path)

    registrations = [(path, *session._module_of(path),
                      current[key].table if key in current else None,
                      current[key].words if key in current else frozenset())
                     for path, key in zip(files, keys)]
    if not workers and jobs > 1 and sum(_size(path) for path in to_lint) >= PARALLEL_MIN_BYTES:
        workers.append(Workers(jobs, HANDLERS))  # pass 1 had little to do: a warm cache
    if workers:
        workers[0].tell("project", (settings, cache is not None, prefilter, registrations))
        fresh = workers[0].map_assigned("pass2", to_lint, _assignment(to_lint, owner, jobs))
    else:
        fresh = (_pass2(session, path) for path in to_lint)
    try:
        for path, key in zip(files, keys):
            entry = reusable.get(key)
            if entry is not None:
                diags = [d if d.path == path else replace(d, path=path) for d in entry.diagnostics]
                yield CheckedFile(path, diags, cached=True)
                continue
            done_path, diagnostics, internal_errors, deps = next(fresh)
            assert done_path == path
            entry = current.get(key)
            if entry is not None and cache is not None and deps is not None and not internal_errors:
                entry.result_key = result_key(path)
                entry.diagnostics = tuple(diagnostics)
                entry.dependencies = _stored(deps, session, hash_of)
                cache.dirty = True
            yield CheckedFile(path, list(diagnostics), list(internal_errors))
    finally:
        fresh.close()


def _owned(results: Iterator[tuple], tasks: Sequence[tuple], owner: Dict[str, int]) -> Iterator:
    """Pass-1 results from the workers, noting which worker parsed each file."""
    for task, (worker, done) in zip(tasks, results):
        owner[task[0]] = worker
        yield done


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _assignment(paths: Sequence[str], owner: Dict[str, int], jobs: int) -> List[int]:
    """The worker for each file of pass 2: the one that parsed it in pass 1; files parsed
    by none (their tables came from the cache) in runs of consecutive files, to the worker
    with the fewest files so far."""
    load = [0] * jobs
    for path in paths:
        if path in owner:
            load[owner[path]] += 1
    assigned = []
    run_worker, run_left = 0, 0
    for path in paths:
        worker = owner.get(path)
        if worker is None:
            if run_left == 0:
                run_worker, run_left = load.index(min(load)), 8
            worker, run_left = run_worker, run_left - 1
            load[worker] += 1
        assigned.append(worker)
    return assigned


def _stored(deps: Dependencies, session: LintSession, hash_of: Callable[[str], str]) -> StoredDependencies:
    project = session.project
    return StoredDependencies(
        tables={m: project.table_digest(m) for m in deps.tables},
        analyses={m: hash_of(m) for m in deps.analyses},
        queries=dict(deps.queries),
    )
