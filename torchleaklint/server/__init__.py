"""The language server (``torchleaklint server``): findings as an editor types, fixes as
code actions. A thin shell over the engine the CLI uses: the nearest configuration, the
project's cross-file facts (pass-1 symbol tables from the content-hash cache, with the
editor's unsaved buffers on top), ``# noqa``, and the same fixes, safe ones preferred.

Needs the ``lsp`` extra (pygls and lsprotocol); nothing here is imported by a check.
"""

from __future__ import annotations

import importlib.util
from typing import Optional

INSTALL_HINT = "pip install 'torchleaklint[lsp]'"


def missing_dependency() -> Optional[str]:
    """A one-line problem when the ``lsp`` extra is not installed, else None."""
    for module in ("pygls", "lsprotocol"):
        if importlib.util.find_spec(module) is None:
            return f"the language server needs {module} (the `lsp` extra): {INSTALL_HINT}"
    return None
