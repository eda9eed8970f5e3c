"""A file's dotted module name and package, from its place among ``__init__.py`` folders."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import List, Tuple, Union


def module_name_for(path: Union[str, Path]) -> Tuple[str, str]:
    """(dotted module name, package) from the file's position among ``__init__.py`` folders."""
    p = Path(path)
    parts = list(_package_parts(str(p.parent)))
    if p.stem != "__init__":
        parts.append(p.stem)
    if not parts:
        parts = [p.parent.name or "__init__"]
    module = ".".join(parts)
    package = module if p.stem == "__init__" else module.rpartition(".")[0]
    return module, package


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
