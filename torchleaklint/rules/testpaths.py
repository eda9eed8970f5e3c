"""Which files are tests, by their path as given: the one thing rules read of a path.

A test builds its objects for one short run, so the history and evaluation rules stay
quiet in it. The engine keys cached findings on this verdict too (see
``engine.parallel``), since the same file can be named from another folder.
"""

from __future__ import annotations


def is_test_path(path: str) -> bool:
    """``test_*.py``, ``*_test.py``, ``conftest.py``, or anything inside a ``tests`` folder."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py" or "tests" in parts[:-1]
