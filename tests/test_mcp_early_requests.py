"""The first requests after spawn get the answers of later ones: one path, the SDK's.

A real ``doc-index serve`` (``doc_index.cli.command.main``) runs with an import hook that holds
every import of the SDK (``mcp``, ``mcp_types``, ``pydantic``) at a FIFO gate that only
the test opens: the requests written at spawn are all read while the SDK is not loaded,
on any machine. Their answers must be the bytes the same requests get once the server is
warm: with two paths, a ``tools/call`` carrying the 2026-07-28 ``_meta`` envelope was
answered normally by an early path and refused by the SDK, depending on timing.
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
from doc_index.cli.command import main
sys.exit(main(["serve", "--root", {root!r}, "--tool-names", {style!r}]))
"""

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
PING = {"jsonrpc": "2.0", "id": "sync", "method": "ping"}


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


ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def requests(style: str) -> list[dict[str, Any]]:
    """tools requests of several kinds, with unique ids."""
    resolve = f"context{'_' if style == 'underscore' else '.'}resolve"
    meta = {"progressToken": 7, "claudecode/toolUseId": "toolu_1"}
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "c"}},
        tool_call(3, resolve, {"cache": "local-mdkit-docs", "query": "retry timeout",
                               "budget": 600}),
        tool_call(4, "context.resolve", {"cache": "nope", "query": "x", "budget": 10}),
        tool_call("é\u2028\x01 id", "context_list_caches", {}),
        tool_call(2**62, "context.inspect_cache", {"cache": "local-mdkit-docs"}),
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
         "params": {"name": "context.list_caches", "arguments": None, "_meta": meta}},
        {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
         "params": {"name": "context.list_caches", "_meta": ENVELOPE}},
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
         "params": {"name": "context.resolve", "arguments": {"cache": "minimal"},
                    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}},
        tool_call(10, "context.delete", {"cache": "minimal"}),
        {"jsonrpc": "2.0", "id": 11, "method": "tools/list", "params": {"cursor": 3}},
        {"jsonrpc": "2.0", "id": 12, "method": "resources/list"},
    ]


def receive(srv: RawServer, count: int) -> dict[str, bytes]:
    """The next ``count`` frames by their id (as JSON text, so 1 and "1" stay apart)."""
    frames = [srv.recv_line() for _ in range(count)]
    return {json.dumps(json.loads(frame)["id"]): frame for frame in frames}


def until_ping(srv: RawServer) -> Iterator[bytes]:
    """Frames received before the answer to PING (which is consumed)."""
    while True:
        frame = srv.recv_line()
        if json.loads(frame).get("id") == PING["id"]:
            assert json.loads(frame)["result"] == {}
            return
        yield frame


@pytest.mark.parametrize(("version", "style"), [("2024-11-05", "dotted"),
                                                ("2025-11-25", "underscore")])
def test_requests_read_before_the_sdk_loaded_get_the_answers_of_later_ones(
    root: Path, tmp_path: Path, version: str, style: str
) -> None:
    sent = requests(style)
    with HeldServer(root, tmp_path, style) as srv:
        srv.send(initialize(0, version), INITIALIZED, *sent)
        srv.release()
        assert json.loads(srv.recv_line())["result"]["protocolVersion"] == version
        first = receive(srv, len(sent))
        srv.send(PING)
        assert list(until_ping(srv)) == []
        srv.send(*sent)
        later = receive(srv, len(sent))
        assert srv.close() == []
    assert srv.proc.returncode == 0, srv.stderr.decode()
    assert first == later
    for request_id in ("8", "9"):  # the 2026-07-28 envelope on a handshake connection
        assert json.loads(first[request_id])["error"]["code"] == -32600
    assert json.loads(first["3"])["result"]["content"][0]["text"].startswith('{"documents"')
    assert b"Traceback" not in srv.stderr


def test_a_tools_call_before_initialize_is_answered(root: Path) -> None:
    with RawServer(server_argv(root)) as srv:
        srv.send(tool_call(1, "context.list_caches", {}), initialize(2),
                 tool_call(3, "context.list_caches", {}))
        responses = srv.close()
    by_id = {r["id"]: r for r in responses}
    assert sorted(by_id) == [1, 2, 3] and len(responses) == 3
    assert by_id[1]["error"]["code"] == -32602  # the SDK's: not initialized yet
    assert "content" in by_id[3]["result"]
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
