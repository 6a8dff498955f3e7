"""`doc-index serve` driven by the official SDK client (stdio_client + ClientSession)."""

from __future__ import annotations

import functools
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_support import CACHE_NAMES, context_cli, error_text, make_root

from doc_index.foundation.errors import EXIT_CODES

CODE_OF_EXIT = {exit_code: code for code, exit_code in EXIT_CODES.items()}


QUERIES = [("deployment", 4000), ("deployment security", 10), ("", 0), ("deployment", 100)]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_root(tmp_path_factory.mktemp("sdk") / "root")
    cli = [("list-caches", "--root", str(root))]
    for cache in CACHE_NAMES:
        cli.append(("inspect", "--cache", str(root / cache)))
        cli.extend(("resolve", "--cache", str(root / cache), "--query", query,
                    "--budget", str(budget)) for query, budget in QUERIES)
    with ThreadPoolExecutor(4) as pool:  # the CLI's answers, one process each, side by side
        list(pool.map(_expected, cli))
    return root


def params(root: Path, style: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_index.cli", "serve", "--root", str(root), "--tool-names", style],
    )


def expected(args: list[str]) -> tuple[str, bool]:
    return _expected(tuple(args))


@functools.cache
def _expected(args: tuple[str, ...]) -> tuple[str, bool]:
    done = context_cli(*args)
    if done.returncode == 0:
        return done.stdout.decode("utf-8"), False
    return error_text(CODE_OF_EXIT[done.returncode]), True


def only_text(result: types.CallToolResult) -> str:
    assert result.structured_content is None
    assert len(result.content) == 1
    item = result.content[0]
    assert isinstance(item, types.TextContent)
    return item.text


async def session_run(root: Path, style: str, body: Any) -> Any:
    async with (
        stdio_client(params(root, style)) as (read, write),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        assert init.server_info.name == "doc-index"
        return await body(session)


async def three_tools(session: ClientSession, root: Path, names: list[str]) -> None:
    listed = await session.list_tools()
    assert [tool.name for tool in listed.tools] == [*names, "context_outline", "context_read"]
    await session.send_ping()
    for cache in CACHE_NAMES:
        for query, budget in QUERIES[:3]:
            result = await session.call_tool(
                names[0], {"cache": cache, "query": query, "budget": budget}
            )
            text, is_error = expected(
                ["resolve", "--cache", str(root / cache), "--query", query,
                 "--budget", str(budget)]
            )
            assert only_text(result) == text
            assert result.is_error is is_error
        result = await session.call_tool(names[2], {"cache": cache})
        assert only_text(result) == expected(["inspect", "--cache", str(root / cache)])[0]
    result = await session.call_tool(names[1], {})
    assert only_text(result) == expected(["list-caches", "--root", str(root)])[0]
    missing = await session.call_tool(names[0], {"cache": "../x", "query": "q", "budget": 1})
    assert missing.is_error is True
    assert only_text(missing) == error_text("cache_missing")


async def both_spellings(session: ClientSession) -> None:
    dotted = await session.call_tool("context.list_caches", {})
    underscore = await session.call_tool("context_list_caches", {})
    assert only_text(dotted) == only_text(underscore)


async def concurrent_calls(session: ClientSession, root: Path) -> None:
    results: dict[int, str] = {}

    async def one(i: int) -> None:
        cache = CACHE_NAMES[i % len(CACHE_NAMES)]
        result = await session.call_tool(
            "context.resolve", {"cache": cache, "query": "deployment", "budget": 100}
        )
        results[i] = only_text(result)

    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(one, i)
    assert len(results) == 20
    for i, text in results.items():
        cache = CACHE_NAMES[i % len(CACHE_NAMES)]
        args = ["resolve", "--cache", str(root / cache), "--query", "deployment"]
        assert text == expected([*args, "--budget", "100"])[0]


@pytest.mark.parametrize("style", ["dotted", "underscore"])
def test_sdk_client_session(root: Path, style: str) -> None:
    """One session per published style: the three tools, either spelling, 20 calls at once."""
    sep = "." if style == "dotted" else "_"
    names = [f"context{sep}{tool}" for tool in ("resolve", "list_caches", "inspect_cache")]

    async def body(session: ClientSession) -> None:
        await three_tools(session, root, names)
        await both_spellings(session)
        await concurrent_calls(session, root)

    anyio.run(session_run, root, style, body)
