"""``doc-index delete`` deletes caches and nothing else: a folder that is no cache, or
one put where a cache was, is refused and left byte for byte; an empty root is a usage
error, and the ``context`` CLI finds no cache at an empty path.

Every check runs the real command in a subprocess and compares the bytes it printed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_support import CONTEXT, DOCS, built_root, run, snapshot
from conftest import SAFETY_TIMEOUT, write_tree


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root holding the doc-index cache ``t`` of DOCS (cli_support)."""
    return built_root(tmp_path)


def test_delete_refuses_a_folder_that_is_no_cache(root: Path) -> None:
    write_tree(root / "notacache" / "sub", {"keep.txt": "the user's file\n"})
    (root / "notes").mkdir()
    (root / "notes" / "manifest.json").write_text('{"files": ["a jDocMunch-like index"]}\n')
    before = snapshot(root)
    for name in ("notacache", "notes"):
        assert run("delete", name, "--root", str(root)) == (1, b"", (
            f"error: refusing to delete '{name}' under {root}: it holds no doc-index or "
            "Context Engine v0 manifest.json, and no doc-index build made it; doc-index "
            "deletes only the caches it can tell are caches (remove it yourself if it is "
            "yours to remove)\n").encode())
    os.symlink("t", root / "link")
    before["link"] = b"t"
    assert run("delete", "link", "--root", str(root)) == (1, b"", (
        f"error: refusing to delete 'link' under {root}: it is a symbolic link, and doc-index "
        "makes none; doc-index deletes only the caches it can tell are caches (remove it "
        "yourself if it is yours to remove)\n").encode())
    assert snapshot(root) == before  # nothing touched, not even the store's area


def test_delete_removes_every_kind_of_cache(root: Path, tmp_path: Path) -> None:
    src = tmp_path / "docs"
    for name in ("damaged", "emptied"):
        assert run("build", str(src), "--root", str(root), "--name", name)[0] == 0
    (root / "damaged" / "manifest.json").write_bytes(b"not json any more")
    for entry in os.scandir(root / "emptied"):  # nothing left that looks like a cache
        if entry.is_file():
            os.unlink(entry.path)
    assert run("build", "--sources", str(src), "--cache", str(root / "v0"), module=CONTEXT)[0] == 0
    for name in ("t", "damaged", "emptied", "v0"):
        assert run("delete", name, "--root", str(root)) == (0, b"", f"deleted: {name}\n".encode())
        assert not os.path.lexists(root / name)
        assert not os.path.lexists(root / ".doc-index-tmp" / name)  # spare, mark, lock


def test_a_folder_put_where_a_cache_was_is_not_deleted(root: Path) -> None:
    """The mark names the cache's directory, not its name: a folder made under that name
    after the cache was moved away is refused."""
    os.rename(root / "t", root / "moved")
    write_tree(root / "t", {"mine.txt": "not a cache\n"})
    code, out, err = run("delete", "t", "--root", str(root))
    assert (code, out) == (1, b"") and err.startswith(b"error: refusing to delete 't' under ")
    assert (root / "t" / "mine.txt").read_text() == "not a cache\n"


def test_the_mark_changes_no_byte_of_the_cache(root: Path) -> None:
    """The mark lives in the store's area: the cache's files and ``total_bytes`` (the
    specs' non-recursive sum) are what they were without it."""
    mark = root / ".doc-index-tmp" / "t" / "cache"
    assert mark.read_text().startswith("doc-index cache ")
    top = sorted(e.name for e in os.scandir(root / "t"))
    assert top == ["guide.md", "manifest.json", "search.idx", "sub"]
    code, out, _ = run("inspect", "--cache", str(root / "t"), module=CONTEXT)
    direct = sum(e.stat().st_size for e in os.scandir(root / "t") if e.is_file())
    assert code == 0 and json.loads(out)["total_bytes"] == direct


EVERY_COMMAND = [["build", "SRC"], ["list"], ["inspect", "t"], ["resolve", "t", "retry"],
                 ["delete", "work"], ["serve"], ["hook", "install", "REPO"],
                 ["mcp-config", "--client", "cursor"]]


@pytest.mark.parametrize("argv", EVERY_COMMAND, ids=lambda argv: argv[0])
def test_an_empty_root_is_a_usage_error(tmp_path: Path, argv: list[str]) -> None:
    """``--root=`` named the current directory: ``delete work --root=`` deleted ./work."""
    src = write_tree(tmp_path / "docs", DOCS)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=SAFETY_TIMEOUT)
    argv = [str(src) if a == "SRC" else str(repo) if a == "REPO" else a for a in argv]
    write_tree(tmp_path / "work" / "t", {"manifest.json": "{}"})
    before = snapshot(tmp_path)
    empty = (1, b"", b"error: the cache root is empty: give a directory, or leave --root out "
                     b"for the default\n")
    for where in ([*argv, "--root="], [*argv, "--root", ""], ["--root=", *argv]):
        assert run(*where, cwd=tmp_path / "work") == empty
    assert run(*argv, cwd=tmp_path / "work", env={"DOC_INDEX_ROOT": ""}) == (1, b"", (
        b"error: DOC_INDEX_ROOT is set but empty: set it to a directory, or unset it for the "
        b"default\n"))
    assert snapshot(tmp_path) == before


def test_the_context_cli_finds_no_cache_at_an_empty_path(tmp_path: Path) -> None:
    """``context list-caches --root ''`` listed the current directory; the spec's error for
    a root that does not exist is cache_missing, and the empty path names none."""
    write_tree(tmp_path / "cwd" / "a", {"manifest.json": "{}"})
    missing = (4, b"", b"error: Cache does not exist\n")
    assert run("list-caches", "--root", "", module=CONTEXT, cwd=tmp_path / "cwd") == missing
    assert run("inspect", "--cache", "", module=CONTEXT, cwd=tmp_path / "cwd" / "a") == missing
    assert run("resolve", "--cache", "", "--query", "q", "--budget", "10", module=CONTEXT,
               cwd=tmp_path / "cwd") == missing


