"""The cache's values as plain JSON data, and back, checked field by field.

A cache folder can come from anywhere (a repository that commits one, a pull request that
adds one), so reading it must never run code: the files hold JSON, whose reader builds only
strings, numbers, lists and dicts, and each value is rebuilt here into the tool's own types
only after its shape has been checked. Anything else raises :class:`CacheContentError`, and
the caller ignores the whole file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from ..diagnostics import Diagnostic, Edit, Fix, Position

if TYPE_CHECKING:  # pragma: no cover
    from ..analysis.project import SymbolTable


class CacheContentError(ValueError):
    """A value in a cache file does not have the shape this tool writes."""


def _expect(value, kind: type, what: str):
    # ``type(...) is``: a bool is not an integer here, and no subclass is expected.
    if type(value) is not kind:
        raise CacheContentError(f"expected {what}, found {type(value).__name__}")
    return value


def text(value) -> str:
    return _expect(value, str, "a string")


def number(value) -> int:
    return _expect(value, int, "an integer")


def items(value) -> list:
    return _expect(value, list, "a list")


def mapping(value) -> dict:
    return _expect(value, dict, "an object")


def optional_text(value) -> Optional[str]:
    return None if value is None else text(value)


def row(value, length: int) -> list:
    """A JSON array of exactly ``length`` items."""
    if len(items(value)) != length:
        raise CacheContentError(f"expected a list of {length} items")
    return value


def texts(value) -> List[str]:
    """A list of strings (checked in one pass: caches hold hundreds of thousands)."""
    if type(value) is not list or not all(type(v) is str for v in value):
        raise CacheContentError("expected a list of strings")
    return value


def text_map(value) -> Dict[str, str]:
    if not all(type(v) is str for v in mapping(value).values()):
        raise CacheContentError("expected an object of strings")
    return value


def text_set_map(value) -> Dict[str, set]:
    return {k: set(texts(v)) for k, v in mapping(value).items()}


# --- findings --------------------------------------------------------------------------

def encode_diagnostic(d: Diagnostic) -> list:
    fix = None if d.fix is None else [d.fix.applicability, d.fix.message,
                                      [[e.start.line, e.start.col, e.end.line, e.end.col, e.content]
                                       for e in d.fix.edits]]
    return [d.code, d.message, d.path, d.start.line, d.start.col, d.end.line, d.end.col, fix,
            list(d.evidence), d.noqa_line, d.cell]


def decode_diagnostic(value) -> Diagnostic:
    code, message, path, sl, sc, el, ec, fix, evidence, noqa_line, cell = row(value, 11)
    return Diagnostic(text(code), text(message), text(path), Position(number(sl), number(sc)),
                      Position(number(el), number(ec)), None if fix is None else _decode_fix(fix),
                      tuple(texts(evidence)), number(noqa_line), None if cell is None else number(cell))


def _decode_fix(value) -> Fix:
    applicability, message, edits = row(value, 3)
    decoded = []
    for edit in items(edits):
        sl, sc, el, ec, content = row(edit, 5)
        decoded.append(Edit(Position(number(sl), number(sc)), Position(number(el), number(ec)), text(content)))
    return Fix(text(applicability), text(message), tuple(decoded))


def encode_diagnostics(diags) -> list:
    return [encode_diagnostic(d) for d in diags]


def decode_diagnostics(value) -> Tuple[Diagnostic, ...]:
    return tuple(decode_diagnostic(d) for d in items(value))


# --- a module's symbol table -------------------------------------------------------------

def encode_table(table: "Optional[SymbolTable]") -> Optional[list]:
    if table is None:
        return None
    return [table.module, table.path, table.functions, table.classes, table.imports,
            {name: [[caller for caller, _ in sites], [off for _, off in sites]]
             for name, sites in table.call_sites.items()},
            sorted(table.backward_functions),
            sorted(table.gradient_functions),
            {name: sorted(called) for name, called in table.callees.items()},
            {name: sorted(bound) for name, bound in table.instances.items()}]


def decode_table(value) -> "Optional[SymbolTable]":
    if value is None:
        return None
    from ..analysis.project import SymbolTable

    module, path, functions, classes, imports, call_sites, backward, gradients, callees, instances = row(value, 10)
    sites = {}
    for name, (callers, offs) in ((name, row(found, 2)) for name, found in mapping(call_sites).items()):
        if len(texts(callers)) != len(items(offs)) or not all(type(off) is bool for off in offs):
            raise CacheContentError("expected call sites as callers and booleans")
        sites[name] = list(zip(callers, offs))
    return SymbolTable(text(module), text(path), text_map(functions),
                       {k: texts(v) for k, v in mapping(classes).items()}, text_map(imports), sites,
                       set(texts(backward)), set(texts(gradients)), text_set_map(callees),
                       text_set_map(instances))
