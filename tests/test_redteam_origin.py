"""Red-team regressions (T2 item 6): a work tree's ``origin`` names its cache from its
spelling and the work tree's top alone: never from the current directory, the user's
home, or a symlink the file system resolves (a loop there was an internal error)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import run_cli, write_tree

DOC = {"docs/guide.md": "# Guide\n\nHow to retry a request after a timeout.\n"}


def work_tree(env: Path, origin: str) -> Path:
    tree = write_tree(env / "wt" / "proj", DOC)
    for args in (["init", "-q"], ["config", "remote.origin.url", origin]):
        subprocess.run(["git", *args], cwd=tree, check=True)
    return tree


def built_names(env: Path, tree: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    root = env / "root"
    monkeypatch.chdir(cwd)  # run_cli's process starts here
    done = run_cli("build", str(tree / "docs"), "--root", str(root))
    assert done.returncode == 0, done.stderr
    return {p.name for p in root.iterdir() if not p.name.startswith(".")}


@pytest.mark.parametrize("origin", ["../mirror:v2", "host:owner", "~/mirror:v2"])
def test_the_cache_name_from_origin_does_not_depend_on_the_current_directory(
        env: Path, monkeypatch: pytest.MonkeyPatch, origin: str) -> None:
    tree = work_tree(env, origin)
    here, deeper = env / "elsewhere", env / "elsewhere" / "host:owner"
    deeper.mkdir(parents=True)
    first = built_names(env, tree, here, monkeypatch)
    second = built_names(env, tree, deeper, monkeypatch)
    assert first == second and len(first) == 1, (first, second)
    [name] = first
    assert "elsewhere" not in name and "home" not in name, name


def test_a_relative_origin_is_named_from_the_top_without_following_symlinks(
        env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = work_tree(env, "loop")
    (tree / "loop").symlink_to("loop")
    assert built_names(env, tree, env, monkeypatch) == {"proj-loop-docs"}
