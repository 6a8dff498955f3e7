"""A git repository as a source: legacy objects build and names that escape are skipped,
a repository indexes its documentation (the docs folder a docs tool names, and READMEs),
a URL build fetches one commit and the docs' blobs only, and nothing indexable is an
error that writes nothing.

Real ``doc-index build`` processes on real repositories served by ``file://`` URLs (bare
repositories on disk; ``uploadpack.allowFilter`` set as GitHub and GitLab have it), and on
local folders. HOME, XDG_CACHE_HOME and the cache root live in the test's tmp directory.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from doc_index.indexer.formats import described
from tests.conftest import run_cli, write_tree


def git(cwd: Path, *args: str, input: bytes | None = None, env: dict | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, input=input,
                          check=False, timeout=120, env=env)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr!r}"
    return done.stdout.decode().strip()


def serve(base: Path, files: dict[str, str | bytes], owner: str = "acme",
          name: str = "widgets", allow_filter: bool = True) -> tuple[Path, Path]:
    """An author work tree with one commit of ``files``, pushed to the bare repository
    ``srv/<owner>/<name>.git`` (what a ``file://`` URL serves)."""
    author = base / "author"
    author.mkdir()
    git(author, "init", "-q", "-b", "main")
    write_tree(author, files)
    git(author, "add", "-A")
    git(author, "commit", "-q", "-m", "A")
    bare = base / "srv" / owner / f"{name}.git"
    bare.parent.mkdir(parents=True)
    git(base, "init", "-q", "--bare", "-b", "main", str(bare))
    if allow_filter:
        git(bare, "config", "uploadpack.allowFilter", "true")
    git(author, "push", "-q", str(bare), "main")
    return author, bare


def manifest(cache: Path) -> dict:
    return json.loads((cache / "manifest.json").read_bytes())


def build(*args: str | Path) -> tuple[int, str]:
    done = run_cli("build", *map(str, args))
    return done.returncode, done.stderr.decode()


def only_clone(env: Path) -> Path:
    [clone] = [p for p in (env / "xdg" / "doc-index" / "clones").iterdir()
               if not p.name.startswith(".")]
    return clone


# --- legacy objects build; names that escape are still skipped --------------------------------

def _object(repo: Path, kind: str, data: bytes) -> str:
    """An object written as given (``--literally``: git checks nothing)."""
    return git(repo, "hash-object", "-t", kind, "--literally", "-w", "--stdin", input=data)


def _tree(repo: Path, entries: list[tuple[bytes, bytes, str]]) -> str:
    def order(entry: tuple[bytes, bytes, str]) -> bytes:
        return entry[1] + (b"/" if entry[0].lstrip(b"0") == b"40000" else b"")

    return _object(repo, "tree", b"".join(
        mode + b" " + name + b"\0" + bytes.fromhex(sha)
        for mode, name, sha in sorted(entries, key=order)))


def legacy_repo(base: Path) -> Path:
    """A bare repository whose history holds what git's fsck rejects and real long-lived
    repositories hold: a zero-padded tree mode (``040000``), a bad timezone, an author
    without a space before the e-mail and a malformed e-mail; and, beside good pages,
    entries whose names escape (``../``, a ``.git`` folder)."""
    bare = base / "srv" / "pallets" / "legacy.git"
    bare.parent.mkdir(parents=True)
    git(base, "init", "-q", "--bare", "-b", "main", str(bare))
    blob = lambda text: _object(bare, "blob", text.encode())  # noqa: E731
    guide = blob("# Guide\n\nThe legacy guide explains zeropadded modes.\n")
    readme = blob("# Legacy\n\nAn old project.\n")
    evil = blob("# Evil\n\nMust never be written.\n")
    docs = _tree(bare, [(b"100644", b"guide.md", guide)])
    dotgit = _tree(bare, [(b"100644", b"hooks.md", evil)])
    root = _tree(bare, [
        (b"040000", b"docs", docs),  # zero-padded: fsck's zeroPaddedFilemode
        (b"100644", b"README.md", readme),
        (b"100644", b"../escape.md", evil),
        (b"40000", b".git", dotgit),
    ])
    first = _object(bare, "commit", (
        f"tree {root}\nauthor Old Timer <old@example.com> 1100000000 +05300\n"
        f"committer Old Timer <old@example.com> 1100000000 +05300\n\nbad timezone\n"
    ).encode())
    second = _object(bare, "commit", (
        f"tree {root}\nparent {first}\nauthor Jane<jane@example.com> 1200000000 +0000\n"
        f"committer Joe <joe at example.com 1200000000 +0000\n\nbad e-mail fields\n"
    ).encode())
    git(bare, "update-ref", "refs/heads/main", second)
    return bare


def test_legacy_objects_build_and_escaping_names_are_skipped(env: Path) -> None:
    bare = legacy_repo(env)
    fsck = subprocess.run(["git", "fsck", "--strict"], cwd=bare, capture_output=True)
    assert fsck.returncode != 0  # the fixture holds what fsck rejects
    root = env / "root"
    for _ in range(2):  # and its rebuild
        code, err = build(bare.as_uri(), "--root", root)
        assert code == 0, err
    assert "skipped ../escape.md: file name leaves its directory" in err
    assert "skipped .git/hooks.md: inside a folder named .git" in err
    m = manifest(root / "pallets-legacy")
    assert m["doc_files"] == ["README.md", "docs/guide.md"]
    assert not [p for p in env.rglob("*") if p.name in ("escape.md", "hooks.md")]
    code, err = build(bare.as_uri(), "--root", root, "--all", "--name", "legacy-all")
    assert code == 0 and manifest(root / "legacy-all")["doc_files"] == [
        "README.md", "docs/guide.md"], err


# --- a git source indexes its documentation ---------------------------------------------------

SPHINX_LIKE: dict[str, str | bytes] = {
    "README.rst": "Widgets\n=======\n\nWidgets for everyone.\n",
    "CHANGES.rst": "Changes\n=======\n\nVersion 1.0\n-----------\n\nFirst release.\n",
    "LICENSE": "BSD\n",
    "docs/conf.py": "project = 'widgets'\nextensions = ['sphinx.ext.autodoc']\n",
    "docs/index.rst": "Widgets documentation\n=====================\n\nStart here.\n",
    "docs/usage.rst": "Usage\n=====\n\nCall the widget factory.\n",
    "docs/requirements.txt": "sphinx\n",
    "tests/roots/test-basic/conf.py": "project = 'test'\n",
    "tests/roots/test-basic/index.rst": "Fixture\n=======\n\nA test fixture, not docs.\n",
    "tests/roots/test-ext/index.rst": "Ext fixture\n===========\n\nAnother fixture.\n",
    "tests/test_build.py": "def test(): pass\n",
    ".github/ISSUE_TEMPLATE/bug.md": "---\nname: Bug\n---\n\n# Bug report\n\nDescribe it.\n",
    "sphinx/__init__.py": "",
}


def test_url_indexes_the_docs_folder_and_readmes_only(env: Path) -> None:
    _, bare = serve(env, SPHINX_LIKE)
    root = env / "root"
    code, err = build(bare.as_uri(), "--root", root)
    assert code == 0, err
    m = manifest(root / "acme-widgets")
    assert m["doc_files"] == ["CHANGES.rst", "README.rst", "docs/index.rst", "docs/usage.rst"]
    assert m["source"] == {"kind": "git", "location": bare.as_uri(), "ref": None,
                           "commit": m["commit_hash"]}
    assert ("  docs: docs/ (Sphinx docs/conf.py), plus CHANGES.rst, README.rst; 3 doc files "
            "elsewhere left out") in err
    assert "skipped: 1 .txt (not documentation formats)" in err

    code, err = build(bare.as_uri(), "--root", root, "--all")
    assert code == 0, err
    m = manifest(root / "acme-widgets-all")
    assert "tests/roots/test-basic/index.rst" in m["doc_files"]
    assert ".github/ISSUE_TEMPLATE/bug.md" in m["doc_files"]
    assert m["source"]["select"] == "all"
    assert "  docs: the whole repository (--all)" in err

    code, err = build(f"{bare.as_uri()}#tests/roots", "--root", root)
    assert code == 0, err
    m = manifest(root / "acme-widgets-tests-roots")
    assert m["doc_files"] == ["tests/roots/test-basic/index.rst",
                              "tests/roots/test-ext/index.rst"]
    assert (m["source"]["select"], m["source"]["subdir"]) == ("subdir", "tests/roots")
    assert "  docs: tests/roots/ (#tests/roots in the URL)" in err
    code, err = build(bare.as_uri(), "--root", root, "--subdir", "tests/roots/")
    assert code == 0 and "0 added" in err and "2 unchanged" in err, err  # the same cache

    # two selections never silently share a cache
    code, err = build(bare.as_uri(), "--root", root, "--all", "--name", "acme-widgets")
    assert code == 1 and err.startswith("error: cache 'acme-widgets' holds git "), err
    assert "all files" in err
    code, err = build(f"{bare.as_uri()}#docs", "--root", root, "--subdir", "tests")
    assert code == 1 and "give one" in err, err
    code, err = build(bare.as_uri(), "--root", root, "--subdir", "../x")
    assert code == 1 and "invalid --subdir" in err, err
    code, err = build(bare.as_uri(), "--root", root, "--subdir", "nowhere")
    assert code == 1 and "has no folder nowhere/" in err, err
    assert not (root / "acme-widgets-nowhere").exists()


def test_work_tree_top_indexes_its_docs_and_a_subfolder_everything(env: Path) -> None:
    author, _ = serve(env, SPHINX_LIKE)
    root = env / "root"
    code, err = build(author, "--root", root, "--name", "top")
    assert code == 0, err
    assert manifest(root / "top")["doc_files"] == [
        "CHANGES.rst", "README.rst", "docs/index.rst", "docs/usage.rst"]
    code, err = build(author, "--root", root, "--name", "top-all", "--all")
    assert code == 0 and len(manifest(root / "top-all")["doc_files"]) == 7, err
    code, err = build(author / "tests", "--root", root, "--name", "tests")
    assert code == 0 and len(manifest(root / "tests")["doc_files"]) == 2, err
    assert "docs:" not in err  # a folder the user named: every file, nothing to say
    code, err = build(author, "--root", root, "--name", "roots", "--subdir", "tests/roots")
    assert code == 0 and len(manifest(root / "roots")["doc_files"]) == 2, err


CONFIGS: dict[str, dict[str, str | bytes]] = {
    "mkdocs": {
        "mkdocs.yml": "site_name: W\ndocs_dir: site_src\nmarkdown_extensions:\n"
                      "  - pymdownx.emoji:\n"
                      "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
                      "extra:\n  key: !ENV [HOME, x]\n",
        "site_src/index.md": "# Home\n\nWelcome.\n",
        "docs/other.md": "# Not the docs\n",
    },
    "mkdocs-translated": {  # FastAPI's layout: one site per language under docs/
        "docs/en/mkdocs.yml": "site_name: W\n",
        "docs/en/docs/index.md": "# Home\n\nWelcome.\n",
        "docs/de/mkdocs.yml": "site_name: W\n",
        "docs/de/docs/index.md": "# Start\n\nWillkommen.\n",
    },
    "mdbook": {
        "book.toml": "[book]\ntitle = 'B'\nsrc = 'book-src'\n",
        "book-src/SUMMARY.md": "# Summary\n\n- [Intro](intro.md)\n",
        "book-src/intro.md": "# Intro\n\nHello.\n",
        "src/main.md": "# Not the book\n",
    },
    "docusaurus": {
        "website/docusaurus.config.js": "module.exports = {title: 'W'};\n",
        "website/docs/intro.md": "# Intro\n\nHello.\n",
        "website/blog/post.md": "# Post\n",
    },
    "vitepress": {
        "docs/.vitepress/config.mts": "export default {}\n",
        "docs/guide.md": "# Guide\n\nHello.\n",
        "packages/x/notes.md": "# Notes\n",
    },
    "none": {
        "guide/start.md": "# Start\n\nHello.\n",
        "tests/fixture.md": "# Fixture\n",
        ".github/PULL_REQUEST_TEMPLATE.md": "# PR\n",
    },
}
CHOSEN = {
    "mkdocs": ("site_src/ (MkDocs mkdocs.yml docs_dir)", ["README.md", "site_src/index.md"]),
    "mkdocs-translated": ("docs/en/docs/ (MkDocs docs/en/mkdocs.yml docs_dir)",
                          ["README.md", "docs/en/docs/index.md"]),
    "mdbook": ("book-src/ (mdBook book.toml src)",
               ["README.md", "book-src/SUMMARY.md", "book-src/intro.md"]),
    "docusaurus": ("website/docs/ (Docusaurus website/docusaurus.config.js)",
                   ["README.md", "website/docs/intro.md"]),
    "vitepress": ("docs/ (VitePress docs/.vitepress)", ["README.md", "docs/guide.md"]),
    "none": ("the whole repository but hidden and test folders (no docs folder found",
             ["README.md", "guide/start.md"]),
}


@pytest.mark.parametrize("tool", sorted(CONFIGS))
def test_each_docs_tool_names_its_folder(env: Path, tool: str) -> None:
    _, bare = serve(env, {"README.md": "# W\n\nRead me.\n", **CONFIGS[tool]})
    root = env / "root"
    code, err = build(bare.as_uri(), "--root", root)
    assert code == 0, err
    why, files = CHOSEN[tool]
    assert f"  docs: {why}" in err
    assert manifest(root / "acme-widgets")["doc_files"] == files


def test_config_files_are_read_as_data_never_run(env: Path) -> None:
    marker = env / "ran"
    _, bare = serve(env, {
        "docs/conf.py": f"open({str(marker)!r}, 'w').write('x')\nsource_suffix = '.txt'\n",
        "docs/index.txt": "Index\n=====\n\nDjango-like docs written as RST in .txt.\n",
        "mkdocs.yml": f"docs_dir: !!python/object/apply:os.system ['touch {marker}']\n",
        "docs/page.md": "# Page\n",
    })
    root = env / "root"
    code, err = build(bare.as_uri(), "--root", root)
    assert code == 0, err
    assert not marker.exists()
    m = manifest(root / "acme-widgets")
    assert m["doc_files"] == ["docs/index.txt", "docs/page.md"]
    assert [s["title"] for s in m["sections"] if s["file"] == "docs/index.txt"] == ["Index"]


# --- a URL build fetches what the ref needs ---------------------------------------------------

def _present(clone: Path, sha: str) -> bool:
    env = {**os.environ, "GIT_NO_LAZY_FETCH": "1"}
    done = subprocess.run(["git", "--git-dir", str(clone), "cat-file", "-e", sha],
                          capture_output=True, env=env, check=False)
    return done.returncode == 0


def test_url_build_fetches_one_commit_and_the_docs_blobs_only(env: Path) -> None:
    big = os.urandom(64 * 1024).hex()
    author, bare = serve(env, {**SPHINX_LIKE, "tests/data.txt": big})
    first = git(author, "rev-parse", "HEAD")
    write_tree(author, {"docs/usage.rst": "Usage\n=====\n\nCall the widget factory twice.\n",
                        "tests/roots/test-ext/index.rst": "Changed\n=======\n\nFixture.\n"})
    git(author, "commit", "-q", "-am", "B")
    git(author, "push", "-q", str(bare), "main")
    root = env / "root"
    code, err = build(bare.as_uri(), "--root", root)
    assert code == 0, err
    clone = only_clone(env)
    assert git(clone, "rev-parse", "--is-shallow-repository") == "true"
    assert not _present(clone, first)  # history is not fetched
    head = git(author, "rev-parse", "HEAD")
    assert _present(clone, git(author, "rev-parse", "HEAD:docs/usage.rst"))
    assert not _present(clone, git(author, "rev-parse", "HEAD:tests/data.txt"))
    assert not _present(clone, git(author, "rev-parse", "HEAD:tests/roots/test-ext/index.rst"))
    assert manifest(root / "acme-widgets")["commit_hash"] == head

    # the ref moves: the new commit is fetched the same way, unchanged files are not read
    write_tree(author, {"docs/index.rst": "Widgets documentation\n=====================\n\n"
                                          "Start here, again.\n"})
    git(author, "commit", "-q", "-am", "C")
    git(author, "push", "-q", str(bare), "main")
    code, err = build(bare.as_uri(), "--root", root)
    assert code == 0, err
    assert "files: 0 added, 1 changed, 0 removed, 3 unchanged" in err
    assert manifest(root / "acme-widgets")["commit_hash"] == git(author, "rev-parse", "HEAD")
    assert not _present(clone, git(author, "rev-parse", "HEAD:tests/data.txt"))

    # --ref: a tag, a branch, a full commit id (served by id: protocol v2)
    git(author, "tag", "v1", first)
    git(author, "branch", "stable", first)
    git(author, "push", "-q", str(bare), "v1", "stable")
    for ref in ("v1", "stable", first):
        code, err = build(bare.as_uri(), "--root", root, "--ref", ref)
        assert code == 0, err
        assert "fetch:" not in err
        name = "acme-widgets@" + ref
        assert manifest(root / name)["commit_hash"] == first
        assert manifest(root / name)["source"]["ref"] == ref
    code, err = build(bare.as_uri(), "--root", root, "--ref", "nosuchref")
    assert code == 6 and err.startswith("error: ref not found: nosuchref in file://"), err


def test_a_commit_the_server_does_not_give_by_id_is_found_and_said(env: Path) -> None:
    author, bare = serve(env, SPHINX_LIKE)
    first = git(author, "rev-parse", "HEAD")
    write_tree(author, {"docs/usage.rst": "Usage\n=====\n\nChanged.\n"})
    git(author, "commit", "-q", "-am", "B")
    git(author, "push", "-q", str(bare), "main")
    # protocol v0, as an older server speaks: a commit is served by id only if allowed
    (env / "home" / ".gitconfig").write_text("[protocol]\n\tversion = 0\n")
    root = env / "root"
    for ref, why in ((first, "the server does not give a commit by its id "
                             "(uploadpack.allowReachableSHA1InWant)"),
                     (first[:10], "an abbreviated commit id cannot be fetched by itself")):
        code, err = build(bare.as_uri(), "--root", root, "--ref", ref)
        assert code == 0, err
        assert f"  fetch: {ref} is no branch or tag and {why}: fetched every branch" in err
        if ref == first:  # (the clone holds every file since)
            assert "  fetch: the server does not give files by their id: fetched the " \
                   "commit again with every file" in err
        assert manifest(root / f"acme-widgets@{ref}")["commit_hash"] == first


# --- silent non-results -----------------------------------------------------------------------

def test_nothing_to_index_is_an_error_and_writes_nothing(env: Path) -> None:
    root = env / "root"
    empty = env / "empty"
    empty.mkdir()
    code, err = build(empty, "--root", root)
    assert code == 1, err
    # (the registered formats, as tests/test_format_registry.py checks the list is said)
    formats = described()
    assert err == f"error: nothing to index in {empty}: no {formats} file\n"
    other = write_tree(env / "other", {
        "a.txt": "x", "b.txt": "y", "c.org": "* C", "d.qmd": "# D", "_sources/e.rst.txt": "E",
        "f.py": "",
    })
    code, err = build(other, "--root", root)
    assert code == 1, err
    assert err == (f"error: nothing to index in {other}: no {formats} file; skipped: 2 .txt, "
                   "1 .org, 1 .qmd, 1 .rst.txt (not documentation formats)\n")
    _, bare = serve(env, {"notes.txt": "plain text\n", "src/x.py": ""})
    code, err = build(bare.as_uri(), "--root", root)
    assert code == 1 and err.startswith(f"error: nothing to index in {bare.as_uri()} at "), err
    assert "skipped: 1 .txt" in err
    assert not root.exists() or not [p for p in root.iterdir() if p.name != ".doc-index-tmp"]


def test_skipped_kinds_are_counted_and_sphinx_txt_is_rst(env: Path) -> None:
    root = env / "root"
    folder = write_tree(env / "proj", {
        "guide.md": "# Guide\n\nHello.\n", "notes.txt": "x", "a.org": "* A", "b.org": "* B",
    })
    code, err = build(folder, "--root", root)
    assert code == 0, err
    assert "  skipped: 2 .org, 1 .txt (not documentation formats)\n" in err
    django = write_tree(env / "django" / "docs", {
        "conf.py": "source_suffix = '.txt'\n",
        "index.txt": "Django documentation\n====================\n\nEverything.\n",
        "topics/http.txt": "HTTP\n====\n\nRequests and responses.\n",
    })
    code, err = build(django, "--root", root)
    assert code == 0, err
    m = manifest(root / "local-django-docs")
    assert m["doc_files"] == ["index.txt", "topics/http.txt"]
    assert [s["title"] for s in m["sections"]] == ["Django documentation", "HTTP"]


def test_ref_on_a_local_folder_is_a_usage_error(env: Path) -> None:
    folder = write_tree(env / "proj", {"guide.md": "# Guide\n"})
    code, err = build(folder, "--root", env / "root", "--ref", "main")
    assert code == 1, err
    assert err.startswith("error: --ref applies to a git URL or a bare repository, not to "
                          f"the local folder {folder}")
    assert not (env / "root").exists()
