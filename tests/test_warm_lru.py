"""The warm server's memory bound: loaded caches are evicted least recently used first once
their estimated sizes pass the budget; an evicted cache is loaded again with identical
answers, a rebuilt one is noticed, and the budget comes from DOC_INDEX_SERVE_CACHE_MB.
Everything here counts loads, evictions and bytes; nothing is timed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT, build, run_cli, write_tree
from mcp_support import RawServer, context_cli, initialize, result_text, server_argv, tool_call

from doc_index.foundation.errors import UsageError
from doc_index.search import operations as tools
from doc_index.search.warm_caches import (
    DEFAULT_MEMORY_MB,
    MEMORY_ENV,
    WarmCaches,
    memory_budget,
    release_freed_memory,
)
from doc_index.server import spec_texts

QUERIES = [("install the plugin", 2000), ("configure parser hooks", 500), ("release", 8000)]
NAMES = ("alpha", "beta", "gamma")


def pages(name: str, version: str = "1") -> dict[str, str]:
    """A small doc tree whose sections differ per cache name and version."""
    return {
        f"guide/page-{i}.md": (
            f"# {name.title()} page {i}\n\nInstall the {name} plugin, version {version}.\n\n"
            f"## Configure\n\nConfigure the parser hooks of {name} page {i}.\n\n"
            f"## Release {version}\n\nRelease notes for {name} {version}, page {i}.\n"
        )
        for i in range(12)
    }


@pytest.fixture
def caches(tmp_path: Path) -> tuple[Path, list[Path]]:
    root = tmp_path / "root"
    dirs = []
    for name in NAMES:
        build(write_tree(tmp_path / "src" / name, pages(name)), root, name=name)
        dirs.append(root / f"local-{name}")
    return root, dirs


def sizes(dirs: list[Path]) -> list[int]:
    out = []
    for d in dirs:
        cache = tools.load_for_resolve(d)
        out.append(tools.memory_bytes(cache))
        cache.close()
    return out


def answers(warm: WarmCaches | None, cache_dir: Path) -> list[str]:
    return [spec_texts.resolve(cache_dir, q, b, warm=warm) for q, b in QUERIES]


def test_budget_evicts_least_recently_used_and_reload_gives_the_same_bytes(
        caches: tuple[Path, list[Path]]) -> None:
    _, dirs = caches
    a, b, c = dirs
    size_a, size_b, size_c = sizes(dirs)
    assert min(size_a, size_b, size_c) > 0
    budget = size_a + size_b + min(size_a, size_b, size_c) // 2  # two fit, never three
    warm = WarmCaches(max_bytes=budget)
    cold = {d: answers(None, d) for d in dirs}
    assert answers(warm, a) == cold[a] and answers(warm, b) == cold[b]
    assert (warm.loads, warm.evictions, warm.bytes) == (2, 0, size_a + size_b)
    assert answers(warm, a) == cold[a]  # a is now the most recently used
    assert warm.loads == 2
    assert answers(warm, c) == cold[c]  # over the budget: b, the least recently used, goes
    assert (warm.loads, warm.evictions, warm.bytes) == (3, 1, size_a + size_c)
    assert answers(warm, a) == cold[a] and warm.loads == 3  # a stayed
    assert answers(warm, b) == cold[b]  # loaded again: the same bytes
    assert (warm.loads, warm.evictions, warm.bytes) == (4, 2, size_a + size_b)


def test_bound_holds_in_turn_and_a_cache_over_the_budget_is_still_kept(
        caches: tuple[Path, list[Path]]) -> None:
    _, dirs = caches
    largest = max(sizes(dirs))
    cold = {d: answers(None, d) for d in dirs}
    for budget in (1, largest, 2 * largest):
        warm = WarmCaches(max_bytes=budget)
        for _ in range(2):
            for d in dirs:
                assert answers(warm, d) == cold[d]
                assert warm.bytes <= max(budget, largest)
                assert len(warm) >= 1  # the cache just used is always kept
        # Each cache's first call loads it; a cache kept warm answers its other calls.
        assert warm.loads + warm.hits == 2 * len(dirs) * len(QUERIES)
        assert warm.loads >= len(dirs)
    assert WarmCaches(max_bytes=1).bytes == 0


def test_memory_bound_evicts_only_what_counts_towards_it(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text(name)
    warm = WarmCaches(max_bytes=10)
    warm.get(tmp_path / "a", "tree", lambda p: None)  # no size: never evicted for memory
    warm.get(tmp_path / "a", "resolve", lambda p: "A", size=lambda v: 8)
    warm.get(tmp_path / "b", "resolve", lambda p: "B", size=lambda v: 8)
    assert (len(warm), warm.evictions, warm.bytes) == (2, 1, 8)
    warm.get(tmp_path / "a", "tree", lambda p: None)
    assert warm.loads == 3  # the tree entry was kept
    warm.discard(tmp_path / "b", "resolve")
    assert warm.bytes == 0


def test_rebuilt_cache_is_noticed_before_and_after_eviction(
        tmp_path: Path, caches: tuple[Path, list[Path]]) -> None:
    root, dirs = caches
    a, b, _ = dirs
    warm = WarmCaches(max_bytes=max(sizes(dirs)))  # one cache at a time
    before = answers(warm, a)
    for version in ("2", "3"):
        build(write_tree(tmp_path / "src2" / "alpha", pages("alpha", version)), root,
              name="alpha")
        now = answers(warm, a)  # still warm: the stamp changed, so it is loaded again
        assert now == answers(None, a) and now != before
        assert f"alpha {version}" in now[2]
        answers(warm, b)  # evicts a
        assert answers(warm, a) == now
        before = now


def test_memory_budget_from_the_environment() -> None:
    assert memory_budget({}) == DEFAULT_MEMORY_MB << 20
    assert memory_budget({MEMORY_ENV: ""}) == DEFAULT_MEMORY_MB << 20
    assert memory_budget({MEMORY_ENV: "64"}) == 64 << 20
    for bad in ("0", "-1", "1.5", "abc", " 64", "64 ", "1e3", "٣", str(1 << 31)):
        with pytest.raises(UsageError, match=MEMORY_ENV):
            memory_budget({MEMORY_ENV: bad})


def test_server_with_a_tiny_budget_answers_as_the_cli(
        caches: tuple[Path, list[Path]], monkeypatch: pytest.MonkeyPatch) -> None:
    root, dirs = caches
    monkeypatch.setenv(MEMORY_ENV, "1")  # under one cache's estimate: every switch reloads
    with RawServer(server_argv(root)) as srv:
        srv.request(initialize())
        n = 0
        for _ in range(2):
            for d in dirs:
                for query, budget in QUERIES:
                    n += 1
                    response = srv.request(tool_call(n, "context.resolve", {
                        "cache": d.name, "query": query, "budget": budget}))
                    expected = context_cli("resolve", "--cache", str(d), "--query", query,
                                           "--budget", str(budget)).stdout.decode("utf-8")
                    assert result_text(response) == expected
        srv.close()


def test_serve_refuses_a_bad_budget(tmp_path: Path) -> None:
    done = run_cli("serve", "--root", str(tmp_path), env={MEMORY_ENV: "lots"}, input=b"")
    assert done.returncode == 1
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: invalid {MEMORY_ENV}='lots'")


def test_freed_memory_is_released_where_the_c_library_can(tmp_path: Path) -> None:
    """After a load and after an eviction (a no-op where there is no malloc_trim)."""
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "manifest.json").write_text("x")
    release_freed_memory()
    release_freed_memory()
    warm = WarmCaches(max_bytes=1)
    for kind in ("a", "b"):
        assert warm.get(tmp_path / "c", kind, lambda p: [0] * 100_000, size=lambda v: 8) == [
            0] * 100_000
    assert warm.evictions == 1


# --------------------------------------------------------------------------- memory release
# Releasing freed memory is skipped where Python has no ctypes; the memory budget's text
# is bounded.


def test_memory_release_is_skipped_where_python_has_no_ctypes() -> None:
    # sys.modules["ctypes"] = None makes ``import ctypes`` raise ImportError, as on a
    # Python built without it; every cache load calls release_freed_memory.
    code = ("import sys; sys.modules['ctypes'] = None\n"
            "from doc_index.search.warm_caches import release_freed_memory\n"
            "release_freed_memory(); release_freed_memory(); print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          timeout=SAFETY_TIMEOUT)
    assert done.returncode == 0 and done.stdout == b"ok\n", done.stderr


def test_a_memory_budget_of_thousands_of_digits_is_a_usage_error(tmp_path: Path) -> None:
    done = run_cli("serve", "--root", str(tmp_path), env={MEMORY_ENV: "9" * 5000},
                   input=b"")
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.decode().splitlines()
    assert line.startswith(f"error: invalid {MEMORY_ENV}="), line
