"""Linting: read and parse each file once for the project's symbol tables, then run the
selected rules over each file's analysis and filter by ``# noqa``."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

from ..analysis.module import ModuleAnalysis
from ..analysis.module_index import ModuleIndex
from ..analysis.project import SymbolTable, module_symbols, rename_module
from ..config import Settings
from ..diagnostics import Diagnostic, parse_error
from ..rules import ALL_RULES, PARSE_ERROR
from ..rules.base import RuleContext
from .deps import Dependencies, RecordingProjectIndex
from .file_gate import read_regular
from .grammar import parse_python
from .modules import forget_folders, module_name_for
from .noqa import UNUSED_NOQA, is_suppressed, noqa_directives, skips_file, unused_noqa
from .notebook import NotebookSource, is_notebook
from .parsed import ParsedModules
from .prefilter import FigureHelpers, rules_that_may_fire, trigger_words
from .source import SourceDecodeError, SourceText, decode_source


@dataclass
class FileResult:
    path: str
    diagnostics: List[Diagnostic] = field(default_factory=list)
    source: Optional[SourceText] = None
    internal_errors: List[str] = field(default_factory=list)
    # The cross-file facts consulted (when the session records them, for the cache).
    dependencies: Optional[Dependencies] = None


def read_source(path: str) -> Union[SourceText, Diagnostic]:
    try:
        data = read_regular(path)
    except OSError as exc:
        return parse_error(path, f"cannot read file: {exc.strerror or exc}", 1, 0)
    return source_from_bytes(path, data)


def source_from_bytes(path: str, data: bytes) -> Union[SourceText, Diagnostic]:
    """The text of a file's bytes (a notebook's joined code cells), or a TLL000 report."""
    try:
        if is_notebook(path):
            return NotebookSource.from_bytes(data)
        return decode_source(data)
    except SourceDecodeError as exc:
        return parse_error(path, str(exc), exc.line, exc.col)


_parses = 0  # parse_source calls in this process


def parse_count() -> int:
    """How many times this process has parsed a module (the speed bench reports it)."""
    return _parses


def parse_source(source: SourceText, path: str) -> Union[ast.Module, Diagnostic]:
    global _parses
    _parses += 1
    try:
        return parse_python(source.text, path)
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = max((exc.offset or 1) - 1, 0)
        return parse_error(path, f"SyntaxError: {exc.msg}", line, col)
    except (RecursionError, MemoryError) as exc:
        # CPython's parser gives up on deep nesting (20,000 `elif`s, 100,000 unary minus
        # signs) with a MemoryError or RecursionError that often has no message.
        return parse_error(path, f"cannot parse file: too deeply nested for Python's parser "
                                 f"({type(exc).__name__}{': ' + str(exc) if str(exc) else ''})", 1, 0)
    except ValueError as exc:
        return parse_error(path, f"cannot parse file: {exc}", 1, 0)


def parsed_index(text: str, path: str, module: str, package: str) -> Optional[ModuleIndex]:
    """The parsed and indexed module, or None when it does not parse (pass 2 reports it)."""
    tree = parse_source(SourceText(text), path)
    if isinstance(tree, Diagnostic):
        return None
    return ModuleIndex(tree, module_name=module, package=package)


class LintSession:
    """One lint run over a set of files that see each other as one project.

    Each file is linted from a clean cross-file state (see :mod:`.deps`): only parsed
    modules are kept between files (:mod:`.parsed`, bounded by source size), so a file's
    findings never depend on which files were linted before it.
    """

    def __init__(self, settings: Settings, record_dependencies: bool = False, prefilter: bool = True,
                 parsed: Optional[ParsedModules] = None) -> None:
        forget_folders()
        self.settings = settings
        enabled = settings.enabled_codes()
        self.rules = [cls() for cls in ALL_RULES if cls.code in enabled]
        self.project = RecordingProjectIndex(loader=self._load)
        self.project.model_names = frozenset(n.lower() for n in settings.model_names)
        self.project.loss_names = frozenset(n.lower() for n in settings.loss_names)
        self.enabled = enabled
        self.record_dependencies = record_dependencies
        self.project.derived["figure-helpers"] = self._figure_helper_names
        self.prefilter = prefilter
        self._words: Dict[str, frozenset] = {}  # module -> prefilter trigger words (pass 1)
        self._figure_helpers: Optional[FigureHelpers] = None
        # Modules parsed in this run (also those parsed for pass 1 in this process).
        self._parsed = parsed if parsed is not None else ParsedModules()
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
        index = parsed_index(text, path, module, package)
        if index is not None:  # kept for the file's own lint and its callers'
            self._parsed.keep(path, text, index, evict=False)
            self.add_table(path, module_symbols(index, path), trigger_words(text, module))

    def add_table(self, path: str, table: SymbolTable, words: frozenset) -> None:
        """Add a file's pass-1 table and trigger words (computed here, in a worker, or read
        from the cache)."""
        module, _ = self._module_of(path)
        if table.module != module:
            rename_module(table, module)  # a file named like an earlier one gets a distinct name
        table.path = path  # as spelled in this run: a cached table keeps the spelling it was built under
        self._paths[module] = path
        self._words[module] = words
        self._figure_helpers = None
        self.project.add(table)

    # -- prefilter ------------------------------------------------------------------------
    def _figure_helper_names(self):
        if self._figure_helpers is None:
            self._figure_helpers = FigureHelpers(dict.values(self.project.tables), self._words)
        return sorted(self._figure_helpers.names)

    def may_report(self, text: str, path: str) -> bool:
        """Can anything be reported in this file? Only files whose text pass 1 parsed are
        skipped (a file that does not parse is linted, to report TLL000), and never one with
        a ``noqa`` comment (an unused one is reported)."""
        module, _ = self._module_of(path)
        if not self.prefilter or module in self._texts or self._paths.get(module) != path:
            return True
        if "noqa" in text.lower():
            return True
        words = trigger_words(text, module)

        def mentions_figure_helper() -> bool:
            self._figure_helper_names()
            if self.project.recording is not None:
                self.project.recording.queries[("figure-helpers", "")] = self.project.query_digest("figure-helpers", "")
            return self._figure_helpers.mentioned_in(text)

        ignored = self._ignored_codes(path)
        codes = [rule.code for rule in self.rules if rule.code not in ignored]
        return bool(rules_that_may_fire(codes, words, mentions_figure_helper))

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
        package = self._modules[path][1]
        text = self._texts.get(module)
        index = self._kept_index(path, module, text)
        if index is not None:
            return ModuleAnalysis(index.tree, path, module, self.project, package, index=index)
        if text is None:
            source = read_source(path)
            if isinstance(source, Diagnostic):
                return None
            text = source.text
        tree = parse_source(SourceText(text), path)
        if isinstance(tree, Diagnostic):
            return None
        analysis = ModuleAnalysis(tree, path, module, self.project, package)
        self._parsed.keep(path, text, analysis.index)
        return analysis

    def kept_parses(self) -> List[Tuple[str, str, ModuleIndex]]:
        """(path, text, index) of the files read from disk and kept parsed: an index holds
        syntax facts only, so a later session over the same bytes may reuse it."""
        texts_paths = {self._paths.get(module) for module in self._texts}
        out = []
        for path, (text, index) in self._parsed.items():
            if path not in texts_paths:
                out.append((path, text, index))
        return out

    def keep_parse(self, path: str, text: str, index: ModuleIndex) -> None:
        """Reuse the index of ``path`` parsed by an earlier session from the same bytes."""
        module, _ = self._module_of(path)
        if module not in self._texts:
            self._parsed.keep(path, text, index)

    def _kept_index(self, path: str, module: str, text: Optional[str]) -> Optional[ModuleIndex]:
        """The index kept for ``path`` if it was made from exactly ``text``, when given (an
        in-memory text replaces what was read). A file named like another gets its distinct
        module name only once the project is known: its tree is indexed again under it."""
        kept = self._parsed.get(path)
        if kept is None or (text is not None and kept[0] != text):
            return None
        index = kept[1]
        package = self._modules[path][1]
        if index.module_name != module or index.package != package:
            index = ModuleIndex(index.tree, module_name=module, package=package)  # same tree, new names
            self._parsed.keep(path, kept[0], index)
        return index

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
        if skips_file(source.text):
            return result
        module, package = self._module_of(path)
        self.project.begin_file(module, self.record_dependencies)
        if not self.may_report(source.text, path):
            result.dependencies = self.project.end_file()
            return result
        on_disk = module not in self._texts and self._paths.get(module) == path
        index = self._kept_index(path, module, source.text) if on_disk else None
        if index is not None:  # parsed earlier for another file of this run
            analysis = ModuleAnalysis(index.tree, path, module, self.project, package, index=index)
        else:
            tree = parse_source(source, path)
            if isinstance(tree, Diagnostic):
                self.project.end_file()
                result.diagnostics.append(tree)
                return result
            analysis = ModuleAnalysis(tree, path, module, self.project, package)
        if on_disk:
            self._parsed.keep(path, source.text, analysis.index)  # callers may reuse it
        self.project.pin(module, analysis)
        try:
            directives = noqa_directives(source.text, source.lines)
            ignored = self._ignored_codes(path)
            used, checked = set(), set()  # (line, code) pairs a noqa suppressed; rules that ran
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
                checked.add(rule.code)
                for diag in found:
                    if not is_suppressed(directives, diag.noqa_line, diag.code):
                        result.diagnostics.append(diag)
                    else:
                        used.add((diag.noqa_line, diag.code))
            if UNUSED_NOQA in self.enabled and UNUSED_NOQA not in ignored:
                known = {cls.code for cls in ALL_RULES} | {PARSE_ERROR}
                result.diagnostics.extend(unused_noqa(path, source, used, checked, known))
        finally:
            self.project.unpin(module)
            result.dependencies = self.project.end_file()
        result.diagnostics = _dedupe(sorted(result.diagnostics, key=Diagnostic.sort_key))
        return result

    def _ignored_codes(self, path: str):
        if not self.settings.per_file_ignores:
            return set()
        from fnmatch import fnmatch

        from ..config import expand_selector

        rel = os.path.relpath(path).replace(os.sep, "/")
        origin = self.settings.origin
        rel_config = os.path.relpath(os.path.abspath(path), os.path.dirname(origin)).replace(os.sep, "/") \
            if origin else rel  # globs are relative to the configuration file's folder
        out = set()
        for glob, selectors in self.settings.per_file_ignores.items():
            if fnmatch(rel, glob) or fnmatch(rel_config, glob) or fnmatch(os.path.basename(path), glob):
                for sel in selectors:
                    out |= expand_selector(sel, opt_in=True)
        return out

    def set_text(self, path: str, text: str) -> None:
        """Make the project see ``text`` as the current content of ``path`` (during fixing)."""
        module, _ = self._module_of(path)
        self._texts[module] = text
        self._parsed.drop(path)


def _dedupe(diags: List[Diagnostic]) -> List[Diagnostic]:
    seen = set()
    out = []
    for d in diags:
        key = (d.code, d.start, d.end, d.message)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out
