"""The stdio wire of the MCP server, standard library only (it runs before the SDK loads).

- :class:`Wire` takes fd 0 and fd 1 over: the protocol runs on private duplicates while
  fd 0 reads ``/dev/null`` and fd 1 points at stderr, so a stray ``print`` anywhere in the
  process lands in the log instead of corrupting the JSON-RPC stream. Frames are written
  whole under a lock, from any thread.
- :class:`Reader` reads newline-delimited messages in a thread from the first
  millisecond: an unparseable line (bad JSON, not UTF-8, NaN, over ``MAX_LINE_BYTES``)
  is answered at once with ``-32700`` and id null; everything else is queued for the
  SDK bridge (:mod:`.mcp_transport`), then an ``EOF`` marker when stdin closes.
- :class:`FastInitialize` answers the client's opening ``initialize`` without waiting
  for the SDK (importing it takes about a second). The SDK still receives the request,
  reduced to the fields its validation needs (``protocolVersion``, empty
  ``capabilities``, ``clientInfo`` name and version: the tools never consult client
  capabilities), so it always accepts it and its connection state matches what the
  client was told; the bridge compares the SDK's own answer with this one and drops it.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from ..foundation.strict_json import parse_json

logger = logging.getLogger("doc_index.server.mcp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
MAX_LINE_BYTES = 4 * 1024 * 1024

# mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS (a test keeps the two equal): importing
# it would import the whole SDK type system.
HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE_VERSION = HANDSHAKE_PROTOCOL_VERSIONS[-1]

EOF = object()
"""Queued after the last message once stdin is closed."""


def encode_frame(message: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON, the layout the SDK uses for its own frames. A lone surrogate
    (JSON allows ``"\\ud800"`` in an id) cannot be UTF-8: then every non-ASCII character
    is escaped instead, which is still the same JSON value."""
    try:
        return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":")).encode("ascii")


def error_frame(request_id: int | str | None, code: int, message: str) -> bytes:
    return encode_frame(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    )


def request_id_of(message: object) -> int | str | None:
    """The message's id if it is a valid JSON-RPC id (bool is not), else None."""
    if not isinstance(message, dict):
        return None
    value = message.get("id")
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def is_request(message: object) -> bool:
    return (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and isinstance(message.get("method"), str)
        and request_id_of(message) is not None
    )


class Wire:
    """The protocol's descriptors and a whole-frame writer."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.broken = False
        self._lock = threading.Lock()
        self._saved: tuple[int, int] | None = None

    @classmethod
    def claim_stdio(cls) -> Wire:
        """Move the wire off fd 0/1 (fd 0 -> /dev/null, fd 1 -> stderr)."""
        sys.stdout.flush()
        wire = cls(os.dup(0), os.dup(1))
        wire._saved = (os.dup(0), os.dup(1))
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        os.dup2(2, 1)
        return wire

    def restore(self) -> None:
        """Give fd 0/1 back (for in-process callers); the wire descriptors stay open."""
        if self._saved is not None:
            sys.stdout.flush()
            os.dup2(self._saved[0], 0)
            os.dup2(self._saved[1], 1)
            for fd in self._saved:
                os.close(fd)
            self._saved = None

    def reader(self) -> BinaryIO:
        # closefd=False: the reader thread may still block on it when serving ends.
        return open(self.in_fd, "rb", closefd=False)

    def write_frame(self, frame: bytes) -> None:
        """Write one message and its newline; a closed stdout only stops further writes."""
        data = memoryview(frame + b"\n")
        with self._lock:
            if self.broken:
                return
            try:
                while data:
                    data = data[os.write(self.out_fd, data) :]
            except OSError as exc:
                self.broken = True
                logger.warning("stdout closed, dropping output: %s", exc)


def read_lines(stream: BinaryIO, limit: int = MAX_LINE_BYTES) -> Iterator[bytes | None]:
    """Lines of ``stream``; None for a line over ``limit`` bytes (skipped to its end)."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while True:
                rest = stream.readline(limit)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line


def parse_line(line: bytes) -> object:
    """The JSON value of one line; ValueError if it is not strict UTF-8 JSON."""
    return parse_json(line, lone_surrogates=True)


@dataclass(frozen=True)
class Inbound:
    """One parsed message for the bridge; ``answered`` is the result already sent for it."""

    message: object
    answered: dict[str, Any] | None = None


class FastInitialize:
    """Builds the ``initialize`` result exactly as the SDK's runner does, without the SDK."""

    def __init__(
        self, server_info: dict[str, Any], capabilities: dict[str, Any], instructions: str | None
    ) -> None:
        self.server_info = server_info
        self.capabilities = capabilities
        self.instructions = instructions

    def answer(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The result for ``request``, or None if the SDK must judge its params itself."""
        params = request.get("params")
        if not isinstance(params, dict):
            return None
        version = params.get("protocolVersion")
        capabilities = params.get("capabilities")
        client = params.get("clientInfo")
        if not (
            isinstance(version, str)
            and isinstance(capabilities, dict)
            and isinstance(client, dict)
            and isinstance(client.get("name"), str)
            and isinstance(client.get("version"), str)
        ):
            return None
        negotiated = version if version in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
        result: dict[str, Any] = {"capabilities": self.capabilities}
        if self.instructions is not None:
            result["instructions"] = self.instructions
        result["protocolVersion"] = negotiated
        result["serverInfo"] = self.server_info
        return result


class Reader:
    """Reads the wire in a daemon thread and feeds ``inbox``."""

    def __init__(
        self, wire: Wire, inbox: queue.SimpleQueue[object], fast_init: FastInitialize | None
    ) -> None:
        self.wire = wire
        self.inbox = inbox
        self.fast_init = fast_init
        self._seen_request = False
        self.thread = threading.Thread(target=self._run, name="mcp-stdin", daemon=True)

    def start(self) -> Reader:
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            for line in read_lines(self.wire.reader()):
                self.handle_line(line)
        except Exception:
            logger.exception("reading stdin failed")
        finally:
            self.inbox.put(EOF)

    def handle_line(self, line: bytes | None) -> None:
        if line is None:
            logger.warning("message over %d bytes refused", MAX_LINE_BYTES)
            self.wire.write_frame(error_frame(None, PARSE_ERROR, "Parse error"))
            return
        if not line.strip():
            return
        try:
            message = parse_line(line)
        except ValueError as exc:
            logger.warning("unparseable line: %s", exc)
            self.wire.write_frame(error_frame(None, PARSE_ERROR, "Parse error"))
            return
        self.inbox.put(self._fast_answer(message))

    def _fast_answer(self, message: object) -> Inbound:
        if self._seen_request or not is_request(message):
            return Inbound(message)
        self._seen_request = True
        assert isinstance(message, dict)
        if self.fast_init is None or message["method"] != "initialize":
            return Inbound(message)
        result = self.fast_init.answer(message)
        if result is None:
            return Inbound(message)
        self.wire.write_frame(
            encode_frame({"jsonrpc": "2.0", "id": message["id"], "result": result})
        )
        client = message["params"]["clientInfo"]
        reduced = {
            "jsonrpc": "2.0",
            "id": message["id"],
            "method": "initialize",
            "params": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {},
                "clientInfo": {"name": client["name"], "version": client["version"]},
            },
        }
        return Inbound(reduced, result)
