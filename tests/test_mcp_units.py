"""In-process units of the MCP server: argument checks, error mapping, the SDK stream wrappers."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from doc_index.foundation.errors import (
    CacheInvalid,
    InternalError,
    spec_json,
    spec_message,
)
from doc_index.server.mcp_server import instructions
from doc_index.server.mcp_tool_calls import CANONICAL_NAMES, ToolCalls, tool_definitions
from doc_index.server.mcp_transport import (
    UNREADABLE,
    CountedOutput,
    HeldInput,
    Ledger,
    StdinLines,
    StdoutFrames,
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
        "context_outline",
        "context_read",
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
    resolve, list_caches, inspect, outline, read = tool_definitions(style)
    assert resolve["description"].startswith(SPEC_DESCRIPTION)
    assert "one project's documentation split into sections" in resolve["description"]
    params = resolve["inputSchema"]["properties"]
    assert "Matching is by words, not meaning" in params["query"]["description"]
    assert "start with 2000" in params["budget"]["description"]
    for naming in ("`owner-name`", "`NAME@VERSION`", "`local-...`", "doc-index://caches"):
        assert naming in list_caches["description"]
    # Only the published names: a client that rejects dots must not be told of one.
    text = json.dumps([resolve, list_caches, inspect, outline, read]) + instructions(style)
    for v0 in ("resolve", "list_caches", "inspect_cache"):
        assert f"context{other}{v0}" not in text
    assert "context.outline" not in text and "context.read" not in text
    assert list_caches["name"] in params["cache"]["description"]
    assert resolve["name"] in inspect["description"]
    assert read["name"] in resolve["description"] and resolve["name"] in read["description"]
    # Answers by meaning: the query's advice says what the server does.
    meaning = tool_definitions(style, meaning=True)[0]["inputSchema"]["properties"]["query"]
    assert "meaning" in meaning["description"] and "not meaning" not in meaning["description"]
    # tools/list is read by every agent on every session: keep it short (the three v0
    # tools: 556 cl100k tokens in 2,227 characters of json.dumps; with the navigation
    # tools: measured in docs/decisions/outputs-and-tool-cost.md).
    assert len(json.dumps({"tools": [resolve, list_caches, inspect]})) < 2500
    assert len(json.dumps({"tools": [resolve, list_caches, inspect, outline, read]})) < 5200


# the SDK's streams, wrapped ------------------------------------------------------------


def lines_of(data: bytes, limit: int) -> list[str]:
    """What StdinLines reads from a pipe holding ``data``, up to EOF (which stays EOF)."""
    read_fd, write_fd = os.pipe()
    os.write(write_fd, data)
    os.close(write_fd)
    try:
        lines = StdinLines(read_fd, limit)
        out = []
        while (line := lines.read_line()) is not None:
            out.append(line)
        assert lines.read_line() is None
        return out
    finally:
        os.close(read_fd)


def test_stdin_lines_skip_blank_lines_and_refuse_long_or_not_utf8_ones() -> None:
    data = b"a" * 25 + b"\nok\n\n  \r\n" + b"\xff\xfe\n" + b"b" * 10 + b"\n\xc3\xa9\nlast"
    assert lines_of(data, limit=8) == [
        UNREADABLE, "ok\n", UNREADABLE, UNREADABLE, "\u00e9\n", "last"]


def test_stdout_frames_survive_a_closed_stdout() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    frames = StdoutFrames(write_fd)
    try:
        for _ in range(2):
            anyio.run(frames.write, '{"jsonrpc":"2.0"}\n')
        assert frames.broken
    finally:
        os.close(write_fd)


def test_what_stdin_lines_refuse_the_sdk_cannot_parse() -> None:
    with pytest.raises(ValueError):
        types.jsonrpc_message_adapter.validate_json(UNREADABLE, by_name=False)


def request(request_id: int | str, method: str = "tools/call") -> SessionMessage:
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method))


def answer(request_id: int | str, code: int | None = None) -> SessionMessage:
    if code is None:
        return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result={}))
    error = types.ErrorData(code=code, message="boom")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def cancel(request_id: int | str) -> SessionMessage:
    return SessionMessage(types.JSONRPCNotification(
        jsonrpc="2.0", method="notifications/cancelled", params={"requestId": request_id}))


def bad_line(line: str) -> Exception:
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:  # what the SDK's stdio reader puts on its stream
        return exc
    raise AssertionError(f"{line!r} is valid")


Script = Callable[[HeldInput, CountedOutput], Awaitable[None]]


def run_wrapped(inbound: list[Any], sdk: Script) -> list[Any]:
    """Feed ``inbound`` through HeldInput (then EOF) while ``sdk`` plays the SDK on the
    wrapped streams; the messages written to the SDK's output stream, in order."""

    async def main() -> list[Any]:
        feed, inner_read = anyio.create_memory_object_stream[Any](len(inbound))
        inner_write, sink = anyio.create_memory_object_stream[Any](100)
        for item in inbound:
            feed.send_nowait(item)
        feed.close()
        ledger = Ledger()
        await sdk(HeldInput(inner_read, inner_write, ledger), CountedOutput(inner_write, ledger))
        inner_write.close()
        return [item.message async for item in sink]

    return anyio.run(main)


def test_eof_waits_for_every_request_handed_to_the_sdk() -> None:
    events: list[Any] = []

    async def sdk(read: HeldInput, write: CountedOutput) -> None:
        async def answer_soon(request_id: int) -> None:
            while not read.ledger.ended:  # work on until stdin's EOF was read, and on
                await anyio.sleep(0)
            for _ in range(10):
                await anyio.sleep(0)
            events.append(request_id)
            await write.send(answer(request_id))

        async with anyio.create_task_group() as tg:
            async for item in read:  # as the SDK's dispatcher reads
                tg.start_soon(answer_soon, item.message.id)
            events.append("eof")  # the SDK would cancel what is still running here

    written = run_wrapped([request(1), request(2), request(3)], sdk)
    assert events == [1, 2, 3, "eof"]
    assert [message.id for message in written] == [1, 2, 3]


def test_a_cancelled_request_is_not_waited_for() -> None:
    ledger = Ledger()
    for item in (request(1), request("2"), cancel(2)):
        ledger.note_inbound(item.message)
    ledger.end_of_input()
    assert not ledger.drained.is_set()  # request 1 is still due
    ledger.settle(answer(1).message)
    assert ledger.drained.is_set()  # "2" was cancelled as 2 (the SDK's id coercion)


def test_a_reused_id_is_due_twice() -> None:
    ledger = Ledger()
    ledger.note_inbound(request(5).message)
    ledger.note_inbound(request(5).message)
    ledger.end_of_input()
    ledger.settle(answer(5).message)
    assert not ledger.drained.is_set()
    ledger.settle(answer(5, -32602).message)
    assert ledger.drained.is_set()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("garbage", (None, -32700)),
        ('{"id": "\\ud800"}', (None, -32700)),
        ("[]", (None, -32600)),
        ("5", (None, -32600)),
        ('{"jsonrpc": "2.0", "id": 7}', (7, -32600)),
        ('{"jsonrpc": "1.0", "id": "x", "method": "ping"}', ("x", -32600)),
        ('{"jsonrpc": "2.0", "id": true, "params": 1}', (None, -32600)),
        ('{"jsonrpc": "2.0", "id": 3, "result": 5}', None),  # a response: ignored
        ('{"jsonrpc": "2.0", "id": 3, "error": 5}', None),
    ],
)
def test_lines_the_sdk_refused_get_their_error(line: str, expected: Any) -> None:
    async def sdk(read: HeldInput, write: CountedOutput) -> None:
        assert [item async for item in read] == []

    written = run_wrapped([bad_line(line)], sdk)
    if expected is None:
        assert written == []
    else:
        [error] = written
        assert isinstance(error, types.JSONRPCError)
        assert (error.id, error.error.code) == expected


def test_an_error_with_code_0_goes_out_as_internal_error() -> None:
    async def sdk(read: HeldInput, write: CountedOutput) -> None:
        async for item in read:
            await write.send(answer(item.message.id, 0))

    [error] = run_wrapped([request(9)], sdk)
    assert isinstance(error, types.JSONRPCError)
    assert (error.id, error.error.code, error.error.message) == (9, -32603, "Internal error")


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
