"""Naming what grows: who holds a growing list, and which torchleaklint rule describes a line.

Both answers are best effort and say so when they are not sure: a list is named by the
object attribute, module global or function local that refers to it; a source line is
mapped to the nearest static finding in the same function, by linting that file once.
"""

from __future__ import annotations

import ast
import collections
import gc
import linecache
import re
import sys
import types
from functools import lru_cache
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

Site = Tuple[str, int, str]


def source_line(site: Optional[Site]) -> str:
    if site is None:
        return ""
    return linecache.getline(site[0], site[1]).strip()


def name_in_frames(obj: object, frame) -> Optional[Tuple[str, Optional[Site]]]:
    """How a running function refers to ``obj``: its local variable, if one holds it."""
    while frame is not None:
        code = frame.f_code
        local_values = frame.f_locals
        for name, value in local_values.items():
            if value is obj:
                site = _append_line(code.co_filename, code.co_firstlineno, name)
                return (f"local `{name}` of {code.co_name}()",
                        site or (code.co_filename, frame.f_lineno, code.co_name))
        for name, value in local_values.items():
            # An attribute of an object the function holds (`env.history`, `self.losses`).
            attributes = getattr(value, "__dict__", None)
            if not isinstance(attributes, dict) or isinstance(value, type):
                continue
            key = next((k for k, v in attributes.items() if v is obj), None)
            if key is not None:
                return (f"`{type(value).__name__}.{key}` (`{name}.{key}` in {code.co_name}())",
                        _attribute_append_line(type(value), key))
        frame = frame.f_back
    return None


def lists_in_frame(frame, minimum: int) -> Iterator[list]:
    """The lists of at least ``minimum`` items a running function holds: its local variables
    (a script's globals) and the attributes of the objects among them (``self.losses``)."""
    for value in list(frame.f_locals.values()):
        if type(value) is list:
            if len(value) >= minimum:
                yield value
            continue
        if isinstance(value, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)):
            continue
        attributes = getattr(value, "__dict__", None)
        if isinstance(attributes, dict):
            for item in list(attributes.values()):
                if type(item) is list and len(item) >= minimum:
                    yield item


def name_by_referrers(obj: object) -> Tuple[str, Optional[Site]]:
    """How long-lived objects refer to ``obj``: an attribute of an instance, a module global or
    a closure's variable."""
    for referrer in gc.get_referrers(obj):
        if isinstance(referrer, dict):
            key = next((k for k, v in referrer.items() if v is obj), None)
            if key is None:
                continue
            for module in list(sys.modules.values()):
                if getattr(module, "__dict__", None) is referrer:
                    filename = getattr(module, "__file__", None)
                    return (f"module global `{module.__name__}.{key}`",
                            _append_line(filename, 1, key) if filename else None)
            owners = [o for o in gc.get_referrers(referrer) if getattr(o, "__dict__", None) is referrer]
            if owners:
                return f"`{type(owners[0]).__name__}.{key}`", _attribute_append_line(type(owners[0]), key)
        elif isinstance(referrer, types.CellType):
            named = _closure_variable(referrer)
            if named:
                return named
        elif not isinstance(referrer, (list, tuple, types.FrameType)) and hasattr(referrer, "__dict__"):
            # Instances whose attributes live inline (no separate dict until asked for).
            key = next((k for k, v in vars(referrer).items() if v is obj), None)
            if key is not None:
                return f"`{type(referrer).__name__}.{key}`", _attribute_append_line(type(referrer), key)
    return "an unnamed list", None


def _closure_variable(cell) -> Optional[Tuple[str, Optional[Site]]]:
    """The free variable of a function that ``cell`` holds (a list its closure appends to)."""
    for closure in gc.get_referrers(cell):
        if type(closure) is not tuple:
            continue
        for function in gc.get_referrers(closure):
            if isinstance(function, types.FunctionType) and function.__closure__ is closure:
                code = function.__code__
                name = code.co_freevars[closure.index(cell)]
                return (f"closure variable `{name}` of {code.co_name}()",
                        _append_line(code.co_filename, code.co_firstlineno, name))
    return None


def container_of(objects: Sequence[object], ignore: Sequence[object] = ()) -> Optional[list]:
    """The list (or deque) that holds the most of ``objects``: what keeps a leaked tensor alive.
    One scan of every object the collector tracks: for a report, not for a sample."""
    ignored = {id(o) for o in ignore}
    counts: Dict[int, Tuple[int, object]] = {}
    for referrer in gc.get_referrers(*objects):
        if isinstance(referrer, (list, collections.deque)) and id(referrer) not in ignored:
            count, _ = counts.get(id(referrer), (0, referrer))
            counts[id(referrer)] = (count + 1, referrer)
    if not counts:
        return None
    return max(counts.values(), key=lambda pair: pair[0])[1]


def _append_line(filename: str, first_line: int, name: str) -> Optional[Site]:
    pattern = re.compile(rf"\b{re.escape(name)}\s*\.\s*(append|extend|insert)\(|\b{re.escape(name)}\s*\+=")
    lines = linecache.getlines(filename)
    for number in range(first_line, len(lines) + 1):
        if pattern.search(lines[number - 1]):
            return filename, number, ""
    return None


def _attribute_append_line(cls: type, attribute: str) -> Optional[Site]:
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None)
    if not filename:  # a module loaded from a path without being registered
        code = next((f.__code__ for f in vars(cls).values() if hasattr(f, "__code__")), None)
        filename = code.co_filename if code else None
    if not filename:
        return None
    return _append_line(filename, 1, f"self.{attribute}")


def _creation_line(site: Site) -> Optional[int]:
    """For ``self.x.append(...)`` at ``site``, the line that first binds ``self.x`` in the file."""
    match = re.search(r"\b(self\.\w+)\s*\.\s*(append|extend|insert)\(", source_line(site))
    if not match:
        return None
    binding = re.compile(rf"{re.escape(match.group(1))}\s*(:[^=]*)?=[^=]")
    for number, text in enumerate(linecache.getlines(site[0]), start=1):
        if binding.search(text):
            return number
    return None


@lru_cache(maxsize=64)
def _static_findings(filename: str) -> List[Tuple[int, str, Tuple[int, int]]]:
    """(line, code, enclosing function's line range) for each finding in the file."""
    from .. import lint_source
    from ..config import Settings
    from ..rules import OPT_IN

    try:
        with open(filename, encoding="utf-8") as fh:
            code = fh.read()
        tree = ast.parse(code)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return []
    spans = [(node.lineno, node.end_lineno or node.lineno) for node in ast.walk(tree)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    found = []
    # The growth is measured already, so opt-in rules may name it too.
    for diag in lint_source(code, filename, settings=Settings(extend_select=tuple(sorted(OPT_IN)))):
        line = diag.start.line
        # Module-level code (scripts, notebooks) counts as one span.
        inner = min((s for s in spans if s[0] <= line <= s[1]), key=lambda s: s[1] - s[0], default=(0, 10**9))
        found.append((line, diag.code, inner))
    return found


# Which rules describe which kind of growth, most specific first.
RULES_FOR_KIND: Dict[str, Tuple[str, ...]] = {
    "graph": ("TLL001", "TLL002", "TLL006", "TLL007", "TLL009", "TLL008"),
    "tensors": ("TLL010", "TLL013", "TLL004", "TLL001", "TLL003"),
    "list": ("TLL004", "TLL001"),
    "figures": ("TLL005",),
}


def rule_for(site: Optional[Site], kind: str) -> Optional[Tuple[str, int]]:
    """The static finding (code, line) in the same function as ``site`` that fits ``kind``."""
    if site is None or site[0].startswith("<"):
        return None
    codes = RULES_FOR_KIND.get(kind, ())
    best = None
    for line, code, (start, end) in _static_findings(site[0]):
        # A list is named by the line that appends to it: only a finding on that line fits.
        near = (line in (site[1], _creation_line(site)) if kind == "list"
                else start <= site[1] <= end or line == site[1])
        if code not in codes or not near:
            continue
        rank = (codes.index(code), abs(line - site[1]))
        if best is None or rank < best[0]:
            best = (rank, (code, line))
    return best[1] if best else None
