"""Which Python grammar reads a file. Today's first; code written for Python 3.6 or older
that uses ``async``/``await`` as plain names (``x.cuda(async=True)``, the spelling of
non-blocking copies before PyTorch 0.4) is read with the 3.6 grammar, where those words
were not yet reserved, when this Python's parser still offers it."""

from __future__ import annotations

import ast
import warnings

# The last grammar in which ``async`` and ``await`` could name variables and keywords.
_BEFORE_ASYNC_KEYWORDS = (3, 6)


def parse_python(text: str, filename: str = "<unknown>") -> ast.Module:
    """The module's tree; raises today's SyntaxError when no grammar reads the text."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text, filename=filename)
        except SyntaxError:
            if "async" not in text and "await" not in text:
                raise
            try:
                return ast.parse(text, filename=filename, feature_version=_BEFORE_ASYNC_KEYWORDS)
            except (SyntaxError, ValueError, TypeError):
                pass  # not 3.6 code either, or a Python whose parser no longer offers that grammar
            raise
