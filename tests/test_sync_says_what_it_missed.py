"""``sync``, ``list`` and ``inspect`` say what a package's cache could not get: a
docs repository that was not reached, or no docs folder anywhere, is said per
package and counted in ``done:``; the source record and ``list`` never present a
repository the docs did not come from.

Real ``doc-index`` subprocesses; an index on 127.0.0.1 (tests/package_servers.py); the
packages' ``https://github.com/...`` repositories are git's own ``insteadOf`` rewrites:
two to bare repositories on disk, every other one to a dead port on 127.0.0.1 (what an
offline machine, or one that cannot reach github.com, meets).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli, write_tree
from package_servers import SimpleIndex, file, sdist, tar_archive
from test_package_build import WIDGET_FILES, git, pkg_env  # noqa: F401 (a fixture)

NOT_REACHED = "docs repository not reached: README and API pages only"


def no_docs_sdist(name: str, version: str, repository: str | None) -> bytes:
    """An sdist with a README and one import package, no docs folder; its PKG-INFO names
    ``repository`` as its source."""
    top = f"{name}-{version}"
    pkg_info = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    if repository:
        pkg_info += f"Project-URL: Source, {repository}\n"
    return tar_archive([file(f"{top}/PKG-INFO", pkg_info),
                        file(f"{top}/README.md", f"# {name}\n\nThe short README.\n"),
                        file(f"{top}/{name}/__init__.py", f'"""{name}."""\n')])


def mirror(base: Path, name: str, tag: str, files: dict[str, str]) -> Path:
    """A bare repository ``<base>/mirror/acme/<name>`` with one commit, tagged ``tag``."""
    author = write_tree(base / f"author-{name}", files)
    git(author, "init", "-q", "-b", "main")
    git(author, "add", "-A")
    git(author, "commit", "-q", "-m", tag)
    git(author, "tag", tag)
    bare = base / "mirror" / "acme" / name
    bare.parent.mkdir(parents=True, exist_ok=True)
    git(base, "clone", "-q", "--bare", str(author), str(bare))
    return bare


def cli(*args: str) -> tuple[int, str, str]:
    done = run_cli(*args)
    out, err = done.stdout.decode(), done.stderr.decode()
    print(f"$ doc-index {' '.join(args)} -> {done.returncode}\n{out}{err}")
    return done.returncode, out, err


@pytest.fixture
def project(pkg_env: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: F811
    """A project pinning five packages: ``widget`` (docs folder in its archive),
    ``gizmo`` (docs in its repository at the tag), ``doohickey`` (a repository without
    docs), ``gadget`` (a repository that cannot be reached), ``plain`` (none named)."""
    mirror(pkg_env, "gizmo", "v2.0.0", {"docs/index.md": "# Gizmo docs\n\nTurn it on.\n"})
    mirror(pkg_env, "doohickey", "1.0.0", {"README.md": "# doohickey\n"})
    base = f"file://{pkg_env}/mirror/acme/"
    (pkg_env / "home" / ".gitconfig").write_text(
        '[url "http://127.0.0.1:9/"]\n\tinsteadOf = https://github.com/\n'
        f'[url "{base}gizmo"]\n\tinsteadOf = https://github.com/acme/gizmo\n'
        f'[url "{base}doohickey"]\n\tinsteadOf = https://github.com/acme/doohickey\n')
    with SimpleIndex() as index:
        index.add("widget", "widget-1.2.0.tar.gz", sdist("widget", "1.2.0", WIDGET_FILES))
        for name, version, repository in [
                ("gizmo", "2.0.0", "https://github.com/acme/gizmo"),
                ("doohickey", "1.0.0", "https://github.com/acme/doohickey"),
                ("gadget", "0.3.0", "https://github.com/acme/gadget"),
                ("plain", "1.0.0", None)]:
            index.add(name, f"{name}-{version}.tar.gz",
                      no_docs_sdist(name, version, repository))
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        yield write_tree(pkg_env / "proj", {"requirements.txt": (
            "widget==1.2.0\ngizmo==2.0.0\ndoohickey==1.0.0\ngadget==0.3.0\nplain==1.0.0\n")}), \
            index.index_url


MEANING_OFF = ("meaning: off: turned off by DOC_INDEX_SEMANTIC=off (unset it to answer by "
               "meaning too)")


def test_sync_list_and_inspect_say_what_was_not_got(project: tuple[Path, str]) -> None:
    folder, index = project
    code, out, err = cli("sync", str(folder))
    assert code == 0, err
    assert out.splitlines()[1:] == [
        f"  pypi packages from {index} (pip's configuration, PIP_INDEX_URL: the only "
        "installer configured)",
        "  built      doohickey@1.0.0  (2 files, 2 sections; no docs folder in the archive "
        "or the docs repository: README and API pages only)",
        f"  built      gadget@0.3.0     (2 files, 2 sections; {NOT_REACHED})",
        "  built      gizmo@2.0.0      (3 files, 3 sections)",
        "  built      plain@1.0.0      (2 files, 2 sections; no docs folder in the archive "
        "and no docs repository named: README and API pages only)",
        "  built      widget@1.2.0     (6 files, 8 sections)",
        "done: 5 built (3 without a docs folder: 1 docs repository not reached)",
        MEANING_OFF,  # (the suite turns answers by meaning off)
    ]
    # A second sync keeps them, and says again what they lack.
    code, out, err = cli("sync", str(folder))
    assert code == 0, err
    assert f"  kept       gadget@0.3.0     (cached at this version; {NOT_REACHED})" in out
    assert "  kept       gizmo@2.0.0      (cached at this version)\n" in out
    assert out.endswith("done: 5 kept (3 without a docs folder: 1 docs repository not "
                        f"reached)\n{MEANING_OFF}\n")

    code, listing, _ = cli("list")
    rows = {line.split()[0]: line for line in listing.splitlines()[1:]}
    assert f"PyPI package gadget (index {index}, {NOT_REACHED})" in rows["gadget@0.3.0"]
    assert "github.com" not in rows["gadget@0.3.0"]  # not as if its docs came from there
    assert f"PyPI package gizmo (index {index}, repository https://github.com/acme/gizmo)" \
        in rows["gizmo@2.0.0"]
    assert f"PyPI package widget (index {index})" in rows["widget@1.2.0"]

    caches = {c["name"]: c["source"] for c in json.loads(cli("list", "--json")[1])["caches"]}
    gadget = caches["gadget@0.3.0"]
    assert (gadget["docs_from"], gadget["docs_note"], gadget["commit"]) == (
        None, NOT_REACHED, None)
    assert gadget["repository"]["url"] == "https://github.com/acme/gadget"
    assert gadget["repository"]["reached"] is False and gadget["repository"]["commit"] is None
    assert "127.0.0.1" in gadget["repository"]["why"]  # git's cause, the rewritten URL's
    assert (caches["gizmo@2.0.0"]["docs_from"], caches["gizmo@2.0.0"]["docs_note"],
            caches["gizmo@2.0.0"]["repository"]["reached"]) == ("repository", None, True)
    assert caches["doohickey@1.0.0"]["repository"]["reached"] is True
    assert caches["widget@1.2.0"]["docs_from"] == "archive"
    assert "repository" not in caches["plain@1.0.0"]
    assert json.loads(cli("inspect", "gadget@0.3.0", "--json")[1])["source"] == gadget

    code, shown, _ = cli("inspect", "gadget@0.3.0")
    [docs] = [line for line in shown.splitlines() if line.startswith("docs:")]
    assert docs.startswith(f"docs:          {NOT_REACHED}; cannot reach "
                           "https://github.com/acme/gadget: ")
    code, shown, _ = cli("inspect", "gizmo@2.0.0")
    commit = git(folder.parent / "mirror/acme/gizmo", "rev-parse", "v2.0.0^{commit}")
    assert (f"docs:          the docs folder of https://github.com/acme/gizmo at tag v2.0.0 "
            f"(commit {commit[:12]})\n") in shown
    code, shown, _ = cli("inspect", "widget@1.2.0")
    assert "docs:          the archive's docs folder\n" in shown
