"""The modules a process has parsed during a run, kept so that no file is parsed twice.

A file's tree and index are needed by its own symbol table (pass 1), its own lint (pass 2)
and the lints of the files that look up its functions and classes. Keeping each module
from its first parse to the end of the run makes that one parse per file; the price is
memory, about 46 bytes per character of source (measured on the pytorch-lightning tree:
5.4 M characters, 250 MB in one process). So the kept modules are bounded by their source
size: past the bound, pass 1 keeps no more (the files kept first are linted first) and
pass 2 drops the least recently used, and a module dropped is parsed again when needed.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Optional, Tuple

from ..analysis.module_index import ModuleIndex

# About 280 MB per process at most; the whole of a large project such as pytorch-lightning
# (5.4 M characters) fits, and with N workers each keeps only the files it parsed.
KEPT_SOURCE_CHARACTERS = 6_000_000


class ParsedModules:
    """path -> (text, index), least recently used first, bounded by the texts' length."""

    def __init__(self, limit: Optional[int] = None) -> None:
        self.limit = KEPT_SOURCE_CHARACTERS if limit is None else limit
        self._kept: "OrderedDict[str, Tuple[str, ModuleIndex]]" = OrderedDict()
        self._size = 0

    def keep(self, path: str, text: str, index: ModuleIndex, evict: bool = True) -> None:
        """Keep the module parsed from ``text``; when that passes the bound, drop the least
        recently used modules (``evict``) or do not keep this one."""
        self.drop(path)
        if not evict and self._kept and self._size + len(text) > self.limit:
            return
        self._kept[path] = (text, index)
        self._size += len(text)
        while self._size > self.limit and len(self._kept) > 1:
            dropped, _ = self._kept.popitem(last=False)[1]
            self._size -= len(dropped)

    def get(self, path: str) -> Optional[Tuple[str, ModuleIndex]]:
        kept = self._kept.get(path)
        if kept is not None:
            self._kept.move_to_end(path)
        return kept

    def drop(self, path: str) -> None:
        old = self._kept.pop(path, None)
        if old is not None:
            self._size -= len(old[0])

    def __len__(self) -> int:
        return len(self._kept)

    def items(self):
        """(path, (text, index)) pairs, least recently used first."""
        return list(self._kept.items())
