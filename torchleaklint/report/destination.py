"""Where a check's report goes: standard output, or the file named by ``-o/--output-file``
(ruff's spelling), written once when the report is complete.

The file gets exactly what standard output would have shown in a pipe: plain text for the
human formats, the rendered document for the machine ones. Diffs and warnings stay on
their own streams. The file is written through a temporary file in the same folder and
renamed over the target, so a reader never sees half a SARIF document.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Optional, TextIO


class OutputFileError(Exception):
    """The report file cannot be written; one line."""


class ReportDestination:
    def __init__(self, path: Optional[str]) -> None:
        self.path = path
        self._buffer = io.StringIO() if path is not None else None

    @property
    def to_file(self) -> bool:
        return self.path is not None

    @property
    def stream(self) -> TextIO:
        return self._buffer if self._buffer is not None else sys.stdout

    def write(self, text: str) -> None:
        """Machine formats: the whole document (an empty one stays empty)."""
        if not text:
            return
        if self._buffer is not None:
            self._buffer.write(text if text.endswith("\n") else text + "\n")
        else:
            import click

            click.echo(text, nl=not text.endswith("\n"))

    def close(self) -> None:
        """Write the file (its folder is created, as ruff does)."""
        if self._buffer is None:
            return
        import tempfile

        path = self.path
        folder = os.path.dirname(os.path.abspath(path))
        try:
            if os.path.isdir(path):
                raise IsADirectoryError(21, "Is a directory")
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".torchleaklint-report-", suffix=".tmp", dir=folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                    fh.write(self._buffer.getvalue())
                os.chmod(tmp, 0o666 & ~_umask())
                os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            raise OutputFileError(f"{path}: cannot write the report: {exc.strerror or exc}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
