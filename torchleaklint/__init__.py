"""torchleaklint: find and fix the PyTorch memory anti-patterns that crash long training runs."""

from __future__ import annotations

from typing import List, Optional

__version__ = "0.1.0"


def lint_source(code: str, filename: str = "x.py", settings=None) -> List["Diagnostic"]:
    """Lint one piece of source code as a project of its own; returns the findings."""
    from .config import Settings
    from .engine.lint import LintSession
    from .engine.source import SourceText

    session = LintSession(settings or Settings())
    session.register(filename, text=code)
    return session.lint_text(SourceText(code), filename).diagnostics


def fix_source(code: str, filename: str = "x.py", settings=None, unsafe: Optional[bool] = None) -> str:
    """Apply fixes (safe ones; unsafe too when ``unsafe`` or the settings say so) and return the code."""
    from .config import Settings
    from .engine.fix import fix_source as _fix
    from .engine.lint import LintSession
    from .engine.source import SourceText

    settings = settings or Settings()
    session = LintSession(settings)
    session.register(filename, text=code)
    use_unsafe = settings.unsafe_fixes if unsafe is None else unsafe
    return _fix(session, filename, SourceText(code), use_unsafe).text


from .diagnostics import Diagnostic  # noqa: E402  (re-exported for type hints)

__all__ = ["Diagnostic", "fix_source", "lint_source", "__version__"]
