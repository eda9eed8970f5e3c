"""A class nothing in the linted files builds, subclasses, imports or names: dead code (a
logger written and never wired in, a buffer replaced by another). No object of it exists,
so nothing it would keep can grow. Like an uncalled function, only when its users are in
view: a module that is not a script needs linted modules that import it, none of which
takes this class."""

from __future__ import annotations

import ast
from typing import Optional

from .figures import unreferenced


def never_built(analysis, class_name: str) -> Optional[str]:
    project = analysis.project
    if project is None or class_name not in analysis.index.classes:
        return None
    if not unreferenced(analysis, class_name, analysis.index.classes.get(class_name)):
        return None
    for table in project.tables.values():
        for bases in table.classes.values():
            if any(base.rsplit(".", 1)[-1] == class_name for base in bases):
                return None  # a subclass may be built
    if any(isinstance(node, ast.Constant) and node.value == class_name for node in ast.walk(analysis.index.tree)):
        return None  # built by name (``getattr(module, "Logger")``, a config string)
    return f"nothing in the linted files builds `{class_name}`"
