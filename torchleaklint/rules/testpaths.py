"""Which files are tests, by their path as given: the one thing rules read of a path.

A test builds its objects for one short run, so the history and evaluation rules stay
quiet in it. The engine keys cached findings on this verdict too (see
``engine.parallel``), since the same file can be named from another folder.
"""

from __future__ import annotations

import ast
from typing import Callable, Iterable

TEST_FRAMEWORKS = frozenset({"pytest", "unittest", "nose", "hypothesis"})


def is_test_path(path: str) -> bool:
    """``test_*.py``, ``*_test.py``, ``conftest.py``, or anything inside a ``tests`` folder."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py" or "tests" in parts[:-1]


def holds_tests(path: str, declares_tests: Callable[[], bool]) -> bool:
    """A test path (see :func:`is_test_path`) that holds tests: a file named
    ``test_*.py``/``*_test.py`` only when it defines tests (``tools/test_net.py`` with
    ``def test(cfg)`` and a ``__main__`` block is an evaluation script named so), any
    other test path by its path. Only the file's name is read besides that verdict, so
    the answer is the same from whichever folder the file is named. ``declares_tests``
    answers from the file's syntax tree or its symbol table (see :func:`declares_tests`)."""
    if not is_test_path(path):
        return False
    name = path.replace("\\", "/").split("/")[-1]
    return not (name.startswith("test_") or name.endswith("_test.py")) or declares_tests()


def declares_tests(import_targets: Iterable[str], functions: Iterable[str], classes: Iterable[str]) -> bool:
    """A test framework imported, or a top-level ``test_*`` function or ``Test*`` class."""
    return (any(target.split(".")[0] in TEST_FRAMEWORKS for target in import_targets)
            or any(name.startswith("test_") for name in functions)
            or any(name.startswith("Test") for name in classes))


def index_declares_tests(index) -> bool:
    """:func:`declares_tests` from a module's syntax tree."""
    body = index.tree.body
    return declares_tests(index.imports.aliases.values(),
                          [n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))],
                          [n.name for n in body if isinstance(n, ast.ClassDef)])
