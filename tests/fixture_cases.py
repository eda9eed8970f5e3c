"""Loading the fixture tree: ``fixtures/CODE/{positive,negative}/NAME.py`` or ``NAME/`` (a
multi-file project). Lines that must be reported end with ``# expect: CODE``; a golden
``NAME.fixed.py`` (or ``NAME.fixed/`` for projects) holds the ``--unsafe-fixes`` output."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Set, Tuple

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>TLL\d{3}(?:\s*,\s*TLL\d{3})*)")


@dataclass(frozen=True)
class Case:
    code: str
    kind: str  # positive | negative
    path: Path  # a file, or a folder for a multi-file project

    @property
    def id(self) -> str:
        return f"{self.code}/{self.kind}/{self.path.name}"

    def files(self) -> List[Path]:
        if self.path.is_dir():
            return sorted(p for p in self.path.rglob("*.py"))
        return [self.path]

    def golden(self) -> Path:
        if self.path.is_dir():
            return self.path.with_name(self.path.name + ".fixed")
        return self.path.with_name(self.path.stem + ".fixed.py")

    def expected(self) -> Set[Tuple[str, int, str]]:
        """(file name, line, code) of every ``# expect:`` mark for this case's rule."""
        out = set()
        for file in self.files():
            for lineno, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
                match = EXPECT.search(line)
                if match:
                    for code in re.split(r"\s*,\s*", match.group("codes")):
                        out.add((file.name, lineno, code))
        return out


def cases() -> List[Case]:
    found: List[Case] = []
    for rule_dir in sorted(FIXTURES.glob("TLL*")):
        for kind in ("positive", "negative"):
            for path in sorted((rule_dir / kind).glob("*")):
                if path.name.endswith(".fixed.py") or path.name.endswith(".fixed") or path.name.startswith("."):
                    continue
                if path.suffix == ".py" or (path.is_dir() and path.name != "__pycache__"):
                    found.append(Case(rule_dir.name, kind, path))
    return found


def by_rule() -> Dict[str, List[Case]]:
    out: Dict[str, List[Case]] = {}
    for case in cases():
        out.setdefault(case.code, []).append(case)
    return out
