"""A value with several possible origins: a conditional expression's branches, the operands
of ``or``/``and``, the definitions of a name that reach a use, the ``return`` statements of
a function. It carries a graph when any origin does; it is *proven a tensor* (or a
one-element tensor) only when every origin is, since a fix such as ``.item()`` or
``.detach()`` on ``loss if step % 2 == 0 else 0`` raises on the integer branch.

Only the ``tensor`` and ``scalar`` facts, which decide whether a fix is safe, are combined;
the evidence that decides whether a finding fires (the first carrying origin's text and
strength) is kept as it is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Iterable, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .graph import Evidence


def every_branch(found: Iterable[Optional["Evidence"]]) -> Optional["Evidence"]:
    """The first carrying origin's evidence, a tensor (scalar) only if every origin is one;
    None when no origin carries a graph."""
    first: Optional["Evidence"] = None
    tensor = scalar = True
    for ev in found:
        if ev is None:
            tensor = scalar = False
            continue
        first = first or ev
        tensor = tensor and ev.tensor
        scalar = scalar and ev.scalar
    if first is None or (first.tensor == tensor and first.scalar == scalar):
        return first
    return replace(first, tensor=tensor, scalar=scalar)
