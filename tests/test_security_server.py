"""Issue 11, server side: a cache changed under a running server, a flood of requests.

Real ``doc-index serve`` processes on real pipes (``tests/mcp_support.py``). Every wait is
for an event (a response line, EOF); the timeouts are safety nets only.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import build, write_tree
from mcp_support import RawServer, error_text, initialize, make_root, result_text, tool_call

SAFETY_S = 120.0
KEY = "local-src"
TREE = {
    "docs/retry.md": "# Retry\n\nHow to retry after a timeout.\n",
    "docs/other.md": "# Other\n\nZebras and their timeout habits.\n",
}


def serve_argv(root: Path) -> list[str]:
    return [sys.executable, "-m", "doc_index.cli", "serve", "--root", str(root)]


def resolve(srv: RawServer, request_id: int, cache: str, query: str) -> dict[str, Any]:
    srv.send(tool_call(request_id, "context.resolve",
                       {"cache": cache, "query": query, "budget": 4000}))
    response = srv.recv(timeout=SAFETY_S)
    assert response["id"] == request_id, response
    return response


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = make_root(tmp_path / "root")  # the Context Engine v0 fixtures ("minimal", ...)
    build(write_tree(tmp_path / "src", TREE), root, name="src")
    return root


# item 9: a FIFO swapped into a warm cache --------------------------------------------


@pytest.mark.parametrize(
    ("cache", "swapped", "query"),
    [
        (KEY, "docs/retry.md", "retry timeout"),  # a raw file, read at each resolve
        (KEY, "manifest.json", "retry timeout"),  # native manifest: the stamp moves, reload
        ("minimal", "manifest.json", "guide"),  # a v0 manifest
    ],
)
def test_a_fifo_placed_in_a_warm_cache_is_an_error_not_a_hang(
    root: Path, cache: str, swapped: str, query: str
) -> None:
    with RawServer(serve_argv(root)) as srv:
        srv.send(initialize())
        assert "result" in srv.recv(timeout=SAFETY_S)
        first = resolve(srv, 1, cache, query)
        assert "isError" not in first["result"], first
        path = root / cache / swapped
        path.unlink()
        os.mkfifo(path)
        # Old servers blocked here for ever, opening the FIFO for reading.
        second = resolve(srv, 2, cache, query)
        assert second["result"].get("isError") is True, second
        assert result_text(second) == error_text("io_error")
        # The server goes on answering, this cache included.
        assert result_text(resolve(srv, 3, cache, query)) == error_text("io_error")
        other = resolve(srv, 4, "minimal" if cache == KEY else KEY, "retry")
        assert "isError" not in other["result"], other
        assert srv.close(timeout=SAFETY_S) == []
    assert srv.proc.returncode == 0
    assert b"Traceback" not in srv.stderr


def test_inspect_of_a_fifo_manifest_is_not_valid_not_a_hang(root: Path) -> None:
    with RawServer(serve_argv(root)) as srv:
        srv.send(initialize())
        assert "result" in srv.recv(timeout=SAFETY_S)
        path = root / KEY / "manifest.json"
        path.unlink()
        os.mkfifo(path)
        srv.send(tool_call(1, "context.inspect_cache", {"cache": KEY}))
        response = srv.recv(timeout=SAFETY_S)
        assert json.loads(result_text(response))["valid"] is False
        srv.close(timeout=SAFETY_S)
