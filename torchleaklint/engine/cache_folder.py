"""The cache folder: which folder may hold the cache, how it is marked as the tool's own,
and how ``clean`` removes it without touching anything else.

The folder is named by the user (``$TORCHLEAKLINT_CACHE_DIR``) or defaults to
``.torchleaklint_cache``; a typo there must not turn ``clean`` into ``rm -r src``. So the
tool creates only the last part of the path (never a chain of missing folders), writes
only into a folder that is empty or carries its own ``CACHEDIR.TAG``
(https://bford.info/cachedir/, with a line naming this tool), and ``clean`` removes a
folder only when it carries that tag and holds nothing but the files this tool writes.
"""

from __future__ import annotations

import os
import re
from typing import Optional

from .file_gate import open_regular

CACHEDIR_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"
CACHEDIR_TAG = f"{CACHEDIR_SIGNATURE}\n# This file is a cache directory tag created by torchleaklint.\n"

# Every name the tool writes in its folder: the tag, the .gitignore, the cache and run
# snapshot files of any version (``.pickle`` from format 1), and a temporary file left by
# a write that was killed.
_OWN_FILE = re.compile(r"(CACHEDIR\.TAG|\.gitignore|(cache|runs)-[0-9a-f]{20}\.(json|pickle)|\.cache-[^/]*\.tmp)\Z")


class CacheFolderError(Exception):
    """The named cache folder cannot be used or removed; the message is one line."""


def own_file(name: str) -> bool:
    return _OWN_FILE.match(name) is not None


def is_tagged(folder: str) -> bool:
    """Whether ``folder`` carries the ``CACHEDIR.TAG`` that this tool writes."""
    try:
        with open_regular(os.path.join(folder, "CACHEDIR.TAG")) as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return head.startswith(CACHEDIR_SIGNATURE.encode()) and b"torchleaklint" in head


def folder_problem(folder: str) -> Optional[str]:
    """Why the cache cannot be written in ``folder``, or None: the folder is the tool's own,
    an empty one, or a missing one whose parent exists (it is then created, alone)."""
    if os.path.islink(folder) and not os.path.isdir(folder):
        return f"{folder} is a broken symbolic link"
    if os.path.isdir(folder):
        if is_tagged(folder):
            return None
        try:
            empty = not os.listdir(folder)
        except OSError as exc:
            return f"cannot read {folder}: {exc.strerror or exc}"
        return None if empty else f"{folder} holds files and no torchleaklint CACHEDIR.TAG"
    if os.path.lexists(folder):
        return f"{folder} exists and is not a folder"
    parent = os.path.dirname(os.path.abspath(folder))
    if not os.path.isdir(parent):
        return f"the parent folder of {folder} does not exist"
    return None


def clean(folder: str) -> bool:
    """Remove the cache folder; True if there was one. Raises :class:`CacheFolderError`
    (and removes nothing) unless the folder carries this tool's tag and holds only the
    files this tool writes."""
    if not os.path.lexists(folder):
        return False
    if os.path.islink(folder):
        raise CacheFolderError(f"refusing to remove {folder}: it is a symbolic link")
    if not os.path.isdir(folder):
        raise CacheFolderError(f"refusing to remove {folder}: it is not a folder")
    if not is_tagged(folder):
        raise CacheFolderError(f"refusing to remove {folder}: it has no torchleaklint CACHEDIR.TAG, "
                               f"so it is not a torchleaklint cache folder")
    try:
        names = sorted(os.listdir(folder))
        foreign = [name for name in names
                   if not (own_file(name) and os.path.isfile(os.path.join(folder, name))
                           and not os.path.islink(os.path.join(folder, name)))]
        if foreign:
            raise CacheFolderError(f"refusing to remove {folder}: it holds {foreign[0]!r}, which torchleaklint "
                                   f"did not write ({len(foreign)} such item{'s' if len(foreign) != 1 else ''})")
        for name in names:
            if name != "CACHEDIR.TAG":
                os.unlink(os.path.join(folder, name))
        os.unlink(os.path.join(folder, "CACHEDIR.TAG"))  # last: an interrupted clean can run again
        os.rmdir(folder)
    except OSError as exc:
        raise CacheFolderError(f"cannot remove {folder}: {exc.strerror or exc}") from None
    return True
