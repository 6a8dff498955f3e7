"""The first ``tools/list`` and ``tools/call`` after spawn do not wait for the SDK import.

A real ``doc-index serve`` (``doc_index.cli.main``) runs with an import hook that holds
every import of the SDK (``mcp``, ``mcp_types``, ``pydantic``) at a FIFO gate that only
the test opens. Requests sent right after ``initialize`` are answered while the gate is
shut: they cannot have waited for the SDK. The test then opens the gate, waits for the
SDK's answer to a ``ping`` (only the SDK answers ``ping``: from then on it answers
everything) and sends the same requests again: the answers are the same bytes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLE_REPOS, build
from mcp_support import RawServer, initialize, make_root, python_argv, server_argv, tool_call

HELD_SERVER = """
import importlib.abc, os, sys
HELD = {{"mcp", "mcp_types", "pydantic", "pydantic_core"}}
class Gate(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader
    def create_module(self, spec):
        return self.loader.create_module(spec)
    def exec_module(self, module):
        fd = os.open({fifo!r}, os.O_RDONLY)
        os.read(fd, 1)  # blocks until the test writes
        os.close(fd)
        self.loader.exec_module(module)
class Hold(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name not in HELD:
            return None
        for finder in sys.meta_path:
            if finder is not self and (spec := finder.find_spec(name, path, target)):
                spec.loader = Gate(spec.loader)
                return spec
        return None
sys.meta_path.insert(0, Hold())
from doc_index.cli import main
sys.exit(main(["serve", "--root", {root!r}, "--tool-names", {style!r}]))
"""

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
PING = {"jsonrpc": "2.0", "id": "sdk-ready", "method": "ping"}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_root(tmp_path_factory.mktemp("first-call") / "root")
    build(SAMPLE_REPOS / "mdkit-docs", root)
    (root / "é\u2028\x7f name").mkdir()  # list_caches echoes it: raw non-ASCII both ways
    return root


class HeldServer(RawServer):
    """A server whose SDK import waits at a FIFO until :meth:`release`."""

    def __init__(self, root: Path, tmp_path: Path, style: str = "dotted") -> None:
        fifo = tmp_path / "sdk-gate"
        os.mkfifo(fifo)
        # Read-write: opening never blocks and keeps a writer, so the server's open
        # returns at once and its read waits for release() (or fails if we are gone).
        self.gate = os.open(fifo, os.O_RDWR)
        code = HELD_SERVER.format(fifo=str(fifo), root=str(root), style=style)
        super().__init__(python_argv(code))

    def release(self) -> None:
        os.write(self.gate, b"x" * len({"mcp", "mcp_types", "pydantic", "pydantic_core"}))

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        os.close(self.gate)


def plain_requests(style: str) -> list[dict[str, Any]]:
    """tools requests of every kind the early path answers, with unique ids."""
    resolve = f"context{'_' if style == 'underscore' else '.'}resolve"
    meta = {"progressToken": 7, "claudecode/toolUseId": "toolu_1"}
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "c"}},
        tool_call(3, resolve, {"cache": "local-mdkit-docs", "query": "retry timeout",
                               "budget": 600}),
        tool_call(4, "context.resolve", {"cache": "realistic", "query": "deployment",
                                         "budget": 300}),
        tool_call(5, "context.resolve", {"cache": "nope", "query": "x", "budget": 10}),
        tool_call(6, "context.resolve", {"cache": "minimal", "query": "x", "budget": -1}),
        tool_call("é\u2028\x01 id", "context_list_caches", {}),
        tool_call(2**62, "context.inspect_cache", {"cache": "local-mdkit-docs"}),
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
         "params": {"name": "context.list_caches", "arguments": None, "_meta": meta}},
        {"jsonrpc": "2.0", "id": 10, "method": "tools/call",
         "params": {"name": "context.inspect_cache", "arguments": {"cache": "minimal"},
                    "_meta": {"progressToken": "p"}}},
        tool_call(11, "context.inspect_cache", {"cache": "../etc"}),
        {"jsonrpc": "2.0", "id": 12, "method": "tools/list", "params": None},
    ]


def receive(srv: RawServer, count: int) -> dict[str, bytes]:
    """The next ``count`` frames by their id (as JSON text, so 1 and "1" stay apart)."""
    frames = [srv.recv_line() for _ in range(count)]
    return {json.dumps(json.loads(frame)["id"]): frame for frame in frames}


def until_ping(srv: RawServer) -> Iterator[bytes]:
    """Frames received before the SDK's answer to PING (which is consumed)."""
    while True:
        frame = srv.recv_line()
        if json.loads(frame).get("id") == PING["id"]:
            assert json.loads(frame)["result"] == {}
            return
        yield frame


@pytest.mark.parametrize(
    ("version", "style"),
    [
        ("2024-11-05", "dotted"),
        ("2025-03-26", "dotted"),
        ("2025-06-18", "dotted"),
        ("2025-11-25", "dotted"),
        ("2025-11-25", "underscore"),
    ],
)
def test_early_answers_come_before_the_sdk_and_equal_its_bytes(
    root: Path, tmp_path: Path, version: str, style: str
) -> None:
    requests = plain_requests(style)
    with HeldServer(root, tmp_path, style) as srv:
        srv.send(initialize(0, version), INITIALIZED, *requests)
        assert json.loads(srv.recv_line())["result"]["protocolVersion"] == version
        early = receive(srv, len(requests))  # the SDK's import is still held here
        srv.release()
        srv.send(PING)
        assert list(until_ping(srv)) == []
        srv.send(*requests)
        late = receive(srv, len(requests))
        assert srv.close() == []
    assert srv.proc.returncode == 0, srv.stderr.decode()
    assert early == late
    assert b"differs" not in srv.stderr and b"Traceback" not in srv.stderr


def test_unusual_requests_wait_for_the_sdk(root: Path, tmp_path: Path) -> None:
    """What the SDK could judge differently is left to it, in order, behind the gate."""
    waiting = [
        PING,
        tool_call(20, "context.delete", {"cache": "minimal"}),
        tool_call(21, "context.resolve", ["minimal", "x", 10]),
        {**tool_call(22, "context.list_caches", {}), "extra": 1},
        {"jsonrpc": "2.0", "id": 23, "method": "tools/call",
         "params": {"name": "context.list_caches", "task": {"ttl": 1}}},
        {"jsonrpc": "2.0", "id": 24, "method": "tools/call",
         "params": {"name": "context.list_caches", "_meta": {"progressToken": 1.5}}},
        {"jsonrpc": "2.0", "id": 25, "method": "tools/list", "params": {"cursor": 3}},
        {"jsonrpc": "2.0", "id": 2**64, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": True, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 27, "method": "resources/list"},
    ]
    answered = tool_call(28, "context.list_caches", {})
    with HeldServer(root, tmp_path) as srv:
        srv.send(initialize(), *waiting, answered)
        assert "result" in srv.recv()
        assert srv.recv()["id"] == 28  # answered early, past everything that waits
        srv.release()
        rest = srv.close()
    assert srv.proc.returncode == 0, srv.stderr.decode()
    by_id = {json.dumps(r["id"]): r for r in rest}
    assert len(rest) == len(by_id) == len(waiting)  # one answer each, all from the SDK
    assert by_id['"sdk-ready"']["result"] == {}
    assert by_id["null"]["error"]["code"] == -32600  # the id true
    for request_id in ("20", "21", "24", "25"):
        assert by_id[request_id]["error"]["code"] == -32602, by_id[request_id]
    assert by_id["27"]["error"]["code"] == -32601


def test_a_tools_call_before_initialize_waits_for_the_sdk(root: Path, tmp_path: Path) -> None:
    call = tool_call(1, "context.list_caches", {})
    with HeldServer(root, tmp_path) as srv:
        srv.send(call, initialize(2), tool_call(3, "context.list_caches", {}))
        srv.release()
        responses = srv.close()
    # Nothing was answered early: the SDK answered the call and both initialize requests.
    assert sorted(json.dumps(r["id"]) for r in responses) == ["1", "2", "3"]
    assert srv.proc.returncode == 0


def test_the_first_call_of_a_plain_spawn_has_the_bytes_of_later_calls(root: Path) -> None:
    """`doc-index serve` as clients spawn it: initialize, initialized, tools/call at once."""
    call = tool_call(1, "context.resolve", {"cache": "local-mdkit-docs",
                                            "query": "how do I retry a request", "budget": 2000})
    with RawServer(server_argv(root)) as srv:
        srv.send(initialize(), INITIALIZED, call)
        srv.recv()
        first = srv.recv_line()
        srv.send(PING)
        assert list(until_ping(srv)) == []
        srv.send(call)
        later = srv.recv_line()
        assert srv.close() == []
    assert first == later
    assert json.loads(first)["result"]["content"][0]["text"].startswith('{"documents":[{')
