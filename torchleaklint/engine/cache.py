"""The content-hash cache in ``.torchleaklint_cache/``: per file, its pass-1 symbol table
and prefilter words, and its findings with the cross-file facts they were computed from.

An entry's table is reused when the file's bytes (and its place among packages) are the
same; its findings are reused when, in addition, the settings are the same and every
cross-file fact recorded while linting it (see :mod:`.deps`) has the same answer in
today's project. The cache file is named after the tool's fingerprint: the version and
the name, size and modification time of each of the package's own source files, so any
change to the analysis (an edit, an upgrade, a reinstall) starts a fresh cache.
An unreadable cache is ignored with a one-line warning and rebuilt.
"""

from __future__ import annotations

import os
import pickle
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Tuple

from .. import __version__
from ..diagnostics import Diagnostic
from .digests import blake2b

if TYPE_CHECKING:  # pragma: no cover
    from ..analysis.project import SymbolTable

CACHE_DIR_NAME = ".torchleaklint_cache"
FORMAT = 1
_CACHEDIR_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                 "# This file is a cache directory tag created by torchleaklint.\n")

_fingerprint: Optional[str] = None


def tool_fingerprint() -> str:
    """The version plus each source file of the package by name, size and modification
    time: stat calls only, where hashing the sources took as long as the rest of a run
    answered from the cache. An edited, upgraded or reinstalled tool gets a new one."""
    global _fingerprint
    if _fingerprint is None:
        root = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
        h = blake2b(__version__.encode(), digest_size=16)
        for rel, size, mtime in sorted(_sources(root, "")):
            h.update(f"{rel}\0{size}\0{mtime}\n".encode("utf-8", "surrogateescape"))
        _fingerprint = h.hexdigest()
    return _fingerprint


def _sources(folder: str, rel: str) -> List[Tuple[str, int, int]]:
    """(path relative to the package, size, mtime_ns) of every ``.py`` file below ``folder``."""
    found: List[Tuple[str, int, int]] = []
    with os.scandir(folder) as listing:
        for entry in listing:
            name = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    found.extend(_sources(entry.path, name))
            elif entry.name.endswith(".py"):
                st = entry.stat()
                found.append((name, st.st_size, st.st_mtime_ns))
    return found


# A file modified this recently may be modified again within the same clock tick of a
# coarse file-system timestamp without its stat changing ("racily clean" in git's words):
# its content is hashed again on the next run instead of being trusted by its stat.
RACY_NS = 2_000_000_000


def trusted_stat(st: os.stat_result) -> Optional[Tuple[int, int]]:
    """(mtime_ns, size) to recognise the file by on a later run; None when too recent."""
    if st.st_mtime_ns >= time.time_ns() - RACY_NS:
        return None
    return st.st_mtime_ns, st.st_size


def content_hash(data: bytes) -> str:
    return blake2b(data, digest_size=16).hexdigest()


def default_cache_dir() -> str:
    return os.environ.get("TORCHLEAKLINT_CACHE_DIR") or CACHE_DIR_NAME


@dataclass
class StoredDependencies:
    tables: Dict[str, str] = field(default_factory=dict)  # module -> table digest
    analyses: Dict[str, str] = field(default_factory=dict)  # module -> content hash
    queries: Dict[Tuple[str, str], str] = field(default_factory=dict)  # lookup -> answer digest


@dataclass
class Entry:
    stat: Optional[Tuple[int, int]]  # (mtime_ns, size) when the hash was taken; None: too recent to trust
    hash: str
    origin: Tuple[str, str]  # (module, package) the table was computed for
    table: Optional[SymbolTable]  # None: the file does not parse
    words: FrozenSet[str]
    result_key: Optional[str] = None  # the settings the findings below were computed with
    diagnostics: Tuple[Diagnostic, ...] = ()
    dependencies: Optional[StoredDependencies] = None


class Cache:
    """One cache file per tool fingerprint, read whole at start and written once at the end."""

    def __init__(self, folder: "str | os.PathLike[str]") -> None:
        self.folder = os.fspath(folder)
        self.path = os.path.join(self.folder, f"cache-{tool_fingerprint()[:20]}.pickle")
        self.entries: Dict[str, Entry] = {}
        self.warnings: List[str] = []
        self.dirty = False  # anything to write back

    @classmethod
    def open(cls, folder: "Optional[str | os.PathLike[str]]" = None) -> "Cache":
        cache = cls(folder if folder is not None else default_cache_dir())
        cache._load()
        return cache

    def _load(self) -> None:
        data = read_pickle(self.path, self.warnings)
        if data is None:
            return
        entries = data.get("entries")
        if not (isinstance(entries, dict) and all(isinstance(e, Entry) for e in entries.values())):
            self.warnings.append(f"ignoring unreadable cache {self.path} (unexpected content); rebuilding it")
            return
        self.entries = entries

    def save(self) -> Optional[str]:
        """Write the cache atomically (when something changed); a one-line problem, or None."""
        if not self.dirty and os.path.exists(self.path):
            return None
        return write_pickle(self.path, {"format": FORMAT, "tool": tool_fingerprint(), "entries": self.entries})


def read_pickle(path: str, warnings: List[str]) -> Optional[dict]:
    """A cache file's content, if it was written by this tool as it is now; a damaged file
    adds a one-line warning."""
    try:
        with open(path, "rb") as fh:
            data = pickle.load(fh)
    except FileNotFoundError:
        return None
    except Exception as exc:  # any damage: truncated, foreign or garbage bytes
        warnings.append(f"ignoring unreadable cache {path} ({type(exc).__name__}); rebuilding it")
        return None
    if not (isinstance(data, dict) and data.get("format") == FORMAT and data.get("tool") == tool_fingerprint()):
        warnings.append(f"ignoring unreadable cache {path} (unexpected content); rebuilding it")
        return None
    return data


def write_pickle(path: str, payload: dict) -> Optional[str]:
    """Write one cache file atomically in its (tagged, git-ignored) folder and remove the
    files of the same kind that other versions of the tool wrote; a one-line problem, or None."""
    folder, own = os.path.split(path)
    folder = folder or "."
    kind = own.partition("-")[0]
    try:
        os.makedirs(folder, exist_ok=True)
        for name, text in (("CACHEDIR.TAG", _CACHEDIR_TAG), (".gitignore", "*\n")):
            marker = os.path.join(folder, name)
            if not os.path.exists(marker):
                with open(marker, "w", encoding="utf-8") as fh:
                    fh.write(text)
        import tempfile  # here: a run answered from the cache writes nothing

        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".cache-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(payload, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        for name in os.listdir(folder):
            if name.startswith(f"{kind}-") and name.endswith(".pickle") and name != own:
                os.unlink(os.path.join(folder, name))  # written by another version of the tool
    except OSError as exc:
        return f"cannot write the cache in {folder}: {exc.strerror or exc}"
    return None


def clean(folder: "Optional[str | os.PathLike[str]]" = None) -> bool:
    """Remove the cache folder; True if there was one."""
    folder = os.fspath(folder if folder is not None else default_cache_dir())
    if not os.path.exists(folder):
        return False
    import shutil

    shutil.rmtree(folder)
    return True
