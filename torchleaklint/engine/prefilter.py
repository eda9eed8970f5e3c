"""Skip the analysis of files in which no enabled rule can report anything.

Every rule starts from a fact that needs a word in the file's text: the graph rules only
look at modules that import PyTorch or its ecosystem (``ImportMap.imports_torch``), TLL003
needs ``copy.deepcopy``, TLL004 an ML import, TLL008 a ``retain_graph=`` argument, TLL005
a ``matplotlib.pyplot`` import or a call of a project helper that returns a figure. Pass 1
records which of these trigger words a file contains (cheap substring tests on the text
the analysis sees); pass 2 analyses only files where some enabled rule's trigger is there.

A trigger is a necessary condition, never a guess: an import's root name appears in the
text, or is the root of the file's own package (``from .utils import x`` inside
``transformers``). Python folds identifiers with NFKC, so non-ASCII text is folded the
same way before the test. A rule without a declared trigger is always run.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Dict, FrozenSet, Iterable, Optional, Set

from ..analysis.names import TORCH_ROOTS
from ..analysis.project import SymbolTable
from ..rules.tll004_unbounded_history import ML_ROOTS

MATPLOTLIB = "matplotlib"
DEEPCOPY = "deepcopy"
RETAIN_GRAPH = "retain_graph"
ITERTOOLS = "itertools"  # TLL010: ``itertools.cycle`` is reached only through an import of it
HOOK = "_hook"  # TLL013: every module-hook registration's name
DETECT_ANOMALY = "detect_anomaly"  # TLL014: ``set_detect_anomaly`` / ``detect_anomaly``
NEW_GROUP = "new_group"  # TLL015: ``new_group`` / ``new_subgroups``
NEW_SUBGROUPS = "new_subgroups"
TRACE = "trace"  # TLL016: ``torch.jit.trace`` / ``trace_module``
STEP = "step"  # TLL017: the loop's ``optimizer.step()``

BACKWARD = "backward"  # TLL001/TLL002 in helper modules that import nothing but backpropagate
EVAL_MODE = ".eval()"  # TLL009 in a module of a PyTorch project that imports only the project

WORDS: FrozenSet[str] = frozenset(TORCH_ROOTS | ML_ROOTS | {MATPLOTLIB, DEEPCOPY, RETAIN_GRAPH, BACKWARD, ITERTOOLS,
                                                            HOOK, DETECT_ANOMALY, NEW_GROUP, NEW_SUBGROUPS, TRACE,
                                                            STEP, EVAL_MODE})

# For each rule: every group must have one word present (an AND of ORs).
_TORCH = frozenset(TORCH_ROOTS)
# A helper module that imports nothing but backpropagates a loss is checked too.
_TORCH_OR_BACKWARD = _TORCH | {BACKWARD}
RULE_TRIGGERS: Dict[str, tuple] = {
    "TLL001": (_TORCH_OR_BACKWARD,),
    "TLL002": (_TORCH_OR_BACKWARD,),
    "TLL003": (frozenset({DEEPCOPY}),),
    "TLL004": (frozenset(ML_ROOTS),),
    "TLL006": (_TORCH,),
    "TLL007": (_TORCH,),
    "TLL008": (_TORCH, frozenset({RETAIN_GRAPH})),
    "TLL009": (_TORCH | {EVAL_MODE},),
    "TLL010": (frozenset({ITERTOOLS}),),
    "TLL011": (frozenset({"torch"}),),  # a base resolving to torch.autograd.Function
    "TLL012": (frozenset({"torch"}),),
    "TLL013": (_TORCH, frozenset({HOOK})),
    "TLL014": (frozenset({DETECT_ANOMALY}),),
    "TLL015": (frozenset({NEW_GROUP, NEW_SUBGROUPS}),),
    "TLL016": (frozenset({TRACE}),),
    "TLL017": (_TORCH, frozenset({STEP})),
}
# TLL005 also fires on a call of a project helper that returns a figure; see FigureHelpers.
FIGURE_RULE = "TLL005"


def trigger_words(text: str, module: str = "") -> FrozenSet[str]:
    """The trigger words present in ``text`` or in the file's dotted module name."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    haystack = f"{text}\n{module}"
    return frozenset(word for word in WORDS if word in haystack)


class FigureHelpers:
    """Names of project functions that may hand a figure to their caller: those defined in
    modules that import matplotlib (``returns_figure`` needs a pyplot call there). A call
    can only resolve to one of them if the caller's text spells its name (or its class's)."""

    def __init__(self, tables: Iterable[SymbolTable], words_of: Dict[str, FrozenSet[str]]) -> None:
        names: Set[str] = set()
        for table in tables:
            if MATPLOTLIB in words_of.get(table.module, frozenset()):
                for qualname in table.functions:
                    names.update(part for part in qualname.split(".") if part != "<locals>")
        self.names = names
        self._pattern: Optional[re.Pattern] = None
        if names:
            alternatives = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
            self._pattern = re.compile(rf"(?<![\w])(?:{alternatives})(?![\w])")

    def mentioned_in(self, text: str) -> bool:
        if self._pattern is None:
            return False
        if not text.isascii():
            text = unicodedata.normalize("NFKC", text)
        return self._pattern.search(text) is not None


def rules_that_may_fire(codes: Iterable[str], words: FrozenSet[str], mentions_figure_helper) -> Set[str]:
    """The enabled rule codes whose triggers are all present. ``mentions_figure_helper`` is
    called (lazily, it reads the text) only when TLL005 is decided by it."""
    out = set()
    for code in codes:
        if code == FIGURE_RULE:
            if MATPLOTLIB in words or mentions_figure_helper():
                out.add(code)
            continue
        groups = RULE_TRIGGERS.get(code)
        if groups is None or all(words & group for group in groups):
            out.add(code)
    return out
