"""torchleaklint: find and fix the PyTorch memory anti-patterns that crash long training runs."""

from __future__ import annotations

from typing import List, Optional

__version__ = "0.1.0"


def lint_source(code: str, filename: str = "x.py", settings=None) -> List["Diagnostic"]:
    """Lint one piece of source code as a project of its own and return the findings.

    ``filename`` is used for messages, ``per-file-ignores`` and the kind of file: for a name
    ending in ``.ipynb``, ``code`` is the notebook's JSON and findings carry ``cell``.
    ``settings`` is a :class:`torchleaklint.config.Settings` (default: every rule).
    """
    from .config import Settings
    from .engine.stdin import lint_code

    return lint_code(code, filename, settings or Settings()).diagnostics


def fix_source(code: str, filename: str = "x.py", settings=None, unsafe: Optional[bool] = None) -> str:
    """Apply fixes (safe ones; unsafe too when ``unsafe`` or the settings say so) and
    return the code (a notebook's JSON for an ``.ipynb`` name)."""
    from .config import Settings
    from .engine.notebook import NotebookSource
    from .engine.stdin import lint_code

    settings = settings or Settings()
    use_unsafe = settings.unsafe_fixes if unsafe is None else unsafe
    result = lint_code(code, filename, settings, fix=True, unsafe=use_unsafe)
    if result.source is None:
        return code  # not decodable: left as it is (lint_source reports TLL000)
    if isinstance(result.source, NotebookSource):
        return result.output().decode("utf-8")
    return result.text


def watch(label: str = "run", **options):
    """Watch a training loop for memory growth at run time (needs the ``harness`` extra).

    ``with torchleaklint.watch(label="train") as w: ... w.step()``; see ``torchleaklint.runtime``.
    """
    from .runtime.watch import watch as _watch

    return _watch(label, **options)


def watch_steps(func=None, **options):
    """Decorator: each call of the step function is one watched step (``func.watch``)."""
    from .runtime.watch import watch_steps as _watch_steps

    return _watch_steps(func, **options)


from .diagnostics import Diagnostic  # noqa: E402  (re-exported for type hints)

__all__ = ["Diagnostic", "fix_source", "lint_source", "watch", "watch_steps", "__version__"]
