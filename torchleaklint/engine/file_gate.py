"""Which files are read at all: regular files within the size budget.

A FIFO named ``pipe.py`` blocks the first ``open`` for reading until a writer comes, and a
device can stream forever, so a linter in pre-commit or CI would hang; a generated file of
tens of megabytes costs minutes and gigabytes to parse. Every file is looked at with
``stat`` before it is opened, and one that is not a regular file, or is larger than the
``max-file-size-mb`` setting, is reported as TLL000 and skipped. Files are then opened
with ``O_NONBLOCK`` and checked again with ``fstat``, for a file replaced in between.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, BinaryIO, List, Optional, Sequence, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from ..diagnostics import Diagnostic

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"))
_MB = 1 << 20


class NotRegularFile(OSError):
    """A path that is not a regular file; ``strerror`` says what it is."""


def special_kind(mode: int) -> Optional[str]:
    """What a non-regular file is ("a FIFO", ...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "not a regular file"


def skip_reason(st: os.stat_result, max_mb: float) -> Optional[str]:
    """Why a file with this stat is not read (``max_mb``: the size limit, 0 for none), or None."""
    kind = special_kind(st.st_mode)
    if kind is not None:
        return f"skipped: {kind}, not a regular file"
    if max_mb and st.st_size > max_mb * _MB:
        size = f"{st.st_size / _MB:.1f} MB" if st.st_size >= _MB // 10 else f"{st.st_size} bytes"
        return f"skipped: too large ({size}; the limit is max-file-size-mb = {max_mb})"
    return None


def open_regular(path: str) -> BinaryIO:
    """A regular file, opened for reading. Raises :class:`NotRegularFile` (without ever
    blocking) for a FIFO, socket or device, and OSError as ``open`` does."""
    kind = special_kind(os.stat(path).st_mode)
    if kind is None:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        kind = special_kind(os.fstat(fd).st_mode)
        if kind is None:
            return os.fdopen(fd, "rb")
        os.close(fd)  # replaced by a special file after the stat above
    raise NotRegularFile(0, f"{kind}, not a regular file", path)


def read_regular(path: str) -> bytes:
    with open_regular(path) as fh:
        return fh.read()


def gate(files: Sequence[str], max_mb: float) -> Tuple[List[str], List["Diagnostic"]]:
    """The files to read, and a TLL000 report for each one skipped. A file that cannot be
    stat'ed is kept: reading it reports the reason."""
    from ..diagnostics import parse_error

    kept: List[str] = []
    skipped: List["Diagnostic"] = []
    for path in files:
        try:
            reason = skip_reason(os.stat(path), max_mb)
        except OSError:
            reason = None
        if reason is None:
            kept.append(path)
        else:
            skipped.append(parse_error(path, reason, 1, 0))
    return kept, skipped
