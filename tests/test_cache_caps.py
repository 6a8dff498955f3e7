"""Caps on what a reader or a build loads from a cache: a
search.idx over its cap, a v0 manifest that lists documents many times, a search.idx whose
JSON header nests too deep, and secrets in a source URL."""

from __future__ import annotations

import hashlib
import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT, run_cli, v0_cache_from, write_tree
from mcp_support import RawServer, error_text, initialize, server_argv, tool_call

from doc_index.foundation.errors import ContextError
from doc_index.server import spec_texts as tools
from doc_index.store import search_index, v0_cache
from doc_index.store.manifest import MAX_SEARCH_INDEX_BYTES

# A process may map this much: several times what a healthy run needs, far below what
# reading a 4 GB search.idx takes.
ADDRESS_SPACE = 2 << 30
BOMB_BYTES = 4 << 30  # sparse: no disk


def _run_capped(*args: str) -> subprocess.CompletedProcess[bytes]:
    """``python -m doc_index.cli args`` with its address space capped at ADDRESS_SPACE."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    return subprocess.run([sys.executable, "-m", "doc_index.cli", *args], capture_output=True,
                          preexec_fn=cap, timeout=SAFETY_TIMEOUT)


# More than a heading and a few words: a one-line stub is never in an answer
# (search.packing).
DOC = "# title\n\nsome text under the title, with several words of prose\n"


def _bombed_cache(tmp_path: Path) -> tuple[Path, Path]:
    src = write_tree(tmp_path / "s", {"a.md": DOC})
    root = tmp_path / "root"
    assert _run_capped("build", str(src), "--root", str(root), "--name", "local-s").returncode == 0
    with open(root / "local-s" / "search.idx", "r+b") as fh:
        fh.truncate(BOMB_BYTES)
    return src, root


def test_a_search_index_over_its_cap_is_invalid_without_being_read(tmp_path: Path) -> None:
    _, root = _bombed_cache(tmp_path)
    done = _run_capped("resolve", "local-s", "title", "--root", str(root))
    assert (done.returncode, done.stderr) == (5, b"error: Cache exists but is invalid\n")


def test_a_build_over_a_search_index_past_its_cap_makes_a_full_build(tmp_path: Path) -> None:
    src, root = _bombed_cache(tmp_path)
    done = _run_capped("build", str(src), "--root", str(root), "--name", "local-s")
    assert done.returncode == 0, done.stderr
    assert b"built (full)" in done.stderr
    assert (root / "local-s" / "search.idx").stat().st_size < 10_000
    done = _run_capped("resolve", "local-s", "title", "--root", str(root))
    assert done.returncode == 0 and b"some text" in done.stdout


def test_a_build_whose_search_index_would_exceed_its_cap_fails_and_keeps_the_live_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    from doc_index.cli import command as cli

    src = write_tree(tmp_path / "src", {"a.md": DOC})
    root = tmp_path / "root"
    argv = ["build", str(src), "--root", str(root), "--name", "local-p"]
    assert cli.main(argv) == 0
    before = (root / "local-p" / "search.idx").read_bytes()
    monkeypatch.setattr(search_index, "MAX_SEARCH_INDEX_BYTES", len(before) + 100)
    write_tree(src, {"b.md": "# other\n\n" + " ".join(f"w{i}" for i in range(200)) + "\n"})
    capsys.readouterr()
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the cache would have a search index of ")
    assert err.count("\n") == 1
    assert (root / "local-p" / "search.idx").read_bytes() == before
    assert MAX_SEARCH_INDEX_BYTES > 1 << 20


# -- F4b: a v0 cache reads each document once, and at most MAX_V0_DOCUMENT_BYTES in all -----

def _context_resolve(cache: Path) -> subprocess.CompletedProcess[bytes]:
    return run_cli("resolve", "--cache", str(cache), "--query", "lorem", "--budget", "100",
                   module="doc_index.server.context_cli")


@pytest.mark.parametrize("spelling", ["same", "dotted"])
def test_a_v0_manifest_listing_a_document_twice_is_invalid(tmp_path: Path, spelling: str) -> None:
    cache = v0_cache_from(tmp_path, {"big.md": "# big\n" + "lorem ipsum dolor " * 1000})
    assert _context_resolve(cache).returncode == 0
    man_path = cache / "manifest.json"
    man = json.loads(man_path.read_bytes())
    again = dict(man["documents"][0])
    if spelling == "dotted":
        again["file"] = "./" + again["file"]
    man["documents"] = [man["documents"][0], again, dict(again)]
    man["document_count"] = 3
    man_path.write_text(json.dumps(man, indent=2))
    done = _context_resolve(cache)
    assert (done.returncode, done.stdout) == (5, b"")
    assert done.stderr.decode().count("\n") == 1 and "invalid" in done.stderr.decode()


def test_v0_documents_over_their_total_cap_are_invalid_without_reading_past_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = v0_cache_from(tmp_path, {f"d{i}.md": f"lorem {i} " * 100 for i in range(3)})
    sizes = sorted(p.stat().st_size for p in (cache / "documents").iterdir())
    monkeypatch.setattr(v0_cache, "MAX_V0_DOCUMENT_BYTES", sum(sizes))
    assert json.loads(tools.resolve(cache, "lorem", 2000))["documents"]
    monkeypatch.setattr(v0_cache, "MAX_V0_DOCUMENT_BYTES", sum(sizes) - 1)
    read: list[int] = []
    real_read = v0_cache.read_regular

    def counting_read(*args: object, **kwargs: object) -> bytes:
        data = real_read(*args, **kwargs)  # type: ignore[arg-type]
        read.append(len(data))
        return data

    monkeypatch.setattr(v0_cache, "read_regular", counting_read)
    with pytest.raises(ContextError) as err:
        tools.resolve(cache, "lorem", 2000)
    assert err.value.code == "cache_invalid"
    assert sum(read) < sum(sizes)


# -- F4c: a search.idx whose JSON nests too deep is damaged, not a crash ---------------------

def _nested_sidecar_cache(tmp_path: Path) -> tuple[Path, Path]:
    """A built cache whose search.idx is a deeply nested JSON header with a correct trailer."""
    src = write_tree(tmp_path / "s", {"a.md": DOC})
    root = tmp_path / "root"
    assert run_cli("build", str(src), "--root", str(root), "--name", "local-s").returncode == 0
    body = search_index.MAGIC + b"[" * 100_000 + b"]" * 100_000 + b"\n"
    (root / "local-s" / "search.idx").write_bytes(body + hashlib.sha256(body).digest())
    return src, root


def test_a_deeply_nested_search_index_is_cache_invalid_for_resolve_and_mcp(
    tmp_path: Path,
) -> None:
    _, root = _nested_sidecar_cache(tmp_path)
    done = run_cli("resolve", "local-s", "title", "--root", str(root))
    assert (done.returncode, done.stderr) == (5, b"error: Cache exists but is invalid\n")
    with RawServer(server_argv(root)) as srv:
        srv.request(initialize())
        response = srv.request(tool_call(7, "context.resolve",
                                         {"cache": "local-s", "query": "title", "budget": 100}))
    assert response["result"]["isError"] is True
    assert response["result"]["content"][0]["text"] == error_text("cache_invalid")


def test_a_build_over_a_deeply_nested_search_index_makes_a_full_build(tmp_path: Path) -> None:
    src, root = _nested_sidecar_cache(tmp_path)
    done = run_cli("build", str(src), "--root", str(root), "--name", "local-s")
    assert done.returncode == 0, done.stderr
    assert b"built (full)" in done.stderr
    done = run_cli("resolve", "local-s", "title", "--root", str(root))
    assert done.returncode == 0 and b"some text" in done.stdout
