"""Which directories hold documentation: git decides in a work tree, the skip list outside.

SQLAlchemy keeps its documentation in ``doc/build/``: in a git work tree a tracked
directory is indexed whatever it is called; outside git the built-in skip list stays, and
the summary names each skipped directory with the number of doc files it held.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import run_cli, write_tree


def _committed_repo(repo: Path, files: dict[str, str]) -> Path:
    """A git work tree holding ``files``, all committed (what .gitignore allows)."""
    write_tree(repo, files)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for args in (["add", "-A"], ["commit", "-qm", "docs"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return repo


def _indexed(root: Path, key: str) -> list[str]:
    return json.loads((root / key / "manifest.json").read_bytes())["doc_files"]


def test_a_tracked_build_directory_is_indexed_in_a_work_tree(env: Path) -> None:
    repo = _committed_repo(env / "proj", {
        "doc/build/index.rst": "Title\n=====\n\nThe docs.\n",
        "doc/build/orm/session.rst": "Session\n=======\n\nBasics.\n",
        "node_modules/pkg/README.md": "# ignored\n",
        "dist/notes.md": "# tracked dist\n",
        ".gitignore": "node_modules/\n",
    })
    root = env / "root"
    done = run_cli("build", str(repo / "doc"), "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert _indexed(root, "local-proj-doc") == ["build/index.rst", "build/orm/session.rst"]
    done = run_cli("build", str(repo), "--root", str(root), "--all")  # (the top: its docs)
    assert done.returncode == 0, done.stderr
    assert _indexed(root, f"local-{env.name}-proj-all") == [
        "dist/notes.md", "doc/build/index.rst", "doc/build/orm/session.rst"]
    assert b"node_modules" not in done.stderr  # ignored by git: never walked, never listed


def test_outside_git_skipped_directories_are_named_with_their_doc_files(
        env: Path, tmp_path: Path) -> None:
    src = write_tree(tmp_path / "plain", {
        "index.md": "# Home\n",
        "build/a.md": "# a\n",
        "build/deep/b.rst": "B\n=\n",
        "node_modules/x/README.md": "# x\n",
        "site/empty.txt": "not a doc\n",
    })
    root = env / "root"
    done = run_cli("build", str(src), "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert _indexed(root, f"local-{tmp_path.name}-plain") == ["index.md"]
    lines = done.stderr.decode().splitlines()
    assert "  skipped build: directory skipped by name outside git (held 2 doc files)" in lines
    assert ("  skipped node_modules: directory skipped by name outside git (held 1 doc file)"
            in lines)
    assert not any("site" in line for line in lines)  # it held no doc file


def test_a_folder_git_ignores_whole_is_walked_as_a_plain_folder(env: Path) -> None:
    """Pointing doc-index at an ignored folder (a build output, a downloaded copy inside a
    project) indexes it: git has no say in a folder it ignores whole."""
    repo = _committed_repo(env / "proj", {
        ".gitignore": "vendor-docs/\n",
        "README.md": "# Project\n",
        "vendor-docs/guide.md": "# Guide\n",
        "vendor-docs/api/ref.md": "# Ref\n",
    })
    root = env / "root"
    done = run_cli("build", str(repo / "vendor-docs"), "--root", str(root))
    assert done.returncode == 0, done.stderr
    assert _indexed(root, "local-proj-vendor-docs") == ["api/ref.md", "guide.md"]
    assert json.loads((root / "local-proj-vendor-docs" / "manifest.json").read_bytes())[
        "commit_hash"] == ""
