"""Calls of given library functions, found without resolving every call of the module.

A call can only resolve to ``itertools.cycle`` if its callee is spelled ``cycle`` (a
name or an attribute) or is a local alias bound to it (``from itertools import cycle as
loop``); only those calls are resolved through the imports.
"""

from __future__ import annotations

from typing import Callable, Iterator, Tuple

from ..analysis.module_index import called_name


def calls_of(index, accept: Callable[[str], bool], names: frozenset) -> Iterator[Tuple[object, object, object, str]]:
    """(scope, call, statement, qualified name) for every call whose qualified name
    ``accept`` takes; ``names`` are the last parts of those qualified names."""
    spellings = set(names)
    spellings.update(local for local, target in index.imports.aliases.items() if target.rsplit(".", 1)[-1] in names)
    for scope in index.scopes:
        for call, stmt in scope.calls:
            if called_name(call) not in spellings:
                continue
            qual = index.imports.qualname(call.func)
            if qual is not None and accept(qual):
                yield scope, call, stmt, qual
