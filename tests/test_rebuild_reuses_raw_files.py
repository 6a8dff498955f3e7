"""A rebuild after ``git pull`` creates only the raw files that changed: the others are
moved from the cache's spare generation (``store.raw_files``), checked one by one; the
caches are the bytes a full build writes, and no cache file ever has a second link."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import cache_files, run_cli, store_leftovers, without_indexed_at, write_tree

KEY = "work"  # --name names the cache exactly
PAGES = {f"docs/{area}/page-{i}.md": f"# Page {area} {i}\n\nText about {area} number {i}.\n"
         for area in ("guide", "api", "howto") for i in range(4)}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def commit_pages(repo: Path, files: dict[str, str], message: str) -> None:
    write_tree(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def cli_build(source: Path, root: Path) -> None:
    done = run_cli("build", str(source), "--root", str(root), "--name", "work")
    assert done.returncode == 0, done.stderr


def inodes(directory: Path) -> dict[str, tuple[int, int]]:
    """(inode, link count) of every file below ``directory``, by relative path."""
    out = {}
    for path in directory.rglob("*"):
        if path.is_file():
            info = path.stat()
            out[path.relative_to(directory).as_posix()] = (info.st_ino, info.st_nlink)
    return out


def pulled_twice(env: Path) -> tuple[Path, Path, Path]:
    """An upstream repository, its clone built, then pulled and built twice (2 pages
    changed each time); (upstream, clone, root)."""
    upstream = env / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    commit_pages(upstream, PAGES, "pages")
    clone = env / "work"
    git(env, "clone", "-q", str(upstream), str(clone))
    root = env / "root"
    cli_build(clone, root)
    commit_pages(upstream, {"docs/api/page-1.md": "# Api 1\n\nNew text.\n",
                            "docs/howto/page-2.md": "# Howto 2\n\nNew text.\n"}, "first")
    git(clone, "pull", "-q", "--ff-only")
    cli_build(clone, root)
    return upstream, clone, root


def test_a_pulled_rebuild_moves_the_unchanged_raw_files_from_the_spare(env: Path) -> None:
    upstream, clone, root = pulled_twice(env)
    spare = root / ".doc-index-tmp" / KEY / "spare"
    before = inodes(spare)  # the generation of the first build
    commit_pages(upstream, {"docs/guide/page-3.md": "# Guide 3\n\nNew text.\n"}, "second")
    git(clone, "pull", "-q", "--ff-only")
    live_before = cache_files(root / KEY)
    cli_build(clone, root)

    after = inodes(root / KEY)
    # Unchanged since the spare's generation: the very same files, moved, not copied.
    same = [p for p in PAGES if p not in ("docs/api/page-1.md", "docs/howto/page-2.md",
                                          "docs/guide/page-3.md")]
    assert len(same) == 9
    assert all(after[p] == before[p] for p in same), (after, before)
    # Changed in one of the two pulls: new files.
    assert all(after[p][0] != before[p][0] for p in PAGES if p not in same)
    assert all(links == 1 for _, links in after.values())
    # The cache is what a full build writes; the generation it replaced is the new spare.
    fresh = env / "fresh"
    assert run_cli("build", str(clone), "--root", str(fresh), "--name", "work").returncode == 0
    assert without_indexed_at(cache_files(root / KEY)) == without_indexed_at(
        cache_files(fresh / KEY))
    assert cache_files(spare) == live_before
    assert store_leftovers(root) == []


def test_a_damaged_or_planted_spare_file_is_copied_from_the_live_cache(env: Path) -> None:
    """What the spare holds is checked like the live cache: a file whose bytes changed, a
    symlink (to a file with the right bytes outside the root), a hard link and a folder
    with one extra file are not taken; the live generation's copy is; the rest moves."""
    upstream, clone, root = pulled_twice(env)
    spare = root / ".doc-index-tmp" / KEY / "spare"
    outside = env / "outside.md"
    outside.write_bytes((spare / "docs/guide/page-0.md").read_bytes())
    (spare / "docs/guide/page-0.md").unlink()
    os.symlink(outside, spare / "docs/guide/page-0.md")
    (spare / "docs/guide/page-1.md").write_text("# Page guide 1\n\nTampered.\n")
    os.link(spare / "docs/guide/page-2.md", env / "second-link.md")
    (spare / "docs/api/extra.md").write_text("# Extra\n")
    before = inodes(spare)
    commit_pages(upstream, {"docs/howto/page-3.md": "# Howto 3\n\nNew text.\n"}, "second")
    git(clone, "pull", "-q", "--ff-only")
    cli_build(clone, root)

    after = inodes(root / KEY)
    assert all(links == 1 for _, links in after.values())
    refused = ["docs/guide/page-0.md", "docs/guide/page-1.md", "docs/guide/page-2.md"]
    assert all(after[p][0] != before[p][0] for p in refused)
    assert after["docs/guide/page-3.md"] == before["docs/guide/page-3.md"]
    assert after["docs/api/page-0.md"][0] == before["docs/api/page-0.md"][0]
    assert "docs/api/extra.md" not in after
    assert outside.read_bytes().startswith(b"# Page guide 0")
    assert (env / "second-link.md").stat().st_nlink == 1  # its spare link went with the spare
    fresh = env / "fresh"
    assert run_cli("build", str(clone), "--root", str(fresh), "--name", "work").returncode == 0
    assert without_indexed_at(cache_files(root / KEY)) == without_indexed_at(
        cache_files(fresh / KEY))
    assert run_cli("resolve", KEY, "guide", "--budget", "500", "--root",
                   str(root)).returncode == 0


def test_files_deeper_than_the_moved_tree_are_copied(tmp_path: Path) -> None:
    """Folders nested deeper than ``raw_files.MAX_TREE_DEPTH`` are copied by path; a folder
    holding a deep changed file is never moved whole."""
    from conftest import build  # caches local-<name>

    deep = "/".join(["d"] * 40)
    docs = write_tree(tmp_path / "docs", {f"{deep}/a.md": "# A\n\none\n",
                                          f"{deep}/b.md": "# B\n\none\n", "top.md": "# T\n"})
    root = tmp_path / "root"
    build(docs, root, name="work")
    for text in ("two", "three"):
        write_tree(docs, {f"{deep}/a.md": f"# A\n\n{text}\n"})
        assert build(docs, root, name="work").written
    build(docs, tmp_path / "fresh", name="work", full=True)
    assert without_indexed_at(cache_files(root / "local-work")) == without_indexed_at(
        cache_files(tmp_path / "fresh" / "local-work"))
    assert all(links == 1 for _, links in inodes(root / "local-work").values())
