"""NumPy arrays of numbers used as buffers.

``self.v_buf = np.zeros(size, dtype=np.float32)`` then ``self.v_buf[self.ptr] = v``: item
assignment into a numeric NumPy array converts the tensor to a number (or raises); what the
array keeps is a float, never the tensor or its graph. An array of ``dtype=object`` keeps
references, and ``np.array(...)`` without a numeric ``dtype`` may be one: neither counts.
"""

from __future__ import annotations

import ast

from .module_index import Scope
from .stores import bindings_of

NUMERIC_CONSTRUCTORS = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                                  "full_like", "arange", "linspace", "array", "asarray"})
_NEEDS_DTYPE = frozenset({"array", "asarray", "zeros_like", "ones_like", "empty_like", "full_like"})


def numeric_array(analysis, scope: Scope, key: str, stmt) -> bool:
    """Is ``key`` bound only to numeric NumPy arrays where ``stmt`` writes into it?"""
    bindings = bindings_of(analysis, scope, key, stmt)
    return bool(bindings) and all(d.kind == "assign" and d.index is None and _numeric(analysis, d.value)
                                  for d, _ in bindings)


def _numeric(analysis, value) -> bool:
    if not isinstance(value, ast.Call):
        return False
    qual = analysis.index.imports.qualname(value.func) or ""
    if not qual.startswith("numpy."):
        return False
    name = qual.rsplit(".", 1)[-1]
    if name not in NUMERIC_CONSTRUCTORS:
        return False
    dtype = next((k.value for k in value.keywords if k.arg == "dtype"), None)
    if dtype is None:
        return name not in _NEEDS_DTYPE
    text = ast.unparse(dtype)
    return "object" not in text and text not in ("None", "O", "'O'", '"O"')
