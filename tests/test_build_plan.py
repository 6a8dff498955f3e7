"""The build as a plan and a write: the plan decides, the report only tells; a damaged live
generation, found early (its search index) or late (a raw file, as it is copied), falls
back to the one full build; the parse worker has one owner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import build, cache_files, without_indexed_at, write_tree

from doc_index.build import build_from_directory
from doc_index.foundation.cache_names import MANIFEST_NAME, SEARCH_INDEX_NAME
from doc_index.sources.identity import directory_source
from doc_index.sources.walk import scan_directory
from doc_index.store.commit import STAGING_DIR
from doc_index.store.index_store import IndexStore, _Untrusted, plan_build
from doc_index.store.parallel import WarmWorker

TREE = {"a.md": "# A\n\ntext\n", "b.md": "# B\n\nmore\n", "c.md": "# C\n\nsee\n"}


def _report(report: object) -> dict[str, object]:
    fields = dict(vars(report))
    del fields["seconds"]
    return fields


def test_the_plan_holds_the_decisions(tmp_path: Path) -> None:
    docs = write_tree(tmp_path / "src", TREE)
    store = IndexStore(tmp_path / "root")
    build(docs, store.root, name="x")
    write_tree(docs, {"b.md": "# B\n\nchanged\n", "d.md": "# D\n"})
    (docs / "c.md").unlink()
    scan = scan_directory(docs)
    plan = plan_build(scan, [], "local", "x", store._read_old_head("local-x"))
    assert (plan.added, plan.changed, plan.removed, plan.unchanged) == (
        ["d.md"], ["b.md"], ["c.md"], ["a.md"])
    assert [path for path, _, _ in plan.jobs] == ["b.md", "d.md"]
    assert not plan.full and not plan.keep_live

    same = plan_build(scan_directory(docs), [], "local", "x", None)
    assert same.full and same.added == ["a.md", "b.md", "d.md"] and same.unchanged == []

    report = build(docs, store.root, name="x")
    assert (report.added, report.changed, report.removed, report.unchanged) == (
        ["d.md"], ["b.md"], ["c.md"], ["a.md"])
    source = directory_source(docs.resolve()).record("")
    head = store._read_old_head("local-x")
    again = plan_build(scan_directory(docs), [], "local", "src", head, source)
    assert again.keep_live and again.jobs == []
    renamed = plan_build(scan_directory(docs), [], "local", "y", head, source)
    assert not renamed.keep_live
    moved = plan_build(scan_directory(docs), [], "local", "src", head,
                       {**source, "location": "/elsewhere"})
    assert not moved.keep_live  # the manifest must record the source it now holds


@pytest.mark.parametrize("damage", ["search index", "raw file", "raw file, nothing changed"])
def test_a_damaged_generation_falls_back_to_the_same_full_build(tmp_path: Path,
                                                                damage: str) -> None:
    """Whether the damage shows before anything is carried (the search index) or while
    files are copied (a raw file), the build is the full one: same report, same bytes."""
    docs = write_tree(tmp_path / "src", TREE)
    root = tmp_path / "root"
    build(docs, root, name="x")
    cache = root / "local-x"
    if damage == "search index":
        data = (cache / SEARCH_INDEX_NAME).read_bytes()
        (cache / SEARCH_INDEX_NAME).write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    else:
        (cache / "c.md").write_text("# C\n\nedited by hand\n")
    if damage != "raw file, nothing changed":
        write_tree(docs, {"a.md": "# A\n\nnew text\n", "a2.md": "not indexable \x00"})
    report = build(docs, root, name="x")
    fresh = build(docs, tmp_path / "fresh", name="x", full=True)
    assert report.full and report.written
    assert _report(report) == {**_report(fresh), "cache_dir": cache}
    assert without_indexed_at(cache_files(cache)) == without_indexed_at(
        cache_files(tmp_path / "fresh" / "local-x"))


def test_a_manifest_changed_after_planning_is_not_carried_from(tmp_path: Path) -> None:
    """The plan keeps only the live manifest's header; the write checks that the manifest
    it carries from still has it, and builds everything otherwise."""
    docs = write_tree(tmp_path / "src", TREE)
    store = IndexStore(tmp_path / "root")
    build(docs, store.root, name="x")
    scan = scan_directory(docs)
    plan = plan_build(scan, [], "local", "x", store._read_old_head("local-x"))
    write_tree(docs, {"a.md": "# A\n\nother\n"})
    build(docs, store.root, name="x")  # the live generation moves on
    area = store.root / STAGING_DIR / "local-x"
    before = sorted(os.listdir(area)) if area.is_dir() else []
    with store.lock("local-x"), pytest.raises(_Untrusted):
        store._write("local-x", "local", "x", scan, plan, None, None)
    assert (sorted(os.listdir(area)) if area.is_dir() else []) == before  # no staging left


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_the_warm_worker_is_stopped_by_its_one_owner(tmp_path: Path) -> None:
    with WarmWorker() as worker:
        pid = worker._pid
        assert pid > 0 and not _reaped(pid)
    assert _reaped(pid)

    with WarmWorker(fork=False) as idle:
        assert idle.take([("a.md", lambda: b"# A\n", 4)], tmp_path) is None

    docs = write_tree(tmp_path / "src", TREE)
    store = IndexStore(tmp_path / "root")
    build_from_directory(store, docs, name="local-x")
    write_tree(docs, {"b.md": "# B\n\nchanged\n"})
    report = build_from_directory(store, docs, name="local-x")  # the warm worker parses b.md
    assert report.parsed == ["b.md"] and not report.full
    again = build_from_directory(store, docs, name="local-x")  # nothing changed: worker unused
    assert not again.written and again.unchanged == ["a.md", "b.md", "c.md"]
    assert (store.root / "local-x" / MANIFEST_NAME).is_file()


def test_a_manifest_header_longer_than_one_read_is_planned_from(tmp_path: Path) -> None:
    """The plan reads the live manifest's header in 64 KiB reads, up to the sections."""
    names = {f"docs/{'long-folder-name-' * 3}{i:04d}.md": f"# T{i}\n" for i in range(700)}
    docs = write_tree(tmp_path / "src", names)
    store = IndexStore(tmp_path / "root")
    build(docs, store.root, name="x")
    head = store._read_old_head("local-x")
    assert head is not None and len(head[0]) > 2 * 64 * 1024
    assert (store.root / "local-x" / MANIFEST_NAME).read_bytes().startswith(head[0])
    write_tree(docs, {"docs/new.md": "# New\n"})
    report = build(docs, store.root, name="x")
    assert not report.full and report.added == ["docs/new.md"] and len(report.unchanged) == 700
