"""The local walk never leaves its tree, never walks into doc-index's own directories, and
the store's staging and lock places are per cache, checked, and collision-free.

The cases: a directory swapped for a symlink during a build, a cache root inside the
source tree, staging and lock names colliding across caches, a staging area that is a
symlink, and the one name check applied to walked names.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import caches_only, manifest, run_cli, write_tree

from doc_index.sources.walk import scan_directory
from doc_index.store.index_store import IndexStore

SECRET = "SECRET-OUTSIDE-5e1d"
KEY = "local-src"


def _cache_bytes(cache_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(cache_dir.rglob("*")) if p.is_file())


def _swap_for_link(directory: Path, target: Path) -> None:
    shutil.rmtree(directory)
    os.symlink(target, directory)


# --------------------------------------------------- a directory swapped during a build


def test_parent_directory_swapped_for_a_symlink_after_the_scan(tmp_path: Path) -> None:
    """sub/ becomes a link to an outside directory holding the same file names: the
    parse-time read walks from the tree's handle, refuses the link, reads nothing outside."""
    src = write_tree(tmp_path / "src", {"ok.md": "# Ok\n\nzebra\n", "sub/a.md": "# A\n\nin\n"})
    outside = write_tree(tmp_path / "outside", {"a.md": f"# A\n\n{SECRET}\n"})
    scan = scan_directory(src)
    assert [f.path for f in scan.files] == ["ok.md", "sub/a.md"]
    _swap_for_link(src / "sub", outside)
    root = tmp_path / "root"
    report = IndexStore(root).update_index(KEY, "local", "src", scan)
    assert dict(report.skipped)["sub/a.md"].startswith("unreadable")
    assert manifest(root / KEY)["doc_files"] == ["ok.md"]
    assert SECRET.encode() not in _cache_bytes(root / KEY)


def test_ancestor_directory_swapped_for_a_symlink_after_the_scan(tmp_path: Path) -> None:
    """The swap hits a component above the file's own directory (a/ of a/b/doc.md)."""
    src = write_tree(tmp_path / "src", {"ok.md": "# Ok\n\nzebra\n",
                                        "a/b/doc.md": "# Doc\n\ninside\n"})
    outside = write_tree(tmp_path / "outside", {"b/doc.md": f"# Doc\n\n{SECRET}\n"})
    scan = scan_directory(src)
    _swap_for_link(src / "a", outside)
    root = tmp_path / "root"
    report = IndexStore(root).update_index(KEY, "local", "src", scan)
    assert dict(report.skipped)["a/b/doc.md"].startswith("unreadable")
    assert manifest(root / KEY)["doc_files"] == ["ok.md"]
    assert SECRET.encode() not in _cache_bytes(root / KEY)


def test_symlinked_file_whose_target_directory_is_swapped(tmp_path: Path) -> None:
    """A symlinked file inside the tree is followed, by the same component-wise walk, also
    at parse time: its target's directory swapped for an outside link is not followed."""
    src = write_tree(tmp_path / "src", {"ok.md": "# Ok\n\nzebra\n",
                                        "sub/real.md": "# Real\n\ninside\n"})
    os.symlink("sub/real.md", src / "alias.md")
    outside = write_tree(tmp_path / "outside", {"real.md": f"# Real\n\n{SECRET}\n"})
    scan = scan_directory(src)
    assert [f.path for f in scan.files] == ["alias.md", "ok.md", "sub/real.md"]
    _swap_for_link(src / "sub", outside)
    root = tmp_path / "root"
    report = IndexStore(root).update_index(KEY, "local", "src", scan)
    reasons = dict(report.skipped)
    assert reasons["alias.md"].startswith("unreadable")
    assert reasons["sub/real.md"].startswith("unreadable")
    assert SECRET.encode() not in _cache_bytes(root / KEY)


def test_symlinked_files_are_followed_only_inside_the_tree(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"good.md": "# Good\n\nzebra\n",
                                        "deep/er/x.md": "# X\n\nzebra\n"})
    write_tree(tmp_path / "outside", {"secret.md": f"# S\n\n{SECRET}\n"})
    os.symlink(tmp_path / "outside", src / "out")
    links = {
        "rel.md": "good.md",                         # followed
        "abs.md": str(src / "good.md"),              # absolute, under the root: followed
        "deep/up.md": "../good.md",                  # climbs, stays inside: followed
        "deep/er/side.md": "../../deep/er/x.md",     # followed
        "climb.md": "../outside/secret.md",          # leaves
        "abs-out.md": str(tmp_path / "outside" / "secret.md"),
        "via-link.md": "out/secret.md",              # through a symlinked directory
        "via-link-up.md": "out/../src/good.md",      # '..' out of a symlinked directory
        "chain.md": "rel.md",                        # a link to a link
        "self.md": "self.md",
    }
    for name, target in links.items():
        os.symlink(target, src / name)
    scan = scan_directory(src)
    indexed = {f.path: f.read() for f in scan.files}
    reasons = dict(scan.skipped)
    for name in ("rel.md", "abs.md", "deep/up.md"):
        assert indexed[name] == b"# Good\n\nzebra\n", name
    assert indexed["deep/er/side.md"] == b"# X\n\nzebra\n"
    assert reasons["climb.md"] == "symlink leaves the source tree"
    assert reasons["abs-out.md"] == "symlink leaves the source tree"
    for name in ("via-link.md", "via-link-up.md", "chain.md", "self.md"):
        assert reasons[name].startswith("unreadable"), (name, reasons[name])
    assert reasons["out"] == "symlinked directory not followed"
    assert all(SECRET.encode() not in data for data in indexed.values())


def test_directory_swapped_for_a_symlink_during_the_walk(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Right after the walk listed src/, sub/ becomes a link out: the walk's O_NOFOLLOW open
    of sub/ relative to src/'s handle refuses it (reported), nothing outside is listed."""
    from doc_index.sources import walk as sources

    src = write_tree(tmp_path / "src", {"ok.md": "# Ok\n\nzebra\n", "sub/a.md": "# A\n\nin\n"})
    outside = write_tree(tmp_path / "outside", {"a.md": f"# A\n\n{SECRET}\n"})
    listed = sources._list_directory

    def list_then_swap(fd: int, prefix: str, *args: Any) -> list[str]:
        below = listed(fd, prefix, *args)
        if prefix == "":
            _swap_for_link(src / "sub", outside)
        return below

    monkeypatch.setattr(sources, "_list_directory", list_then_swap)
    scan = scan_directory(src)
    assert [f.path for f in scan.files] == ["ok.md"]
    assert dict(scan.skipped)["sub"].startswith("unreadable directory")


_FIFO_SWAP = """
import os, sys
from pathlib import Path
from doc_index.store.index_store import IndexStore
from doc_index.sources.walk import scan_directory
src, root = Path(sys.argv[1]), Path(sys.argv[2])
scan = scan_directory(src)
(src / "sub" / "a.md").unlink()
os.mkfifo(src / "sub" / "a.md")
report = IndexStore(root).update_index("local-src", "local", "src", scan)
print(dict(report.skipped)["sub/a.md"])
"""


def test_a_fifo_swapped_in_after_the_scan_does_not_block(tmp_path: Path) -> None:
    """Opened non-blocking and checked: skipped. (In a child process: the code before this
    test blocked forever in open(); the timeout is only a safety net.)"""
    src = write_tree(tmp_path / "src", {"ok.md": "# Ok\n\nzebra\n", "sub/a.md": "# A\n\nx\n"})
    proc = subprocess.run([sys.executable, "-c", _FIFO_SWAP, str(src), str(tmp_path / "root")],
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b"unreadable"), proc.stdout


# ------------------------------------------------------------------ walked names checked


def test_walked_names_go_through_the_one_path_check(tmp_path: Path) -> None:
    """A name with a backslash (a separator elsewhere) is skipped and reported, raw."""
    src = write_tree(tmp_path / "src", {"ok.md": "# Ok\n\nzebra\n", "a\\b.md": "# B\n\nx\n",
                                        "dir\\x/c.md": "# C\n\nx\n"})
    scan = scan_directory(src)
    assert [f.path for f in scan.files] == ["ok.md"]
    reasons = dict(scan.skipped)
    assert reasons["a\\b.md"] == "backslash in file name"
    assert reasons["dir\\x"] == "backslash in file name"


# ------------------------------------------------------- a cache root inside the source


def test_cache_root_inside_the_source_is_never_indexed(tmp_path: Path) -> None:
    """``doc-index build self --root self/.cache`` twice: the same files both times."""
    src = write_tree(tmp_path / "self", {"README.md": "# Self\n\nzebra\n",
                                         "docs/guide.md": "# Guide\n\ntext\n"})
    root = src / ".cache"
    first = run_cli("build", str(src), "--root", str(root), "--name", "local-self")
    assert first.returncode == 0, first.stderr
    files = manifest(root / "local-self")["doc_files"]
    assert files == ["README.md", "docs/guide.md"]
    second = run_cli("build", str(src), "--root", str(root), "--name", "local-self")
    assert second.returncode == 0, second.stderr
    assert manifest(root / "local-self")["doc_files"] == files
    assert b"skipped .cache: the cache root of this build" in second.stderr
    assert b"up to date" in second.stderr
    assert not any(p.name == ".cache" for p in (root / "local-self").rglob("*"))


def test_a_directory_holding_a_cache_is_not_walked(tmp_path: Path) -> None:
    other = write_tree(tmp_path / "other", {"x.md": "# X\n\nzebra\n"})
    IndexStore(tmp_path / "elsewhere").update_index("local-other", "local", "other",
                                                    scan_directory(other))
    src = write_tree(tmp_path / "src", {"ok.md": "# Ok\n\nzebra\n"})
    shutil.copytree(tmp_path / "elsewhere" / "local-other", src / "vendor" / "cache")
    (src / "old-root" / ".doc-index-tmp").mkdir(parents=True)
    write_tree(src / "old-root", {"leftover.md": "# L\n\nx\n"})
    scan = scan_directory(src)
    assert [f.path for f in scan.files] == ["ok.md"]
    reasons = dict(scan.skipped)
    assert reasons["vendor/cache"] == "holds a doc-index cache"
    assert reasons["old-root"] == "holds a doc-index cache"


def test_source_inside_the_cache_root_indexes_nothing_of_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    src = write_tree(tmp_path / "src", {"ok.md": "# Ok\n\nzebra\n"})
    IndexStore(root).update_index(KEY, "local", "src", scan_directory(src, cache_root=root))
    scan = scan_directory(root, cache_root=root)
    assert scan.files == [] and dict(scan.skipped) == {
        ".": "the cache root of this build (or its staging area)"}
    scan = scan_directory(root / KEY)
    assert scan.files == [] and dict(scan.skipped) == {".": "holds a doc-index cache"}


def test_a_plain_tree_builds_as_before(tmp_path: Path) -> None:
    """Sanity: a plain tree builds as before (the walk's order does not leak into ids)."""
    src = write_tree(tmp_path / "src", {f"d{i}/f{j}.md": f"# H{i}{j}\n\nt\n"
                                        for i in range(3) for j in range(3)})
    scan = scan_directory(src)
    assert [f.path for f in scan.files] == sorted(f"d{i}/f{j}.md" for i in range(3)
                                                  for j in range(3))
    report = IndexStore(tmp_path / "root").update_index(KEY, "local", "src", scan)
    assert report.sections == 9
    assert json.loads((tmp_path / "root" / KEY / "manifest.json").read_bytes())[
        "document_count"] == 9


# ------------------------------------------------ staging and lock names across caches


def _staging_dirs(root: Path) -> list[str]:
    area = root / ".doc-index-tmp"
    return sorted(str(p.relative_to(area)) for p in area.rglob("*")) if area.exists() else []


def test_cleaning_one_caches_staging_keeps_anothers(tmp_path: Path) -> None:
    """``local-p.b`` is mid-build (its lock held, its staging directory made) while
    ``local-p`` builds and cleans its own leftovers: the other staging directory stays."""
    from doc_index.server import spec_texts as tools
    from doc_index.store import commit

    src = write_tree(tmp_path / "p", {"a.md": "# A\n\nzebra\n"})
    root = tmp_path / "root"
    root.mkdir()
    store = IndexStore(root)
    with store.lock("local-p.b"):
        other = commit.new_staging_dir(root, "local-p.b")
        (other / "half-written.md").write_text("# Half\n")
        proc = run_cli("build", str(src), "--root", str(root), "--name", "local-p")
        assert proc.returncode == 0, proc.stderr
        assert (other / "half-written.md").is_file()
        assert manifest(root / "local-p")["doc_files"] == ["a.md"]
        listed = json.loads(tools.list_caches(root))["caches"]
        assert listed == [{"path": "local-p", "has_manifest": True}]  # never the area
    assert store.list_keys() == ["local-p"]


def test_a_cache_named_x_lock_cannot_replace_the_lock_of_x(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "x", {"a.md": "# A\n\nzebra\n"})
    root = tmp_path / "root"
    root.mkdir()
    store = IndexStore(root)
    with store.lock("local-x"):
        proc = run_cli("build", str(src), "--root", str(root), "--name", "local-x.lock")
        assert proc.returncode == 0, proc.stderr
        assert manifest(root / "local-x.lock")["doc_files"] == ["a.md"]
        assert store.lock("local-x").held_elsewhere()  # still the lock of local-x, held
    assert store.list_keys() == ["local-x.lock"]
    assert caches_only(root) == ["local-x.lock"]


def test_a_root_with_lock_files_of_the_old_layout(tmp_path: Path) -> None:
    """``<key>.lock`` files that earlier versions left: builds work and remove them (only
    files: the cache ``local-x.lock`` is a directory; built first, it takes the place of
    ``local-x``'s old lock file), delete removes them too."""
    src = write_tree(tmp_path / "x", {"a.md": "# A\n\nzebra\n"})
    root = tmp_path / "root"
    root.mkdir()
    for key in ("local-x", "local-y"):
        (root / f"{key}.lock").write_bytes(b"")
    for name in ("x.lock", "x", "y"):  # x.lock first: its place holds a lock file
        proc = run_cli("build", str(src), "--root", str(root), "--name", f"local-{name}")
        assert proc.returncode == 0, proc.stderr
    assert caches_only(root) == ["local-x", "local-x.lock", "local-y"]
    (root / "local-x.lock.lock").write_bytes(b"")
    assert run_cli("delete", "local-x.lock", "--root", str(root)).returncode == 0
    assert caches_only(root) == ["local-x", "local-y"]


def test_staging_area_name_is_reserved_everywhere(tmp_path: Path) -> None:
    from doc_index.foundation.errors import ContextError, InvalidCacheKey
    from doc_index.store import commit
    from doc_index.store.cache_paths import check_cache_name
    from doc_index.store.index_store import check_key

    for check, error in ((check_key, InvalidCacheKey), (check_cache_name, ContextError)):
        try:
            check(commit.STAGING_DIR)
        except error:
            continue
        raise AssertionError(check)


# --------------------------------------------------------- a staging area that is a link


def _tree_bytes(path: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for p in sorted(path.rglob("*")):
        rel = str(p.relative_to(path))
        out[rel] = "dir" if p.is_dir() and not p.is_symlink() else (
            "-> " + os.readlink(p) if p.is_symlink() else p.read_bytes())
    return out


def _outside_area(tmp_path: Path) -> Path:
    """An outside directory holding what a staging area's cleaning would match."""
    return write_tree(tmp_path / "outside", {
        "local-src.1234.abcdef01/keep.md": "old-layout staging name\n",
        "local-src/1234.abcdef01/keep.md": "new-layout staging name\n",
        "local-src/lock": "", "keep.txt": "precious\n"})


def _built(tmp_path: Path) -> tuple[Path, Path]:
    src = write_tree(tmp_path / "src", {"a.md": "# A\n\nzebra\n"})
    root = tmp_path / "root"
    assert run_cli("build", str(src), "--root", str(root), "--name", KEY).returncode == 0
    (src / "b.md").write_text("# B\n\nchanged\n")  # the next build has work to do
    shutil.rmtree(root / ".doc-index-tmp")  # the parse cache: the tests plant their own area
    return src, root


def _refused(proc: subprocess.CompletedProcess[bytes], what: str) -> None:
    assert proc.returncode == 6, proc.stderr
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("error: refusing the staging area "), err
    assert what in err and "remove it" in err and "Traceback" not in err, err


def test_a_symlinked_staging_area_is_refused(tmp_path: Path) -> None:
    src, root = _built(tmp_path)
    outside = _outside_area(tmp_path)
    before, cache_before = _tree_bytes(outside), _tree_bytes(root / KEY)
    os.symlink(outside, root / ".doc-index-tmp")
    proc = run_cli("build", str(src), "--root", str(root), "--name", KEY)
    assert _tree_bytes(outside) == before  # nothing deleted (or written) through the link
    _refused(proc, f"{root / '.doc-index-tmp'}: a symlink")
    assert _tree_bytes(root / KEY) == cache_before
    _refused(run_cli("delete", KEY, "--root", str(root)), "a symlink")
    assert _tree_bytes(outside) == before and (root / KEY / "manifest.json").is_file()


def test_a_symlinked_cache_staging_directory_is_refused(tmp_path: Path) -> None:
    src, root = _built(tmp_path)
    outside = _outside_area(tmp_path)
    before = _tree_bytes(outside)
    (root / ".doc-index-tmp").mkdir()
    os.symlink(outside / KEY, root / ".doc-index-tmp" / KEY)
    _refused(run_cli("build", str(src), "--root", str(root), "--name", KEY), f"{KEY}: a symlink")
    assert _tree_bytes(outside) == before


def test_a_staging_area_that_is_not_a_directory_is_refused(tmp_path: Path) -> None:
    src, root = _built(tmp_path)
    (root / ".doc-index-tmp").write_text("not a directory\n")
    _refused(run_cli("build", str(src), "--root", str(root), "--name", KEY), "not a directory")
    assert (root / ".doc-index-tmp").read_text() == "not a directory\n"


@pytest.mark.needs_root
def test_a_staging_area_of_another_owner_is_refused(tmp_path: Path) -> None:
    src, root = _built(tmp_path)
    (root / ".doc-index-tmp").mkdir()
    os.chown(root / ".doc-index-tmp", 65534, 65534)
    _refused(run_cli("build", str(src), "--root", str(root), "--name", KEY), "owned by uid 65534")
    # The user running the build may own it: root building into somebody else's root.
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    proc = run_cli("build", str(src), "--root", str(theirs), "--name", KEY)
    assert proc.returncode == 0, proc.stderr
    assert caches_only(theirs) == [KEY]
