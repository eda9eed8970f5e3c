"""A file's dotted module name and package, from its place among ``__init__.py`` folders."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import List, Tuple, Union


def module_name_for(path: Union[str, Path]) -> Tuple[str, str]:
    """(dotted module name, package) from the file's position among ``__init__.py`` folders."""
    folder, name = os.path.split(os.fspath(path))
    stem = os.path.splitext(name)[0]
    package_parts, folder_name = _folder(folder)
    parts = list(package_parts)
    if stem != "__init__":
        parts.append(stem)
    if not parts:
        parts = [folder_name or "__init__"]
    module = ".".join(parts)
    package = module if stem == "__init__" else module.rpartition(".")[0]
    return module, package


@lru_cache(maxsize=4096)
def _folder(folder_name: str) -> Tuple[Tuple[str, ...], str]:
    """A file's folder as its dotted package parts and its own name (once per folder)."""
    folder = Path(folder_name)
    return _package_parts(str(folder)), folder.name


@lru_cache(maxsize=4096)
def _package_parts(folder_name: str) -> Tuple[str, ...]:
    """The dotted package a folder is (its chain of ``__init__.py`` folders), once per folder
    and run (cleared when a session starts)."""
    folder = Path(folder_name)
    parts: List[str] = []
    while (folder / "__init__.py").is_file() and folder.name:
        parts.insert(0, folder.name)
        if folder.parent == folder:
            break
        folder = folder.parent
    return tuple(parts)


def forget_folders() -> None:
    """Folders may have gained or lost an ``__init__.py`` since they were looked at."""
    _package_parts.cache_clear()
    _folder.cache_clear()
