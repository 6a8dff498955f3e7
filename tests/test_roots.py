"""The default cache root is the platform's data folder (not jDocMunch's ``~/.doc-index``),
never holds the clone area of git sources, and caches left in the old root are named,
never moved. A given ``--root`` never loads platformdirs."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from cli_support import DOCS, built_root, run, snapshot
from conftest import SAFETY_TIMEOUT, write_tree

from doc_index.sources import git as git_source
from doc_index.store import roots


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root holding the doc-index cache ``t`` of DOCS (cli_support)."""
    return built_root(tmp_path)


def _home(tmp_path: Path, *, data: str = "data", cache: str = "xdg-cache") -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / data),
            "XDG_CACHE_HOME": str(tmp_path / cache)}


def test_the_default_root_is_the_platform_data_folder(tmp_path: Path) -> None:
    env = _home(tmp_path)
    src = write_tree(tmp_path / "docs", DOCS)
    code, _, err = run("build", str(src), "--name", "t", env=env, drop=("DOC_INDEX_ROOT",))
    assert code == 0, err
    assert (tmp_path / "data" / "doc-index" / "t" / "manifest.json").is_file()
    assert not (tmp_path / "home" / ".doc-index").exists()
    code, out, _ = run("mcp-config", "--client", "cursor", env=env, drop=("DOC_INDEX_ROOT",))
    args = json.loads(out)["mcpServers"]["doc-index"]["args"]
    assert code == 0 and args[:3] == ["serve", "--root", str(tmp_path / "data" / "doc-index")]
    # DOC_INDEX_ROOT still chooses another
    other = tmp_path / "other"
    code, out, _ = run("mcp-config", "--client", "cursor", env={**env, "DOC_INDEX_ROOT": str(
        other)})
    assert json.loads(out)["mcpServers"]["doc-index"]["args"][2] == str(other)


def test_the_default_root_never_holds_the_clone_area(tmp_path: Path) -> None:
    """XDG_DATA_HOME and XDG_CACHE_HOME one folder: the clones would be a folder of the
    root (listed as an invalid cache); the caches go to ``<data>/doc-index/caches``."""
    env = _home(tmp_path, data="xdg", cache="xdg")
    author = write_tree(tmp_path / "author", {"docs/a.md": DOCS["guide.md"]})
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q", "-m", "A"]):
        subprocess.run(["git", *argv], cwd=author, check=True, timeout=SAFETY_TIMEOUT)
    bare = tmp_path / "srv" / "acme" / "widgets.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(author), str(bare)], check=True,
                   timeout=SAFETY_TIMEOUT)
    code, _, err = run("build", bare.as_uri(), env=env, drop=("DOC_INDEX_ROOT",))
    assert code == 0, err
    caches = tmp_path / "xdg" / "doc-index" / "caches"
    assert (tmp_path / "xdg" / "doc-index" / "clones").is_dir()
    code, out, _ = run("list", "--json", env=env, drop=("DOC_INDEX_ROOT",))
    assert code == 0 and [c["name"] for c in json.loads(out)["caches"]] == ["acme-widgets"]
    assert (caches / "acme-widgets" / "manifest.json").is_file()


@pytest.mark.parametrize("env", [{}, {"XDG_CACHE_HOME": "/x/cache"}, {"XDG_CACHE_HOME": "rel"},
                                 {"XDG_CACHE_HOME": ""}])
def test_roots_knows_the_clone_area_of_git_sources(monkeypatch: pytest.MonkeyPatch,
                                                   env: dict[str, str]) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert roots.clone_area() == git_source.clone_area()


def test_caches_left_in_the_old_root_are_named_not_moved(tmp_path: Path) -> None:
    """An earlier doc-index put caches in ``~/.doc-index``: a command on the new default
    root says where they are and how to keep them (``--root``, ``mv``); it never moves
    them. jDocMunch's files there are not caches and are never mentioned."""
    env = _home(tmp_path)
    old = tmp_path / "home" / ".doc-index"
    src = write_tree(tmp_path / "docs", DOCS)
    for name in ("a", "b c"):
        assert run("build", str(src), "--root", str(old), "--name", name)[0] == 0
    (old / "_savings.json").write_text("{}\n")  # jDocMunch's
    write_tree(old / "jdoc-index", {"index.json": "{}\n"})
    before = snapshot(old)
    new = tmp_path / "data" / "doc-index"
    q = shlex.quote
    note = (f"note: 2 doc-index caches are in {old}, the default root of earlier versions, "
            f"not in the default root {new}: use --root {q(str(old))} (or DOC_INDEX_ROOT="
            f"{q(str(old))}) to keep using them, or move them: mkdir -p {q(str(new))} && mv "
            f"{q(str(old / 'a'))} {q(str(old / 'b c'))} {q(str(new))}/\n").encode()
    code, out, err = run("list", env=env, drop=("DOC_INDEX_ROOT",))
    assert (code, out) == (4, b"") and err.startswith(note)
    code, out, err = run("mcp-config", "--client", "codex", env=env, drop=("DOC_INDEX_ROOT",))
    # the note, then mcp-config's line: whether the block's server answers by meaning
    assert code == 0 and err.startswith(note) and err[len(note):].startswith(b"meaning: ")
    assert err.count(b"\n") == note.count(b"\n") + 1
    # given a root, or with caches in the new one, nothing is said
    assert run("list", "--root", str(old), env=env, drop=("DOC_INDEX_ROOT",))[2] == b""
    assert run("build", str(src), "--name", "t", env=env, drop=("DOC_INDEX_ROOT",))[2] \
        .startswith(note)
    code, out, err = run("list", env=env, drop=("DOC_INDEX_ROOT",))
    assert code == 0 and err == b""
    assert snapshot(old) == before
    # only jDocMunch's files: no note
    for name in ("a", "b c"):
        assert run("delete", name, "--root", str(old))[0] == 0
    assert run("delete", "t", env=env, drop=("DOC_INDEX_ROOT",))[2] == b"deleted: t\n"
    assert run("list", env=env, drop=("DOC_INDEX_ROOT",)) == (
        0, f"no caches under {new} (doc-index build <path-or-git-url> makes one)\n".encode(), b"")


def test_a_given_root_never_loads_platformdirs(root: Path, tmp_path: Path) -> None:
    """platformdirs (about 6 ms of imports) is loaded only to find the default root: the
    blocks ``mcp-config`` writes start ``serve --root DIR``."""
    from test_import_rules import modules_of

    for argv in (["resolve", "t", "retry", "--root", str(root)], ["list", "--root", str(root)]):
        assert "platformdirs" not in modules_of(tmp_path, "doc_index.cli", *argv)
