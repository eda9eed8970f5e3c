"""What a rule is: code, name, docs, embedded examples, and a ``check`` that turns a
module's analysis into diagnostics. Rules never read files, print or write."""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence

from ..analysis.names import TORCH_ROOTS
from ..diagnostics import Diagnostic, Edit, Fix, Position
from .testpaths import holds_tests, index_declares_tests, is_test_path

DOC_SECTIONS = ("What it does", "Why is this bad", "Example", "Use instead", "Fix safety", "Memory impact")


@dataclass(frozen=True)
class Invalid:
    """An embedded example the rule must flag; ``fixed`` is the expected ``--unsafe-fixes`` output."""

    code: str
    fixed: Optional[str] = None
    count: int = 1


# Frameworks whose tensors have a ``backward()`` of their own.
OTHER_AUTOGRAD_FRAMEWORKS = frozenset({"chainer", "mxnet", "tensorflow", "jax", "paddle", "mindspore",
                                       "oneflow", "cupy", "autograd", "micrograd", "tinygrad", "dynet"})


MAX_IMPORTED_TABLES = 24  # project modules read to tell whether a module is part of a PyTorch project


def _project_modules(project, targets):
    """The project modules that imported names come from."""
    for target in targets:
        module = project.find_module(target)  # ``import onmt.inputters``
        if module is None and "." in target:  # ``from onmt.utils.loss import build_loss``
            found = project.resolve_symbol(target)
            module = found[0] if found else None
        if module is not None:
            yield module


def scalar_backward(call: ast.Call) -> bool:
    """``loss.backward()`` (keywords only): how PyTorch code backpropagates a loss; a
    ``backward(10)`` with a positional argument may be anything (a turtle's step back)."""
    return not call.args


class RuleContext:
    """What a rule sees of one file."""

    def __init__(self, analysis, source, path: str, options: Dict[str, object]) -> None:
        self.analysis = analysis
        self.source = source
        self.path = path
        self.options = options

    @property
    def in_test_file(self) -> bool:
        """Whether the file is a test (see :mod:`.testpaths`); rules read nothing else of its path."""
        return is_test_path(self.path)

    @property
    def in_test_module(self) -> bool:
        """A test file that holds tests (see :func:`.testpaths.holds_tests`): a script named
        ``test_net.py`` that defines no test is not one. Besides the test-path verdict it
        reads only the file's name, which the module name in the cache key covers."""
        return holds_tests(self.path, lambda: index_declares_tests(self.analysis.index))

    @property
    def uses_torch(self) -> bool:
        """Graph rules apply to modules that import PyTorch (or its ecosystem), and to
        helper modules that import no framework at all but backpropagate a loss (``def
        train(model, loader, criterion): ... loss.backward()``): other frameworks'
        ``backward()`` and ``eval()`` follow other rules."""
        imports = self.analysis.index.imports
        if imports.imports_torch():
            return True
        if any(v.split(".")[0] in OTHER_AUTOGRAD_FRAMEWORKS for v in imports.aliases.values()):
            return False
        return any(site.kind == "backward" and scalar_backward(site.call)
                   for scope in self.analysis.index.scopes for site in scope.backward_sites)

    @property
    def in_torch_project(self) -> bool:
        """The module imports PyTorch, or imports no autograd framework itself but imports
        modules of the project that do (``onmt/trainer.py`` importing only
        ``onmt.inputters``, whose modules import torch): its models are PyTorch models.
        Only the symbol tables of the project modules it imports are read, and of the
        modules those import in turn (a package re-exporting its modules), a few at most."""
        imports = self.analysis.index.imports
        if imports.imports_torch():
            return True
        project = self.analysis.project
        if project is None or any(t.split(".")[0] in OTHER_AUTOGRAD_FRAMEWORKS for t in imports.aliases.values()):
            return False
        seen = {self.analysis.index.module_name}
        layer = [imports.aliases.values()]
        for _ in range(2):
            following = []
            for targets in layer:
                for module in _project_modules(project, targets):
                    if module in seen or len(seen) > MAX_IMPORTED_TABLES:
                        continue
                    seen.add(module)
                    table = project.tables.get(module)
                    if any(v.split(".")[0] in TORCH_ROOTS for v in table.imports.values()):
                        return True
                    following.append(table.imports.values())
            layer = following
        return False

    def position(self, line: int, byte_col: int) -> Position:
        return Position(line, self.source.char_col(line, byte_col))

    def start(self, node: ast.AST) -> Position:
        return self.position(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> Position:
        return self.position(node.end_lineno, node.end_col_offset)

    def text_of(self, node: ast.AST) -> str:
        source = self.source
        start, end = self.start(node), self.end(node)
        return source.text[source.offset(start.line, start.col):source.offset(end.line, end.col)]

    def insert_before(self, node: ast.AST, text: str) -> Edit:
        pos = self.start(node)
        return Edit(pos, pos, text)

    def insert_after(self, node: ast.AST, text: str) -> Edit:
        pos = self.end(node)
        return Edit(pos, pos, text)


class Rule:
    code: str = ""
    name: str = ""
    summary: str = ""
    fix_availability: str = "sometimes"  # always | sometimes | never
    repro: Optional[str] = None  # module name of the runtime reproduction, if any
    VALID: Sequence[str] = ()
    INVALID: Sequence[Invalid] = ()
    default_options: Dict[str, object] = {}
    option_choices: Dict[str, tuple] = {}

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        raise NotImplementedError

    @classmethod
    def validate_option(cls, option: str, value: object) -> Optional[str]:
        """A one-line problem with a configured option value, or None."""
        default = cls.default_options[option]
        if type(value) is not type(default):
            return f"expected {type(default).__name__}, got {value!r}"
        choices = cls.option_choices.get(option)
        if choices and value not in choices:
            return f"expected one of {', '.join(repr(c) for c in choices)}, got {value!r}"
        return None

    # -- helpers for subclasses ---------------------------------------------------------
    def diagnostic(self, ctx: RuleContext, node: ast.AST, message: str, fix: Optional[Fix] = None,
                   evidence: Sequence[str] = ()) -> Diagnostic:
        return Diagnostic(
            code=self.code,
            message=message,
            path=ctx.path,
            start=ctx.start(node),
            end=ctx.end(node),
            fix=fix,
            evidence=tuple(evidence),
            noqa_line=node.lineno,
        )

    @classmethod
    def docs(cls) -> str:
        return textwrap.dedent(cls.__doc__ or "").strip()

    @classmethod
    def doc_sections(cls) -> Dict[str, str]:
        """The fixed sections of the rule's docs, by heading."""
        out: Dict[str, str] = {}
        current = None
        lines: List[str] = []
        for line in cls.docs().splitlines():
            if line.startswith("## "):
                if current:
                    out[current] = "\n".join(lines).strip()
                current = line[3:].strip()
                lines = []
            elif current:
                lines.append(line)
        if current:
            out[current] = "\n".join(lines).strip()
        return out

    @classmethod
    def source_file(cls) -> str:
        return inspect.getsourcefile(cls) or ""
