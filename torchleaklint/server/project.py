"""An editor buffer linted as a check of its project would lint it.

The buffer follows the configuration that governs its path (nearest
``.torchleaklint.toml``, ``torchleaklint.toml`` or pyproject.toml table). Its project is
the files that configuration governs below its folder (without a configuration: the
workspace folder holding the buffer, else the buffer's own folder), found once and again
after a save or a watched-file change. Their pass-1 symbol tables come from the
content-hash cache in the project's folder (a file is parsed again only when its bytes
changed), and every open buffer of the project replaces its file on disk, so a helper
edited but not saved is seen as it is on screen. The files parsed for cross-file questions
stay parsed between keystrokes, for as long as their bytes (content hash) are the same.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ..config import Settings, SettingsResolver
from ..engine.cache import CACHE_DIR_NAME, Cache
from ..engine.lint import LintSession
from ..engine.notebook import is_notebook
from ..engine.parallel import symbol_entries
from ..engine.stdin import CodeResult, decode, folder_neighbours, lint_code
from ..workspace import excluded, plan


@dataclass
class Project:
    root: Optional[str]  # None: the buffer's folder alone (no configuration, no workspace)
    settings: Settings
    files: List[str]


class Projects:
    def __init__(self, workspace_roots: Sequence[str] = ()) -> None:
        self.workspace_roots = sorted((os.path.abspath(r) for r in workspace_roots), key=len, reverse=True)
        self.resolver = SettingsResolver()
        self._files: Dict[Tuple[str, int], List[str]] = {}
        self._caches: Dict[str, Cache] = {}
        # absolute path -> (content hash, text, parsed index) of files parsed by the last session
        self._parsed: Dict[str, Tuple[str, str, object]] = {}
        self.warnings: List[str] = []  # one line each, for the client's log
        self._hashes: Dict[str, str] = {}  # absolute path -> content hash, of the current session's files

    def refresh(self) -> None:
        """Forget configurations and file lists (a file was saved, created or deleted);
        the caches stay: they check each file's bytes themselves."""
        self.resolver = SettingsResolver()
        self._files.clear()

    def settings_for(self, path: str) -> Settings:
        """Raises ConfigError (one line) for a broken configuration."""
        return self.resolver.for_path(path)

    def skipped(self, path: str, settings: Settings) -> bool:
        """Excluded by the configuration (as ``--force-exclude`` would), or not Python code."""
        return is_notebook(path) or not path.endswith((".py", ".pyi")) or excluded(path, settings)

    def project_of(self, path: str, settings: Settings) -> Project:
        root = os.path.dirname(settings.origin) if settings.origin else self._workspace_root(path)
        if root is None:
            return Project(None, settings, folder_neighbours(path))
        key = (root, id(settings))
        if key not in self._files:
            work = plan([root], self.resolver)
            self._files[key] = next((files for own, files in work.groups if own is settings), [])
        return Project(root, settings, self._files[key])

    def _workspace_root(self, path: str) -> Optional[str]:
        full = os.path.abspath(path)
        for root in self.workspace_roots:
            if full == root or full.startswith(root.rstrip(os.sep) + os.sep):
                return root
        return None

    def session(self, path: str, settings: Settings, buffers: Mapping[str, str]) -> LintSession:
        """A session that sees the project, with open buffers in place of their files."""
        project = self.project_of(path, settings)
        session = LintSession(settings)
        own = os.path.abspath(path)
        on_disk = [f for f in project.files if os.path.abspath(f) != own and os.path.abspath(f) not in buffers]
        cache = self._cache(project.root)
        self._hashes = {}
        for file, entry in zip(on_disk, _entries(on_disk, cache)):
            if entry is not None and entry.table is not None:
                session.add_table(file, entry.table, entry.words)
                key = os.path.abspath(file)
                self._hashes[key] = entry.hash
                parsed = self._parsed.get(key)
                if parsed is not None and parsed[0] == entry.hash:
                    session.keep_parse(file, parsed[1], parsed[2])
        in_project = {os.path.abspath(f) for f in project.files}
        for other, text in buffers.items():
            if other != own and other in in_project and not is_notebook(other):
                session.register(other, text=text)
        return session

    def lint(self, path: str, text: str, buffers: Mapping[str, str], fix: bool = False,
             unsafe: bool = False) -> CodeResult:
        """The findings of ``text`` as the file ``path`` (with ``fix``: the fixed text too)."""
        settings = self.settings_for(path)
        if self.skipped(path, settings):
            return CodeResult([], decode(text, path) if not is_notebook(path) else None, text)
        session = self.session(path, settings, buffers)
        result = lint_code(text, path, settings, fix=fix, unsafe=unsafe, session=session)
        self._parsed = {}
        for file, kept_text, index in session.kept_parses():
            key = os.path.abspath(file)
            if key in self._hashes:
                self._parsed[key] = (self._hashes[key], kept_text, index)
        return result

    def _cache(self, root: Optional[str]) -> Optional[Cache]:
        if root is None:
            return None
        if root not in self._caches:
            folder = os.environ.get("TORCHLEAKLINT_CACHE_DIR") or os.path.join(root, CACHE_DIR_NAME)
            cache = Cache.open(folder)
            self.warnings.extend(cache.warnings)
            self._caches[root] = cache
        return self._caches[root]

    def save_caches(self) -> None:
        for cache in self._caches.values():
            problem = cache.save()
            if problem is not None and problem not in self.warnings:
                self.warnings.append(problem)


def _entries(files: List[str], cache: Optional[Cache]) -> List[Optional[object]]:
    found = symbol_entries(files, cache)
    return [found.get(os.path.abspath(f)) for f in files]

