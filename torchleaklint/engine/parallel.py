"""Checking many files: pass 1 (symbol tables) and pass 2 (findings) over a process pool,
with the content-hash cache in front of both.

Pass 1 turns each changed file into a small picklable :class:`SymbolTable` plus its
prefilter words; the parent merges them, in file order, into one project. Pass 2 ships
that project to each worker once (inherited on fork) and lints chunks of consecutive
files, so files of one package share the worker's small cache of parsed callee modules.
Results come back in file order and are yielded one file at a time. A file's findings do
not depend on the process or on the files linted before it (see :mod:`.deps`), so
``--jobs 1`` and ``--jobs N`` report the same.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

from ..config import Settings
from ..diagnostics import Diagnostic
from ..rules.testpaths import is_test_path
from . import collector
from .cache import Cache, Entry, StoredDependencies, content_hash, stat_key, trusted_stat
from .deps import ABSENT, Dependencies
from .digests import canonical, digest
from .file_gate import open_regular
from .lint import LintSession, source_from_bytes, symbol_table
from .modules import forget_folders, module_name_for
from .prefilter import trigger_words

SMALL_BATCH = 8  # fewer files than this are not worth starting workers for


@dataclass
class CheckedFile:
    path: str
    diagnostics: List[Diagnostic] = field(default_factory=list)
    internal_errors: List[str] = field(default_factory=list)
    cached: bool = False


# -- workers ----------------------------------------------------------------------------
def _origin(path: str) -> Tuple[str, str]:
    return module_name_for(path) if os.path.exists(path) else (os.path.splitext(os.path.basename(path))[0], "")


def _pass1(task):
    """(path, stat, hash, origin, table, words), or None for an unreadable file; with the
    expected hash given and matched, table and words are not computed (``same``)."""
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
    table = symbol_table(source.text, path, *origin)
    return path, stat, digest_, origin, table, trigger_words(source.text, origin[0])


_SESSION: Optional[LintSession] = None


def _init_pass2(settings: Settings, record: bool, registrations) -> None:
    global _SESSION
    collector.tune()
    session = LintSession(settings, record_dependencies=record)
    for path, module, package, table, words in registrations:
        session._modules[path] = (module, package)
        if table is not None:
            session.add_table(path, table, words)
    _SESSION = session


def _pass2(path: str):
    result = _SESSION.lint_file(path)
    return path, result.diagnostics, result.internal_errors, result.dependencies


def _mapped(fn, items: Sequence, jobs: int, initializer=None, initargs=()) -> Iterator:
    """``map(fn, items)`` in order, over ``jobs`` processes when there is enough work."""
    if jobs <= 1 or len(items) < SMALL_BATCH:
        if initializer is not None:
            initializer(*initargs)
        yield from map(fn, items)
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    chunk = max(1, min(32, len(items) // (jobs * 8)))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=initializer,
                             initargs=initargs) as pool:
        yield from pool.map(fn, items, chunksize=chunk)


# -- the run ------------------------------------------------------------------------------
def symbol_entries(files: Sequence[str], cache: Optional[Cache], jobs: int = 1) -> dict:
    """Pass 1: each readable file's cache entry (symbol table, prefilter words, hash) by
    absolute path, computed for new or changed files only; the cache is updated."""
    entries = cache.entries if cache is not None else {}
    current: dict = {}
    tasks = []
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
    for done in _mapped(_pass1, tasks, jobs, collector.tune):
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
                prefilter: bool = True) -> Iterator[CheckedFile]:
    """Lint ``files`` as one project; yields one :class:`CheckedFile` per file, in order."""
    with collector.tuned_for_linting():
        yield from _check_files(files, settings, jobs, cache, prefilter)


def _check_files(files: Sequence[str], settings: Settings, jobs: int, cache: Optional[Cache],
                 prefilter: bool) -> Iterator[CheckedFile]:
    global _SESSION
    forget_folders()
    keys = [os.path.abspath(p) for p in files]
    current = symbol_entries(files, cache, jobs)
    session = LintSession(settings, record_dependencies=cache is not None, prefilter=prefilter)
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
    if jobs <= 1 or len(to_lint) < SMALL_BATCH:
        _SESSION = session
        fresh = map(_pass2, to_lint)
    else:
        fresh = _mapped(_pass2, to_lint, jobs, _init_pass2, (settings, cache is not None, registrations))
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
        _SESSION = None
        close = getattr(fresh, "close", None)
        if close is not None:
            close()


def _stored(deps: Dependencies, session: LintSession, hash_of: Callable[[str], str]) -> StoredDependencies:
    project = session.project
    return StoredDependencies(
        tables={m: project.table_digest(m) for m in deps.tables},
        analyses={m: hash_of(m) for m in deps.analyses},
        queries=dict(deps.queries),
    )
