"""Which files to lint: directories recursively for ``*.py``, minus excluded folders and
what ``.gitignore`` ignores; files named on the command line are always linted."""

from __future__ import annotations

import os
import re
import subprocess
from fnmatch import fnmatch
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Set, Tuple


class DiscoveryError(Exception):
    """A path given by the user does not exist; one line."""


def discover(paths: Sequence[str], exclude: Sequence[str] = (), respect_gitignore: bool = True,
             unreadable: Optional[List[Tuple[str, str]]] = None) -> List[str]:
    """Files to lint. Symbolic links met while walking a folder are never followed (a
    linked file is linted where it really lives, if that is inside the tree). Folders
    that cannot be listed are appended to ``unreadable`` as (path, reason) when given."""
    files: List[str] = []
    seen: Set[str] = set()
    for raw in paths:
        if not os.path.lexists(raw):
            raise DiscoveryError(f"{raw}: no such file or directory")
        if os.path.isdir(raw):
            allowed = _git_visible(raw) if respect_gitignore else None
            for path in _walk(raw, exclude, allowed, respect_gitignore, unreadable):
                key = os.path.realpath(path)
                if key not in seen:
                    seen.add(key)
                    files.append(path)
        else:
            key = os.path.realpath(raw)
            if key not in seen:
                seen.add(key)
                files.append(raw)
    return files


def _excluded(name: str, rel: str, exclude: Sequence[str]) -> bool:
    for pattern in exclude:
        pattern = pattern.rstrip("/")
        if fnmatch(name, pattern) or fnmatch(rel, pattern):
            return True
    return False


def _walk(root: str, exclude: Sequence[str], allowed: Optional[Set[str]], respect_gitignore: bool,
          unreadable: Optional[List[Tuple[str, str]]] = None) -> Iterable[str]:
    ignores = _GitignoreStack() if (respect_gitignore and allowed is None) else None
    visited: Set[str] = set()

    def cannot_list(exc: OSError) -> None:
        if unreadable is not None:
            unreadable.append((exc.filename or root, exc.strerror or str(exc)))

    for folder, dirs, names in os.walk(root, followlinks=False, onerror=cannot_list):
        real = os.path.realpath(folder)
        if real in visited:
            dirs[:] = []
            continue
        visited.add(real)
        if ignores is not None:
            ignores.enter(folder)
        rel_folder = os.path.relpath(folder, root)
        keep = []
        for d in sorted(dirs):
            rel = os.path.normpath(os.path.join(rel_folder, d)).replace(os.sep, "/")
            full = os.path.join(folder, d)
            if _excluded(d, rel, exclude) or os.path.islink(full):
                continue
            if ignores is not None and ignores.ignored(full, is_dir=True):
                continue
            keep.append(d)
        dirs[:] = keep
        for name in sorted(names):
            if not name.endswith((".py", ".pyi", ".ipynb")):
                continue
            full = os.path.join(folder, name)
            if os.path.islink(full):
                continue
            rel = os.path.normpath(os.path.join(rel_folder, name)).replace(os.sep, "/")
            if _excluded(name, rel, exclude):
                continue
            if allowed is not None and os.path.realpath(full) not in allowed:
                continue
            if ignores is not None and ignores.ignored(full, is_dir=False):
                continue
            yield full


def _git_visible(root: str) -> Optional[Set[str]]:
    """Tracked and untracked-but-not-ignored files under ``root``, when it is in a git work tree."""
    try:
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=20)
        if top.returncode != 0:
            return None
        listing = subprocess.run(["git", "-C", root, "ls-files", "-z", "-co", "--exclude-standard", "--", "."],
                                 capture_output=True, timeout=60)
        if listing.returncode != 0:
            return None
    except (OSError, subprocess.SubprocessError):
        return None
    base = os.path.realpath(root)
    out = set()
    for rel in listing.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if rel:
            out.add(os.path.realpath(os.path.join(base, rel)))
    return out


class _GitignoreStack:
    """A ``.gitignore`` reader for trees outside git, with git's pattern rules: ``*`` and
    ``?`` stay within a path segment, ``**`` spans segments, a pattern with a slash is
    anchored to its folder, ``dir/`` matches folders only, ``!`` re-includes."""

    def __init__(self) -> None:
        self.rules: List[tuple] = []  # (base folder, compiled regex, negate, dir_only)

    def enter(self, folder: str) -> None:
        path = os.path.join(folder, ".gitignore")
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            return
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
            anchored = "/" in line
            pattern = line.lstrip("/")
            if not anchored:
                pattern = "**/" + pattern
            self.rules.append((folder, re.compile(_glob_to_regex(pattern)), negate, dir_only))

    def ignored(self, path: str, is_dir: bool) -> bool:
        result = False
        for base, regex, negate, dir_only in self.rules:
            if dir_only and not is_dir:
                continue
            try:
                rel = Path(os.path.relpath(path, base)).as_posix()
            except ValueError:
                continue
            if rel.startswith(".."):
                continue
            if regex.fullmatch(rel):
                result = not negate
        return result


def _glob_to_regex(pattern: str) -> str:
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
