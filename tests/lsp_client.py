"""A small Language Server Protocol client for the tests: JSON-RPC 2.0 framed with
``Content-Length`` headers over a subprocess's stdin/stdout, written from the
specification (no LSP library), so the server is driven as an editor drives it."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from typing import Any, Callable, Dict, List, Optional

TIMEOUT = 120  # seconds: generous, the machine may be loaded


class ProtocolError(AssertionError):
    pass


class LspClient:
    def __init__(self, command: List[str], cwd: str, env: Dict[str, str]) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=cwd, env=env)
        self._inbox: "queue.Queue[Optional[dict]]" = queue.Queue()
        self.notifications: List[dict] = []  # notifications not yet consumed by wait_for, in order
        self.received: List[dict] = []  # every notification received, in order
        self.server_requests: List[dict] = []  # requests the server sent us (answered with null)
        self._next_id = 0
        self._stderr: List[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True).start()

    # -- framing ---------------------------------------------------------------------------
    def _read(self) -> None:
        stream = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = stream.readline()
                if not line:
                    self._inbox.put(None)
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = stream.read(int(headers["content-length"]))
            self._inbox.put(json.loads(body.decode("utf-8")))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _next(self, deadline: float) -> dict:
        try:
            message = self._inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise ProtocolError(f"no message from the server in time; stderr: {self.stderr()}") from None
        if message is None:
            raise ProtocolError(f"the server closed its output; stderr: {self.stderr()}")
        if "method" in message and "id" in message:  # a request from the server
            self.server_requests.append(message)
            self.send({"id": message["id"], "result": None})
        elif "method" in message:
            self.notifications.append(message)
            self.received.append(message)
        return message

    # -- messages --------------------------------------------------------------------------
    def request(self, method: str, params: Any) -> Any:
        self._next_id += 1
        ident = self._next_id
        self.send({"id": ident, "method": method, "params": params})
        deadline = time.monotonic() + TIMEOUT
        while True:
            message = self._next(deadline)
            if message.get("id") == ident and "method" not in message:
                if "error" in message:
                    raise ProtocolError(f"{method}: {message['error']}")
                return message.get("result")

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def wait_for(self, method: str, where: Callable[[dict], bool] = lambda params: True) -> dict:
        """The params of the first notification ``method`` not yet consumed that matches."""
        deadline = time.monotonic() + TIMEOUT
        seen = 0
        while True:
            for i, message in enumerate(self.notifications[seen:], start=seen):
                if message["method"] == method and where(message.get("params")):
                    del self.notifications[: i + 1]
                    return message.get("params")
            seen = len(self.notifications)
            self._next(deadline)

    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")[-4000:]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


def apply_edits(text: str, edits: List[dict]) -> str:
    """Apply LSP TextEdits (0-based lines, UTF-16 code units) as an editor does: all
    positions refer to the text before any of them is applied."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(position: dict) -> int:
        if position["line"] >= len(lines):
            return len(text)
        line = lines[position["line"]].rstrip("\r\n")
        units = index = 0
        while index < len(line) and units < position["character"]:
            units += 2 if ord(line[index]) > 0xFFFF else 1
            index += 1
        return starts[position["line"]] + index

    spans = sorted(((offset(e["range"]["start"]), offset(e["range"]["end"]), e["newText"]) for e in edits),
                   reverse=True)
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text


def edits_for(workspace_edit: dict, uri: str) -> List[dict]:
    """The edits of one document, from either form of a WorkspaceEdit."""
    if workspace_edit.get("documentChanges"):
        return [e for change in workspace_edit["documentChanges"] if change["textDocument"]["uri"] == uri
                for e in change["edits"]]
    return workspace_edit["changes"][uri]
