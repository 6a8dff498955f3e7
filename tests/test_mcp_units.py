"""In-process units of the MCP server: argument checks, error mapping, the wire reader."""

from __future__ import annotations

import errno
import io
import json
import os
import queue
from pathlib import Path
from typing import Any

import pytest
from conftest import SAFETY_TIMEOUT
from doc_index.server.mcp_early import EarlyAnswers
from doc_index.server.mcp_server import fast_initialize, instructions
from doc_index.server.mcp_tools import CANONICAL_NAMES, ToolCalls, tool_definitions
from doc_index.server.mcp_wire import (
    EOF,
    FastInitialize,
    Inbound,
    Reader,
    Wire,
    parse_line,
    read_lines,
)

from doc_index.foundation.errors import (
    CacheInvalid,
    InternalError,
    spec_json,
    spec_message,
)


class RecordingBackend:
    """Stands in for ``tools`` to see exactly what the MCP layer passes on."""

    def __init__(self, fail: BaseException | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.fail = fail

    def _answer(self, *call: Any) -> str:
        self.calls.append(call)
        if self.fail is not None:
            raise self.fail
        return "ok\n"

    def resolve(self, cache_dir: Path, query: str, budget: object, pretty: bool = False) -> str:
        return self._answer("resolve", cache_dir, query, budget)

    def inspect_cache(self, cache_dir: Path) -> str:
        return self._answer("inspect", cache_dir)

    def list_caches(self, root: Path) -> str:
        return self._answer("list", root)


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "manifest.json").write_text("{}")
    return tmp_path


def test_arguments_reach_the_backend_checked(root: Path) -> None:
    backend = RecordingBackend()
    calls = ToolCalls(root, backend)
    assert calls.call("context_resolve", {"cache": "c", "query": "q", "budget": 7.0}).text == "ok\n"
    assert calls.call("context.inspect_cache", {"cache": "c"}).text == "ok\n"
    assert calls.call("context.list_caches", None).text == "ok\n"
    real = Path(os.path.realpath(root / "c"))
    assert backend.calls == [("resolve", real, "q", 7), ("inspect", real), ("list", root)]
    assert type(backend.calls[0][3]) is int


def test_bad_arguments_never_reach_the_backend(root: Path) -> None:
    backend = RecordingBackend()
    calls = ToolCalls(root, backend)
    bad = [
        {},
        {"cache": "c", "query": "q"},
        {"cache": "c", "budget": 1},
        {"cache": "..", "query": "q", "budget": 1},
        {"cache": "c", "query": "q", "budget": float("inf")},
        {"cache": "c", "query": "q", "budget": float("nan")},
    ]
    for arguments in bad:
        reply = calls.call("context.resolve", arguments)
        assert reply.is_error
    assert backend.calls == []


@pytest.mark.parametrize(
    ("fail", "code"),
    [
        (CacheInvalid(), "cache_invalid"),
        (InternalError(detail="detail"), "internal_error"),
        (OSError(errno.EIO, "Input/output error"), "io_error"),
        (PermissionError(errno.EACCES, "denied"), "io_error"),
        (RuntimeError("boom"), "internal_error"),
        (KeyError("x"), "internal_error"),
        (RecursionError(), "internal_error"),
    ],
)
def test_exceptions_become_spec_errors(root: Path, fail: BaseException, code: str) -> None:
    reply = ToolCalls(root, RecordingBackend(fail)).call("context.inspect_cache", {"cache": "c"})
    assert reply.is_error
    assert reply.text == spec_json(code)
    assert json.loads(reply.text) == {
        "error": {"code": code, "message": spec_message(code)}
    }


def test_unknown_tool_is_a_key_error(root: Path) -> None:
    with pytest.raises(KeyError):
        ToolCalls(root, RecordingBackend()).call("context.delete", {})


def test_names_and_schemas() -> None:
    assert set(CANONICAL_NAMES.values()) == {
        "context.resolve",
        "context.list_caches",
        "context.inspect_cache",
    }
    for style in ("dotted", "underscore"):
        for tool in tool_definitions(style):
            assert CANONICAL_NAMES[tool["name"]]
            assert tool["inputSchema"]["additionalProperties"] is False
    with pytest.raises(ValueError):
        tool_definitions("camel")


SPEC_DESCRIPTION = (  # specs/context.resolve.md, "Tool Description (for MCP registry)"
    "Resolve a natural-language query against a pre-built context cache and return a "
    "deterministic, explainable set of documents within a token budget."
)


@pytest.mark.parametrize(("style", "other"), [("dotted", "_"), ("underscore", ".")])
def test_descriptions_tell_an_agent_what_to_do(style: str, other: str) -> None:
    resolve, list_caches, inspect = tool_definitions(style)
    assert resolve["description"].startswith(SPEC_DESCRIPTION)
    assert "one project's documentation split into sections" in resolve["description"]
    params = resolve["inputSchema"]["properties"]
    assert "Matching is by words, not meaning" in params["query"]["description"]
    assert "start with 2000" in params["budget"]["description"]
    assert "`<owner>-<name>`" in list_caches["description"]
    # Only the published names: a client that rejects dots must not be told of one.
    text = json.dumps([resolve, list_caches, inspect]) + instructions(style)
    assert f"context{other}" not in text
    assert list_caches["name"] in params["cache"]["description"]
    assert resolve["name"] in inspect["description"]
    # tools/list is read by every agent on every session: keep it short (556 cl100k
    # tokens in 2,227 characters of json.dumps since the query's advice on words).
    assert len(json.dumps({"tools": [resolve, list_caches, inspect]})) < 2300


# the wire ----------------------------------------------------------------------------


def test_read_lines_skips_an_oversized_line_whole() -> None:
    data = b"a" * 25 + b"\nok\n" + b"b" * 10 + b"\nlast"
    assert list(read_lines(io.BytesIO(data), limit=8)) == [None, b"ok\n", None, b"last"]


@pytest.mark.parametrize(
    "line", [b"NaN", b'{"a": Infinity}', b"\xff", b"[" * 50_000, b"{", b"\xef\xbb\xbf{}"]
)
def test_parse_line_refuses(line: bytes) -> None:
    with pytest.raises(ValueError):
        parse_line(line)


def test_fast_initialize_only_for_well_formed_params() -> None:
    fast = fast_initialize("dotted")
    good = {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {
        "name": "c", "version": "1"}}
    assert fast.answer({"params": good})["protocolVersion"] == "2024-11-05"
    for bad in [None, [], {**good, "protocolVersion": 1}, {**good, "capabilities": []},
                {**good, "clientInfo": {"name": "c"}}]:
        assert fast.answer({"params": bad}) is None


class MemoryWire(Wire):
    def __init__(self) -> None:
        super().__init__(-1, -1)
        self.frames: list[bytes] = []

    def write_frame(self, frame: bytes) -> None:
        self.frames.append(frame)


def test_reader_answers_only_an_opening_initialize() -> None:
    wire = MemoryWire()
    inbox: queue.SimpleQueue[object] = queue.SimpleQueue()
    reader = Reader(wire, inbox, FastInitialize({"name": "n", "version": "v"}, {}, None))
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    init = {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {"roots": {}},
        "clientInfo": {"name": "c", "version": "1", "title": "T"}}}
    for message in (ping, init):
        reader.handle_line(json.dumps(message).encode())
    assert wire.frames == []  # a ping came first: the SDK decides everything
    assert inbox.get() == Inbound(ping) and inbox.get() == Inbound(init)

    reader = Reader(wire, inbox, FastInitialize({"name": "n", "version": "v"}, {}, None))
    reader.handle_line(json.dumps(init).encode())
    sent = json.loads(wire.frames[0])
    assert sent["id"] == 2 and sent["result"]["protocolVersion"] == "2024-11-05"
    forwarded = inbox.get()
    assert isinstance(forwarded, Inbound) and forwarded.answered == sent["result"]
    assert forwarded.message["params"] == {  # type: ignore[index]
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"}}
    reader.handle_line(json.dumps(init).encode())
    assert len(wire.frames) == 1  # a second initialize is the SDK's to answer


def test_early_answers_keep_everything_else_in_order(root: Path) -> None:
    wire = MemoryWire()
    early = EarlyAnswers(wire, ToolCalls(root, RecordingBackend()), [{"name": "t"}])
    ready = object()
    init = Inbound({"jsonrpc": "2.0", "id": 0, "method": "initialize"}, answered={})
    before_init = Inbound({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    ping = Inbound({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    listing = Inbound({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    inbox: queue.SimpleQueue[object] = queue.SimpleQueue()
    for item in (before_init, init, ping, listing, EOF, ready):
        inbox.put(item)
    assert early.until(inbox, ready) == [before_init, init, ping, EOF]
    assert wire.frames == [b'{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"t"}]}}']


def test_reader_puts_eof_when_stdin_ends() -> None:
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\nbad\n')
    os.close(write_fd)
    wire = Wire(read_fd, -1)
    frames: list[bytes] = []
    wire.write_frame = frames.append  # type: ignore[method-assign]
    inbox: queue.SimpleQueue[object] = queue.SimpleQueue()
    reader = Reader(wire, inbox, None).start()
    reader.thread.join(SAFETY_TIMEOUT)
    assert not reader.thread.is_alive()
    assert isinstance(inbox.get(), Inbound)
    assert inbox.get() is EOF
    assert json.loads(frames[0])["error"]["code"] == -32700
    os.close(read_fd)


def test_wire_survives_a_closed_stdout() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    wire = Wire(-1, write_fd)
    wire.write_frame(b"{}")
    wire.write_frame(b"{}")
    assert wire.broken
    os.close(write_fd)


def test_tree_check_runs_once_per_cache_generation(root: Path, tmp_path_factory: Any) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret").write_text("secret")
    calls = ToolCalls(root, RecordingBackend())
    assert not calls.call("context.inspect_cache", {"cache": "c"}).is_error
    assert not calls.call("context.inspect_cache", {"cache": "c"}).is_error
    assert calls.warm.loads == 1 and calls.warm.hits == 1
    (root / "c" / "escape").symlink_to(outside / "secret")  # changes the directory's mtime
    reply = calls.call("context.inspect_cache", {"cache": "c"})
    assert reply.text == spec_json("cache_missing")
