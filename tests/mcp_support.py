"""Helpers for the MCP server tests: fixture roots, a raw JSON-RPC client on real pipes."""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conftest import SAFETY_TIMEOUT

from doc_index.foundation.errors import spec_json

REPO = Path(__file__).resolve().parents[1]
COMPAT = REPO / "tests" / "compat" / "context-engine-compat"
FIXTURES = COMPAT / "fixtures" / "v0"
CACHE_NAMES = ("future_version", "minimal", "realistic", "tie_break")
# The conformance suite's resolve goldens: (fixture cache, query file, expected file).
GOLDENS = [
    ("minimal", "basic", "minimal_basic"),
    ("minimal", "zero_budget", "minimal_zero_budget"),
    ("realistic", "basic", "realistic_basic"),
    ("realistic", "multi_term", "realistic_multi_term"),
    ("tie_break", "tie_break", "tie_break_ordering"),
    ("tie_break", "no_match", "tie_break_zero_score"),
]


def make_root(path: Path) -> Path:
    """A writable copy of the Context Engine fixture caches under ``path``."""
    path.mkdir(parents=True, exist_ok=True)
    for name in CACHE_NAMES:
        shutil.copytree(FIXTURES / "caches" / name, path / name)
    make_writable(path)
    return path


def make_writable(path: Path) -> None:
    for dirpath, _, filenames in os.walk(path):
        os.chmod(dirpath, 0o755)
        for filename in filenames:
            os.chmod(os.path.join(dirpath, filename), 0o644)


def fixture_queries() -> dict[str, dict[str, Any]]:
    return {
        p.stem: json.loads(p.read_text()) for p in sorted((FIXTURES / "queries").glob("*.json"))
    }


def server_argv(root: Path, tool_names: str = "dotted") -> list[str]:
    return [
        sys.executable,
        "-m",
        "doc_index.cli",
        "serve",
        "--root",
        str(root),
        "--tool-names",
        tool_names,
    ]


def python_argv(code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter (for fault injection around ``main``)."""
    return [sys.executable, "-c", code]


def context_cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    """The ``context`` reference CLI, as a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "doc_index.server.context_cli", *args],
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
    )


def initialize(request_id: int | str = 0, version: str = "2024-11-05") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "doc-index-tests", "version": "1"},
        },
    }


def tool_call(request_id: int | str, name: str, arguments: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def error_text(code: str) -> str:

    return spec_json(code)


class RawServer:
    """A server subprocess spoken to in raw newline-delimited JSON-RPC."""

    def __init__(self, argv: Sequence[str], cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr = b""
        self._out = threading.Thread(target=self._read_stdout, daemon=True)
        self._err = threading.Thread(target=self._read_stderr, daemon=True)
        self._out.start()
        self._err.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def send(self, *messages: Any) -> None:
        self.send_raw(b"".join(json.dumps(m).encode() + b"\n" for m in messages))

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv_line(self, timeout: float = SAFETY_TIMEOUT) -> bytes:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line from the server after {timeout:.0f} s") from None
        if line is None:
            raise EOFError(f"server closed stdout; stderr: {self.stderr!r}")
        return line

    def recv(self, timeout: float = SAFETY_TIMEOUT) -> dict[str, Any]:
        return json.loads(self.recv_line(timeout))

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(message)
        return self.recv()

    def close(self, timeout: float = SAFETY_TIMEOUT) -> list[dict[str, Any]]:
        """Close stdin; every remaining stdout line, once the server has exited."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        rest: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if line is None:
                break
            rest.append(json.loads(line))
        self.proc.wait(timeout=timeout)
        self._err.join(timeout)
        return rest

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def result_text(response: dict[str, Any]) -> str:
    """The single text item of a tool result (asserting the result's shape)."""
    result = response["result"]
    assert set(result) <= {"content", "isError"}, result
    assert len(result["content"]) == 1
    item = result["content"][0]
    assert item["type"] == "text" and set(item) == {"type", "text"}
    return item["text"]
