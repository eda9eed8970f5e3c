"""The content-hash cache in ``.torchleaklint_cache/``: per file, its pass-1 symbol table
and prefilter words, and its findings with the cross-file facts they were computed from.

An entry's table is reused when the file's bytes (and its place among packages) are the
same; its findings are reused when, in addition, the settings are the same and every
cross-file fact recorded while linting it (see :mod:`.deps`) has the same answer in
today's project. The cache file is named after the tool's fingerprint: the version and
the name, size and modification time of each of the package's own source files, so any
change to the analysis (an edit, an upgrade, a reinstall) starts a fresh cache.

A cache folder may come from anywhere (committed to a repository, added by a pull
request), so its files hold data only: a header line naming the format and the tool's
fingerprint, then JSON, checked field by field when read (:mod:`.cache_codec`). Any other
file is ignored with a one-line warning and rebuilt; nothing in it is ever run.
"""

from __future__ import annotations

import os
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Tuple

from .. import __version__
from ..diagnostics import Diagnostic
from .cache_codec import (CacheContentError, decode_diagnostics, decode_table, encode_diagnostics, encode_table,
                          number, optional_text, row, text, text_map, texts)
from .cache_folder import CACHEDIR_TAG, folder_problem, own_file
from .digests import blake2b
from .file_gate import open_regular

if TYPE_CHECKING:  # pragma: no cover
    from ..analysis.project import SymbolTable

CACHE_DIR_NAME = ".torchleaklint_cache"
MAGIC = "torchleaklint-cache"
FORMAT = 2  # 1: pickle files, which could run code when read; 2: a header line and JSON
SUFFIX = ".json"

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


# What a file is recognised by on a later run. The change time and the inode are there
# because some sync and build tools rewrite a file at the same size and then restore its
# old modification time (os.utime); the kernel sets the change time on every write and
# utime, and no program can set it back.
STAT_FIELDS = ("mtime_ns", "size", "ctime_ns", "ino")


def stat_key(st: os.stat_result) -> Tuple[int, ...]:
    """The :data:`STAT_FIELDS` of ``st``."""
    return st.st_mtime_ns, st.st_size, st.st_ctime_ns, st.st_ino


def trusted_stat(st: os.stat_result) -> Optional[Tuple[int, ...]]:
    """:func:`stat_key`, or None when the file was modified too recently to be trusted by
    it. (The change time is not part of this test: any ``utime``, also the one that ages a
    file, sets it to now; a second rewrite with a restored time within one tick of a
    nanosecond change-time clock is not guarded against.)"""
    if st.st_mtime_ns >= time.time_ns() - RACY_NS:
        return None
    return stat_key(st)


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
    stat: Optional[Tuple[int, ...]]  # STAT_FIELDS when the hash was taken; None: too recent to trust
    hash: str
    origin: Tuple[str, str]  # (module, package) the table was computed for
    table: Optional[SymbolTable]  # None: the file does not parse
    words: FrozenSet[str]
    result_key: Optional[str] = None  # the settings the findings below were computed with
    diagnostics: Tuple[Diagnostic, ...] = ()
    dependencies: Optional[StoredDependencies] = None


class Entries:
    """path -> :class:`Entry`. Each entry is decoded from its line of the cache file when it
    is first asked for: a run over a few files (pre-commit) does not pay for decoding the
    whole project's entries. A line that turns out to be damaged counts as no entry (one
    warning for the file)."""

    def __init__(self, raw: Dict[str, bytes], warnings: List[str], where: str) -> None:
        self._raw = raw  # path -> the entry's JSON text, not decoded yet
        self._entries: Dict[str, Entry] = {}
        self.read: Dict[str, Tuple[Entry, tuple, bytes]] = {}  # path -> (entry as decoded, its parts, its text)
        self._warnings = warnings
        self._where = where
        self._damaged = False

    def get(self, path: str, default: Optional[Entry] = None) -> Optional[Entry]:
        entry = self._entries.get(path)
        if entry is None and path in self._raw:
            raw = self._raw.pop(path)
            try:
                entry = _decode_entry(json.loads(raw))
            except (ValueError, RecursionError) as exc:  # CacheContentError is a ValueError
                if not self._damaged:  # one warning for the file, however many entries
                    self._warnings.append(f"ignoring damaged entries of cache {self._where} ({exc}); "
                                          f"rebuilding them")
                self._damaged = True
                return default
            self._entries[path] = entry
            self.read[path] = (entry, _parts(entry), raw)
        return default if entry is None else entry

    def __getitem__(self, path: str) -> Entry:
        entry = self.get(path)
        if entry is None:
            raise KeyError(path)
        return entry

    def __setitem__(self, path: str, entry: Entry) -> None:
        self._raw.pop(path, None)
        self._entries[path] = entry

    def __contains__(self, path: object) -> bool:
        return path in self._entries or path in self._raw

    def __len__(self) -> int:
        return len(self._entries) + len(self._raw)

    def lines(self) -> List[bytes]:
        """Every entry as a line of the cache file: an entry never asked for, or one still as
        it was decoded, is written back as it was read; others are encoded again."""
        lines = [_line(path, raw) for path, raw in self._raw.items()]
        for path, entry in self._entries.items():
            read = self.read.get(path)
            if read is not None and read[0] is entry and _same_parts(read[1], _parts(entry)):
                lines.append(_line(path, read[2]))
            else:
                lines.append(_line(path, json_line(_encode_entry(entry))))
        return lines


def _line(path: str, raw: bytes) -> bytes:
    # JSON text escapes every tab, so the first tab ends the path.
    return json_line(path) + b"\t" + raw


class Cache:
    """One cache file per tool fingerprint, read at start (entries decoded when used) and
    written once at the end."""

    def __init__(self, folder: "str | os.PathLike[str]") -> None:
        self.folder = os.fspath(folder)
        self.path = os.path.join(self.folder, f"cache-{tool_fingerprint()[:20]}{SUFFIX}")
        self.warnings: List[str] = []
        self.entries = Entries({}, self.warnings, self.path)
        self.dirty = False  # anything to write back

    @classmethod
    def open(cls, folder: "Optional[str | os.PathLike[str]]" = None) -> "Cache":
        cache = cls(folder if folder is not None else default_cache_dir())
        cache._load()
        return cache

    def _load(self) -> None:
        lines = read_lines(self.path, self.warnings)
        if lines is None:
            return
        raw = {}
        try:
            for line in lines:
                key, tab, entry = line.partition(b"\t")
                path = json.loads(key) if tab else None
                if type(path) is not str:
                    raise CacheContentError("expected a file name and a tab at the start of each line")
                raw[path] = entry
        except (ValueError, RecursionError) as exc:
            self.warnings.append(f"ignoring unreadable cache {self.path} ({exc}); rebuilding it")
            return
        self.entries = Entries(raw, self.warnings, self.path)

    def save(self) -> Optional[str]:
        """Write the cache atomically (when something changed); a one-line problem, or None."""
        if not self.dirty and os.path.exists(self.path):
            return None
        return write_data(self.path, self.entries.lines())


def _parts(e: Entry) -> tuple:
    """The attributes that the checking code replaces when an entry changes."""
    return (e.stat, e.hash, e.origin, e.table, e.words, e.result_key, e.diagnostics, e.dependencies)


def _same_parts(before: tuple, now: tuple) -> bool:
    return all(a is b or (type(a) is tuple and a == b) for a, b in zip(before, now))


def _encode_entry(e: Entry) -> list:
    deps = None if e.dependencies is None else [
        e.dependencies.tables, e.dependencies.analyses,
        [[kind for kind, _ in e.dependencies.queries], [arg for _, arg in e.dependencies.queries],
         list(e.dependencies.queries.values())]]
    return [None if e.stat is None else list(e.stat), e.hash, list(e.origin), encode_table(e.table),
            sorted(e.words), e.result_key, encode_diagnostics(e.diagnostics), deps]


def _decode_entry(value) -> Entry:
    stat, hash_, origin, table, words, result_key, diags, deps = row(value, 8)
    module, package = row(origin, 2)
    entry = Entry(None if stat is None else tuple(number(n) for n in row(stat, len(STAT_FIELDS))), text(hash_),
                  (text(module), text(package)), decode_table(table), frozenset(texts(words)),
                  optional_text(result_key), decode_diagnostics(diags))
    if deps is not None:
        tables, analyses, queries = row(deps, 3)
        kinds, args, answers = (texts(column) for column in row(queries, 3))
        if not len(kinds) == len(args) == len(answers):
            raise CacheContentError("expected queries as three lists of one length")
        entry.dependencies = StoredDependencies(text_map(tables), text_map(analyses),
                                                dict(zip(zip(kinds, args), answers)))
    return entry


def read_lines(path: str, warnings: List[str]) -> Optional[List[bytes]]:
    """The lines of a cache file after its first, if this tool as it is now wrote it: the
    first line names the format and the tool's fingerprint, the others hold JSON (parsed
    and checked by the caller). Anything else adds a one-line warning and is ignored;
    nothing in the file is ever run."""
    try:
        with open_regular(path) as fh:  # a FIFO planted under the cache's name must not block
            header = fh.readline()
            body = fh.read() if header == _header() else None
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.append(f"ignoring unreadable cache {path} ({exc.strerror or exc}); rebuilding it")
        return None
    if body is None:
        warnings.append(f"ignoring unreadable cache {path} (not written by this torchleaklint {__version__}); "
                        f"rebuilding it")
        return None
    return [line for line in body.split(b"\n") if line]


def read_json(path: str, warnings: List[str]):
    """The one JSON value of a cache file (see :func:`read_lines`), or None with a warning."""
    lines = read_lines(path, warnings)
    if lines is None:
        return None
    try:
        if len(lines) != 1:
            raise ValueError(f"{len(lines)} lines where one was written")
        return json.loads(lines[0])
    except (ValueError, RecursionError) as exc:  # truncated, damaged, or nested to exhaust the parser
        warnings.append(f"ignoring unreadable cache {path} ({type(exc).__name__}); rebuilding it")
        return None


def json_line(value) -> bytes:
    # ASCII only: file names that are not UTF-8 keep their surrogate escapes.
    return json.dumps(value, separators=(",", ":"), check_circular=False).encode("ascii")


def _header() -> bytes:
    return f"{MAGIC} {FORMAT} {tool_fingerprint()}\n".encode()


def write_data(path: str, lines: List[bytes]) -> Optional[str]:
    """Write one cache file atomically in its (tagged, git-ignored) folder and remove the
    files of the same kind that other versions of the tool wrote; a one-line problem, or None."""
    folder, own = os.path.split(path)
    folder = folder or "."
    kind = own.partition("-")[0]
    problem = folder_problem(folder)
    if problem is not None:
        return f"cannot write the cache: {problem}"
    try:
        if not os.path.isdir(folder):
            os.mkdir(folder)
        for name, content in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "*\n")):
            marker = os.path.join(folder, name)
            if not os.path.exists(marker):
                with open(marker, "w", encoding="utf-8") as fh:
                    fh.write(content)
        import tempfile  # here: a run answered from the cache writes nothing

        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".cache-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_header())
                for line in lines:
                    fh.write(line + b"\n")
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        for name in os.listdir(folder):
            if name.startswith(f"{kind}-") and own_file(name) and name != own:
                os.unlink(os.path.join(folder, name))  # written by another version of the tool
    except OSError as exc:
        return f"cannot write the cache in {folder}: {exc.strerror or exc}"
    return None
