"""Which files are tests, by their path as given: the one thing rules read of a path.

A test builds its objects for one short run, so the history and evaluation rules stay
quiet in it. The engine keys cached findings on this verdict too (see
``engine.parallel``), since the same file can be named from another folder.
"""

from __future__ import annotations

import ast

TEST_FRAMEWORKS = frozenset({"pytest", "unittest", "nose", "hypothesis"})


def is_test_path(path: str) -> bool:
    """``test_*.py``, ``*_test.py``, ``conftest.py``, or anything inside a ``tests`` folder."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py" or "tests" in parts[:-1]


def holds_tests(path: str, index) -> bool:
    """A test path (see :func:`is_test_path`) that holds tests: a file named
    ``test_*.py``/``*_test.py`` only when it defines tests (``tools/test_net.py`` with
    ``def test(cfg)`` and a ``__main__`` block is an evaluation script named so), any
    other test path by its path. Only the file's name is read besides that verdict, so
    the answer is the same from whichever folder the file is named."""
    if not is_test_path(path):
        return False
    name = path.replace("\\", "/").split("/")[-1]
    return not (name.startswith("test_") or name.endswith("_test.py")) or _defines_tests(index)


def _defines_tests(index) -> bool:
    """A ``test_*`` function or ``Test*`` class at the top level, or a test framework imported."""
    if any(target.split(".")[0] in TEST_FRAMEWORKS for target in index.imports.aliases.values()):
        return True
    for node in index.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
            return True
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            return True
    return False
