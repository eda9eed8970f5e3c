"""A file's dotted module name and package, from its place among ``__init__.py`` folders."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import List, Tuple, Union


def module_name_for(path: "Union[str, os.PathLike[str]]") -> Tuple[str, str]:
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
    """A file's folder as its dotted package (its chain of ``__init__.py`` folders) and its
    own name, once per folder and run (cleared when a session starts). A relative folder is
    followed up to its first name only, not above the working directory."""
    anchor, names = _split(folder_name)
    own = names[-1] if names else ""
    parts: List[str] = []
    while names and os.path.isfile(os.path.join(anchor, *names, "__init__.py")):
        parts.insert(0, names.pop())
    return tuple(parts), own


def _split(folder_name: str) -> Tuple[str, List[str]]:
    """(anchor, names) of a folder, read as pathlib reads it: the drive and root, then the
    names without empty and ``.`` parts."""
    drive, rest = os.path.splitdrive(folder_name)
    if os.altsep:
        rest = rest.replace(os.altsep, os.sep)
    anchor = drive + (os.sep if rest.startswith(os.sep) else "")
    return anchor, [name for name in rest.split(os.sep) if name not in ("", ".")]


def forget_folders() -> None:
    """Folders may have gained or lost an ``__init__.py`` since they were looked at."""
    _folder.cache_clear()
