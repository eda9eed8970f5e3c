"""The analysis of one module: its index plus the shared oracles every rule asks."""

from __future__ import annotations

import ast
from typing import Optional

from .flow import Flow
from .graph import GraphOracle
from .grad_mode import GradMode
from .module_index import ModuleIndex
from .project import ProjectIndex, module_symbols


class ModuleAnalysis:
    def __init__(self, tree: ast.Module, path: str, module_name: str = "",
                 project: Optional[ProjectIndex] = None, package: str = "",
                 index: Optional[ModuleIndex] = None) -> None:
        self.path = path
        # ``index``: the same tree indexed earlier (it holds syntax facts only, so it can be
        # shared; the oracles below memoise project-dependent answers and never are).
        self.index = index if index is not None else ModuleIndex(tree, module_name=module_name, package=package)
        self.project = project
        self.graph = GraphOracle(self)
        self.grad = GradMode(self)
        self.flow = Flow(self)

    @property
    def module_name(self) -> str:
        return self.index.module_name

    def symbols(self):
        return module_symbols(self.index, self.path)

    def release(self) -> None:
        """Drop the oracles and every memo kept on this analysis, keeping the (shareable)
        index. The oracles refer back to the analysis, so without this the whole cycle
        waits for a full cyclic collection; the engine calls it once the file that asked
        for the analysis is linted, and nothing may use the analysis after that."""
        index, path = self.index, self.path
        self.__dict__.clear()
        self.index, self.path = index, path
