"""Which files to lint: directories recursively for ``*.py``, minus excluded folders and
what ``.gitignore`` ignores; files named on the command line are always linted."""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from .gitignore import GitignoreRules


class DiscoveryError(Exception):
    """A path given by the user does not exist; one line."""


def discover(paths: Sequence[str], exclude: Sequence[str] = (), respect_gitignore: bool = True,
             unreadable: Optional[List[Tuple[str, str]]] = None) -> List[str]:
    """Files to lint. Symbolic links met while walking a folder are never followed (a
    linked file is linted where it really lives, if that is inside the tree). Folders
    that cannot be listed are appended to ``unreadable`` as (path, reason) when given."""
    return [path for path, _ in discover_keyed(paths, exclude, respect_gitignore, unreadable)]


def discover_keyed(paths: Sequence[str], exclude: Sequence[str] = (), respect_gitignore: bool = True,
                   unreadable: Optional[List[Tuple[str, str]]] = None) -> Iterator[Tuple[str, str]]:
    """``discover``, with each file's real path (the key that tells two spellings apart)."""
    seen: Set[str] = set()
    for raw in paths:
        if not os.path.lexists(raw):
            raise DiscoveryError(f"{raw}: no such file or directory")
        if os.path.isdir(raw):
            found: Iterable[Tuple[str, str]] = _walk_visible(raw, exclude, respect_gitignore, unreadable)
        else:
            found = [(raw, os.path.realpath(raw))]
        for path, key in found:
            if key not in seen:
                seen.add(key)
                yield path, key


def exclusion_matcher(exclude: Sequence[str]) -> Callable[[str], bool]:
    """One regular expression for all ``exclude`` glob patterns (a trailing slash ignored)."""
    patterns = [pattern.rstrip("/") for pattern in exclude]
    if not patterns:
        return lambda text: False
    regex = re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(p))})" for p in patterns))
    return lambda text: regex.match(os.path.normcase(text)) is not None


def _walk_visible(root: str, exclude: Sequence[str], respect_gitignore: bool,
                  unreadable: Optional[List[Tuple[str, str]]]) -> Iterable[Tuple[str, str]]:
    """The walk of ``root``, less what git (inside a work tree) or the ``.gitignore``
    files (outside one) ignore. Inside a work tree the folder is walked while git lists
    its files, and each file found is kept if git lists it."""
    answer = _git_visible(root) if respect_gitignore else None
    if answer is None:
        return _walk(root, exclude, respect_gitignore, unreadable)
    met: List[Tuple[str, str]] = []
    walked = list(_walk(root, exclude, False, met, with_rel=True))
    allowed = answer()
    if allowed is None:  # not a work tree after all, or no git: git's rules read from the files
        return _walk(root, exclude, respect_gitignore, unreadable)
    if unreadable is not None:
        unreadable.extend(met)
    return [(path, real) for path, real, rel in walked if rel in allowed]


def _walk(root: str, exclude: Sequence[str], respect_gitignore: bool,
          unreadable: Optional[List[Tuple[str, str]]] = None, with_rel: bool = False) -> Iterator[tuple]:
    """(path, real path) of the lintable files below ``root``: each folder's files in name
    order, then its subfolders in name order, less what the ``.gitignore`` files ignore
    when ``respect_gitignore``. Links are not followed, so a file's real path is its folder's
    real path joined with its name. ``with_rel``: (path, real path, path relative to
    ``root`` with ``/``)."""
    ignores = GitignoreRules() if respect_gitignore else None
    matches = exclusion_matcher(exclude)
    real_root = os.path.realpath(root)

    def walk(folder: str, real: str, rel: str) -> Iterator[Tuple[str, str]]:
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            if unreadable is not None:
                unreadable.append((exc.filename or folder, exc.strerror or str(exc)))
            return
        entered = ignores is not None and ignores.enter(folder, rel)
        subfolders = []
        for entry in entries:
            name = entry.name
            try:
                if entry.is_symlink():
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if not is_dir and not name.endswith((".py", ".pyi", ".ipynb")):
                continue
            entry_rel = f"{rel}/{name}" if rel else name
            if matches(name) or matches(entry_rel):
                continue
            full = os.path.join(folder, name)
            if is_dir:
                if ignores is None or not ignores.ignored(entry_rel, is_dir=True):
                    subfolders.append((full, os.path.join(real, name), entry_rel))
                continue
            if ignores is not None and ignores.ignored(entry_rel, is_dir=False):
                continue
            yield (full, os.path.join(real, name), entry_rel) if with_rel else (full, os.path.join(real, name))
        for sub in subfolders:
            yield from walk(*sub)
        if entered:
            ignores.leave()

    yield from walk(root, real_root, "")


def _git_visible(root: str) -> Optional[Callable[[], Optional[Set[str]]]]:
    """When ``root`` may be in a git work tree: git is started listing the tracked and
    untracked-but-not-ignored files under it, and the function returned waits for the
    listing (relative to ``root``, with ``/``), or None when git could not give one."""
    if not _maybe_in_git(root):
        return None
    import subprocess  # here: only folders inside a work tree are asked about

    try:
        git = subprocess.Popen(["git", "-C", root, "ls-files", "-z", "-co", "--exclude-standard", "--", "."],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return lambda: None

    def listing() -> Optional[Set[str]]:
        try:
            out, _ = git.communicate(timeout=60)
        except subprocess.SubprocessError:
            git.kill()
            git.communicate()
            return None
        if git.returncode != 0:  # not a work tree after all, or no git
            return None
        return {rel for rel in out.decode("utf-8", "surrogateescape").split("\0") if rel}

    return listing


def _maybe_in_git(root: str) -> bool:
    """Whether git could see ``root`` as part of a work tree: a ``.git`` in it or above
    it, or git's own variables naming one. Saves starting git for every other folder."""
    if os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE"):
        return True
    folder = os.path.abspath(root)
    while True:
        if os.path.lexists(os.path.join(folder, ".git")):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent
