"""Helpers for the streamable HTTP tests: a ``doc-index serve --http`` subprocess that is
waited for by its readiness line, and the official SDK client on its URL."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
from conftest import SAFETY_TIMEOUT
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

READY = "doc-index serve: listening on "
MEANING = "doc-index serve: meaning: "  # every serve's first line (doc_index.meaning_status)


class HttpServer:
    """``doc-index serve --root ROOT --http ADDRESS ARGS`` until :meth:`stop`; ``url`` is
    read from its readiness line (the port is the kernel's choice with ``:0``)."""

    def __init__(self, root: Path, *args: str, http: str = "127.0.0.1:0",
                 env: dict[str, str] | None = None, prefix: Sequence[str] = ()) -> None:
        full_env = {k: v for k, v in os.environ.items() if k != "DOC_INDEX_HTTP_TOKEN"}
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "doc_index.cli", "serve", "--root", str(root),
             "--http", http, *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=full_env)
        self.err_lines: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        self.ready_line = self._wait_ready()
        self.url = self.ready_line[len(READY):].split(";", 1)[0]

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.err_lines.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def _wait_ready(self) -> str:
        while True:
            try:
                line = self._lines.get(timeout=SAFETY_TIMEOUT)
            except queue.Empty:
                raise AssertionError(f"no readiness line after {SAFETY_TIMEOUT:.0f} s") from None
            if line is None:
                self.proc.wait(SAFETY_TIMEOUT)
                raise AssertionError(f"the server ended ({self.proc.returncode}) before it "
                                     f"listened: {self.stderr!r}")
            if line.startswith(READY):
                return line

    @property
    def stderr(self) -> str:
        return "\n".join(self.err_lines)

    def said_only_its_start(self) -> bool:
        """Whether all the server wrote is its two start lines: meaning, then listening."""
        return (len(self.err_lines) == 2 and self.err_lines[0].startswith(MEANING)
                and self.err_lines[1] == self.ready_line)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send ``sig``; the exit status once the server and its stderr have ended."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        status = self.proc.wait(SAFETY_TIMEOUT)
        self._reader.join(SAFETY_TIMEOUT)
        assert self.proc.stdout is not None
        assert self.proc.stdout.read() == b"", "the HTTP server wrote to stdout"
        return status

    def __enter__(self) -> HttpServer:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(SAFETY_TIMEOUT)


def auth_headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token is not None else {}


@contextlib.asynccontextmanager
async def sdk_session(url: str, token: str | None = None,
                      transport: httpx2.AsyncBaseTransport | None = None,
                      ) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session on ``url`` over streamable HTTP."""
    timeout = httpx2.Timeout(SAFETY_TIMEOUT)
    async with (
        httpx2.AsyncClient(headers=auth_headers(token), timeout=timeout,
                           transport=transport) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        assert init.server_info.name == "doc-index"
        yield session


def only_text(result: types.CallToolResult) -> str:
    assert result.structured_content is None
    assert len(result.content) == 1
    item = result.content[0]
    assert isinstance(item, types.TextContent)
    return item.text


class RoundRobin(httpx2.AsyncBaseTransport):
    """A load balancer in the client: each HTTP request goes to the next of ``ports`` in
    turn (what any balancer without sticky sessions may do)."""

    def __init__(self, ports: Sequence[int]) -> None:
        self._ports = list(ports)
        self._next = 0
        self._inner = httpx2.AsyncHTTPTransport()
        self.sent: dict[int, int] = dict.fromkeys(self._ports, 0)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self._ports[self._next % len(self._ports)]
        self._next += 1
        self.sent[port] += 1
        request.url = request.url.copy_with(port=port)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def raw_post(url: str, message: dict[str, Any], headers: dict[str, str] | None = None,
             ) -> httpx2.Response:
    """One JSON-RPC message POSTed as a streamable HTTP client does."""
    return httpx2.post(url, json=message, timeout=SAFETY_TIMEOUT, headers={
        "Accept": "application/json, text/event-stream", **(headers or {})})
