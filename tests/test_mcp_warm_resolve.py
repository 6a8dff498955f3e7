"""The server's warm resolve path (tools.resolve with warm=) gives exactly the cold bytes."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from mcp_support import (
    CACHE_NAMES,
    RawServer,
    context_cli,
    error_text,
    fixture_queries,
    initialize,
    make_root,
    result_text,
    server_argv,
    tool_call,
)

from doc_index.foundation.errors import EXIT_CODES, ContextError
from doc_index.search.warm_caches import WarmCaches
from doc_index.server import spec_texts as tools
from doc_index.sources.walk import scan_directory
from doc_index.store.index_store import IndexStore

REPO = Path(__file__).resolve().parents[1]
CODE_OF_EXIT = {exit_code: code for code, exit_code in EXIT_CODES.items()}
SAMPLES = ("mdkit-docs", "rstkit-docs")
NATIVE_QUERIES = [
    ("install", 4000),
    ("configure the parser", 2000),
    ("plugin api hooks", 500),
    ("the", 4000),
    ("deployment security", 0),
    ("", 100),
    ("   ...  ", 100),
    ("x" * 5000, 100),
    ("näive ünïcode 日本語", 4000),
]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The v0 fixture caches plus native caches of the sample repositories."""
    root = make_root(tmp_path_factory.mktemp("warm") / "root")
    store = IndexStore(root)
    for sample in SAMPLES:
        store.update_index(f"local-{sample}", "local", sample,
                           scan_directory(REPO / "sample_repos" / sample))
    return root


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[RawServer]:
    """One initialized server on ``root`` for the end-to-end tests of this module."""
    with RawServer(server_argv(root)) as srv:
        srv.request(initialize())
        yield srv


def native_names() -> list[str]:
    return [f"local-{sample}" for sample in SAMPLES]


def outcome(call: object) -> str:
    try:
        return call()  # type: ignore[operator]
    except ContextError as exc:
        return f"error {exc.code}"


def both(warm: WarmCaches, cache_dir: Path, query: object, budget: object,
         pretty: bool = False) -> tuple[str, str]:
    cold = outcome(lambda: tools.resolve(cache_dir, query, budget, pretty))  # type: ignore[arg-type]
    hot = outcome(lambda: tools.resolve(cache_dir, query, budget, pretty, warm=warm))  # type: ignore[arg-type]
    return cold, hot


def test_v0_fixture_caches(root: Path) -> None:
    warm = WarmCaches()
    for _ in range(2):  # the second round is served from memory
        for cache in CACHE_NAMES:
            for q in fixture_queries().values():
                for pretty in (False, True):
                    cold, hot = both(warm, root / cache, q["query"], q["budget"], pretty)
                    assert cold == hot
    assert warm.hits > 0


def test_native_caches(root: Path) -> None:
    warm = WarmCaches()
    for _ in range(2):
        for cache in native_names():
            for query, budget in NATIVE_QUERIES:
                cold, hot = both(warm, root / cache, query, budget)
                assert cold == hot, (cache, query)
    assert warm.hits > 0 and warm.loads == 2


@pytest.mark.parametrize(
    ("query", "budget"),
    [("x", -1), ("x", True), ("x", "10"), ("x", 10_000_001), (5, 10), (None, 10)],
)
def test_argument_errors(root: Path, query: object, budget: object) -> None:
    cold, hot = both(WarmCaches(), root / "minimal", query, budget)
    assert cold == hot and cold.startswith("error ")


def broken_caches(base: Path) -> dict[str, Path]:
    """Damaged copies of the fixtures, one per way a cache can be wrong."""
    make_root(base)
    out: dict[str, Path] = {}

    def variant(name: str, source: str = "minimal") -> Path:
        path = base / name
        shutil.copytree(base / source, path)
        out[name] = path
        return path

    (variant("no-manifest") / "manifest.json").unlink()
    (variant("manifest-not-json") / "manifest.json").write_text("not valid json")
    manifest_dir = variant("manifest-dir") / "manifest.json"
    manifest_dir.unlink()
    manifest_dir.mkdir()
    (variant("neither-kind") / "manifest.json").write_text('{"cache_version": "x"}')
    (variant("manifest-list") / "manifest.json").write_text("[]")
    doc = next((variant("doc-missing") / "documents").iterdir())
    doc.unlink()
    doc = next((variant("doc-tampered") / "documents").iterdir())
    data = json.loads(doc.read_text())
    data["content"] += " tampered"
    doc.write_text(json.dumps(data))
    traversal = variant("file-traversal")
    manifest = json.loads((traversal / "manifest.json").read_text())
    manifest["documents"][0]["file"] = "../minimal/" + manifest["documents"][0]["file"]
    (traversal / "manifest.json").write_text(json.dumps(manifest))
    absolute = variant("file-absolute")
    manifest = json.loads((absolute / "manifest.json").read_text())
    manifest["documents"][0]["file"] = str(base / "minimal" / manifest["documents"][0]["file"])
    (absolute / "manifest.json").write_text(json.dumps(manifest))
    out["not-a-directory"] = base / "minimal" / "manifest.json"
    out["gone"] = base / "gone"
    return out


def test_broken_caches(tmp_path: Path, root: Path) -> None:
    warm = WarmCaches()
    for name, path in broken_caches(tmp_path / "broken").items():
        for _ in range(2):
            cold, hot = both(warm, path, "deployment", 4000)
            assert cold == hot, name
            assert cold.startswith("error "), name
    for sample in native_names():
        damaged = tmp_path / "native" / sample
        shutil.copytree(root / sample, damaged)
        for entry in damaged.iterdir():
            if entry.is_file() and entry.name != "manifest.json":
                entry.unlink()  # the search index and any other sidecar
        cold, hot = both(warm, damaged, "install", 4000)
        assert cold == hot and cold.startswith("error "), sample


def test_rebuilt_caches_are_reloaded(tmp_path: Path) -> None:
    root = make_root(tmp_path / "root")
    warm = WarmCaches()
    target = root / "c"
    shutil.copytree(root / "minimal", target)
    first = tools.resolve(target, "deployment", 4000, warm=warm)
    for source in ("realistic", "tie_break", "minimal"):
        fresh = root / ".c.new"
        shutil.copytree(root / source, fresh)
        os.rename(target, root / ".c.old")
        os.rename(fresh, target)
        shutil.rmtree(root / ".c.old")
        assert tools.resolve(target, "deployment", 4000, warm=warm) == tools.resolve(
            target, "deployment", 4000
        )
    assert tools.resolve(target, "deployment", 4000, warm=warm) == first
    assert warm.loads == 4


def test_server_on_native_caches_equals_the_cli(server: RawServer, root: Path) -> None:
    """End to end: the warm server's texts on native caches are the CLI's bytes."""
    cases = [(cache, query, budget) for cache in native_names()
             for query, budget in NATIVE_QUERIES]
    with ThreadPoolExecutor(4) as pool:  # the CLI's answers, one process each, side by side
        cli = list(pool.map(lambda case: context_cli(
            "resolve", "--cache", str(root / case[0]), "--query", case[1],
            "--budget", str(case[2])), cases))
        inspected = list(pool.map(lambda cache: context_cli(
            "inspect", "--cache", str(root / cache)).stdout, native_names()))
    for _round in range(2):  # cold, then warm
        for i, ((cache, query, budget), done) in enumerate(zip(cases, cli)):
            response = server.request(tool_call(i, "context.resolve", {
                "cache": cache, "query": query, "budget": budget}))
            if done.returncode == 0:
                assert result_text(response) == done.stdout.decode("utf-8")
            else:
                assert response["result"]["isError"] is True
                assert result_text(response) == error_text(CODE_OF_EXIT[done.returncode])
        for cache, expected in zip(native_names(), inspected):
            inspect = server.request(tool_call(99, "context.inspect_cache", {"cache": cache}))
            assert result_text(inspect) == expected.decode("utf-8")


def test_error_texts_are_canonical() -> None:
    assert error_text("cache_missing") == (
        '{"error":{"code":"cache_missing","message":"Cache does not exist"}}\n'
    )


def test_incremental_rebuild_while_serving(server: RawServer, root: Path, tmp_path: Path) -> None:
    """A store rebuild (hard-linked carry-forward, directory swap) is served at once."""
    source = tmp_path / "docs"
    shutil.copytree(REPO / "sample_repos" / "mdkit-docs", source)
    store = IndexStore(root)
    store.update_index("local-docs", "local", "docs", scan_directory(source))
    arguments = {"cache": "local-docs", "query": "zebra unicorn install", "budget": 4000}
    cli = ["resolve", "--cache", str(root / "local-docs"), "--query", arguments["query"],
           "--budget", "4000"]
    before = result_text(server.request(tool_call(1, "context.resolve", arguments)))
    assert before == context_cli(*cli).stdout.decode("utf-8")
    page = next(p for p in sorted(source.rglob("*.md")))
    page.write_text(page.read_text() + "\n\n## Zebra unicorn\n\nZebra unicorn install notes.\n")
    store.update_index("local-docs", "local", "docs", scan_directory(source))
    after = result_text(server.request(tool_call(2, "context.resolve", arguments)))
    assert after != before and "Zebra unicorn" in after
    assert after == context_cli(*cli).stdout.decode("utf-8")
