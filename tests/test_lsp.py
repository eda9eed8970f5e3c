"""The language server, driven for real: `torchleaklint server` in a subprocess, spoken to
over stdio by the JSON-RPC client in lsp_client.py as an editor would."""

from __future__ import annotations

import os
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("pygls", reason="the language server needs the `lsp` extra (CI installs it)")

from .lsp_client import LspClient, apply_edits, edits_for  # noqa: E402
from .snippets import NAME_ONLY_SRC, TLL001_FIXED, TLL001_SRC  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "leaky_training"


def uri_of(path: Path) -> str:
    return path.resolve().as_uri()


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    shutil.copytree(EXAMPLE, root)
    (root / "pyproject.toml").write_text("[tool.torchleaklint]\nextend-select = []\n")
    return root


@contextmanager
def served(root: Path, capabilities=None) -> Iterator[LspClient]:
    """A server session for the project: initialized on entry; on a clean exit of the
    block, shut down and exited as an editor does (the process must exit 0)."""
    env = {**os.environ, "NO_COLOR": "1", "TORCHLEAKLINT_CACHE_DIR": str(root.parent / "cache")}
    client = LspClient([sys.executable, "-m", "torchleaklint", "server"], cwd=str(root.parent), env=env)
    try:
        result = client.request("initialize", {
            "processId": os.getpid(), "rootUri": uri_of(root),
            "workspaceFolders": [{"uri": uri_of(root), "name": "proj"}],
            "capabilities": capabilities or {},
        })
        assert result["serverInfo"]["name"] == "torchleaklint"
        kinds = result["capabilities"]["codeActionProvider"]["codeActionKinds"]
        assert kinds == ["quickfix", "source.fixAll.torchleaklint"]
        client.notify("initialized", {})
        yield client
        assert client.request("shutdown", None) is None
        client.notify("exit", None)
        assert client.proc.wait(timeout=60) == 0, client.stderr()
    finally:
        client.close()


def open_doc(client: LspClient, path: Path, text=None, version=1) -> list:
    uri = uri_of(path)
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "python", "version": version,
        "text": path.read_text() if text is None else text}})
    return client.wait_for("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)["diagnostics"]


def change(client: LspClient, path: Path, text: str, version: int) -> list:
    uri = uri_of(path)
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                             "contentChanges": [{"text": text}]})
    return client.wait_for("textDocument/publishDiagnostics",
                           lambda p: p["uri"] == uri and p.get("version") == version)["diagnostics"]


def actions_at(client: LspClient, path: Path, diagnostic: dict, only=None) -> list:
    context = {"diagnostics": [diagnostic]}
    if only is not None:
        context["only"] = only
    return client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri_of(path)}, "range": diagnostic["range"], "context": context})


def codes(diagnostics) -> list:
    return sorted((d["code"], d["range"]["start"]["line"] + 1) for d in diagnostics)


def test_session_open_diagnose_fix_and_exit(project):
    """The issue's scenario: initialize, open a leaky file, receive its findings (one of
    them through a helper in another file of the project), request a code action, apply
    its WorkspaceEdit, see the findings go, shut down and exit."""
    with served(project) as client:
        train = project / "train.py"
        text = train.read_text()
        diagnostics = open_doc(client, train)
        assert codes(diagnostics) == [("TLL001", 27), ("TLL001", 28), ("TLL002", 46), ("TLL002", 47)]
        helper = next(d for d in diagnostics if d["range"]["start"]["line"] == 45)
        assert "AverageMeter.update (meters.py:15)" in helper["message"]  # a cross-file fact
        first = next(d for d in diagnostics if d["range"]["start"]["line"] == 26)
        assert first["source"] == "torchleaklint" and first["severity"] == 2
        assert first["range"]["start"] == {"line": 26, "character": 20}
        assert "= lifetime:" in first["message"]  # the evidence follows the message

        actions = actions_at(client, train, first)
        fix = next(a for a in actions if a["title"].startswith("Fix TLL001"))
        assert fix["kind"] == "quickfix" and fix["isPreferred"] is True and "(unsafe)" not in fix["title"]
        fixed = apply_edits(text, edits_for(fix["edit"], uri_of(train)))
        assert fixed != text
        assert fixed.splitlines()[26].strip() == "actor_losses.append(actor_loss.item())"
        assert [i for i, (a, b) in enumerate(zip(text.splitlines(), fixed.splitlines())) if a != b] == [26]

        after = change(client, train, fixed, 2)
        assert codes(after) == [("TLL001", 28), ("TLL002", 46), ("TLL002", 47)]
        assert train.read_text() == text  # the server never writes the user's files


def test_unsafe_fixes_are_marked_noqa_respected_and_fix_all(project):
    with served(project, {"workspace": {"workspaceEdit": {"documentChanges": True}}}) as client:
        path = project / "loop.py"
        path.write_text(NAME_ONLY_SRC)
        (diagnostic,) = open_doc(client, path)
        actions = actions_at(client, path, diagnostic)
        fix = next(a for a in actions if a["title"].startswith("Fix TLL001"))
        assert "(unsafe)" in fix["title"] and fix["isPreferred"] is False
        # Versioned edits for a client that takes them: stale edits are rejected by the client.
        assert fix["edit"]["documentChanges"][0]["textDocument"]["version"] == 1
        noqa = next(a for a in actions if a["title"] == "Disable TLL001 for this line")
        with_noqa = apply_edits(NAME_ONLY_SRC, edits_for(noqa["edit"], uri_of(path)))
        assert "    losses.append(loss)  # noqa: TLL001\n" in with_noqa
        assert change(client, path, with_noqa, 2) == []  # the noqa comment is respected

        # Fix all: safe fixes only (the configuration does not enable unsafe ones).
        both = project / "both.py"
        text = TLL001_SRC + NAME_ONLY_SRC.replace("import torch\n", "")
        diagnostics = open_doc(client, both, text)
        assert [d["code"] for d in diagnostics] == ["TLL001", "TLL001"]
        actions = actions_at(client, both, diagnostics[0], only=["source.fixAll"])
        assert [a["kind"] for a in actions] == ["source.fixAll.torchleaklint"]
        fixed = apply_edits(text, edits_for(actions[0]["edit"], uri_of(both)))
        assert fixed == TLL001_FIXED + NAME_ONLY_SRC.replace("import torch\n", "")
        assert actions_at(client, both, diagnostics[0], only=["refactor"]) == []


def test_positions_in_utf16_and_unsaved_helpers(project):
    with served(project) as client:
        path = project / "emoji.py"
        text = TLL001_SRC.replace("    losses.append(loss)", '    tag = "😀"; losses.append(loss)')
        (diagnostic,) = open_doc(client, path, text)
        # `losses` starts at character 15 in code points, 16 in UTF-16 code units.
        assert diagnostic["range"]["start"] == {"line": 6, "character": 16}
        fix = next(a for a in actions_at(client, path, diagnostic) if a["title"].startswith("Fix TLL001"))
        assert apply_edits(text, edits_for(fix["edit"], uri_of(path))) == text.replace(
            "losses.append(loss)", "losses.append(loss.item())")

        # An unsaved edit of the helper is what the buffer of train.py sees.
        meters = project / "meters.py"
        open_doc(client, meters)
        change(client, meters, meters.read_text().replace("self.sum += val * n", "self.sum += n"), 2)
        train = project / "train.py"
        diagnostics = open_doc(client, train)
        assert ("TLL002", 46) not in codes(diagnostics)


def test_nearest_configuration_and_its_mistakes(project):
    with served(project, {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}}) as client:
        (project / "sub").mkdir()
        (project / "sub" / "torchleaklint.toml").write_text('ignore = ["TLL001"]\n')
        quiet = project / "sub" / "train.py"
        quiet.write_text(TLL001_SRC)
        assert open_doc(client, quiet) == []
        (project / "sub" / "torchleaklint.toml").write_text('selekt = ["TLL001"]\n')
        client.notify("workspace/didChangeWatchedFiles", {"changes": [
            {"uri": uri_of(project / "sub" / "torchleaklint.toml"), "type": 2}]})
        message = client.wait_for("window/showMessage")
        assert message["type"] == 1 and "selekt" in message["message"] and "unknown option" in message["message"]
        (project / "sub" / "torchleaklint.toml").write_text('select = ["TLL001"]\n')
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri_of(quiet)}})
        diagnostics = client.wait_for("textDocument/publishDiagnostics",
                                      lambda p: p["uri"] == uri_of(quiet) and p["diagnostics"])["diagnostics"]
        assert codes(diagnostics) == [("TLL001", 7)]
        # The client was asked to watch the configuration files and Python files.
        (registration,) = [r for m in client.server_requests if m["method"] == "client/registerCapability"
                           for r in m["params"]["registrations"]]
        assert registration["method"] == "workspace/didChangeWatchedFiles"
        patterns = {w["globPattern"] for w in registration["registerOptions"]["watchers"]}
        assert patterns == {"**/pyproject.toml", "**/torchleaklint.toml", "**/.torchleaklint.toml", "**/*.py"}


def test_a_burst_of_changes_is_linted_once_for_its_last_version(project):
    with served(project) as client:
        path = project / "burst.py"
        open_doc(client, path, TLL001_SRC)
        for version in range(2, 7):
            text = TLL001_SRC + "".join(f"x{i} = {i}\n" for i in range(version))
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri_of(path), "version": version},
                                                     "contentChanges": [{"text": text}]})
        last = client.wait_for("textDocument/publishDiagnostics", lambda p: p.get("version") == 6)
        assert codes(last["diagnostics"]) == [("TLL001", 7)]
        published = [m["params"]["version"] for m in client.received
                     if m["method"] == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri_of(path)]
        assert published[0] == 1 and published[-1] == 6
        assert len(published) < 6, published  # not one lint per keystroke


def test_missing_extra_is_one_line(cli, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pygls" else real(name, *a))
    result = cli("server")
    assert result.exit_code == 2
    assert result.stderr.strip() == ("torchleaklint: error: the language server needs pygls (the `lsp` extra): "
                                     "pip install 'torchleaklint[lsp]'")
