"""``# noqa`` and ``# noqa: TLL001,TLL002`` suppression comments."""

from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, FrozenSet, Optional, Sequence

_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)

ALL = frozenset({"*"})


def noqa_directives(text: str, lines: Sequence[str]) -> Dict[int, FrozenSet[str]]:
    """Line number -> suppressed codes (``{"*"}`` for a bare ``# noqa``), from comments only."""
    out: Dict[int, FrozenSet[str]] = {}
    if "noqa" not in text.lower():
        return out
    try:
        comments = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                    if tok.type == tokenize.COMMENT and "noqa" in tok.string.lower()]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        comments = [(n, line[line.index("#"):]) for n, line in enumerate(lines, start=1) if "#" in line]
    for lineno, comment in comments:
        match = _NOQA.search(comment)
        if match is None:
            continue
        codes = match.group("codes")
        if codes:
            out[lineno] = frozenset(c.upper() for c in re.split(r"[,\s]+", codes) if c)
        else:
            out[lineno] = ALL
    return out


def is_suppressed(directives: Dict[int, FrozenSet[str]], line: int, code: str) -> bool:
    codes: Optional[FrozenSet[str]] = directives.get(line)
    if codes is None:
        return False
    return codes is ALL or "*" in codes or code in codes
