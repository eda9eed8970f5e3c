"""The lint/fix job over a set of files, shared by the CLI and the Python API."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from collections import Counter
from typing import TYPE_CHECKING, Callable, Dict, List, Optional

from .config import Settings
from .diagnostics import Diagnostic, parse_error
from .engine.discover import discover
from .engine.file_gate import gate, read_regular

if TYPE_CHECKING:  # pragma: no cover
    from .engine.source import SourceText


@dataclass
class RunResult:
    diagnostics: List[Diagnostic] = field(default_factory=list)
    fixed: int = 0
    changed_files: List[str] = field(default_factory=list)
    diffs: List[str] = field(default_factory=list)
    internal_errors: List[str] = field(default_factory=list)
    files: int = 0
    fixed_codes: Dict[str, Counter] = field(default_factory=dict)  # path -> rule code -> fixes
    warnings: List[str] = field(default_factory=list)  # one line each (e.g. an unreadable cache)
    cached_files: int = 0  # files whose findings came from the cache


def run(paths: List[str], settings: Settings, fix: bool = False, diff: bool = False,
        unsafe: bool = False, progress: Optional[Callable[[str], None]] = None, jobs: int = 1,
        cache: bool = False, cache_dir: Optional[str] = None, discovered: bool = False) -> RunResult:
    """``progress(path)``, when given, is called as each file's turn comes. Checking (not
    fixing) runs over ``jobs`` processes and, with ``cache``, reuses the findings of files
    whose text and cross-file facts did not change. ``discovered``: ``paths`` are the
    files to lint, already discovered (and de-duplicated) by the caller."""
    unreadable: List[tuple] = []
    files = list(paths) if discovered else discover(paths, settings.exclude + settings.extend_exclude,
                                                    settings.respect_gitignore, unreadable)
    files, skipped = gate(files, settings.max_file_size_mb)
    not_read = [parse_error(folder, f"cannot read directory: {reason}", 1, 0)
                          for folder, reason in unreadable] + skipped
    if not (fix or diff):
        result = _check(files, not_read, settings, progress, jobs, cache, cache_dir)
        result.files += len(skipped)
        return result
    from .engine.fix import fix_source  # here: a check without fixes needs no fixer
    from .engine.lint import LintSession, read_source
    from .engine.notebook import NotebookSource

    session = LintSession(settings)
    for path in files:
        session.register(path)
    result = RunResult(files=len(files) + len(skipped), diagnostics=not_read)
    for path in files:
        if progress is not None:
            progress(path)
        if not (fix or diff):
            file_result = session.lint_file(path)
            result.diagnostics.extend(file_result.diagnostics)
            result.internal_errors.extend(file_result.internal_errors)
            continue
        source = read_source(path)
        if isinstance(source, Diagnostic):
            result.diagnostics.append(source)
            continue
        outcome = fix_source(session, path, source, unsafe)
        remaining = list(outcome.diagnostics)
        if outcome.error:
            remaining.append(parse_error(path, outcome.error, 1, 0))
        if outcome.text != source.text:
            if diff:
                result.diffs.append(source.diff(path, outcome.text) if isinstance(source, NotebookSource)
                                    else unified_diff(path, source.text, outcome.text))
                result.fixed += outcome.applied
                result.changed_files.append(path)
            else:
                problem = write_back(path, source, outcome.text)
                if problem is None:
                    result.fixed += outcome.applied
                    result.changed_files.append(path)
                    result.fixed_codes[path] = outcome.fixed_codes
                else:
                    remaining = source.relocate(session.lint_text(source, path).diagnostics)
                    remaining.append(parse_error(path, problem, 1, 0))
        result.diagnostics.extend(remaining)
    return result


def _check(files, skipped: List[Diagnostic], settings: Settings, progress, jobs: int, use_cache: bool,
           cache_dir: Optional[str]) -> RunResult:
    """``skipped``: TLL000 reports for the folders and files that are not read."""
    result = RunResult(files=len(files), diagnostics=list(skipped))
    snapshots = key = None
    if use_cache:
        from .engine.snapshot import RunKey, Snapshots

        snapshots = Snapshots(cache_dir or None)
        key = RunKey(files, settings)
        found = snapshots.findings(key)
        if found is not None:
            for _, diags in found:
                result.diagnostics.extend(diags)
            result.cached_files = len(found)
            return result
        result.warnings.extend(snapshots.warnings)
    per_file = _check_each(files, settings, progress, jobs, use_cache, cache_dir, result)
    if snapshots is not None and not result.internal_errors:
        problem = snapshots.record(key, per_file)
        if problem is not None and problem not in result.warnings:
            result.warnings.append(problem)
    return result


def _check_each(files, settings: Settings, progress, jobs: int, use_cache: bool, cache_dir: Optional[str],
                result: RunResult) -> List[tuple]:
    """Check every file through the per-file cache; (path, findings) per file."""
    from .engine.cache import Cache
    from .engine.parallel import RunStats, check_files

    per_file = []
    stats = RunStats()
    store = Cache.open(cache_dir or None) if use_cache else None
    for checked in check_files(files, settings, jobs=jobs, cache=store, stats=stats):
        if progress is not None:
            progress(checked.path)
        result.diagnostics.extend(checked.diagnostics)
        result.internal_errors.extend(checked.internal_errors)
        result.cached_files += checked.cached
        per_file.append((checked.path, checked.diagnostics))
    if os.environ.get("TORCHLEAKLINT_STATS"):  # for the speed bench: files, parses, processes
        print(f"torchleaklint stats: {stats.line()}", file=sys.stderr)
    if store is not None:  # its warnings: on reading it, and on entries decoded as they were used
        result.warnings.extend(w for w in store.warnings if w not in result.warnings)
        problem = store.save()
        if problem is not None:
            result.warnings.append(problem)
    return per_file


def write_back(path: str, source: SourceText, text: str) -> Optional[str]:
    """Write fixed text in the file's own encoding; a one-line problem, or None."""
    if os.path.islink(path):
        return "not fixed: the path is a symbolic link"
    try:
        st = os.stat(path)
        # A file without write permission is read-only by intent, also for root.
        if not os.access(path, os.W_OK) or not st.st_mode & 0o222:
            return "not fixed: the file is read-only"
        if st.st_nlink > 1:
            # The atomic write replaces this name with a new file: the other names would
            # keep the old text, silently. Writing in place could lose the file to a kill.
            return (f"not fixed: the file has {st.st_nlink} hard links, and the fix (written to a new file "
                    f"that replaces this name) would separate them")
    except OSError as exc:
        return f"not fixed: {exc.strerror or exc}"
    try:
        data = source.encode(text)
    except UnicodeEncodeError as exc:
        return f"not fixed: the fix cannot be written in {source.encoding}: {exc.reason}"
    original = getattr(source, "original", None)
    if original is not None:
        try:
            current = read_regular(path)
        except OSError as exc:
            return f"not fixed: cannot read the file again: {exc.strerror or exc}"
        if current == data:
            return None  # already fixed, e.g. by another run at the same time
        if current != original:
            return "not fixed: the file changed on disk while it was being fixed"
    from .engine.fix import atomic_write

    try:
        atomic_write(path, data)
    except OSError as exc:
        return f"not fixed: cannot write: {exc.strerror or exc}"
    return None


def unified_diff(path: str, before: str, after: str) -> str:
    import difflib

    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=f"a/{path}", tofile=f"b/{path}")
    # A last line without a newline gets git's marker, so that the diff applies as a patch.
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
                   for line in lines)
