"""Linting: read and parse each file once for the project's symbol tables, then run the
selected rules over each file's analysis and filter by ``# noqa``."""

from __future__ import annotations

import ast
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

from ..analysis.module import ModuleAnalysis
from ..analysis.project import ProjectIndex
from ..config import Settings
from ..diagnostics import Diagnostic, Position
from ..rules import ALL_RULES, PARSE_ERROR
from ..rules.base import RuleContext
from .noqa import is_suppressed, noqa_directives
from .notebook import NotebookSource, is_notebook
from .source import SourceDecodeError, SourceText, decode_source


@dataclass
class FileResult:
    path: str
    diagnostics: List[Diagnostic] = field(default_factory=list)
    source: Optional[SourceText] = None
    internal_errors: List[str] = field(default_factory=list)


def module_name_for(path: Union[str, Path]) -> Tuple[str, str]:
    """(dotted module name, package) from the file's position among ``__init__.py`` folders."""
    p = Path(path)
    parts = [] if p.stem == "__init__" else [p.stem]
    folder = p.parent
    while (folder / "__init__.py").is_file() and folder.name:
        parts.insert(0, folder.name)
        if folder.parent == folder:
            break
        folder = folder.parent
    if not parts:
        parts = [p.parent.name or "__init__"]
    module = ".".join(parts)
    package = module if p.stem == "__init__" else module.rpartition(".")[0]
    return module, package


def parse_error(path: str, message: str, line: int, col: int) -> Diagnostic:
    pos = Position(max(line, 1), max(col, 0))
    return Diagnostic(PARSE_ERROR, message, path, pos, pos, noqa_line=0)


def read_source(path: str) -> Union[SourceText, Diagnostic]:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return parse_error(path, f"cannot read file: {exc.strerror or exc}", 1, 0)
    try:
        if is_notebook(path):
            return NotebookSource.from_bytes(data)
        return decode_source(data)
    except SourceDecodeError as exc:
        return parse_error(path, str(exc), exc.line, exc.col)


def parse_source(source: SourceText, path: str) -> Union[ast.Module, Diagnostic]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source.text, filename=path)
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = max((exc.offset or 1) - 1, 0)
        return parse_error(path, f"SyntaxError: {exc.msg}", line, col)
    except (ValueError, RecursionError, MemoryError) as exc:
        return parse_error(path, f"cannot parse file: {exc}", 1, 0)


class LintSession:
    """One lint run over a set of files that see each other as one project."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        enabled = settings.enabled_codes()
        self.rules = [cls() for cls in ALL_RULES if cls.code in enabled]
        self.project = ProjectIndex(loader=self._load)
        self._paths: Dict[str, str] = {}  # module -> path
        self._texts: Dict[str, str] = {}  # module -> in-memory text (stdin, fixes in progress)
        self._modules: Dict[str, Tuple[str, str]] = {}  # path -> (module, package)

    # -- pass 1 -------------------------------------------------------------------------
    def register(self, path: str, text: Optional[str] = None) -> None:
        """Add a file's symbols to the project (parse errors are reported in pass 2)."""
        module, package = self._module_of(path)
        if text is None:
            source = read_source(path)
            if isinstance(source, Diagnostic):
                return
            text = source.text
        else:
            self._texts[module] = text
        tree = parse_source(SourceText(text), path)
        if isinstance(tree, Diagnostic):
            return
        self._paths[module] = path
        analysis = ModuleAnalysis(tree, path, module, self.project, package)
        self.project.add(analysis.symbols())

    def _module_of(self, path: str) -> Tuple[str, str]:
        found = self._modules.get(path)
        if found is None:
            found = module_name_for(path) if os.path.exists(path) else (Path(path).stem or "stdin", "")
            base, n = found[0], 2
            while base in self._paths and self._paths[base] != path:
                base = f"{found[0]}__{n}"
                n += 1
            found = (base, found[1])
            self._modules[path] = found
        return found

    def _load(self, module: str):
        path = self._paths.get(module)
        if path is None:
            return None
        text = self._texts.get(module)
        if text is None:
            source = read_source(path)
            if isinstance(source, Diagnostic):
                return None
            text = source.text
        tree = parse_source(SourceText(text), path)
        if isinstance(tree, Diagnostic):
            return None
        return ModuleAnalysis(tree, path, module, self.project, self._modules[path][1])

    # -- pass 2 -------------------------------------------------------------------------
    def lint_file(self, path: str) -> FileResult:
        source = read_source(path)
        if isinstance(source, Diagnostic):
            return FileResult(path, [source])
        result = self.lint_text(source, path)
        result.diagnostics = source.relocate(result.diagnostics)
        return result

    def lint_text(self, source: SourceText, path: str) -> FileResult:
        result = FileResult(path, source=source)
        tree = parse_source(source, path)
        if isinstance(tree, Diagnostic):
            result.diagnostics.append(tree)
            return result
        module, package = self._module_of(path)
        analysis = ModuleAnalysis(tree, path, module, self.project, package)
        self.project.pin(module, analysis)
        try:
            directives = noqa_directives(source.text, source.lines)
            ignored = self._ignored_codes(path)
            for rule in self.rules:
                if rule.code in ignored:
                    continue
                ctx = RuleContext(analysis, source, path, self.settings.options_for(rule.code))
                try:
                    found = list(rule.check(ctx))
                except RecursionError:
                    result.internal_errors.append(f"{path}: {rule.code} gave up: the code nests too deeply")
                    continue
                except Exception as exc:  # a rule bug must not lose the other findings
                    result.internal_errors.append(f"{path}: internal error in {rule.code}: {type(exc).__name__}: {exc}")
                    continue
                for diag in found:
                    if not is_suppressed(directives, diag.noqa_line, diag.code):
                        result.diagnostics.append(diag)
        finally:
            self.project.unpin(module)
        result.diagnostics = _dedupe(sorted(result.diagnostics, key=Diagnostic.sort_key))
        return result

    def _ignored_codes(self, path: str):
        if not self.settings.per_file_ignores:
            return set()
        from fnmatch import fnmatch

        from ..config import expand_selector

        rel = os.path.relpath(path).replace(os.sep, "/")
        out = set()
        for glob, selectors in self.settings.per_file_ignores.items():
            if fnmatch(rel, glob) or fnmatch(os.path.basename(path), glob):
                for sel in selectors:
                    out |= expand_selector(sel)
        return out

    def set_text(self, path: str, text: str) -> None:
        """Make the project see ``text`` as the current content of ``path`` (during fixing)."""
        module, _ = self._module_of(path)
        self._texts[module] = text


def _dedupe(diags: List[Diagnostic]) -> List[Diagnostic]:
    seen = set()
    out = []
    for d in diags:
        key = (d.code, d.start, d.end, d.message)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out
