"""The files a command line names, grouped by the configuration that governs them.

Each file follows the nearest ``[tool.torchleaklint]`` above it (or ``--config``). Files
under one configuration are linted together as one project (they see each other's
functions and classes); a nested configuration starts a project of its own, as a nested
``pyproject.toml`` does for packaging.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from fnmatch import fnmatch
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

from .config import Settings, SettingsResolver
from .diagnostics import Diagnostic, parse_error
from .engine.discover import DiscoveryError, discover_keyed

if TYPE_CHECKING:  # pragma: no cover
    from .runner import RunResult


@dataclass
class Plan:
    groups: List[Tuple[Settings, List[str]]] = field(default_factory=list)
    unreadable: List[Tuple[str, str]] = field(default_factory=list)  # (folder, reason): reported as TLL000

    @property
    def files(self) -> int:
        return sum(len(files) for _, files in self.groups)


def excluded(path: str, settings: Settings) -> bool:
    """Whether an ``exclude``/``extend-exclude`` pattern matches the path or one of its
    folders (relative to the configuration's folder, else to the working directory)."""
    patterns = [p.rstrip("/") for p in settings.exclude + settings.extend_exclude]
    full = os.path.abspath(path)
    base = os.path.dirname(settings.origin) if settings.origin else os.getcwd()
    rel = os.path.relpath(full, base)
    if rel.startswith(".."):
        rel = os.path.relpath(full)
    parts = [p for p in rel.replace(os.sep, "/").split("/") if p not in ("", ".")]
    for i, name in enumerate(parts):
        sub = "/".join(parts[: i + 1])
        if any(fnmatch(name, p) or fnmatch(sub, p) for p in patterns):
            return True
    return False


def plan(paths: Sequence[str], resolver: SettingsResolver) -> Plan:
    """Discover the files and group them by their settings, keeping discovery order."""
    order: List[int] = []
    groups: Dict[int, Tuple[Settings, List[str]]] = {}
    unreadable: List[Tuple[str, str]] = []
    seen = set()

    def add(settings: Settings, path: str, key: str) -> None:
        if key in seen:
            return
        seen.add(key)
        if id(settings) not in groups:
            groups[id(settings)] = (settings, [])
            order.append(id(settings))
        groups[id(settings)][1].append(path)

    for raw in paths:
        if not os.path.lexists(raw):
            raise DiscoveryError(f"{raw}: no such file or directory")
        anchor = resolver.for_path(raw)
        if os.path.isdir(raw):
            if anchor.force_exclude and excluded(raw, anchor):
                continue
            by_folder: Dict[str, Settings] = {}  # a folder's files share its settings
            for path, key in discover_keyed([raw], anchor.exclude + anchor.extend_exclude,
                                            anchor.respect_gitignore, unreadable):
                folder = os.path.dirname(path)
                own = by_folder.get(folder)
                if own is None:
                    own = by_folder[folder] = resolver.for_path(path)
                if own is not anchor and excluded(path, own):
                    continue
                add(own, path, key)
        elif not (anchor.force_exclude and excluded(raw, anchor)):
            add(anchor, raw, os.path.realpath(raw))
    return Plan([groups[k] for k in order], unreadable)


def run_plan(work: Plan, fix: bool = False, diff: bool = False,
             progress: Optional[Callable[[str], None]] = None, jobs: int = 1, cache: bool = False) -> RunResult:
    """One run per configuration; the results in discovery order."""
    from .runner import RunResult, run

    total = RunResult()
    for folder, reason in work.unreadable:
        total.diagnostics.append(parse_error(folder, f"cannot read directory: {reason}", 1, 0))
    for settings, files in work.groups:
        part = run(files, settings, fix=fix, diff=diff, unsafe=settings.unsafe_fixes, progress=progress,
                   jobs=jobs, cache=cache, discovered=True)
        total.warnings.extend(w for w in part.warnings if w not in total.warnings)
        total.cached_files += part.cached_files
        total.diagnostics.extend(part.diagnostics)
        total.fixed += part.fixed
        total.changed_files.extend(part.changed_files)
        total.diffs.extend(part.diffs)
        total.internal_errors.extend(part.internal_errors)
        total.files += part.files
        for path, codes in getattr(part, "fixed_codes", {}).items():
            total.fixed_codes.setdefault(path, Counter()).update(codes)
    return total


def add_noqa_comments(work: Plan) -> Tuple[int, int, List[str]]:
    """``--add-noqa``: a ``# noqa: CODES`` comment on each line with findings.
    Returns (comments added or extended, files changed, one-line problems)."""
    from .engine.lint import LintSession, read_source
    from .engine.noqa import UNUSED_NOQA, add_noqa
    from .rules import PARSE_ERROR
    from .runner import write_back

    added, changed, problems = 0, 0, []
    for settings, files in work.groups:
        session = LintSession(settings)
        for path in files:
            session.register(path)
        for path in files:
            source = read_source(path)
            if isinstance(source, Diagnostic):
                continue
            wanted: Dict[int, set] = {}
            for d in session.lint_text(source, path).diagnostics:
                if d.code not in (PARSE_ERROR, UNUSED_NOQA) and d.noqa_line:
                    wanted.setdefault(d.noqa_line, set()).add(d.code)
            if not wanted:
                continue
            text, count = add_noqa(source.text, wanted)
            if not count:
                continue
            problem = write_back(path, source, text)
            if problem is not None:
                problems.append(f"{path}: {problem}")
            else:
                added += count
                changed += 1
    return added, changed, problems
