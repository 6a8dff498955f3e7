"""`doc-index serve` end to end over real pipes, in raw newline-delimited JSON-RPC.

The server is spawned as ``python -m doc_index.cli serve --root ROOT`` on a copy
of the Context Engine fixture caches; tool texts are compared byte for byte with the
stdout of the ``context`` CLI (``python -m doc_index.server.context_cli``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SAFETY_TIMEOUT
from mcp_support import (
    CACHE_NAMES,
    FIXTURES,
    GOLDENS,
    RawServer,
    context_cli,
    error_text,
    fixture_queries,
    initialize,
    make_root,
    python_argv,
    result_text,
    server_argv,
    tool_call,
)

from doc_index.foundation.errors import EXIT_CODES

CODE_OF_EXIT = {exit_code: code for code, exit_code in EXIT_CODES.items()}
DOTTED = ["context.resolve", "context.list_caches", "context.inspect_cache"]
UNDERSCORE = ["context_resolve", "context_list_caches", "context_inspect_cache"]
NAVIGATION = ["context_outline", "context_read"]  # one spelling in both styles


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture caches, a damaged one, and names that lead out of the root."""
    base = tmp_path_factory.mktemp("mcp")
    root = make_root(base / "root")
    (root / "broken").mkdir()
    (root / "broken" / "manifest.json").write_text("not valid json")
    outside = base / "outside"
    shutil.copytree(root / "minimal", outside / "cache")
    (root / "escape").symlink_to(outside / "cache")
    (root / "hardlinked").mkdir()
    os.link(outside / "cache" / "manifest.json", root / "hardlinked" / "manifest.json")
    if os.geteuid() == 0:  # another owner's file: what a hard link must not smuggle in
        os.chown(outside / "cache" / "manifest.json", 65534, 65534)
    (root / "inner-escape").mkdir()
    (root / "inner-escape" / "manifest.json").symlink_to(outside / "cache" / "manifest.json")
    return root


def check_initialize(response: dict[str, Any], request_id: Any, version: str) -> None:
    assert response["id"] == request_id
    result = response["result"]
    assert result["protocolVersion"] == version
    assert result["serverInfo"]["name"] == "doc-index"
    # resources: doc-index://caches, what each cache holds (tests/test_package_mcp.py), and
    # the templates; completions of their variables; prompts (none: answered, not refused)
    assert result["capabilities"] == {"tools": {"listChanged": False},
                                      "resources": {"listChanged": False, "subscribe": False},
                                      "prompts": {"listChanged": False}, "completions": {}}


def initialized_server(root: Path, style: str, version: str) -> Iterator[RawServer]:
    with RawServer(server_argv(root, style)) as srv:
        # No notifications/initialized: every test below is a request sent after the
        # initialize answer and before that notification.
        check_initialize(srv.request(initialize(0, version)), 0, version)
        yield srv


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[RawServer]:
    """One initialized dotted-name server shared by the tests of this module that need
    no fresh one."""
    yield from initialized_server(root, "dotted", "2024-11-05")


@pytest.fixture(scope="module")
def underscore_server(root: Path) -> Iterator[RawServer]:
    yield from initialized_server(root, "underscore", "2025-11-25")


def call(srv: RawServer, name: str, arguments: Any, request_id: int = 99) -> dict[str, Any]:
    response = srv.request(tool_call(request_id, name, arguments))
    assert response["id"] == request_id, response
    return response


def tool_error(response: dict[str, Any]) -> str:
    assert response["result"].get("isError") is True, response
    return result_text(response)


def cli_expectation(args: list[str]) -> tuple[str, bool]:
    """What the tool must return for these CLI args: (stdout, False) or (error text, True)."""
    done = context_cli(*args)
    if done.returncode == 0:
        return done.stdout.decode("utf-8"), False
    assert done.stdout == b""
    return error_text(CODE_OF_EXIT[done.returncode]), True


# handshake and listing ---------------------------------------------------------------


def test_initialize_answers_the_clients_protocol_version(
    server: RawServer, underscore_server: RawServer, root: Path
) -> None:
    """The shared servers were opened with 2024-11-05 and 2025-11-25 (the fixtures check
    the answers); a version the SDK does not know gets its latest."""
    with RawServer(server_argv(root)) as srv:
        check_initialize(srv.request(initialize(7, "1999-01-01")), 7, "2025-11-25")
        assert srv.close() == []
    assert srv.proc.returncode == 0


@pytest.mark.parametrize(("style", "names"), [("dotted", DOTTED), ("underscore", UNDERSCORE)])
def test_tools_list_has_the_three_tools_then_the_navigation_tools(
    request: pytest.FixtureRequest, style: str, names: list[str]
) -> None:
    srv = request.getfixturevalue("server" if style == "dotted" else "underscore_server")
    tools = srv.request({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["result"]["tools"]
    assert [tool["name"] for tool in tools] == names + NAVIGATION
    schemas = {tool["name"]: tool["inputSchema"] for tool in tools}
    for schema in schemas.values():
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
    assert schemas[names[0]]["required"] == ["cache", "query", "budget"]
    assert schemas[names[0]]["properties"]["budget"]["type"] == "integer"
    assert schemas[names[1]]["properties"] == {}
    assert schemas[names[2]]["required"] == ["cache"]
    assert "structuredContent" not in json.dumps(tools)


@pytest.mark.parametrize("style", ["dotted", "underscore"])
def test_both_spellings_are_accepted(
    request: pytest.FixtureRequest, root: Path, style: str
) -> None:
    srv = request.getfixturevalue("server" if style == "dotted" else "underscore_server")
    expected, _ = cli_expectation(["list-caches", "--root", str(root)])
    for i, name in enumerate(["context.list_caches", "context_list_caches"]):
        assert result_text(call(srv, name, {}, i)) == expected


def test_requests_pipelined_with_initialize_are_answered_then_eof(root: Path) -> None:
    """Written at once, before notifications/initialized, then stdin closed."""
    expected, _ = cli_expectation(["list-caches", "--root", str(root)])
    with RawServer(server_argv(root)) as srv:
        srv.send(initialize(), tool_call(1, "context.list_caches", {}))
        srv.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        srv.send(tool_call(3, "context.inspect_cache", {"cache": "minimal"}))
        responses = srv.close()
    assert responses[0]["id"] == 0 and "protocolVersion" in responses[0]["result"]
    by_id = {r["id"]: r for r in responses[1:]}
    assert sorted(by_id) == [1, 2, 3] and len(responses) == 4
    assert result_text(by_id[1]) == expected
    assert len(by_id[2]["result"]["tools"]) == 5
    assert "isError" not in by_id[3]["result"]
    assert srv.proc.returncode == 0


# tool texts are the CLI's bytes ------------------------------------------------------


@pytest.mark.parametrize("cache", CACHE_NAMES)
def test_resolve_texts_equal_the_cli(server: RawServer, root: Path, cache: str) -> None:
    for i, (name, q) in enumerate(fixture_queries().items()):
        args = ["resolve", "--cache", str(root / cache), "--query", q["query"]]
        expected, is_error = cli_expectation([*args, "--budget", str(q["budget"])])
        arguments = {"cache": cache, "query": q["query"], "budget": q["budget"]}
        response = call(server, "context.resolve", arguments, i)
        assert result_text(response) == expected, name
        assert response["result"].get("isError", False) is is_error


@pytest.mark.parametrize("cache", CACHE_NAMES)
def test_inspect_texts_equal_the_cli(server: RawServer, root: Path, cache: str) -> None:
    expected, is_error = cli_expectation(["inspect", "--cache", str(root / cache)])
    response = call(server, "context.inspect_cache", {"cache": cache})
    assert result_text(response) == expected
    assert response["result"].get("isError", False) is is_error


def test_list_caches_text_equals_the_cli(server: RawServer, root: Path) -> None:
    expected, _ = cli_expectation(["list-caches", "--root", str(root)])
    assert result_text(call(server, "context.list_caches", {})) == expected
    assert result_text(call(server, "context.list_caches", None)) == expected


@pytest.mark.parametrize(("cache", "query_file", "golden"), GOLDENS)
def test_resolve_goldens(server: RawServer, cache: str, query_file: str, golden: str) -> None:
    q = fixture_queries()[query_file]
    text = result_text(call(server, "context.resolve", {"cache": cache, **q}))
    expected = (FIXTURES / "expected" / f"{golden}.json").read_text()
    assert text.rstrip("\n") == expected.rstrip("\n")


def test_missing_cache_result_is_the_fixture_byte_for_byte(server: RawServer) -> None:
    for i, name in enumerate(["context.resolve", "context_resolve"]):
        server.send(tool_call(i, name, {"cache": "does-not-exist", "query": "x", "budget": 10}))
        line = server.recv_line().rstrip(b"\n")
        prefix = b'{"jsonrpc":"2.0","id":%d,"result":' % i
        assert line.startswith(prefix) and line.endswith(b"}")
        expected = (FIXTURES / "expected" / "mcp_error_cache_missing.json").read_bytes()
        assert line[len(prefix) : -1] == expected.rstrip(b"\n")


# errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"cache": "nope", "query": "x", "budget": 10}, "cache_missing"),
        ({"query": "x", "budget": 10}, "cache_missing"),
        ({"cache": 5, "query": "x", "budget": 10}, "cache_missing"),
        ({"cache": None, "query": "x", "budget": 10}, "cache_missing"),
        ({"cache": "minimal", "budget": 10}, "invalid_query"),
        ({"cache": "minimal", "query": 5, "budget": 10}, "invalid_query"),
        ({"cache": "minimal", "query": ["x"], "budget": 10}, "invalid_query"),
        ({"cache": "minimal", "query": None, "budget": 10}, "invalid_query"),
        ({"cache": "minimal", "query": "x", "budget": 10, "extra": 1}, "invalid_query"),
        ({"cache": "minimal", "query": "x"}, "invalid_budget"),
        ({"cache": "minimal", "query": "x", "budget": -1}, "invalid_budget"),
        ({"cache": "minimal", "query": "x", "budget": "10"}, "invalid_budget"),
        ({"cache": "minimal", "query": "x", "budget": True}, "invalid_budget"),
        ({"cache": "minimal", "query": "x", "budget": 1.5}, "invalid_budget"),
        ({"cache": "minimal", "query": "x", "budget": None}, "invalid_budget"),
        ({"cache": "minimal", "query": "x", "budget": [10]}, "invalid_budget"),
        ({"cache": "minimal", "query": "x", "budget": 10_000_001}, "invalid_budget"),
        ({"cache": "minimal", "query": "x", "budget": 10**30}, "invalid_budget"),
        ({}, "invalid_budget"),
    ],
)
def test_resolve_argument_errors(server: RawServer, arguments: dict[str, Any], code: str) -> None:
    assert tool_error(call(server, "context.resolve", arguments)) == error_text(code)


def test_integral_float_budget_is_an_integer(server: RawServer, root: Path) -> None:
    expected, _ = cli_expectation(
        ["resolve", "--cache", str(root / "minimal"), "--query", "hello", "--budget", "4000"]
    )
    arguments = {"cache": "minimal", "query": "hello", "budget": 4000.0}
    assert result_text(call(server, "context.resolve", arguments)) == expected


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("context.inspect_cache", {}, "cache_missing"),
        ("context.inspect_cache", {"cache": 1}, "cache_missing"),
        ("context.inspect_cache", {"cache": "minimal", "extra": 1}, "cache_missing"),
        ("context.inspect_cache", {"cache": "nope"}, "cache_missing"),
        ("context.list_caches", {"root": "/"}, "cache_missing"),
    ],
)
def test_other_argument_errors(
    server: RawServer, name: str, arguments: dict[str, Any], code: str
) -> None:
    assert tool_error(call(server, name, arguments)) == error_text(code)


def test_cache_invalid(server: RawServer, root: Path) -> None:
    expected, is_error = cli_expectation(
        ["resolve", "--cache", str(root / "broken"), "--query", "x", "--budget", "10"]
    )
    assert is_error and expected == error_text("cache_invalid")
    arguments = {"cache": "broken", "query": "x", "budget": 10}
    assert tool_error(call(server, "context.resolve", arguments)) == expected


FAULTS = """
import errno, sys
from pathlib import Path
from doc_index.server import mcp_server
from doc_index.server import spec_texts as tools
def io_error(*args, **kwargs):
    raise OSError(errno.EIO, "Input/output error")
def crash(cache_dir):
    if cache_dir.name == "realistic":
        return "past the tool\\n"
    raise RuntimeError("secret detail /etc/passwd")
def noisy(*args, **kwargs):
    print("stray output from a tool")
    sys.stdout.flush()
    return "fine\\n"
tool_result = mcp_server.tool_result
def result_that_breaks(reply):  # an exception past the tool code, in the SDK's handler
    if reply.text == "past the tool\\n":
        raise RuntimeError("secret detail /etc/shadow")
    return tool_result(reply)
tools.resolve = io_error
tools.inspect_cache = crash
tools.list_caches = noisy
mcp_server.tool_result = result_that_breaks
from doc_index.cli.command import main
sys.exit(main(["serve", "--root", {root!r}]))
"""


def test_io_error_internal_error_and_stray_output(root: Path) -> None:
    with RawServer(python_argv(FAULTS.format(root=str(root)))) as srv:
        srv.request(initialize())
        resolve = call(srv, "context.resolve", {"cache": "minimal", "query": "x", "budget": 1})
        assert tool_error(resolve) == error_text("io_error")
        inspect = call(srv, "context.inspect_cache", {"cache": "minimal"})
        assert tool_error(inspect) == error_text("internal_error")
        assert "secret" not in json.dumps(inspect)
        assert result_text(call(srv, "context.list_caches", {})) == "fine\n"
        # The SDK answers a handler's exception with code 0 and its text: never sent.
        broken = call(srv, "context.inspect_cache", {"cache": "realistic"})
        assert broken["error"] == {"code": -32603, "message": "Internal error"}
        assert srv.close() == []
    assert b"stray output from a tool" in srv.stderr
    assert b"RuntimeError" in srv.stderr  # the traceback is logged, on stderr only


def test_unknown_tool_is_invalid_params(server: RawServer) -> None:
    response = call(server, "context.delete", {"cache": "minimal"})
    assert response["error"]["code"] == -32602


def test_arguments_that_are_not_an_object(server: RawServer) -> None:
    # Rejected by the SDK's tools/call schema before any tool runs: a protocol error.
    response = call(server, "context.resolve", ["minimal", "x", 10])
    assert response["error"]["code"] == -32602
    assert "result" in call(server, "context.list_caches", {})


# traversal ---------------------------------------------------------------------------


def test_traversal_attempts_are_cache_missing(server: RawServer, root: Path) -> None:
    outside = root.parent / "outside"
    names = [
        "..",
        "../outside/cache",
        "minimal/../../outside/cache",
        "/etc",
        "/etc/passwd",
        str(outside / "cache"),
        str(root / "minimal"),
        "\\minimal",
        "..\\outside",
        "minimal\x00",
        "",
        "escape",
        "inner-escape",
        *(["hardlinked"] if os.geteuid() == 0 else []),
    ]
    for i, name in enumerate(names):
        resolve = call(server, "context.resolve", {"cache": name, "query": "x", "budget": 9}, i)
        assert tool_error(resolve) == error_text("cache_missing"), name
        inspect = call(server, "context.inspect_cache", {"cache": name}, i)
        assert tool_error(inspect) == error_text("cache_missing"), name


# transport robustness ----------------------------------------------------------------


def test_every_request_read_before_eof_is_answered_from_a_cold_start(root: Path) -> None:
    calls = [
        tool_call(i, "context.resolve", {"cache": "realistic", "query": "deployment", "budget": 50})
        for i in range(1, 31)
    ]
    with RawServer(server_argv(root)) as srv:
        srv.send(initialize(), *calls)
        responses = srv.close()
    assert responses[0]["id"] == 0 and "protocolVersion" in responses[0]["result"]
    answered = {r["id"]: r for r in responses[1:]}
    assert sorted(answered) == list(range(1, 31)) and len(responses) == 31
    assert all("isError" not in r["result"] for r in answered.values())
    assert len({result_text(r) for r in answered.values()}) == 1
    assert srv.proc.returncode == 0


def test_every_request_read_before_eof_is_answered_when_warm(root: Path) -> None:
    with RawServer(server_argv(root)) as srv:
        srv.request(initialize())
        srv.request({"jsonrpc": "2.0", "id": "warm", "method": "tools/list"})
        srv.send(
            *[
                tool_call(i, "context.resolve", {"cache": "minimal", "query": "x", "budget": 9})
                for i in range(40)
            ],
            {"jsonrpc": "2.0", "id": "ping", "method": "ping"},
        )
        responses = srv.close()
    assert sorted(str(r["id"]) for r in responses) == sorted([*map(str, range(40)), "ping"])
    assert all("result" in r for r in responses)


PING = {"jsonrpc": "2.0", "id": "sync", "method": "ping"}


@pytest.mark.parametrize(
    "line",
    [
        b"garbage",
        b"{",
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list"',
        b'\xff\xfe{"jsonrpc":"2.0"}',
        b'{"jsonrpc":"2.0","id":1,"method":"t\xc3"}',  # not UTF-8: not read as "t\ufffd"
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',  # a lone surrogate
        b"[" * 100_000,
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}' + b" " * (5 << 20),  # over 4 MiB
    ],
)
def test_unparseable_line_gets_parse_error_and_the_server_goes_on(
    server: RawServer, line: bytes
) -> None:
    server.send_raw(line + b"\n")
    assert server.recv() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error"},
    }
    assert len(server.request({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"])


def test_nan_and_infinity_are_numbers_to_the_sdk_and_no_budget(server: RawServer) -> None:
    """The SDK's JSON parser reads NaN and Infinity (1e999 too) as numbers."""
    for i, value in enumerate([b"NaN", b"Infinity", b"-Infinity", b"1e999"]):
        server.send_raw(b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":'
                        b'"context.resolve","arguments":{"cache":"minimal","query":"x",'
                        b'"budget":%s}}}\n' % (i, value))
        response = server.recv()
        assert response["id"] == i
        assert tool_error(response) == error_text("invalid_budget")


def test_garbage_blank_lines_and_a_clean_exit(root: Path) -> None:
    """Before initialize too; stdout carries only JSON-RPC, the reasons go to stderr."""
    with RawServer(server_argv(root)) as srv:
        srv.send_raw(b"not json\n\n   \r\n[]\n")
        srv.send(initialize(), {"jsonrpc": "2.0", "id": 2, "method": "ping"})
        srv.send(tool_call(3, "context.resolve", {"cache": "nope", "query": "", "budget": 1}))
        responses = srv.close()
    outcome = sorted((str(r["id"]), r.get("error", {}).get("code", 0)) for r in responses)
    assert outcome == [("0", 0), ("2", 0), ("3", 0), ("None", -32700), ("None", -32600)]
    assert srv.proc.returncode == 0
    assert b"unparseable line" in srv.stderr and b"Traceback" not in srv.stderr


@pytest.mark.parametrize(
    ("message", "answer_id"),
    [
        ([], None),
        ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], None),
        (5, None),
        ("x", None),
        ({"jsonrpc": "2.0", "id": 7}, 7),
        ({"jsonrpc": "1.0", "id": 8, "method": "ping"}, 8),
        ({"jsonrpc": "2.0", "id": 9, "method": 5}, 9),
        ({"jsonrpc": "2.0", "id": 10, "method": "ping", "params": [1]}, 10),
        ({"id": "eleven", "method": "ping"}, "eleven"),
    ],
)
def test_json_that_is_not_json_rpc_is_an_invalid_request(
    server: RawServer, message: Any, answer_id: Any
) -> None:
    response = server.request(message)
    assert response["id"] == answer_id
    assert response["error"]["code"] == -32600
    assert server.request({"jsonrpc": "2.0", "id": 2, "method": "ping"})["result"] == {}


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
        {"jsonrpc": "2.0", "id": 3, "result": 5},  # a malformed response from the client
    ],
)
def test_what_the_sdk_reads_as_a_notification_or_a_response_gets_no_answer(
    server: RawServer, message: Any
) -> None:
    """An id that is not a string or an integer: the SDK reads a notification. The ping
    after it is answered first: nothing was sent for the message (the SDK answers in
    order what it is not still running, and a notification never)."""
    server.send(message, PING)
    assert server.recv() == {"jsonrpc": "2.0", "id": "sync", "result": {}}


def test_unknown_method(server: RawServer) -> None:
    # logging is not a capability of this server (it logs to stderr only)
    response = server.request({"jsonrpc": "2.0", "id": 5, "method": "logging/setLevel",
                               "params": {"level": "info"}})
    assert response["error"]["code"] == -32601
    response = server.request({"jsonrpc": "2.0", "id": 6, "method": "no/such"})
    assert response["error"]["code"] == -32601


def test_a_rebuilt_cache_is_noticed_on_the_next_call(server: RawServer, root: Path) -> None:
    shutil.copytree(root / "minimal", root / "swapped")
    arguments = {"cache": "swapped", "query": "deployment", "budget": 4000}
    cli = ["resolve", "--cache", str(root / "swapped"), "--query", "deployment", "--budget", "4000"]
    try:
        before, _ = cli_expectation(cli)
        assert result_text(call(server, "context.resolve", arguments)) == before
        assert result_text(call(server, "context.resolve", arguments)) == before
        shutil.copytree(root / "realistic", root / ".swapped.new")
        os.rename(root / "swapped", root / ".swapped.old")
        os.rename(root / ".swapped.new", root / "swapped")
        after, _ = cli_expectation(cli)
        assert after != before
        assert result_text(call(server, "context.resolve", arguments)) == after
        shutil.rmtree(root / "swapped")
        assert tool_error(call(server, "context.resolve", arguments)) == error_text("cache_missing")
    finally:
        for name in ("swapped", ".swapped.new", ".swapped.old"):
            shutil.rmtree(root / name, ignore_errors=True)


# read-only, no writes, no sockets ----------------------------------------------------


def snapshot(path: Path) -> dict[str, tuple[int, int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            st = os.lstat(os.path.join(dirpath, name))
            out[os.path.join(dirpath, name)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


AUDITED = """
import os, sys
events = []
WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
def hook(event, args):
    if event == "open":
        path, mode, flags = args
        writes = isinstance(mode, str) and any(c in mode for c in "wax+")
        if writes or (isinstance(flags, int) and flags & WRITE):
            events.append(f"open for writing: {{path}}")
    elif event == "socket.__new__" and args[1] != 1:
        events.append(f"socket family {{args[1]}}")
    elif event.startswith("socket.") and event != "socket.__new__":
        events.append(event)
    elif event in ("os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.link", "os.symlink",
                   "os.truncate", "os.chmod", "os.chown", "os.utime", "shutil.rmtree"):
        events.append(event)
sys.addaudithook(hook)
import atexit
atexit.register(lambda: os.write(2, ("AUDIT " + repr(events) + "\\n").encode()))
from doc_index.cli.command import main
sys.exit(main(["serve", "--root", {root!r}]))
"""


def test_read_only_root_works_and_nothing_is_written(tmp_path: Path) -> None:
    root = make_root(tmp_path / "root")
    for dirpath, _, filenames in os.walk(root):
        for filename in filenames:
            os.chmod(os.path.join(dirpath, filename), 0o444)
        os.chmod(dirpath, 0o555)
    before = snapshot(tmp_path)
    try:
        with RawServer(python_argv(AUDITED.format(root=str(root))), cwd=tmp_path) as srv:
            srv.request(initialize())
            for i, cache in enumerate(CACHE_NAMES):
                arguments = {"cache": cache, "query": "deployment", "budget": 4000}
                assert "result" in call(srv, "context.resolve", arguments, i)
                assert "result" in call(srv, "context.inspect_cache", {"cache": cache}, i)
            assert "result" in call(srv, "context.list_caches", {})
            srv.close()
        assert srv.proc.returncode == 0
        audit = [line for line in srv.stderr.decode().splitlines() if line.startswith("AUDIT ")]
        assert audit == ["AUDIT []"], srv.stderr.decode()
        assert snapshot(tmp_path) == before
    finally:
        for dirpath, _, _ in os.walk(root):
            os.chmod(dirpath, 0o755)


def test_a_client_that_closed_stdout_ends_the_server_quietly(root: Path) -> None:
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(server_argv(root), stdin=subprocess.PIPE, stdout=write_end,
                            stderr=subprocess.PIPE)
    os.close(write_end)
    os.close(read_end)  # nobody will read the answers
    pings = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(1, 5)]
    _, stderr = proc.communicate(
        b"".join(json.dumps(m).encode() + b"\n" for m in [initialize(), *pings]),
        timeout=SAFETY_TIMEOUT)
    assert proc.returncode == 0, stderr
    assert b"stdout closed" in stderr and b"Traceback" not in stderr


def test_a_cancelled_request_does_not_hold_up_the_exit(root: Path) -> None:
    calls = [
        tool_call(i, "context.resolve", {"cache": "realistic", "query": "guide", "budget": 50})
        for i in range(1, 6)
    ]
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 3, "reason": "test"},
    }
    with RawServer(server_argv(root)) as srv:
        srv.send(initialize(), *calls[:3], cancel, *calls[3:])
        responses = srv.close()
    ids = {r["id"] for r in responses}
    assert {0, 1, 2, 4, 5} <= ids <= {0, 1, 2, 3, 4, 5}
    assert srv.proc.returncode == 0
