"""A minimal Language Server Protocol client: the real yaml-language-server over stdio.

Just enough of the protocol to open a document and read the diagnostics an editor
would underline: Content-Length framed JSON-RPC, the initialize handshake, and
answers to the requests the server sends back (its settings, capability registration).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

EDITOR = Path(__file__).parent
SERVER = EDITOR / "node_modules" / "yaml-language-server" / "bin" / "yaml-language-server"

# What VS Code's YAML extension sends by default, with validation on and no schema
# store: schemas come from each file's `# yaml-language-server: $schema=...` line only.
SETTINGS = {
    "yaml": {
        "validate": True,
        "hover": True,
        "completion": True,
        "schemaStore": {"enable": False},
        "schemas": {},
        "format": {"enable": False},
    }
}


def server_missing() -> str | None:
    """Why the server cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not SERVER.is_file():
        return "yaml-language-server is not installed: npm ci --prefix tests/editor"
    return None


class YamlLanguageServer:
    """One server process; :meth:`diagnostics` opens a file and returns what it reports."""

    def __init__(self, root: Path) -> None:
        node = shutil.which("node")
        assert node is not None
        self._process = subprocess.Popen(
            [node, str(SERVER), "--stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._next_id = 0
        self._version = 0
        self._request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {
                    "workspace": {"configuration": True},
                    "textDocument": {"publishDiagnostics": {}},
                },
            },
        )
        self._notify("initialized", {})
        self._notify("workspace/didChangeConfiguration", {"settings": SETTINGS})

    def close(self) -> None:
        self._request("shutdown", None)
        self._notify("exit", None)
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def diagnostics(self, path: Path, timeout: float = 60.0) -> list[dict[str, Any]]:
        """The diagnostics the server publishes for ``path`` once it has read its schema."""
        uri = path.as_uri()
        self._version += 1
        self._notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": "yaml",
                    "version": self._version,
                    "text": path.read_text(encoding="utf-8"),
                }
            },
        )
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                message = self._read()
                if (
                    message.get("method") == "textDocument/publishDiagnostics"
                    and message["params"]["uri"] == uri
                    and message["params"].get("version", self._version) == self._version
                ):
                    return list(message["params"]["diagnostics"])
            raise TimeoutError(f"no diagnostics for {path} in {timeout} s")
        finally:
            self._notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        stdin = self._process.stdin
        assert stdin is not None
        stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdin.flush()

    def _notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    def _request(self, method: str, params: Any) -> Any:
        self._next_id += 1
        self._send({"id": self._next_id, "method": method, "params": params})
        while True:
            message = self._read()
            if message.get("id") == self._next_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")

    def _read(self) -> dict[str, Any]:
        """The next message; requests from the server are answered on the way."""
        stdout = self._process.stdout
        assert stdout is not None
        length = 0
        while True:
            header = stdout.readline()
            if not header:
                raise EOFError("yaml-language-server exited")
            if header in (b"\r\n", b"\n"):
                break
            name, _, value = header.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        message: dict[str, Any] = json.loads(stdout.read(length))
        if "method" in message and "id" in message:
            self._answer(message)
        return message

    def _answer(self, request: dict[str, Any]) -> None:
        result = None
        if request["method"] == "workspace/configuration":
            result = [_setting(item.get("section", "")) for item in request["params"]["items"]]
        self._send({"id": request["id"], "result": result})


def _setting(section: str) -> Any:
    """A dotted section of :data:`SETTINGS` (``yaml.schemas``), None where there is none."""
    value: Any = SETTINGS
    for part in filter(None, section.split(".")):
        value = value.get(part) if isinstance(value, dict) else None
    return value
