"""Provenance of native answers: each document's
``source`` names its raw file, title, heading path and line range; the same bytes come out
of ``doc-index resolve``, ``context resolve`` and a real ``doc-index serve``; a manifest
whose headings are broken is cache_invalid, never repaired."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import build, run_cli, write_tree
from mcp_support import RawServer, initialize, result_text, server_argv, tool_call

from doc_index.foundation.errors import ContextError
from doc_index.search.native_selection import select
from doc_index.server import spec_texts as tools
from doc_index.store.native_cache import load_native_cache

GUIDE = (
    "---\ntitle: Guide\n---\n\n"
    "# Deployment Guide\n\nHow to ship the service.\n\n"
    "## Servers\n\nPick a server for production.\n\n"
    "### Gunicorn Workers\n\nRun gunicorn with four workers behind the proxy.\n"
    "Each gunicorn worker handles one request at a time.\n\n"
    "## Proxies\n\nPut nginx in front of gunicorn.\n"
)
SETUP = (
    ".. _setup:\r\n\r\n"
    "Setup\r\n=====\r\n\r\nInstall it first.\r\n\r\n"
    "Gunicorn Settings\r\n-----------------\r\n\r\n"
    "Set the gunicorn timeout to thirty seconds when workers start slowly.\r\n"
)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = write_tree(tmp_path_factory.mktemp("src") / "docs",
                     {"deploy/guide.md": GUIDE, "setup.rst": SETUP})
    root = tmp_path_factory.mktemp("root")
    build(src, root, full=True)
    return root


def _answer(root: Path, query: str = "gunicorn workers", budget: int = 4000) -> dict:
    return json.loads(tools.resolve(root / "local-docs", query, budget))


def test_source_names_file_title_heading_path_and_lines(root: Path) -> None:
    docs = {d["id"]: d for d in _answer(root)["documents"]}
    workers = docs["guide-gunicorn-workers"]
    assert list(workers) == ["id", "version", "content", "score", "tokens", "why", "source"]
    assert workers["source"] == {
        "file": "deploy/guide.md", "title": "Gunicorn Workers",
        "path": ["Deployment Guide", "Servers", "Gunicorn Workers"], "lines": [13, 17],
    }
    # The line range is the section's place in the raw file (front matter counted).
    raw = (root / "local-docs" / "deploy/guide.md").read_text("utf-8").splitlines(True)
    assert "".join(raw[12:17]) == workers["content"]
    # CRLF source: raw files keep the lines, one per \r\n. The file's untitled root
    # section (the label before its first heading) is no part of the heading path.
    settings = docs["setup-gunicorn-settings"]["source"]
    assert settings == {"file": "setup.rst", "title": "Gunicorn Settings",
                        "path": ["Setup", "Gunicorn Settings"], "lines": [8, 11]}
    assert SETUP.split("\r\n")[7] == "Gunicorn Settings"


def test_lines_of_many_sections_of_one_file(tmp_path: Path) -> None:
    """Line numbers counted on from section to section of one file (and back) agree."""
    text = "".join(f"## Topic {i}\n\nalpha text number {i}\nmore\n\n" for i in range(40))
    src = write_tree(tmp_path / "src" / "docs", {"many.md": text})
    build(src, tmp_path / "root", full=True)
    cache = load_native_cache(tmp_path / "root" / "local-docs")
    try:
        docs = select(cache, "alpha text number", 100_000)["documents"]
        assert len(docs) == 40
        lines = text.splitlines(True)
        for d in docs:
            first, last = d["source"]["lines"]
            assert "".join(lines[first - 1:last]) == d["content"]
            assert lines[first - 1].startswith("## Topic ")
    finally:
        cache.close()


def test_cli_context_cli_and_mcp_give_the_same_bytes(root: Path) -> None:
    query, budget = "gunicorn workers behind the proxy", 700
    doc_index = run_cli("resolve", "local-docs", query, "--root", str(root),
                        "--budget", str(budget))
    context = run_cli("resolve", "--cache", str(root / "local-docs"), "--query", query,
                      "--budget", str(budget), module="doc_index.server.context_cli")
    assert doc_index.returncode == context.returncode == 0, (doc_index.stderr, context.stderr)
    assert doc_index.stdout == context.stdout
    assert b'"source":{"file":"deploy/guide.md"' in doc_index.stdout
    with RawServer(server_argv(root)) as srv:
        assert "result" in srv.request(initialize())
        response = srv.request(tool_call(1, "context.resolve",
                                         {"cache": "local-docs", "query": query,
                                          "budget": budget}))
    assert result_text(response).encode("utf-8") == doc_index.stdout


def _damage(cache_dir: Path, change: dict) -> None:
    path = cache_dir / "manifest.json"
    manifest = json.loads(path.read_bytes())
    for section in manifest["sections"]:
        if section["id"] in change:
            section.update(change[section["id"]])
    path.write_text(json.dumps(manifest, separators=(",", ":")))


@pytest.mark.parametrize("change", [
    {"guide-servers": {"parent": "guide-gunicorn-workers"}},  # a loop
    {"guide-gunicorn-workers": {"parent": "no-such-section"}},
    {"guide-gunicorn-workers": {"title": 7}},
])
def test_broken_headings_are_cache_invalid(tmp_path: Path, change: dict) -> None:
    src = write_tree(tmp_path / "src" / "docs", {"deploy/guide.md": GUIDE})
    build(src, tmp_path / "root", full=True)
    _damage(tmp_path / "root" / "local-docs", change)
    with pytest.raises(ContextError) as err:
        tools.resolve(tmp_path / "root" / "local-docs", "gunicorn workers", 4000)
    assert err.value.code == "cache_invalid"
