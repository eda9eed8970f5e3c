"""A class nothing in the linted files builds, subclasses, imports or names: dead code (a
logger written and never wired in, a buffer replaced by another). No object of it exists,
so nothing it would keep can grow. Like an uncalled function, only when its users are in
view: a module that is not a script needs linted modules that import it, none of which
takes this class."""

from __future__ import annotations

import ast
from typing import Optional

from .figures import program_importers, unreferenced


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
    if _looked_up_by_name(project, analysis.index.module_name):
        return None  # ``getattr(models, config.model)(config)``: any class of the module may be built
    return f"nothing in the linted files builds `{class_name}`"


def _looked_up_by_name(project, module: str) -> bool:
    """Does a module importing ``module`` look a name up on it at run time
    (``getattr(models, self.config.model)``, ``vars(models)[name]``)? Answered once per
    module, for all its classes."""
    key = ("looked-up-by-name", module)
    if key not in project.memo:
        project.memo[key] = _importer_looks_up(project, module)
    return project.memo[key]


def _importer_looks_up(project, module: str) -> bool:
    for importer in project.importers_of_module(module):
        other = project.analysis(importer)
        if other is None:
            return True
        imports = other.index.imports
        for node in ast.walk(other.index.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "vars") \
                    and node.args and isinstance(node.args[0], (ast.Name, ast.Attribute)) \
                    and (len(node.args) < 2 or not isinstance(node.args[1], ast.Constant)) \
                    and imports.qualname(node.args[0]) is not None \
                    and project.find_module(imports.qualname(node.args[0])) == module:
                return True
    return False


def unused_module(analysis) -> bool:
    """Do the modules importing this one (tests aside) use nothing they import from it
    (``from det3d.models.losses import metrics`` left behind in three heads, none of which
    names ``metrics`` again)? Then none of its classes is built by the program. Without
    such importers nothing is known."""
    project = analysis.project
    if project is None:
        return False
    module = analysis.index.module_name
    last = module.rsplit(".", 1)[-1]
    importers = program_importers(project, module)
    if not importers:
        return False
    own = set(analysis.index.classes) | {s.name for s in analysis.index.scopes if s.is_function}
    for importer in importers:
        other = project.analysis(importer)
        if other is None:
            return False
        local = set()
        for node in ast.walk(other.index.tree):
            if isinstance(node, ast.ImportFrom):
                source = (node.module or "").rsplit(".", 1)[-1]
                for alias in node.names:
                    if alias.name == "*":
                        return False  # names of unknown origin
                    if alias.name == last or (source == last and alias.name in own):
                        local.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.rsplit(".", 1)[-1] == last or alias.name.split(".")[0] == module.split(".")[0]:
                        local.add(alias.asname or alias.name.split(".")[0])
        if not local or any(isinstance(n, ast.Name) and n.id in local for n in ast.walk(other.index.tree)):
            return False  # imported some other way, or used
    return True
