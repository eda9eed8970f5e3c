"""Whole-run snapshots: a check run whose every input is as it was last time is answered
with last time's findings, without loading the per-file cache or any analysis.

A run's findings are a function of the tool, its settings, the working directory (paths
are reported as given) and the project: which files, their bytes and the module each is
(its place among ``__init__.py`` folders). The snapshot key digests all of these, with
each file's ``(mtime_ns, size, ctime_ns, inode)`` standing for its bytes, as the per-file cache
does. This is the common case of pre-commit and CI re-runs; a run with any difference
goes through the per-file cache (:mod:`.cache`), which re-lints what depends on it.

A file changed in the same clock tick as it was read could keep its stat (coarse
file-system timestamps). As git does for "racily clean" files, a file that
``cache.trusted_stat`` finds too recently modified is not trusted by its stat alone: its
content hash, taken before the run reads it, is stored with the snapshot and compared on
reuse.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence, Tuple

from ..diagnostics import Diagnostic
from .cache import (SUFFIX, content_hash, default_cache_dir, json_line, read_json, tool_fingerprint, trusted_stat,
                    write_data)
from .cache_codec import CacheContentError, decode_diagnostics, encode_diagnostics, items, mapping, row, text, text_map
from .digests import blake2b, canonical
from .file_gate import read_regular
from .modules import forget_folders, module_name_for

KEPT = 8  # snapshots kept (different path sets or settings), most recent first


class RunKey:
    """The digest of one run's inputs, taken before any file is read."""

    def __init__(self, files: Sequence[str], settings) -> None:
        self.value: Optional[str] = None  # None: a file could not be read; no snapshot
        # Files too recently modified to be trusted by their stat: path -> content hash.
        self.racy: Dict[str, str] = {}
        forget_folders()
        h = blake2b(canonical([os.getcwd(), settings]).encode("utf-8", "surrogatepass"), digest_size=16)
        for path in files:
            try:
                st = os.stat(path)
                if trusted_stat(st) is None:
                    self.racy[path] = _hash_of(path)
            except OSError:
                return
            module, package = module_name_for(path)
            h.update(f"{path}\0{st.st_mtime_ns}\0{st.st_size}\0{st.st_ctime_ns}\0{st.st_ino}\0{module}\0{package}\n"
                     .encode("utf-8", "surrogatepass"))
        self.value = h.hexdigest()


def _hash_of(path: str) -> str:
    return content_hash(read_regular(path))


def _unchanged(racy: Dict[str, str]) -> bool:
    try:
        return all(_hash_of(path) == expected for path, expected in racy.items())
    except OSError:
        return False


class Snapshots:
    """The last few runs' findings, in one small file beside the per-file cache."""

    def __init__(self, folder: "Optional[str | os.PathLike[str]]" = None) -> None:
        folder = os.fspath(folder if folder is not None else default_cache_dir())
        self.path = os.path.join(folder, f"runs-{tool_fingerprint()[:20]}{SUFFIX}")
        self.warnings: List[str] = []
        # key -> [racy files' hashes, [[path, findings], ...]] as stored (plain JSON values);
        # a run is decoded and checked when it is used.
        self._runs: Optional[Dict[str, list]] = None

    def _load(self) -> Dict[str, list]:
        if self._runs is None:
            warned = len(self.warnings)
            data = read_json(self.path, self.warnings)
            if type(data) is not dict and len(self.warnings) == warned and os.path.exists(self.path):
                self.warnings.append(f"ignoring unreadable cache {self.path} (expected an object); rebuilding it")
            self._runs = data if type(data) is dict else {}
        return self._runs

    def _decoded(self, value) -> Optional[Tuple[Dict[str, str], List[Tuple[str, List[Diagnostic]]]]]:
        try:
            racy, files = row(value, 2)
            found = []
            for pair in items(files):
                path, diags = row(pair, 2)
                found.append((text(path), list(decode_diagnostics(diags))))
            return text_map(mapping(racy)), found
        except CacheContentError as exc:
            self.warnings.append(f"ignoring unreadable cache {self.path} ({exc}); rebuilding it")
            return None

    def findings(self, key: RunKey) -> Optional[List[Tuple[str, List[Diagnostic]]]]:
        """(path, findings) per file, in run order, when a run with this key was recorded."""
        if key.value is None:
            return None
        runs = self._load()
        stored = runs.get(key.value)
        found = self._decoded(stored) if stored is not None else None
        if found is None or not _unchanged(found[0]):
            return None
        if found[0] and not key.racy:
            # Its files are old enough now to be trusted by their stat: stop hashing them.
            runs[key.value] = [{}, stored[1]]
            self._write()
        return found[1]

    def record(self, key: RunKey, per_file: List[Tuple[str, List[Diagnostic]]]) -> Optional[str]:
        """Keep this run's findings for ``key``; a one-line problem, or None."""
        if key.value is None:
            return None
        runs = self._load()
        stored = [key.racy, [[path, encode_diagnostics(diags)] for path, diags in per_file]]
        if runs.get(key.value) == stored:
            return None
        newest = {key.value: stored}
        for other, value in runs.items():
            if len(newest) >= KEPT:
                break
            newest.setdefault(other, value)
        self._runs = newest
        return self._write()

    def _write(self) -> Optional[str]:
        return write_data(self.path, [json_line(self._runs)])
