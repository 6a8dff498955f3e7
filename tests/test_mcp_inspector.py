"""``doc-index serve`` driven by the MCP Inspector CLI (another real client, in Node).

The Inspector is installed by ``make venv`` into ``.venv/inspector`` at the version
``tests/inspector/package-lock.json`` pins (npm registry; never at test time). Every
list method a client calls answers (the Inspector exits 1 on an error answer, as it did
on resources/templates/list before the templates), ``--strict`` finds no tool-schema
portability error, and a navigation tool's text is the CLI's bytes. No wall-clock
limit: ``--connect-timeout 0``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import run
from conftest import REPO, SAFETY_TIMEOUT
from mcp_support import make_root

INSPECTOR = REPO / ".venv" / "inspector" / "node_modules" / ".bin" / "mcp-inspector"

pytestmark = pytest.mark.skipif(
    not INSPECTOR.exists() or shutil.which("node") is None,
    reason="the MCP Inspector CLI is not installed (make venv installs it into "
           ".venv/inspector with npm; no npm or node on this machine)")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_root(tmp_path_factory.mktemp("inspector") / "root")


def inspector(root: Path, style: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The Inspector CLI's run against a server on ``root``; its stdout is one JSON object
    whose ``result`` is the method's (``--format json``)."""
    server = [sys.executable, "-m", "doc_index.cli", "serve", "--root", str(root),
              "--tool-names", style]
    return subprocess.run(
        [str(INSPECTOR), "--cli", *server, "--connect-timeout", "0", "--format", "json",
         "--quiet", *args],
        capture_output=True, timeout=SAFETY_TIMEOUT, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("style", ["dotted", "underscore"])
def test_every_list_method_answers(root: Path, style: str) -> None:
    sep = "." if style == "dotted" else "_"
    done = inspector(root, style, "--method", "tools/list", "--strict")
    assert done.returncode == 0, done.stderr
    assert [tool["name"] for tool in json.loads(done.stdout)["result"]["tools"]] == [
        f"context{sep}resolve", f"context{sep}list_caches", f"context{sep}inspect_cache",
        "context_outline", "context_read"]
    expected = {
        "resources/list": ("resources", ["doc-index://caches"], "uri"),
        "resources/templates/list": ("resourceTemplates", [
            "doc-index://caches/{cache}/outline{?prefix,depth,cursor,budget}",
            "doc-index://caches/{cache}/sections/{id}{?scope,line,budget}"], "uriTemplate"),
        "prompts/list": ("prompts", [], "name"),
    }
    for method, (key, values, field) in expected.items():
        done = inspector(root, style, "--method", method)
        assert done.returncode == 0, (method, done.stderr)
        assert [item[field] for item in json.loads(done.stdout)["result"][key]] == values, method


def test_a_navigation_tool_answers_the_commands_bytes(root: Path) -> None:
    done = inspector(root, "underscore", "--method", "tools/call", "--tool-name",
                     "context_read", "--tool-args-json",
                     json.dumps({"cache": "realistic", "id": "security.md", "budget": 500}))
    assert done.returncode == 0, done.stderr
    content = json.loads(done.stdout)["result"]["content"]
    code, out, _ = run("read", "realistic", "security.md", "--budget", "500", "--root",
                       str(root))
    assert code == 0 and content == [{"type": "text", "text": out.decode("utf-8")}]
