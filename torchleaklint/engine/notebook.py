"""Jupyter notebooks: the code cells of an ``.ipynb`` file as one Python module.

The code cells are joined into one text, each preceded by a marker comment naming its
cell, so that the analysis sees the notebook the way the kernel runs it (top to bottom,
one namespace). IPython syntax that is not Python (``%magic``, ``!shell``, ``x = !ls``,
``obj?``) is replaced line for line by ``pass`` placeholders, and cells run by a cell
magic other than timing/capturing ones (``%%bash``, ``%%writefile``…) are left out.

Fixes edit that joined text; writing back splits it at the markers, restores every
placeholder, and replaces only the ``source`` of cells whose code changed. Outputs,
metadata, key order and the JSON layout stay as they were. Findings are reported
per cell: 1-based cell number (the cell's position in the notebook, markdown cells
counted) with line and column inside the cell.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Tuple

from ..diagnostics import Diagnostic, Edit, Position
from .source import SourceDecodeError, SourceText

NOTEBOOK_SUFFIX = ".ipynb"

_MARKER = "# torchleaklint: notebook cell {}"
_MARKER_RE = re.compile(r"^# torchleaklint: notebook cell (\d+)$")
_PLACEHOLDER = "{}pass  # torchleaklint: ipython {}"
_LINE_REF = re.compile(r"(?<![\w.:])line (\d+)\b")
_PLACEHOLDER_RE = re.compile(r"^(\s*)pass  # torchleaklint: ipython (\d+)$")

# Cell magics whose body is ordinary Python run in the notebook's namespace.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit", "mprun"})

_ESCAPE = re.compile(r"^\s*[%!]")  # %magic, %%magic, !shell
_HELP = re.compile(r"^\s*(\?{1,2}[\w.]*|[\w.]+\?{1,2})\s*$")  # ?obj, obj?, obj??
_ASSIGNED_ESCAPE = re.compile(r"^\s*[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[!%]")


def is_notebook(path: str) -> bool:
    return str(path).lower().endswith(NOTEBOOK_SUFFIX)


def _cell_problem(cell) -> str:
    """What makes a cell unlike nbformat's (an object whose ``source`` is a string or a
    list of strings), or "" for a good cell. A cell of another shape would otherwise be
    read as empty and the notebook reported clean."""
    if not isinstance(cell, dict):
        return f"is not an object but {type(cell).__name__}"
    if not isinstance(cell.get("cell_type", ""), str):
        return "has a `cell_type` that is not a string"
    source = cell.get("source", "")
    if isinstance(source, str) or (isinstance(source, list) and all(isinstance(s, str) for s in source)):
        return ""
    return f"has a `source` that is not a string or a list of strings ({json.dumps(source)[:40]})"


def _cell_text(source) -> str:
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def _ipython_line(line: str) -> bool:
    return bool(_ESCAPE.match(line) or _HELP.match(line) or _ASSIGNED_ESCAPE.match(line))


@dataclass
class NotebookSource(SourceText):
    """The joined code of a notebook, plus what is needed to write the notebook back."""

    notebook: dict = field(default_factory=dict)
    raw: str = ""
    cells: Dict[int, str] = field(default_factory=dict)  # cell index -> original code
    masked: List[str] = field(default_factory=list)  # placeholder number -> original line

    # -- reading ------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes) -> "NotebookSource":
        try:
            raw = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            before = data[: exc.start]
            raise SourceDecodeError(f"notebook is not valid UTF-8: {exc.reason}", line=before.count(b"\n") + 1,
                                    col=exc.start - (before.rfind(b"\n") + 1)) from None
        try:
            notebook = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            line, col = getattr(exc, "lineno", 1), getattr(exc, "colno", 1) - 1
            msg = getattr(exc, "msg", str(exc))
            raise SourceDecodeError(f"not a valid notebook: invalid JSON: {msg}", line=line, col=col) from None
        if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
            raise SourceDecodeError("not a valid notebook: no list of `cells` (nbformat 4 is supported)")
        for number, cell in enumerate(notebook["cells"], 1):
            problem = _cell_problem(cell)
            if problem:
                raise SourceDecodeError(f"not a valid notebook: cell {number} {problem}")
        source = cls(text="", encoding="utf-8", bom=data.startswith(b"\xef\xbb\xbf"),
                     notebook=notebook, raw=raw)
        source.text = source._join()
        return source

    def _is_python(self) -> bool:
        meta = self.notebook.get("metadata")
        if not isinstance(meta, dict):
            return True
        for key, sub in (("kernelspec", "language"), ("language_info", "name")):
            table = meta.get(key)
            if isinstance(table, dict) and isinstance(table.get(sub), str):
                return table[sub].lower() in ("python", "python3", "ipython", "ipython3")
        return True

    def _join(self) -> str:
        parts: List[str] = []
        if not self._is_python():
            return ""
        for index, cell in enumerate(self.notebook["cells"]):
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            code = _cell_text(cell.get("source", ""))
            lines = code.split("\n")
            first = next((l.strip() for l in lines if l.strip()), "")
            if first.startswith("%%") and first[2:].split(" ")[0] not in PYTHON_CELL_MAGICS:
                continue  # %%bash, %%html, %%writefile…: not this kernel's Python
            self.cells[index] = code
            out = []
            continued = False
            for line in lines:
                if continued or _ipython_line(line):
                    indent = line[: len(line) - len(line.lstrip())] if not continued else ""
                    out.append(_PLACEHOLDER.format(indent, len(self.masked)))
                    self.masked.append(line)
                    continued = line.rstrip().endswith("\\")
                else:
                    out.append(line)
            body = "\n".join(out)
            parts.append(_MARKER.format(index + 1) + "\n" + body + ("" if body.endswith("\n") else "\n"))
        return "".join(parts)

    # -- writing ------------------------------------------------------------------------
    def split(self, text: str) -> Dict[int, str]:
        """Cell index -> code, from a joined text (placeholders restored)."""
        out: Dict[int, str] = {}
        current: Optional[int] = None
        lines: List[str] = []
        for line in text.splitlines(keepends=True):
            match = _MARKER_RE.match(line.rstrip("\r\n"))
            if match:
                if current is not None:
                    out[current] = self._restore(current, lines)
                current, lines = int(match.group(1)) - 1, []
            elif current is not None:
                lines.append(line)
        if current is not None:
            out[current] = self._restore(current, lines)
        return out

    def _restore(self, index: int, lines: List[str]) -> str:
        restored = []
        for line in lines:
            body = line.rstrip("\r\n")
            match = _PLACEHOLDER_RE.match(body)
            if match and int(match.group(2)) < len(self.masked):
                restored.append(self.masked[int(match.group(2))] + line[len(body):])
            else:
                restored.append(line)
        code = "".join(restored)
        if not self.cells.get(index, "").endswith("\n") and code.endswith("\n"):
            code = code[:-1]  # the joined text ends every cell with a newline
        return code

    def encode(self, text: Optional[str] = None) -> bytes:
        bom = b"\xef\xbb\xbf" if self.bom else b""
        if text is None or text == self.text:
            return bom + self.raw.encode("utf-8")
        changed = {i: code for i, code in self.split(text).items() if code != self.cells.get(i)}
        if not changed:
            return bom + self.raw.encode("utf-8")
        notebook = json.loads(self.raw)
        for index, code in changed.items():
            cell = notebook["cells"][index]
            if isinstance(cell.get("source"), list):
                cell["source"] = code.splitlines(keepends=True)
            else:
                cell["source"] = code
        out = json.dumps(notebook, indent=_indent_of(self.raw), ensure_ascii=_ascii_only(self.raw))
        if self.raw.endswith("\n"):
            out += "\n"
        return bom + out.encode("utf-8")

    # -- locations ----------------------------------------------------------------------
    def relocate(self, diagnostics: list, text: Optional[str] = None) -> list:
        lines = SourceText(self.text if text is None else text).lines
        cell_of: List[Tuple[int, int]] = [(0, 0)]  # virtual line -> (cell number, marker line)
        current = (0, 0)
        for number, line in enumerate(lines, start=1):
            match = _MARKER_RE.match(line)
            if match:
                current = (int(match.group(1)), number)
            cell_of.append(current)

        def place(pos: Position) -> Tuple[int, Position]:
            cell, marker = cell_of[min(max(pos.line, 1), len(cell_of) - 1)]
            return cell, Position(max(pos.line - marker, 1), pos.col)

        out = []
        for diag in diagnostics:
            cell, start = place(diag.start)
            _, end = place(diag.end)
            fix = diag.fix
            if fix is not None:
                fix = replace(fix, edits=tuple(Edit(place(e.start)[1], place(e.end)[1], e.content)
                                               for e in fix.edits))
            noqa = place(Position(diag.noqa_line, 0))[1].line if diag.noqa_line else 0

            def cell_line(match: "re.Match") -> str:
                where, pos = place(Position(int(match.group(1)), 0))
                return f"cell {where}, line {pos.line}" if where else match.group(0)

            # Messages and evidence cite lines of this file ("(line 12)"): cite cells instead.
            message = _LINE_REF.sub(cell_line, diag.message)
            evidence = tuple(_LINE_REF.sub(cell_line, note) for note in diag.evidence)
            out.append(replace(diag, start=start, end=end, fix=fix, noqa_line=noqa, cell=cell or None,
                               message=message, evidence=evidence))
        return out

    def diff(self, path: str, text: str) -> str:
        """A unified diff per changed cell (``a/path:cell N``)."""
        chunks = []
        for index, code in sorted(self.split(text).items()):
            before = self.cells.get(index, "")
            if code == before:
                continue
            name = f"{path}:cell {index + 1}"
            lines = difflib.unified_diff(_lines(before), _lines(code), fromfile=f"a/{name}", tofile=f"b/{name}")
            chunks.append("".join(lines))
        return "".join(chunks)


def _lines(code: str) -> List[str]:
    lines = code.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n\\ No newline at end of cell\n"
    return lines


def _indent_of(raw: str) -> Optional[int]:
    """The indentation step of the JSON file (nbformat writes 1)."""
    match = re.search(r"\n( +)\S", raw)
    return len(match.group(1)) if match else None


def _ascii_only(raw: str) -> bool:
    """Keep ``\\uXXXX`` escapes when the file used them instead of raw non-ASCII text."""
    return raw.isascii() and "\\u" in raw


def cell_location(diag: Diagnostic) -> str:
    """``cell 3:2:5`` for a notebook finding, ``2:5`` otherwise (columns 1-based)."""
    where = f"{diag.start.line}:{diag.start.col + 1}"
    return f"cell {diag.cell}:{where}" if diag.cell is not None else where
