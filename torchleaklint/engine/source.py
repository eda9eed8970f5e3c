"""Reading a Python file into text without losing how it was written.

Decoding follows PEP 263 (BOM, ``# coding:`` cookie, UTF-8 default) so that the fixer
can write the file back byte-for-byte identical outside the edited spans: same
encoding, same BOM, same newline style.
"""

from __future__ import annotations

import codecs
import io
import re
import tokenize
from dataclasses import dataclass
from typing import List, Optional

_LINE_END = re.compile(r"\r\n|\r|\n")  # the line endings of the tokenizer


class SourceDecodeError(Exception):
    """The bytes of a file cannot be turned into text."""

    def __init__(self, message: str, line: int = 1, col: int = 0):
        super().__init__(message)
        self.line = line
        self.col = col


@dataclass
class SourceText:
    """Decoded text plus what is needed to write it back and map AST offsets."""

    text: str
    encoding: str = "utf-8"
    bom: bool = False

    def __post_init__(self) -> None:
        self._line_starts: Optional[List[int]] = None
        self._lines: Optional[List[str]] = None
        # The bytes the text was decoded from, when read from a file: the fixer writes
        # only if the file still holds them (no lost edits from a concurrent writer).
        self.original: Optional[bytes] = None

    @property
    def lines(self) -> List[str]:
        """The lines of the text, each without its line ending."""
        if self._lines is None:
            # Only \n, \r\n and \r end a line for the tokenizer (not \f or U+2028).
            starts = self.line_starts
            text = self.text
            bounds = starts[1:] + [len(text)]
            self._lines = [text[a:b].rstrip("\r\n") for a, b in zip(starts, bounds)]
        return self._lines

    def line(self, lineno: int) -> str:
        lines = self.lines
        if 1 <= lineno <= len(lines):
            return lines[lineno - 1]
        return ""

    @property
    def line_starts(self) -> List[int]:
        if self._line_starts is None:
            # One match per line ending (\r\n counts once), not a Python step per character.
            self._line_starts = [0] + [m.end() for m in _LINE_END.finditer(self.text)]
        return self._line_starts

    def offset(self, line: int, col: int) -> int:
        """Absolute character offset of a (1-based line, 0-based character column)."""
        starts = self.line_starts
        if line - 1 >= len(starts):
            return len(self.text)
        return min(starts[line - 1] + col, len(self.text))

    def char_col(self, line: int, byte_col: int) -> int:
        """Convert the UTF-8 byte column that :mod:`ast` reports into a character column."""
        text = self.line(line)
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    @property
    def newline(self) -> str:
        """The newline style the file mostly uses (for inserted lines)."""
        crlf = self.text.count("\r\n")
        lf = self.text.count("\n") - crlf
        cr = self.text.count("\r") - crlf
        if cr > max(crlf, lf):
            return "\r"
        return "\r\n" if crlf > lf else "\n"

    def encode(self, text: Optional[str] = None) -> bytes:
        data = (self.text if text is None else text).encode(self.encoding)
        if self.bom:
            data = codecs.BOM_UTF8 + data
        return data

    def relocate(self, diagnostics: list, text: Optional[str] = None) -> list:
        """Diagnostics found in ``text`` (default: this text) in the coordinates users see;
        the identity for a plain file (a notebook maps them into its cells)."""
        return diagnostics


def decode_source(data: bytes) -> SourceText:
    """Decode file bytes per PEP 263; raise :class:`SourceDecodeError` on failure."""
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise SourceDecodeError("source contains a NUL byte", line=line)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        encoding = _unknown_codec_read_as_utf8(data, exc.msg)
        if encoding is None:
            raise SourceDecodeError(f"cannot determine the file's encoding: {exc.msg}") from None
    original = data
    bom = False
    if encoding == "utf-8-sig":
        bom = True
        encoding = "utf-8"
        data = data[len(codecs.BOM_UTF8):]
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        line = 1
        col = 0
        if isinstance(exc, UnicodeDecodeError):
            before = data[: exc.start]
            line = before.count(b"\n") + 1
            col = exc.start - (before.rfind(b"\n") + 1)
        reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
        raise SourceDecodeError(f"file is not valid {encoding}: {reason}", line=line, col=col) from None
    source = SourceText(text=text, encoding=encoding, bom=bom)
    source.original = original
    return source


def _unknown_codec_read_as_utf8(data: bytes, message: str) -> Optional[str]:
    """``# -*- coding: future_fstrings -*-`` names a codec that a package registers at
    start-up to rewrite the source for old Pythons; on the Pythons that run the code today
    such codecs pass UTF-8 through. A file whose cookie names a codec this Python does not
    know is read as UTF-8 when its bytes are valid UTF-8 (so a fix writes back the same
    bytes outside its edits); it then parses or is reported like any other file. A codec
    that really transforms the text leaves something the parser rejects (TLL000)."""
    if not message.startswith("unknown encoding") or data.startswith(codecs.BOM_UTF8):
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "utf-8"
