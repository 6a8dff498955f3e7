"""Agents see versions: the MCP server's ``doc-index://caches`` resource and its
instructions, read with the official SDK client; the three tools keep their bytes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from conftest import run_cli, write_tree
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from package_servers import SimpleIndex, sdist
from test_package_build import pkg_env  # noqa: F401 (a fixture)


async def session_run(root: Path, body):  # type: ignore[no-untyped-def]
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "doc_index.cli", "serve", "--root", str(root)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        return await body(session, init)


def test_resource_and_instructions_name_package_and_version(
        pkg_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    with SimpleIndex() as index:
        data = sdist("alpha", "1.0.0", {"README.md": "# alpha\n\nAbout alpha.\n"})
        index.add("alpha", "alpha-1.0.0.tar.gz", data)
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        project = write_tree(pkg_env / "proj", {"requirements.txt": "alpha==1.0.0\n"})
        assert run_cli("sync", str(project)).returncode == 0
    docs = write_tree(pkg_env / "docs", {"a.md": "# A\n\nText.\n"})
    assert run_cli("build", str(docs), "--name", "notes").returncode == 0
    root = pkg_env / "root"

    async def body(session: ClientSession, init):  # type: ignore[no-untyped-def]
        listed = await session.list_resources()
        assert [str(r.uri) for r in listed.resources] == ["doc-index://caches"]
        read = await session.read_resource("doc-index://caches")
        with pytest.raises(MCPError, match="Unknown resource"):
            await session.read_resource("file:///etc/passwd")
        tools = await session.list_tools()
        listing = await session.call_tool("context.list_caches", {})
        return init.instructions, read.contents[0].text, [t.name for t in tools.tools], \
            listing.content[0].text

    instructions, text, tools, listing = anyio.run(session_run, root, body)
    caches = {c["name"]: c for c in json.loads(text)["caches"]}
    assert sorted(caches) == ["alpha@1.0.0", "notes"]
    alpha = caches["alpha@1.0.0"]
    assert alpha["source"]["kind"] == "pypi" and alpha["source"]["package"] == "alpha"
    assert alpha["source"]["version"] == "1.0.0" and alpha["source"]["ref"] == "1.0.0"
    assert alpha["source"]["index"] == index.index_url
    assert alpha["projects"] == [str(project.resolve())]
    assert caches["notes"]["source"]["kind"] == "directory" and caches["notes"]["projects"] == []
    assert f"- alpha@1.0.0: pypi alpha 1.0.0 (pinned by {project.resolve()})" in instructions
    assert "doc-index://caches" in instructions
    assert tools == ["context.resolve", "context.list_caches", "context.inspect_cache",
                     "context_outline", "context_read"]
    assert json.loads(listing) == {"caches": [{"path": "alpha@1.0.0", "has_manifest": True},
                                              {"path": "notes", "has_manifest": True}]}
