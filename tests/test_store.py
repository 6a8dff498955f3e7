"""IndexStore: deterministic bytes, incremental == full, skipped files, versions, delete."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import (
    SAMPLE_REPOS,
    build,
    cache_files,
    caches_only,
    manifest,
    store_leftovers,
    without_indexed_at,
    write_tree,
)
from freezegun import freeze_time

from doc_index.store.index_store import CURRENT_INDEX_VERSION, IndexStore
from doc_index.store.manifest import SECTION_FIELDS

MANIFEST_ORDER = [
    "cache_version", "document_count", "index_version", "repo", "owner", "name", "indexed_at",
    "commit_hash", "file_hashes", "doc_files", "source", "expansion", "sections",
]


def test_manifest_fields_in_order(docs: Path, root: Path) -> None:
    write_tree(docs, {"a.md": "# A\n\ntext\n"})
    with freeze_time("2025-01-15 10:30:00"):
        build(docs, root)
    man = manifest(root / "local-docs-src")
    assert list(man) == MANIFEST_ORDER
    assert list(man["sections"][0]) == list(SECTION_FIELDS)
    assert list(man["source"]) == ["kind", "location", "ref", "commit"]
    assert man["indexed_at"] == "2025-01-15T10:30:00.000000"
    assert man["index_version"] == CURRENT_INDEX_VERSION
    assert man["repo"] == "local/docs-src" and man["commit_hash"] == ""
    assert man["cache_version"].startswith("sha256:") and man["document_count"] == 1
    # Between builds the root holds the caches and the store's area with what it keeps
    # (the lock and staging live while a build runs).
    assert caches_only(root) == ["local-docs-src"] and store_leftovers(root) == []


def test_same_input_gives_same_bytes(tmp_path: Path) -> None:
    src = SAMPLE_REPOS / "mdkit-docs"
    with freeze_time("2026-01-01 00:00:00"):
        build(src, tmp_path / "r1")
        build(src, tmp_path / "r2", full=True)
    one = cache_files(tmp_path / "r1" / "local-mdkit-docs")
    two = cache_files(tmp_path / "r2" / "local-mdkit-docs")
    assert one == two
    build(src, tmp_path / "r3")  # another time: only indexed_at differs
    three = cache_files(tmp_path / "r3" / "local-mdkit-docs")
    assert without_indexed_at(three) == without_indexed_at(one)


def test_incremental_equals_full(tmp_path: Path) -> None:
    docs = tmp_path / "repo"
    shutil.copytree(SAMPLE_REPOS / "rstkit-docs", docs)
    shutil.copytree(SAMPLE_REPOS / "mdkit-docs" / "docs", docs / "md")
    root = tmp_path / "inc"
    first = build(docs, root, name="x")
    assert first.written and first.full
    # Add, edit, delete, and add a file whose headings collide with existing ones.
    (docs / "docs" / "retries.rst").write_text(
        (docs / "docs" / "retries.rst").read_text() + "\nAppendix\n--------\n\nNew text.\n")
    (docs / "md" / "faq.md").unlink()
    write_tree(docs, {"aaa/configuration.md": "# Configuration\n\nfirst in path order\n",
                      "md/new.md": "# Example\n\nnew\n"})
    second = build(docs, root, name="x")
    assert sorted(second.parsed) == ["aaa/configuration.md", "docs/retries.rst", "md/new.md"]
    assert second.removed == ["md/faq.md"] and not second.full
    fresh = tmp_path / "full"
    build(docs, fresh, name="x", full=True)
    assert without_indexed_at(cache_files(root / "local-x")) == without_indexed_at(
        cache_files(fresh / "local-x"))


def test_no_change_rebuild_writes_nothing(docs: Path, root: Path) -> None:
    write_tree(docs, {"a.md": "# A\n\ntext\n"})
    build(docs, root)
    before = cache_files(root / "local-docs-src")
    report = build(docs, root)
    assert not report.written and report.unchanged == ["a.md"] and report.parsed == []
    assert cache_files(root / "local-docs-src") == before


def test_bad_files_are_skipped_and_reported(docs: Path, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nnever indexed\n")
    write_tree(docs, {
        "good.md": "# Good\n\ntext\n",
        "binary.md": b"# Bin\x00\x01\x02",
        "latin1.md": "# Caf\xe9\n".encode("latin-1"),
        ".git/config.md": "# not docs\n",
        "node_modules/pkg/README.md": "# vendored\n",
        "_build/html/index.rst": "Built\n=====\n",
        "notes.txt": "not a doc suffix",
    })
    os.symlink(outside, docs / "escape.md")
    os.symlink(docs / "good.md", docs / "alias.md")
    os.symlink(tmp_path, docs / "loop-dir")
    report = build(docs, root)
    skipped = dict(report.skipped)
    assert skipped["binary.md"].startswith("binary")
    assert skipped["latin1.md"].startswith("not UTF-8")
    assert skipped["escape.md"] == "symlink leaves the source tree"
    assert skipped["loop-dir"] == "symlinked directory not followed"
    man = manifest(root / "local-docs-src")
    assert man["doc_files"] == ["alias.md", "good.md"]
    assert "Secret" not in (root / "local-docs-src" / "manifest.json").read_text()


def test_size_cap(docs: Path, root: Path) -> None:
    from doc_index.sources.walk import scan_directory

    write_tree(docs, {"big.md": "# Big\n\n" + "x" * 5000, "small.md": "# Small\n"})
    scan = scan_directory(docs, max_bytes=1000)
    assert [f.path for f in scan.files] == ["small.md"]
    assert scan.skipped[0][0] == "big.md" and "size cap" in scan.skipped[0][1]


def test_stale_index_version_forces_full_rebuild(docs: Path, root: Path) -> None:
    write_tree(docs, {"a.md": "# A\n\ntext\n", "b.md": "# B\n\ntext\n"})
    build(docs, root)
    path = root / "local-docs-src" / "manifest.json"
    man = json.loads(path.read_bytes())
    man["index_version"] = 0
    path.write_text(json.dumps(man))
    assert IndexStore(root).load_index("local-docs-src") is None
    report = build(docs, root)
    assert report.full and sorted(report.parsed) == ["a.md", "b.md"]
    assert manifest(root / "local-docs-src")["index_version"] == CURRENT_INDEX_VERSION


def test_missing_raw_file_forces_full_rebuild(docs: Path, root: Path) -> None:
    write_tree(docs, {"a.md": "# A\n\ntext\n", "b.md": "# B\n\ntext\n"})
    build(docs, root)
    (root / "local-docs-src" / "a.md").unlink()
    report = build(docs, root)
    assert report.written and report.full
    assert (root / "local-docs-src" / "a.md").is_file()


def test_delete(docs: Path, root: Path) -> None:
    write_tree(docs, {"a.md": "# A\n"})
    build(docs, root)
    store = IndexStore(root)
    assert store.list_keys() == ["local-docs-src"]
    assert store.delete_index("local-docs-src") is True
    assert not (root / "local-docs-src").exists()
    assert caches_only(root) == [] and store_leftovers(root) == []  # no lock, no staging
    assert store.delete_index("local-docs-src") is False


@pytest.mark.parametrize("repo", ["mdkit-docs", "rstkit-docs"])
def test_sample_repos_build_cleanly(repo: str, root: Path) -> None:
    report = build(SAMPLE_REPOS / repo, root)
    assert report.written and report.sections > 10
    man = manifest(root / f"local-{repo}")
    assert len({s["id"] for s in man["sections"]}) == len(man["sections"])
    for s in man["sections"]:
        assert s["summary"] and len(s["summary"]) <= 200
        assert len(s["keywords"]) <= 20
        raw = (root / f"local-{repo}" / s["file"]).read_bytes()
        assert len(raw) >= s["byte_offset"] + s["byte_length"]


def test_git_work_tree_skips_ignored_files_and_records_head(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import subprocess

    work = write_tree(tmp_path / "work", {
        "docs/a.md": "# A\n\ntracked\n", "docs/new.md": "# New\n\nnot yet added\n",
        "docs/skip.md": "# Skip\n\nignored\n", ".gitignore": "docs/skip.md\n",
    })

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(work), *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    git("init", "-q")
    git("add", "docs/a.md", ".gitignore")
    git("commit", "-qm", "first")
    head = git("rev-parse", "HEAD")
    # A hook exports GIT_DIR for its own repository: the walk must ask about this one.
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere.git"))
    report = build(work, tmp_path / "root")
    man = manifest(tmp_path / "root" / "local-work")
    assert man["doc_files"] == ["docs/a.md", "docs/new.md"]
    assert man["commit_hash"] == head and len(head) == 40
    assert report.added == ["docs/a.md", "docs/new.md"]
