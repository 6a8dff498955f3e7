"""``doc-index serve --http``: the official SDK client over streamable HTTP.

The same tools and bytes as the ``context`` CLI (and so as stdio); loopback by default;
any other address only with a bearer token, which is read from a file or the
environment, checked, and never written anywhere; many clients and several replicas at
once. Every server is waited for by its readiness line, never by a sleep.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import SAFETY_TIMEOUT, run_cli
from http_support import READY, HttpServer, only_text, raw_post, sdk_session
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_support import CACHE_NAMES, context_cli, error_text, make_root

from doc_index.foundation.errors import EXIT_CODES

REPO = Path(__file__).resolve().parents[1]
CODE_OF_EXIT = {exit_code: code for code, exit_code in EXIT_CODES.items()}
TOKEN = "Zq7-secret_token.for~tests+only/AAAA=="
# (cache, query, budget): native and v0 caches, an error among them.
CALLS = [
    ("mdkit", "retry a request after a timeout", 2000),
    ("mdkit", "install", 300),
    ("mdkit", "", 100),
    ("realistic", "deployment", 4000),
    ("minimal", "deployment security", 10),
    ("../escape", "q", 10),
]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_root(tmp_path_factory.mktemp("http") / "root")
    done = run_cli("build", str(REPO / "sample_repos" / "mdkit-docs"), "--name", "mdkit",
                   "--root", str(root))
    assert done.returncode == 0, done.stderr
    return root


@functools.cache
def expected(*args: str) -> tuple[str, bool]:
    """What ``context ARGS`` prints (a tool's text), or the spec error it exits with."""
    done = context_cli(*args)
    if done.returncode == 0:
        return done.stdout.decode("utf-8"), False
    return error_text(CODE_OF_EXIT[done.returncode]), True


def expected_resolve(root: Path, cache: str, query: str, budget: int) -> tuple[str, bool]:
    return expected("resolve", "--cache", str(root / cache), "--query", query,
                    "--budget", str(budget))


def run_client(url: str, body: Callable[[ClientSession], Awaitable[Any]],
               token: str | None = None) -> Any:
    async def main() -> Any:
        async with sdk_session(url, token) as session:
            return await body(session)

    return anyio.run(main)


async def check_tools(session: ClientSession, root: Path, names: list[str]) -> None:
    listed = await session.list_tools()
    assert [tool.name for tool in listed.tools][:3] == names
    for cache, query, budget in CALLS:
        result = await session.call_tool(names[0], {"cache": cache, "query": query,
                                                    "budget": budget})
        text, is_error = expected_resolve(root, cache, query, budget)
        assert only_text(result) == text
        assert bool(result.is_error) is is_error
    for cache in ("mdkit", *CACHE_NAMES):
        result = await session.call_tool(names[2], {"cache": cache})
        assert only_text(result) == expected("inspect", "--cache", str(root / cache))[0]
    result = await session.call_tool(names[1], {})
    assert only_text(result) == expected("list-caches", "--root", str(root))[0]


@pytest.mark.parametrize("style", ["dotted", "underscore"])
def test_sdk_client_over_http(root: Path, style: str) -> None:
    """The three tools over HTTP answer the CLI's bytes; the resource reads as over stdio;
    the server listens on loopback and stops cleanly on SIGTERM."""
    sep = "." if style == "dotted" else "_"
    names = [f"context{sep}{tool}" for tool in ("resolve", "list_caches", "inspect_cache")]

    async def body(session: ClientSession) -> None:
        await check_tools(session, root, names)
        resources = await session.list_resources()
        assert [str(r.uri) for r in resources.resources] == ["doc-index://caches"]
        read = await session.read_resource("doc-index://caches")
        assert "mdkit" in read.contents[0].text  # type: ignore[union-attr]

    with HttpServer(root, "--tool-names", style) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert server.ready_line.endswith("; no token (loopback only)")
        run_client(server.url, body)
        assert server.stop() == 0
    assert server.said_only_its_start(), server.err_lines


def test_same_server_as_stdio(root: Path) -> None:
    """The initialize answer's instructions, tools/list and resources/list over HTTP are
    those of stdio: one server object behind two transports."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def listing(session: ClientSession) -> list[Any]:
        return [(await session.list_tools()).model_dump(),
                (await session.list_resources()).model_dump()]

    async def over_stdio() -> tuple[str | None, list[Any]]:
        params = StdioServerParameters(command=sys.executable, args=[
            "-m", "doc_index.cli", "serve", "--root", str(root), "--tool-names", "underscore"],
            env=dict(os.environ))  # (the SDK passes only a few variables by default)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            init = await s.initialize()
            return init.instructions, await listing(s)

    async def over_http(url: str) -> tuple[str | None, list[Any]]:
        async with streamable_http_client(url) as (read, write), \
                ClientSession(read, write) as session:
            init = await session.initialize()
            return init.instructions, await listing(session)

    with HttpServer(root, "--tool-names", "underscore") as server:
        http = anyio.run(over_http, server.url)
        assert server.stop() == 0
    stdio = anyio.run(over_stdio)
    assert http == stdio and stdio[0]


def test_port_alone_binds_loopback(root: Path) -> None:
    """``--http 0`` is 127.0.0.1; a Host or Origin that names another site is refused
    (DNS rebinding), one naming this loopback port is served."""
    with HttpServer(root, http="0") as server:
        assert server.url.startswith("http://127.0.0.1:")
        port = server.url.split(":")[2].split("/")[0]
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert raw_post(server.url, ping, {"Host": "evil.example"}).status_code == 421
        assert raw_post(server.url, ping, {"Origin": "http://evil.example"}).status_code == 403
        good = raw_post(server.url, ping, {"Origin": f"http://localhost:{port}"})
        assert good.status_code == 200 and good.json()["result"] == {}
        # (a server without a token ignores one: mcp-config's blocks always send it)
        assert raw_post(server.url, ping, {"Authorization": "Bearer x"}).status_code == 200
        assert server.stop(signal.SIGINT) == 130


def start_refused(root: Path, *args: str, env: dict[str, str] | None = None,
                  ) -> tuple[int, bytes, list[str]]:
    full = {k: v for k, v in os.environ.items() if k != "DOC_INDEX_HTTP_TOKEN"}
    full.update(env or {})
    done = subprocess.run([sys.executable, "-m", "doc_index.cli", "serve", "--root", str(root),
                           *args], capture_output=True, env=full, timeout=SAFETY_TIMEOUT,
                          stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout, done.stderr.decode().splitlines()


def test_public_address_needs_a_token(root: Path) -> None:
    """Any address but loopback without a token: one error line, exit 1, nothing served."""
    for address in ("0.0.0.0:0", "[::]:0"):
        status, out, err = start_refused(root, "--http", address)
        assert (status, out, len(err)) == (1, b"", 1), err
        assert err[0].startswith(f"error: --http {address} is not a loopback address")
        assert "DOC_INDEX_HTTP_TOKEN" in err[0] and "--token-file" in err[0]


def test_bad_addresses_and_token_options(root: Path, tmp_path: Path) -> None:
    """A malformed --http, a token on the command line, --token-file without --http."""
    for args in (["--http", "host:port"], ["--http", "99999"], ["--http", "::1:80"],
                 ["--http", "0", "--token", TOKEN], ["--token-file", "x"]):
        status, out, err = start_refused(root, *args)
        assert (status, out, len(err)) == (1, b"", 1), (args, err)
        assert err[0].startswith("error: "), err


def token_file(tmp_path: Path, text: str, mode: int = 0o600, name: str = "token") -> Path:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(mode)
    return path


def test_token_file_checks(root: Path, tmp_path: Path) -> None:
    """A token file others can read or change, a folder, a short or malformed token: one
    error line that names the file and never holds the token."""
    secret = "not a token but a secret sentence"
    cases = [
        (token_file(tmp_path, TOKEN + "\n", 0o644, "a"), "can be read or changed by other"),
        (token_file(tmp_path, TOKEN, 0o620, "b"), "can be read or changed by other users"),
        (tmp_path, "is not a regular file"),
        (token_file(tmp_path, "short-token", name="c"), "shorter than 16 characters"),
        (token_file(tmp_path, secret, name="d"), "is not a bearer token"),
        (tmp_path / "missing", "cannot read the token file"),
    ]
    for path, problem in cases:
        status, out, err = start_refused(root, "--http", "0.0.0.0:0", "--token-file",
                                         str(path))
        assert (status, out, len(err)) == (1, b"", 1), (path, err)
        assert str(path) in err[0] and problem in err[0], err
        for word in (TOKEN, "short-token", "secret sentence"):
            assert word not in err[0]
    status, _, err = start_refused(root, "--http", "0", env={"DOC_INDEX_HTTP_TOKEN": secret})
    assert status == 1 and "$DOC_INDEX_HTTP_TOKEN is not a bearer token" in err[0]
    assert "secret sentence" not in err[0]


def post_status(url: str, token: str | None, scheme: str = "Bearer") -> tuple[int, Any]:
    headers = {"Authorization": f"{scheme} {token}"} if token is not None else {}
    response = raw_post(url, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers)
    return response.status_code, response


@pytest.mark.parametrize("source", ["file", "environment"])
def test_token_refused_missing_right(root: Path, tmp_path: Path, source: str) -> None:
    """A public bind with a token: missing, wrong (longer, shorter, other scheme) get 401
    with ``WWW-Authenticate: Bearer`` and the same body; the right one is served, by the
    SDK client too; and the token is never in the server's output."""
    if source == "file":
        server = HttpServer(root, "--token-file", str(token_file(tmp_path, TOKEN + "\n")),
                            http="0.0.0.0:0")
    else:
        server = HttpServer(root, http="0.0.0.0:0", env={"DOC_INDEX_HTTP_TOKEN": TOKEN})
    with server:
        assert server.ready_line.endswith("; bearer token required")
        url = server.url.replace("0.0.0.0", "127.0.0.1")
        refusals = [post_status(url, token, scheme) for token, scheme in [
            (None, "Bearer"), ("wrong-token-of-some-length", "Bearer"), (TOKEN + "x", "Bearer"),
            (TOKEN[:-1], "Bearer"), (TOKEN, "Basic"), (TOKEN, "Bearer  ")]]
        bodies = set()
        for status, response in refusals:
            assert status == 401
            assert response.headers["www-authenticate"].startswith("Bearer")
            bodies.add(response.content)
        assert len(bodies) == 1 and b"wrong" not in bodies.pop()
        assert post_status(url, TOKEN)[0] == 200
        assert post_status(url, TOKEN, "bearer")[0] == 200  # the scheme is case-insensitive

        async def body(session: ClientSession) -> str:
            return only_text(await session.call_tool("context.list_caches", {}))

        assert run_client(url, body, token=TOKEN) == expected("list-caches", "--root",
                                                              str(root))[0]
        with pytest.raises(BaseException) as refused:
            run_client(url, body, token="wrong-token-of-some-length")
        # (the SDK client turns the 401 into an error of the initialize request)
        assert leaf_messages(refused.value) == ["MCPError: Server returned an error response"]
        assert server.stop() == 0
    assert TOKEN not in server.stderr and TOKEN[:16] not in server.stderr
    assert "wrong-token" not in server.stderr


def leaf_messages(exc: BaseException) -> list[str]:
    """The exceptions an exception group holds, flattened (``exceptions``: 3.10 has no
    ``BaseExceptionGroup``, anyio's backport has the attribute)."""
    inner = getattr(exc, "exceptions", None)
    if inner is not None:
        return [m for one in inner for m in leaf_messages(one)]
    return [f"{type(exc).__name__}: {exc}"]


def test_many_clients_at_once(root: Path) -> None:
    """24 SDK client sessions, each resolving in turn, all at the same time: every answer
    is the CLI's."""
    answers: list[tuple[int, str]] = []

    async def client(url: str, i: int) -> None:
        async with sdk_session(url) as session:
            for j in range(3):
                cache, query, budget = CALLS[(i + j) % 5]
                result = await session.call_tool(
                    "context.resolve", {"cache": cache, "query": query, "budget": budget})
                answers.append(((i + j) % 5, only_text(result)))

    async def main(url: str) -> None:
        async with anyio.create_task_group() as group:
            for i in range(24):
                group.start_soon(client, url, i)

    with HttpServer(root) as server:
        anyio.run(main, server.url)
        assert server.stop() == 0
    assert len(answers) == 72
    for k, text in answers:
        assert text == expected_resolve(root, *CALLS[k])[0]


def test_ready_line_is_one_line(root: Path) -> None:
    """The readiness line names the URL and the token rule; beside it the server says
    only its meaning line."""
    with HttpServer(root) as server:
        assert server.ready_line.startswith(READY + "http://127.0.0.1:")
        assert server.stop() == 0
    assert server.said_only_its_start(), server.err_lines


# --- mcp-config --http ---------------------------------------------------------------------

REMOTE = "https://docs.internal:8443/mcp"
HTTP_BLOCKS = {
    "claude-code": '{\n  "mcpServers": {\n    "doc-index": {\n      "type": "http",\n'
                   '      "url": "URL",\n      "headers": {\n        "Authorization": '
                   '"Bearer ${DOC_INDEX_HTTP_TOKEN}"\n      }\n    }\n  }\n}\n',
    "cursor": '{\n  "mcpServers": {\n    "doc-index": {\n      "url": "URL",\n      '
              '"headers": {\n        "Authorization": "Bearer ${env:DOC_INDEX_HTTP_TOKEN}"\n'
              '      }\n    }\n  }\n}\n',
    "vscode": '{\n  "servers": {\n    "doc-index": {\n      "type": "http",\n      "url": '
              '"URL",\n      "headers": {\n        "Authorization": "Bearer '
              '${input:doc-index-token}"\n      }\n    }\n  },\n  "inputs": [\n    {\n      '
              '"type": "promptString",\n      "id": "doc-index-token",\n      "password": true,'
              '\n      "description": "doc-index HTTP bearer token"\n    }\n  ]\n}\n',
    "codex": '[mcp_servers.doc-index]\nurl = "URL"\nbearer_token_env_var = '
             '"DOC_INDEX_HTTP_TOKEN"\n',
}


@pytest.mark.parametrize("client", sorted(HTTP_BLOCKS))
def test_mcp_config_http_blocks(client: str) -> None:
    """Each client's documented remote-server form, the token where that client reads
    secrets (never in the block)."""
    for url in (REMOTE, "http://127.0.0.1:8765/mcp"):
        done = run_cli("mcp-config", "--client", client, "--http", url)
        assert (done.returncode, done.stderr) == (0, b"")
        assert done.stdout.decode() == HTTP_BLOCKS[client].replace("URL", url)


def test_mcp_config_http_refusals() -> None:
    """Claude Desktop (remote servers only in its Connectors settings), and URLs no client
    should get: one error line each, a password never echoed."""
    for args in (["--client", "claude-desktop", "--http", REMOTE],
                 ["--client", "cursor", "--http", "http://user:hunter2hunter2@x/mcp"],
                 ["--client", "cursor", "--http", "ftp://x/mcp"],
                 ["--client", "codex", "--http", "http://x:port/mcp"]):
        done = run_cli("mcp-config", *args)
        assert (done.returncode, done.stdout) == (1, b""), args
        assert done.stderr.startswith(b"error: ") and done.stderr.count(b"\n") == 1
        assert b"hunter2" not in done.stderr
    assert b"Settings > Connectors" in run_cli("mcp-config", *["--client", "claude-desktop",
                                                                "--http", REMOTE]).stderr


def test_claude_code_block_reaches_the_server(root: Path, tmp_path: Path) -> None:
    """The claude-code block, its ${DOC_INDEX_HTTP_TOKEN} expanded as Claude Code does,
    connects the SDK client to a server on a public address with that token."""
    with HttpServer(root, "--token-file", str(token_file(tmp_path, TOKEN)),
                    http="0.0.0.0:0") as server:
        url = server.url.replace("0.0.0.0", "127.0.0.1")
        done = run_cli("mcp-config", "--client", "claude-code", "--http", url)
        block = json.loads(done.stdout)["mcpServers"]["doc-index"]
        header = block["headers"]["Authorization"].replace("${DOC_INDEX_HTTP_TOKEN}", TOKEN)
        assert header == f"Bearer {TOKEN}" and block["type"] == "http"

        async def body(session: ClientSession) -> str:
            return only_text(await session.call_tool("context.list_caches", {}))

        assert run_client(block["url"], body, token=TOKEN) == \
            expected("list-caches", "--root", str(root))[0]
        assert server.stop() == 0


def test_accepted_connections_do_not_wait_for_acks() -> None:
    """The socket ``--http`` binds is a TCP socket by its protocol number, so asyncio
    turns Nagle off on every connection it accepts (else each answer waited for the
    client's delayed ACK: 46 ms for a ping instead of 2)."""
    import asyncio
    import socket

    from doc_index.server.http_access import bind, resolve_listen

    async def main() -> int:
        accepted: asyncio.Queue[int] = asyncio.Queue()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                accepted.put_nowait(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        sock = bind(resolve_listen("127.0.0.1:0"))
        server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
        reader, writer = await asyncio.open_connection(*sock.getsockname())
        nodelay = await asyncio.wait_for(accepted.get(), SAFETY_TIMEOUT)
        writer.close()
        server.close()
        return nodelay

    assert asyncio.run(main()) != 0
