"""A Sphinx build's copy of its sources (``_sources/``) is not indexed beside the sources:
in a package archive (alembic's sdist ships ``docs/_sources/`` beside
``docs/build/``, its Sphinx source folder), a git work tree or repository that tracks
``docs/_build/html/``, and a plain folder; the summary names what was left out. Real
``doc-index`` subprocesses, an index on 127.0.0.1, real git repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli, write_tree
from package_servers import SimpleIndex, sdist
from test_package_build import git, pkg_env  # noqa: F401 (a fixture)

PAGES = {
    "index.rst": "Migrations\n==========\n\nRun the upgrade command.\n",
    "api/config.rst": "Config\n======\n\nThe Config object holds the ini file.\n",
    "cookbook.md": "# Cookbook\n\nBatch mode for SQLite.\n",
}
# alembic's sdist: the Sphinx sources in docs/build/, the published HTML in docs/ with
# Sphinx's copy of every page in docs/_sources/ (html_sourcelink_suffix = "").
ALEMBIC_LIKE = {
    "README.rst": "Alembic-like\n============\n\nA migration tool.\n",
    "docs/build/conf.py": "project = 'mig'\n",
    **{f"docs/build/{p}": t for p, t in PAGES.items()},
    **{f"docs/_sources/{p}": t for p, t in PAGES.items()},
    "docs/index.html": "<html></html>\n",
    "docs/searchindex.js": "Search.setIndex({})\n",
    "mig/__init__.py": '"""Migrations."""\n',
}


def doc_files(cache: Path) -> list[str]:
    return json.loads((cache / "manifest.json").read_text())["doc_files"]


def cli(*args: str) -> str:
    done = run_cli(*args)
    out = (done.stdout + done.stderr).decode()
    print(f"$ doc-index {' '.join(args)} -> {done.returncode}\n{out}")
    assert done.returncode == 0, out
    return out


def test_package_archive_indexes_its_sources_once(pkg_env: Path,  # noqa: F811
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with SimpleIndex() as index:
        index.add("mig", "mig-1.0.0.tar.gz", sdist("mig", "1.0.0", ALEMBIC_LIKE))
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        out = cli("build", "pypi:mig==1.0.0")
    cache = pkg_env / "root" / "mig@1.0.0"
    assert doc_files(cache) == ["README.rst", "_api/mig.md", "docs/build/api/config.rst",
                                "docs/build/cookbook.md", "docs/build/index.rst"]
    assert "  left out: docs/_sources/ (3 files: a Sphinx build's copy of docs/build/, " \
           "indexed)\n" in out
    answer = json.loads(cli("resolve", "mig@1.0.0", "upgrade command migrations"))
    assert [d["source"]["file"] for d in answer["documents"]] == ["docs/build/index.rst"]


def work_tree(base: Path) -> Path:
    """A work tree whose Sphinx docs/ is committed with its HTML build (docs/_build/html/,
    html_sourcelink_suffix = ""), and a hand-written page in docs/_build/ (git decides:
    it is indexed)."""
    tree = write_tree(base / "proj", {
        "README.md": "# Proj\n",
        "docs/conf.py": "project = 'proj'\nhtml_sourcelink_suffix = ''\n",
        **{f"docs/{p}": t for p, t in PAGES.items()},
        **{f"docs/_build/html/_sources/{p}": t for p, t in PAGES.items()},
        "docs/_build/html/index.html": "<html></html>\n",
        "docs/_build/notes.md": "# Build notes\n\nHow the docs are built.\n",
    })
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "docs and their build")
    return tree


def test_git_sources_leave_out_a_tracked_build_copy(env: Path) -> None:
    tree = work_tree(env)
    wanted = ["README.md", "docs/_build/notes.md", "docs/api/config.rst", "docs/cookbook.md",
              "docs/index.rst"]
    line = ("  left out: docs/_build/html/_sources/ (3 files: a Sphinx build's copy of "
            "docs/, indexed)\n")
    out = cli("build", str(tree), "--name", "proj")
    assert line in out and doc_files(env / "root" / "proj") == wanted
    out = cli("build", str(tree), "--all", "--name", "proj-all")
    assert line in out and doc_files(env / "root" / "proj-all") == wanted


def test_git_repository_indexes_a_sphinx_build_folder_not_its_copy(env: Path) -> None:
    """A git URL's tree leaves build folders out by name, but not ``build/`` holding a
    Sphinx conf.py (alembic's, SQLAlchemy's ``doc/build``); the copy beside it is."""
    tree = write_tree(env / "mig", ALEMBIC_LIKE)
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "sources and published HTML")
    bare = env / "bare" / "acme" / "mig.git"
    git(env, "clone", "-q", "--bare", str(tree), str(bare))
    out = cli("build", str(bare))
    assert doc_files(env / "root" / "acme-mig") == [
        "README.rst", "docs/build/api/config.rst", "docs/build/cookbook.md",
        "docs/build/index.rst"]
    assert "  left out: docs/_sources/ (3 files: a Sphinx build's copy of docs/build/, " \
           "indexed)\n" in out


def test_plain_folder_indexes_a_sphinx_build_folder_not_its_copy(env: Path) -> None:
    """Outside git, ``build/`` is skipped by name, but not one holding a Sphinx conf.py
    (alembic's unpacked sdist): its sources are indexed, the copy left out."""
    folder = write_tree(env / "mig-1.0.0", ALEMBIC_LIKE) / "docs"
    out = cli("build", str(folder), "--name", "mig-docs")
    assert doc_files(env / "root" / "mig-docs") == [
        "build/api/config.rst", "build/cookbook.md", "build/index.rst"]
    assert "  left out: _sources/ (3 files: a Sphinx build's copy of build/, indexed)\n" \
        in out


def test_a_copy_without_its_sources_is_indexed(env: Path) -> None:
    """Published HTML alone (no sources beside it): its _sources/ is the only copy."""
    folder = write_tree(env / "html", {f"_sources/{p}": t for p, t in PAGES.items()})
    out = cli("build", str(folder), "--name", "html")
    assert doc_files(env / "root" / "html") == [
        "_sources/api/config.rst", "_sources/cookbook.md", "_sources/index.rst"]
    assert "left out" not in out
