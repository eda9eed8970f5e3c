"""The protocol side: which messages the server answers and what it sends back.

Findings are published for a Python buffer when it is opened, changed or saved; a save or
a watched-file change (a configuration, a helper in another file) re-reads the
configuration and the project and publishes again for every open buffer. A broken
configuration is shown once as an error message and publishes no findings for the files
it governs, as the CLI exits 2 instead of guessing.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Dict, List, Optional, Tuple

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import __version__
from ..config import ConfigError
from ..diagnostics import Diagnostic
from ..engine.discover import DiscoveryError
from .actions import KINDS, fix_all, quick_fixes
from .convert import Positions, to_lsp_diagnostic
from .project import Projects

CONFIG_FILES = ("pyproject.toml", "torchleaklint.toml", ".torchleaklint.toml")
# A change waits this long before it is linted, so that a burst of keystrokes is linted
# once, for its last version, instead of once per keystroke in a growing queue.
DEBOUNCE_SECONDS = 0.15
log = logging.getLogger("torchleaklint.server")


class TorchLeakLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("torchleaklint", __version__)
        self.projects = Projects()
        # uri -> (document version, text, findings) of the last lint
        self.findings: Dict[str, Tuple[Optional[int], str, List[Diagnostic]]] = {}
        self._shown: set = set()  # error messages already shown to the user

    # -- linting ---------------------------------------------------------------------------
    def buffers(self) -> Dict[str, str]:
        return {os.path.abspath(doc.path): doc.source for doc in self.workspace.text_documents.values()}

    def lint(self, uri: str) -> Tuple[Optional[int], str, List[Diagnostic]]:
        doc = self.workspace.get_text_document(uri)
        text = doc.source
        diagnostics: List[Diagnostic] = []
        try:
            result = self.projects.lint(doc.path, text, self.buffers())
            diagnostics = list(result.diagnostics)
            for problem in result.internal_errors:
                self.tell(lsp.MessageType.Warning, problem)
        except (ConfigError, DiscoveryError) as exc:
            self.tell(lsp.MessageType.Error, f"torchleaklint: {exc}")
        except Exception as exc:  # a bug must not take the editor's server down with it
            log.exception("linting %s", doc.path)
            self.tell(lsp.MessageType.Error, f"torchleaklint: internal error on {doc.path}: {type(exc).__name__}: {exc}")
        for warning in self.projects.warnings:
            self.tell(lsp.MessageType.Warning, f"torchleaklint: {warning}", show=False)
        self.projects.warnings.clear()
        self.findings[uri] = (doc.version, text, diagnostics)
        return self.findings[uri]

    def current(self, uri: str) -> Tuple[Optional[int], str, List[Diagnostic]]:
        """The findings of the buffer as it is now (linted again when it changed since)."""
        doc = self.workspace.get_text_document(uri)
        known = self.findings.get(uri)
        if known is not None and known[0] == doc.version and known[1] == doc.source:
            return known
        return self.lint(uri)

    def publish(self, uri: str) -> None:
        if not _is_python(uri):
            return
        version, text, diagnostics = self.lint(uri)
        positions = Positions(text, self.workspace.position_codec)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, version=version, diagnostics=[to_lsp_diagnostic(d, positions) for d in diagnostics]))

    def publish_all(self) -> None:
        for uri in list(self.workspace.text_documents):
            self.publish(uri)

    def tell(self, kind: lsp.MessageType, message: str, show: bool = True) -> None:
        self.window_log_message(lsp.LogMessageParams(type=kind, message=message))
        if show and message not in self._shown:
            self._shown.add(message)
            self.window_show_message(lsp.ShowMessageParams(type=kind, message=message))

    def versioned_edits(self) -> bool:
        workspace = self.client_capabilities.workspace
        edit = workspace.workspace_edit if workspace is not None else None
        return bool(edit is not None and edit.document_changes)


server = TorchLeakLintServer()


def _is_python(uri: str) -> bool:
    path = to_fs_path(uri) or uri
    return path.endswith((".py", ".pyi"))


@server.feature(lsp.INITIALIZE)
def initialize(ls: TorchLeakLintServer, params: lsp.InitializeParams) -> None:
    roots = [to_fs_path(folder.uri) for folder in params.workspace_folders or []]
    if not roots and params.root_uri:
        roots = [to_fs_path(params.root_uri)]
    elif not roots and params.root_path:
        roots = [params.root_path]
    ls.projects = Projects([r for r in roots if r])


@server.feature(lsp.INITIALIZED)
def initialized(ls: TorchLeakLintServer, params: lsp.InitializedParams) -> None:
    """Watch configurations and Python files (where the client can), so that a change made
    outside the editor is seen too."""
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    watchers = [lsp.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_FILES]
    watchers.append(lsp.FileSystemWatcher(glob_pattern="**/*.py"))
    ls.client_register_capability(lsp.RegistrationParams(registrations=[lsp.Registration(
        id="torchleaklint-watched-files", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: TorchLeakLintServer, params: lsp.DidOpenTextDocumentParams) -> None:
    ls.publish(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: TorchLeakLintServer, params: lsp.DidChangeTextDocumentParams) -> None:
    await asyncio.sleep(DEBOUNCE_SECONDS)
    uri = params.text_document.uri
    if uri in ls.workspace.text_documents and \
            ls.workspace.get_text_document(uri).version == params.text_document.version:
        ls.publish(uri)  # else a later change (or a close) has come in and answers for it


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: TorchLeakLintServer, params: lsp.DidSaveTextDocumentParams) -> None:
    ls.projects.refresh()
    ls.projects.save_caches()
    ls.publish_all()


@server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: TorchLeakLintServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    ls.projects.refresh()
    ls.publish_all()


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: TorchLeakLintServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.findings.pop(uri, None)
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=KINDS))
def code_action(ls: TorchLeakLintServer, params: lsp.CodeActionParams) -> List[lsp.CodeAction]:
    uri = params.text_document.uri
    if not _is_python(uri):
        return []
    version, text, diagnostics = ls.current(uri)
    positions = Positions(text, ls.workspace.position_codec)
    only = params.context.only
    stamp = version if ls.versioned_edits() else None
    actions = quick_fixes(uri, stamp, text, diagnostics, params.range, positions, only)
    if any(d.fix is not None for d in diagnostics):
        doc = ls.workspace.get_text_document(uri)
        try:
            settings = ls.projects.settings_for(doc.path)
            fixed = ls.projects.lint(doc.path, text, ls.buffers(), fix=True, unsafe=settings.unsafe_fixes).text
        except (ConfigError, DiscoveryError):
            fixed, settings = None, None
        if settings is not None:
            actions += fix_all(uri, stamp, text, fixed, settings.unsafe_fixes, positions, only)
    return actions


@server.feature(lsp.SHUTDOWN)
def shutdown(ls: TorchLeakLintServer, params: None) -> None:
    ls.projects.save_caches()


def serve() -> None:
    server.start_io()
