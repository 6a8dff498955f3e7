"""v0 caches: strict loading for resolve, and ``context build`` (bytes, walk, exit codes)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from compat_support import (
    CACHES,
    DOCUMENTS,
    EMPTY_CACHE_VERSION,
    assert_error,
    copy_cache,
    run_context,
)

from doc_index.foundation.errors import ContextError
from doc_index.search import operations as search_tools
from doc_index.server import spec_texts as tools
from doc_index.store.v0_build import build_v0_cache, compute_cache_version

CREATED_AT = re.compile(rb'"created_at": "[^"]*"')
RFC3339_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def cache_files(cache: Path) -> dict[str, bytes]:
    return {
        path.relative_to(cache).as_posix(): path.read_bytes()
        for path in sorted(cache.rglob("*"))
        if path.is_file()
    }


def without_created_at(files: dict[str, bytes]) -> dict[str, bytes]:
    return {name: CREATED_AT.sub(b'"created_at": "X"', data) for name, data in files.items()}


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def error_code(cache: Path, query: str = "hello", budget: object = 100) -> str:
    with pytest.raises(ContextError) as caught:
        tools.resolve(cache, query, budget)
    return caught.value.code


# --- loading for resolve -----------------------------------------------------------------


def edit_manifest(cache: Path, change: Callable[[dict[str, Any]], object]) -> None:
    path = cache / "manifest.json"
    manifest = json.loads(path.read_bytes())
    change(manifest)
    path.write_text(json.dumps(manifest, indent=2))


@pytest.mark.parametrize(
    "field", ["cache_version", "build_config", "created_at", "document_count", "documents"]
)
def test_every_manifest_field_is_required(tmp_path: Path, field: str) -> None:
    cache = copy_cache("minimal", tmp_path / "c")
    edit_manifest(cache, lambda m: m.pop(field))
    assert error_code(cache) == "cache_invalid"


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.update(document_count="2"),
        lambda m: m.update(document_count=-1),
        lambda m: m.update(document_count=True),
        lambda m: m.update(created_at="yesterday"),
        lambda m: m.update(created_at="2026-02-30T00:00:00Z"),
        lambda m: m.update(build_config={"version": "1"}),
        lambda m: m.update(cache_version=None),
        lambda m: m["documents"][0].pop("file"),
        lambda m: m["documents"][0].update(id=7),
        lambda m: m["documents"].append("x"),
        lambda m: m["documents"][0].update(file="../minimal/documents/b4dabda568d0.json"),
        lambda m: m["documents"][0].update(file="/etc/passwd"),
        lambda m: m["documents"][0].update(file="documents/missing.json"),
        lambda m: m["documents"][0].update(file="documents"),
        lambda m: m["documents"][0].update(version="sha256:" + "0" * 64),
        lambda m: m["documents"][0].update(id="hello.md"),
    ],
)
def test_manifest_problems_are_cache_invalid(tmp_path: Path, change: Callable[..., Any]) -> None:
    cache = copy_cache("minimal", tmp_path / "c")
    edit_manifest(cache, change)
    assert error_code(cache) == "cache_invalid"


def test_unknown_fields_and_build_config_version_are_ignored(tmp_path: Path) -> None:
    cache = copy_cache("minimal", tmp_path / "c")
    edit_manifest(
        cache, lambda m: m.update(extra=1, build_config={"version": "9", "hash_algorithm": "x"})
    )
    assert json.loads(tools.resolve(cache, "hello", 100))["selection"]["documents_considered"] == 2


@pytest.mark.parametrize(
    "data",
    [
        b"not valid json",
        b"[]",
        b'{"cache_version": "x"}',
        b'\xef\xbb\xbf{"build_config": {}}',
        b'{"build_config": NaN}',
        b'{"build_config": {}, "bad": "\\ud800"}',
        b"[" * 100_000,
        b'{"build_config": "\xff"}',
    ],
)
def test_unusable_manifest_is_cache_invalid(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "manifest.json").write_bytes(data)
    assert error_code(tmp_path) == "cache_invalid"


DOC = "documents/64ec88ca00b2.json"


@pytest.mark.parametrize(
    "data",
    [
        b"{",
        b"[]",
        b'{"id":"hello.md","version":"v","source":"s","content":"Hello world!","metadata":{}}',
        b'{"id":"HELLO.md","version":"v","source":"s","content":"Hello world","metadata":{}}',
        b'{"id":"hello.md","version":"v","source":"s","content":"Hello world"}',
        b'{"id":"hello.md","version":"v","content":"Hello world","metadata":{}}',
        b'{"id":"hello.md","version":"v","source":"s","content":"Hello world",'
        b'"metadata":{"k":1.5}}',
        b'{"id":"hello.md","version":1,"source":"s","content":"Hello world","metadata":{}}',
        b'{"id":"hello.md","version":"v","source":"s","content":"Hello world","metadata":[]}',
    ],
)
def test_document_problems_are_cache_invalid(tmp_path: Path, data: bytes) -> None:
    cache = copy_cache("minimal", tmp_path / "c")
    (cache / DOC).write_bytes(data)
    assert error_code(cache) == "cache_invalid"


def test_missing_document_file_exits_5(tmp_path: Path) -> None:
    cache = copy_cache("minimal", tmp_path / "c")
    (cache / DOC).unlink()
    proc = run_context("resolve", "--cache", cache, "--query", "x", "--budget", "5")
    assert_error(proc, 5, "Cache exists but is invalid")


def test_output_version_is_the_document_files(tmp_path: Path) -> None:
    """As the reference: id and version come from the document file (checked: id equal,
    content hashing to the manifest's version), metadata with strings and ints is fine."""
    cache = copy_cache("minimal", tmp_path / "c")
    doc = json.loads((cache / DOC).read_bytes())
    doc.update(version="sha256:" + "a" * 64, metadata={"k": "v", "n": 3})
    (cache / DOC).write_text(json.dumps(doc))
    out = json.loads(tools.resolve(cache, "hello", 100))
    assert out["documents"][0]["version"] == "sha256:" + "a" * 64


@pytest.mark.parametrize("budget", [-1, 10_000_001, True, 5.0, "5", None])
def test_invalid_budget_comes_before_the_cache(tmp_path: Path, budget: object) -> None:
    assert error_code(tmp_path / "missing", budget=budget) == "invalid_budget"


@pytest.mark.parametrize("budget", [0, 10_000_000])
def test_budget_bounds_are_valid(budget: int) -> None:
    assert (
        json.loads(tools.resolve(CACHES / "minimal", "x", budget))["selection"]["budget"] == budget
    )


def test_cache_that_is_a_file_is_missing(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"{}")
    assert error_code(tmp_path / "file") == "cache_missing"


def test_manifest_that_is_a_directory_is_invalid(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").mkdir()
    assert error_code(tmp_path) == "cache_invalid"


def test_manifest_of_neither_kind_is_invalid(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_bytes(b'{"cache_version": "x", "document_count": 0}')
    assert error_code(tmp_path) == "cache_invalid"


def test_unexpected_exception_is_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object) -> dict[str, Any]:
        raise RuntimeError("bug")

    monkeypatch.setattr(search_tools, "select_v0", boom)
    assert error_code(CACHES / "minimal") == "internal_error"


def test_os_error_is_io_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable(*args: object) -> Any:
        raise PermissionError(13, "denied")

    monkeypatch.setattr(search_tools, "load_v0_cache", unreadable)
    assert error_code(CACHES / "minimal") == "io_error"


# --- build: bytes ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["minimal", "realistic", "tie_break"])
def test_build_reproduces_the_fixture_cache(tmp_path: Path, name: str) -> None:
    proc = run_context("build", "--sources", DOCUMENTS / name, "--cache", tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    expected = cache_files(CACHES / name)
    manifest = json.loads(expected["manifest.json"])
    assert (
        proc.stderr
        == (
            f"Built cache: {manifest['document_count']} documents, "
            f"version {manifest['cache_version']}\n"
        ).encode()
    )
    built = cache_files(tmp_path / "c")
    assert without_created_at(built) == without_created_at(expected)
    assert RFC3339_UTC.fullmatch(json.loads(built["manifest.json"])["created_at"])


def test_build_twice_gives_identical_caches(tmp_path: Path) -> None:
    for name in ("a", "b"):
        proc = run_context(
            "build", "--sources", DOCUMENTS / "realistic", "--cache", tmp_path / name
        )
        assert proc.returncode == 0
    first, second = cache_files(tmp_path / "a"), cache_files(tmp_path / "b")
    assert without_created_at(first) == without_created_at(second)
    manifests = [json.loads(files["manifest.json"]) for files in (first, second)]
    for key in ("cache_version", "build_config", "document_count", "documents"):
        assert manifests[0][key] == manifests[1][key]


def test_build_edge_case_documents(tmp_path: Path) -> None:
    build_v0_cache(DOCUMENTS / "edge_cases", tmp_path / "c", force=False)
    out = json.loads(tools.resolve(tmp_path / "c", "deployment", 10_000_000))
    by_id = {doc["id"]: doc for doc in out["documents"]}
    assert sorted(by_id) == ["empty.md", "large.md", "repeated_terms.md", "unicode.md"]
    for doc in out["documents"]:
        raw = (DOCUMENTS / "edge_cases" / doc["id"]).read_bytes()
        assert doc["content"].encode("utf-8") == raw
        assert doc["version"] == "sha256:" + hashlib.sha256(raw).hexdigest()
    assert out["documents"][0]["id"] == "repeated_terms.md"


def test_empty_sources_give_the_empty_cache(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    built = build_v0_cache(tmp_path / "src", tmp_path / "c", force=False)
    assert built == (0, EMPTY_CACHE_VERSION) == (0, compute_cache_version([]))
    files = cache_files(tmp_path / "c")
    assert files["index.json"] == b"{}"
    assert b'"document_count": 0,\n  "documents": []\n}' in files["manifest.json"]
    assert (tmp_path / "c" / "documents").is_dir()


def test_content_is_kept_byte_for_byte(tmp_path: Path) -> None:
    raw = '\ufeff# Título\r\nline\u2028two\t\x01"q"\\\n'.encode()
    write_tree(tmp_path / "src", {"Doc.md": raw})
    build_v0_cache(tmp_path / "src", tmp_path / "c", force=False)
    version = "sha256:" + hashlib.sha256(raw).hexdigest()
    document = (tmp_path / "c" / "documents" / f"{version[7:19]}.json").read_bytes()
    expected = {
        "id": "doc.md",
        "version": version,
        "source": "Doc.md",
        "content": raw.decode(),
        "metadata": {},
    }
    assert document == json.dumps(expected, separators=(",", ":"), ensure_ascii=False).encode()
    assert b"\\u0001" in document and "Título".encode() in document


def test_walk_rules(tmp_path: Path) -> None:
    """Exactly ``*.md`` (case-sensitive, a bare ``.md`` has no extension), hidden paths
    kept, symlinked files followed, symlinked directories not, ids lowercased."""
    src = write_tree(
        tmp_path / "src",
        {
            "Guide/Intro.md": b"intro",
            ".hidden/h.md": b"hidden",
            ".dot.md": b"dot",
            ".md": b"bare",
            "upper.MD": b"upper",
            "notes.markdown": b"markdown",
            "a.md.txt": b"txt",
        },
    )
    outside = write_tree(tmp_path / "outside", {"linked.md": b"linked", "sub/deep.md": b"deep"})
    os.symlink(outside / "linked.md", src / "link.md")
    os.symlink(outside / "sub", src / "linkdir")
    os.symlink(tmp_path / "nowhere.md", src / "dangling.md")
    build_v0_cache(src, tmp_path / "c", force=False)
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_bytes())
    ids = [entry["id"] for entry in manifest["documents"]]
    assert ids == [".dot.md", ".hidden/h.md", "guide/intro.md", "link.md"]
    sources = [
        json.loads((tmp_path / "c" / entry["file"]).read_bytes())["source"]
        for entry in manifest["documents"]
    ]
    assert sources == [".dot.md", ".hidden/h.md", "Guide/Intro.md", "link.md"]


def test_force_replaces_an_existing_cache(tmp_path: Path) -> None:
    cache = tmp_path / "c"
    build_v0_cache(DOCUMENTS / "minimal", cache, force=False)
    proc = run_context("build", "--sources", DOCUMENTS / "tie_break", "--cache", cache, "--force")
    assert proc.returncode == 0
    assert without_created_at(cache_files(cache)) == without_created_at(
        cache_files(CACHES / "tie_break")
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]


def test_force_never_replaces_a_file(tmp_path: Path) -> None:
    """Only a Context Engine cache is replaced (issue 11 item 14; see test_context_cli)."""
    (tmp_path / "c").write_bytes(b"old")
    with pytest.raises(ContextError) as caught:
        build_v0_cache(DOCUMENTS / "minimal", tmp_path / "c", force=True)
    assert caught.value.code == "io_error"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]
    assert (tmp_path / "c").read_bytes() == b"old"


def test_build_creates_missing_parent_directories(tmp_path: Path) -> None:
    build_v0_cache(DOCUMENTS / "minimal", tmp_path / "a" / "b" / "c", force=False)
    assert (tmp_path / "a" / "b" / "c" / "index.json").is_file()


# --- build: errors -----------------------------------------------------------------------


def run_build(src: Path, cache: Path, *extra: str) -> Any:
    return run_context("build", "--sources", src, "--cache", cache, *extra)


def test_duplicate_id_exits_5(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"A.md": b"one", "a.md": b"two"})
    assert_error(run_build(src, tmp_path / "c"), 5, "Cache exists but is invalid")
    assert not (tmp_path / "c").exists()


def test_equal_content_exits_7(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"a.md": b"same", "b/c.md": b"same"})
    assert_error(run_build(src, tmp_path / "c"), 7, "Internal error")
    assert not (tmp_path / "c").exists()


def test_non_utf8_content_exits_7(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"a.md": b"ok", "b.md": b"caf\xe9"})
    assert_error(run_build(src, tmp_path / "c"), 7, "Internal error")


def test_non_utf8_path_exits_7(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (Path(os.fsdecode(bytes(src) + b"/caf\xe9.md"))).write_bytes(b"ok")
    assert_error(run_build(src, tmp_path / "c"), 7, "Internal error")


def test_existing_cache_without_force_exits_6(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "keep").write_bytes(b"x")
    assert_error(run_build(DOCUMENTS / "minimal", tmp_path / "c"), 6, "I/O error occurred")
    assert cache_files(tmp_path / "c") == {"keep": b"x"}


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_missing_sources_exits_6(tmp_path: Path, kind: str) -> None:
    if kind == "file":
        (tmp_path / "src").write_bytes(b"x")
    assert_error(run_build(tmp_path / "src", tmp_path / "c"), 6, "I/O error occurred")
    assert not (tmp_path / "c").exists()


def test_failed_forced_build_keeps_the_previous_cache(tmp_path: Path) -> None:
    cache = tmp_path / "c"
    build_v0_cache(DOCUMENTS / "minimal", cache, force=False)
    before = cache_files(cache)
    src = write_tree(tmp_path / "src", {"bad.md": b"\xff"})
    assert_error(run_build(src, cache, "--force"), 7, "Internal error")
    assert cache_files(cache) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c", "src"]


def test_force_never_replaces_the_sources(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"a.md": b"keep me"})
    assert_error(run_build(src, src, "--force"), 6, "I/O error occurred")
    assert_error(run_build(src, tmp_path, "--force"), 6, "I/O error occurred")
    assert (src / "a.md").read_bytes() == b"keep me"


@pytest.mark.unprivileged
def test_unreadable_source_directory_is_io_error(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"a.md": b"a", "locked/b.md": b"b"})
    (src / "locked").chmod(0)
    try:
        with pytest.raises(ContextError) as caught:
            build_v0_cache(src, tmp_path / "c", force=False)
        assert caught.value.code == "io_error"
    finally:
        (src / "locked").chmod(0o755)
