"""``.gitignore`` files read by the walk itself, for trees outside a git work tree.

Git's pattern rules: ``*`` and ``?`` stay within a path segment, ``**`` spans segments, a
pattern with a slash is anchored to the folder of its ``.gitignore``, ``dir/`` matches
folders only, ``!`` re-includes, and the last matching pattern decides (a deeper
``.gitignore`` comes after its parents'). A folder's patterns apply only below it: the
walk enters a folder before its entries and leaves it after them, so the rules in force
are always those of the current folder and its ancestors, each matched against the path
relative to its own folder, sliced from the walk's relative path (no path arithmetic per
rule and path). Consecutive patterns of the same polarity are joined into one regular
expression (plain names and name endings are set and suffix lookups), so a path costs
one match per run of patterns, not one per pattern.
"""

from __future__ import annotations

import os
import re
from typing import List, Optional, Pattern, Set, Tuple

from .file_gate import read_regular

_GLOB_CHARS = frozenset("*?[\\")


class _Run:
    """Consecutive patterns of one ``.gitignore`` with the same polarity: a path matches
    the run when it matches any of them. Most patterns are a plain name (``build``,
    ``__pycache__``), a name ending (``*.egg-info``) or a plain path from the folder
    (``docs/source/api``); those are set and suffix lookups, the rest one joined regex."""

    __slots__ = ("negate", "names", "endings", "paths", "globs", "_regex")

    def __init__(self, negate: bool) -> None:
        self.negate = negate
        self.names: Set[str] = set()  # the entry's own name equals one of these
        self.endings: Tuple[str, ...] = ()  # the entry's own name ends with one of these
        self.paths: Set[str] = set()  # the path below the folder equals one of these
        self.globs: List[str] = []  # regular expressions for the path below the folder
        self._regex: Optional[Pattern[str]] = None

    def add(self, pattern: str, anchored: bool) -> None:
        if not anchored and "/" not in pattern:
            if not _GLOB_CHARS.intersection(pattern):
                self.names.add(pattern)
                return
            if pattern.startswith("*") and not _GLOB_CHARS.intersection(pattern[1:]):
                self.endings += (pattern[1:],)
                return
        elif anchored and not _GLOB_CHARS.intersection(pattern):
            self.paths.add(pattern)
            return
        self.globs.append(glob_to_regex(pattern if anchored else "**/" + pattern))

    def matches(self, below: str, name: str) -> bool:
        if name in self.names or below in self.paths or (self.endings and name.endswith(self.endings)):
            return True
        if not self.globs:
            return False
        if self._regex is None:
            self._regex = re.compile("|".join(f"(?:{g})" for g in self.globs))
        return self._regex.fullmatch(below) is not None


class GitignoreRules:
    """The ``.gitignore`` patterns in force at the current point of a depth-first walk."""

    def __init__(self) -> None:
        # (prefix of the folder relative to the walk's root, runs for files, runs for folders)
        self._frames: List[Tuple[int, List[_Run], List[_Run]]] = []

    def enter(self, folder: str, rel: str) -> bool:
        """Read ``folder``'s ``.gitignore`` (``rel``: the folder relative to the walk's
        root, ``""`` for the root). True when it added patterns, which :meth:`leave`
        must then drop once the folder's entries are done."""
        rules = read_patterns(os.path.join(folder, ".gitignore"))
        if not rules:
            return False
        prefix = len(rel) + 1 if rel else 0
        self._frames.append((prefix, _runs([r for r in rules if not r[3]]), _runs(rules)))
        return True

    def leave(self) -> None:
        self._frames.pop()

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether the entry at ``rel`` (relative to the walk's root, with ``/``) is ignored
        by the patterns in force; it must lie in the folder last entered."""
        name = rel[rel.rfind("/") + 1:]
        for prefix, for_files, for_dirs in reversed(self._frames):
            below = rel[prefix:]
            for run in reversed(for_dirs if is_dir else for_files):
                if run.matches(below, name):
                    return not run.negate
        return False


def read_patterns(path: str) -> List[Tuple[str, bool, bool, bool]]:
    """(pattern, anchored, negate, folders only) for each pattern of one ``.gitignore``;
    the pattern without its leading ``!``, leading ``/`` and trailing ``/``."""
    try:
        lines = read_regular(path).decode("utf-8", "replace").splitlines()
    except OSError:  # none, unreadable, or not a regular file (a FIFO would block)
        return []
    rules = []
    for line in lines:
        line = line.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        rules.append((line.lstrip("/"), "/" in line, negate, dir_only))
    return rules


def _runs(rules: List[Tuple[str, bool, bool, bool]]) -> List[_Run]:
    """The runs of consecutive patterns with the same polarity, in order."""
    runs: List[_Run] = []
    for pattern, anchored, negate, _ in rules:
        if not runs or runs[-1].negate != negate:
            runs.append(_Run(negate))
        runs[-1].add(pattern, anchored)
    return runs


def glob_to_regex(pattern: str) -> str:
    out = []
    i = 0
    n = len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("/.*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(pattern[i]))
                i += 1
            else:
                body = pattern[i + 1:end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)
