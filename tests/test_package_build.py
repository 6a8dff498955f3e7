"""``doc-index build pypi:NAME==VERSION`` / ``npm:NAME@VERSION``: real ``doc-index``
subprocesses against a PEP 503/691 index and an npm registry on 127.0.0.1
(tests/package_servers.py), and bare git repositories on disk for the repository fallback
(reached as git's own ``url.<base>.insteadOf`` mirror of the https URL the package names).
"""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest
from conftest import caches_only, run_cli
from package_servers import (
    Member,
    NpmRegistry,
    SimpleIndex,
    file,
    gzip_bomb,
    npm_tarball,
    sdist,
    sha256,
    tar_archive,
)

WIDGET_FILES = {
    "README.md": "# Widget\n\nWidget makes retries easy.\n",
    "CHANGES.rst": "Changes\n=======\n\n1.2.0\n-----\n\nAdded backoff.\n",
    "docs/conf.py": "project = 'widget'\n",
    "docs/index.rst": "Widget\n======\n\nConfigure the backoff factor.\n",
    "docs/api.rst": "API\n===\n\n.. automodule:: widget.core\n",
    "src/widget/__init__.py": '"""Widget."""\nfrom .core import retry\n',
    "src/widget/core.py": '"""Retries."""\n\ndef retry(n):\n    """Retry n times."""\n',
    "src/widget/_impl.py": '"""Private."""\n',
    "src/widget/sub/__init__.py": '"""A public subpackage."""\n',
    "tests/test_core.py": "def test(): pass\n",
    "tests/README.md": "# not indexed\n",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout.strip()


@pytest.fixture
def pkg_env(env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``env`` plus an installer configuration that reads nothing of this machine's (a
    test sets ``PIP_INDEX_URL`` and ``UV_DEFAULT_INDEX``: a project with a uv.lock is
    read with uv's configuration)."""
    for name in list(os.environ):
        if name.upper().startswith(("PIP_", "UV_", "NPM_CONFIG_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("UV_NO_CONFIG", "1")
    # No test reaches the network: anything but 127.0.0.1 goes to a proxy that is not there.
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    monkeypatch.chdir(env)
    return env


def cli(*args: str) -> tuple[int, str]:
    done = run_cli(*args)
    print(f"$ doc-index {' '.join(args)} -> {done.returncode}")
    print((done.stdout + done.stderr).decode())
    return done.returncode, (done.stdout + done.stderr).decode()


def manifest(cache: Path) -> dict:
    return json.loads((cache / "manifest.json").read_text())


def test_pypi_build_indexes_docs_readmes_and_api_pages(pkg_env: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    data = sdist("Widget", "1.2.0", WIDGET_FILES)
    with SimpleIndex() as index:
        index.add("widget", "widget-1.2.0.tar.gz", data)
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        code, out = cli("build", "pypi:Widget==1.2")
        assert code == 0, out
        cache = pkg_env / "root" / "widget@1.2"
        files = sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file())
        assert [f for f in files if not f.startswith(("manifest", "search"))] == [
            "CHANGES.rst", "README.md", "_api/widget.core.md", "_api/widget.sub.md",
            "docs/api.rst", "docs/index.rst"]
        # The API pages hold the archive's docstrings (autodoc, read with ast), as does the
        # docs folder's automodule page.
        core = (cache / "_api/widget.core.md").read_text()
        assert core.startswith("# widget.core\n\nRetries.\n") and "Retry n times." in core
        assert "A public subpackage." in (cache / "_api/widget.sub.md").read_text()
        assert "Retries." in (cache / "docs/api.rst").read_text()  # no :members:
        assert "autodoc: 3 documented (4 objects), 0 not found" in out
        source = manifest(cache)["source"]
        assert source["kind"] == "pypi" and source["package"] == "widget"
        assert source["ref"] == "1.2" and source["version"] == "1.2"
        assert source["index"] == index.index_url and source["archive"] == "widget-1.2.0.tar.gz"
        assert source["archive_sha256"] == sha256(data) == manifest(cache)["commit_hash"]
        assert source["archive_hash"] == f"sha256:{sha256(data)}"
        assert "docs: docs/ (Sphinx docs/conf.py), plus CHANGES.rst, README.md: from the " \
               "archive" in out
        assert "api: 2 pages under _api/" in out and "widget.core, widget.sub" in out
        assert f"widget-1.2.0.tar.gz from {index.index_url} (sha256 verified)" in out
        code, again = cli("build", "pypi:widget==1.2")
        assert code == 0 and "widget@1.2: up to date" in again and "6 unchanged" in again
        code, listing = cli("inspect", "widget@1.2")
        assert code == 0 and f"PyPI package widget (index {index.index_url})" in listing
        code, answer = cli("resolve", "widget@1.2", "backoff factor")
        assert code == 0 and "backoff factor" in answer
        code, answer = cli("resolve", "widget@1.2", "retry n times")
        assert code == 0 and "Retry n times." in answer and "src/widget/core.py" in answer


def test_npm_scoped_build(pkg_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = npm_tarball({"package.json": json.dumps({"name": "@acme/gizmo", "version": "2.0.1"}),
                        "README.md": "# Gizmo\n\nGizmo spins.\n",
                        "docs/guide.md": "# Guide\n\nSpin it twice.\n",
                        "index.js": "module.exports = 1\n"})
    with NpmRegistry() as registry:
        registry.add("@acme/gizmo", "2.0.1", data)
        monkeypatch.setenv("npm_config_registry", registry.url)
        code, out = cli("build", "npm:@acme/gizmo@v2.0.1")
        assert code == 0, out
        cache = pkg_env / "root" / "@acme+gizmo@2.0.1"
        assert (cache / "docs/guide.md").is_file() and (cache / "README.md").is_file()
        assert not (cache / "_api").exists()
        source = manifest(cache)["source"]
        assert (source["kind"], source["package"], source["ref"]) == ("npm", "@acme/gizmo",
                                                                      "2.0.1")
        assert "(sha512 verified)" in out


def test_wrong_hash_is_refused_with_nothing_written(pkg_env: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    with SimpleIndex() as index:
        index.add("widget", "widget-1.2.0.tar.gz", sdist("widget", "1.2.0", WIDGET_FILES),
                  digest="wrong")
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        done = run_cli("build", "pypi:widget==1.2.0")
    err = done.stderr.decode()
    assert done.returncode == 6 and err.startswith("error: ") and err.count("\n") == 1, err
    assert "sha256" in err and "Traceback" not in err
    assert not (pkg_env / "root").exists() or caches_only(pkg_env / "root") == []


def test_hostile_archive_members_are_skipped_and_named(pkg_env: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    top = "evil-1.0"
    data = sdist("evil", "1.0", {"README.md": "# Evil\n\nHarmless text.\n"}, extra=[
        file(f"{top}/../escape.md", "# out\n"),
        file("/abs/docs/x.md", "# abs\n"),
        Member(f"{top}/docs/link.md", kind=tarfile.SYMTYPE, link="/etc/passwd"),
        file(f"{top}/docs/ok.md", "# OK\n\nFine.\n"),
    ])
    with SimpleIndex() as index:
        index.add("evil", "evil-1.0.tar.gz", data)
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        code, out = cli("build", "pypi:evil==1.0")
    assert code == 0, out
    cache = pkg_env / "root" / "evil@1.0"
    assert sorted(p.name for p in (cache / "docs").iterdir()) == ["ok.md"]
    assert "skipped" in out and "link.md" in out and "escape.md" in out
    assert not (pkg_env / "escape.md").exists() and not (pkg_env / "root/escape.md").exists()


def test_gzip_bomb_is_refused(pkg_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with SimpleIndex() as index:
        index.add("bomb", "bomb-1.0.tar.gz", gzip_bomb(400 << 20))
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        done = run_cli("build", "pypi:bomb==1.0")
    err = done.stderr.decode()
    assert done.returncode == 6 and err.startswith("error: ") and "Traceback" not in err, err
    assert "bomb-1.0.tar.gz" in err and "decompression bomb" in err, err
    assert not (pkg_env / "root" / "bomb@1.0").exists()


@pytest.mark.parametrize(("spec", "words"), [
    ("pypi:flask", "pypi:NAME==VERSION"),
    ("pypi:flask>=3", "pypi:NAME==VERSION"),
    ("pypi:flask==three", "PEP 440"),
    ("npm:react", "npm:NAME@VERSION"),
    ("npm:react@^18", "npm:NAME@VERSION"),
])
def test_bad_specs_are_usage_errors(pkg_env: Path, spec: str, words: str) -> None:
    done = run_cli("build", spec)
    err = done.stderr.decode()
    assert done.returncode == 1 and err.startswith("error: ") and words in err, err


def test_git_options_do_not_apply_to_packages(pkg_env: Path) -> None:
    done = run_cli("build", "pypi:flask==3.1.0", "--ref", "3.1.0")
    assert done.returncode == 1 and "--ref does not apply to a package" in done.stderr.decode()


def test_missing_package_names_the_index(pkg_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with SimpleIndex() as index:
        index.add("widget", "widget-1.2.0.tar.gz", sdist("widget", "1.2.0", WIDGET_FILES))
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        done = run_cli("build", "pypi:widget==9.9")
    err = done.stderr.decode()
    assert done.returncode != 0 and "no source distribution of widget==9.9" in err, err
    assert index.index_url in err


# --- the repository fallback ----------------------------------------------------------


NO_DOCS = {"README.md": "# Gadget\n\nThe short README.\n",
           "gadget/__init__.py": '"""Gadget."""\n', "gadget/_client.py": '"""Client."""\n'}


def make_mirror(base: Path, tags: dict[str, dict[str, str]]) -> Path:
    """``<base>/mirror/acme/gadget`` (bare) with one commit per tag; the user's git config
    (HOME) maps ``https://github.com/`` to ``<base>/mirror/``."""
    author = base / "author"
    author.mkdir()
    git(author, "init", "-q", "-b", "main")
    for tag, files in tags.items():
        for rel, text in files.items():
            (author / rel).parent.mkdir(parents=True, exist_ok=True)
            (author / rel).write_text(text)
        git(author, "add", "-A")
        git(author, "commit", "-q", "-m", tag)
        git(author, "tag", tag)
    bare = base / "mirror" / "acme" / "gadget"
    bare.parent.mkdir(parents=True)
    git(base, "clone", "-q", "--bare", str(author), str(bare))
    return bare


def insteadof(home: Path, target: str) -> None:
    (home / ".gitconfig").write_text(f'[url "{target}"]\n\tinsteadOf = https://github.com/\n')


def gadget_sdist() -> bytes:
    pkg_info = ("Metadata-Version: 2.1\nName: gadget\nVersion: 0.3.0\n"
                "Project-URL: Source, https://github.com/acme/gadget\n")
    return tar_archive([file("gadget-0.3.0/PKG-INFO", pkg_info),
                        *(file(f"gadget-0.3.0/{p}", d) for p, d in NO_DOCS.items())])


def test_repository_fallback_at_the_version_tag(pkg_env: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    bare = make_mirror(pkg_env, {
        "v0.2.0": {"docs/index.md": "# Old\n\nOld docs.\n", "README.md": "# repo readme\n"},
        "v0.3.0": {"docs/index.md": "# Gadget docs\n\nUse the pooled client.\n"},
        "v0.4.0": {"docs/index.md": "# Newer\n\nNot this one.\n"},
    })
    insteadof(pkg_env / "home", f"file://{bare.parent.parent}/")
    with SimpleIndex() as index:
        index.add("gadget", "gadget-0.3.0.tar.gz", gadget_sdist())
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        code, out = cli("build", "pypi:gadget==0.3.0")
    assert code == 0, out
    cache = pkg_env / "root" / "gadget@0.3.0"
    assert (cache / "docs/index.md").read_text() == "# Gadget docs\n\nUse the pooled client.\n"
    assert (cache / "README.md").read_text() == NO_DOCS["README.md"]  # the archive's copy
    assert (cache / "_api/gadget.md").read_text() == "# gadget\n\nGadget.\n\n"  # its docstring
    commit = git(bare, "rev-parse", "v0.3.0^{commit}")
    repository = manifest(cache)["source"]["repository"]
    assert repository == {"url": "https://github.com/acme/gadget", "tag": "v0.3.0",
                          "commit": commit, "why": "tag v0.3.0: the version", "reached": True}
    assert manifest(cache)["source"]["commit"] == commit
    assert (manifest(cache)["source"]["docs_from"], manifest(cache)["source"]["docs_note"]) \
        == ("repository", None)
    assert "docs: no docs folder in the archive; its README-like files: README.md" in out
    assert f"repository: https://github.com/acme/gadget at tag v0.3.0: the version " \
           f"(commit {commit[:12]}): docs docs/ (a folder named docs), 1 file" in out
    assert "skipped" not in out.split("files:")[1]


def test_unreachable_repository_is_reported_not_fatal(pkg_env: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    insteadof(pkg_env / "home", f"file://{pkg_env}/nowhere/")
    with SimpleIndex() as index:
        index.add("gadget", "gadget-0.3.0.tar.gz", gadget_sdist())
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        code, out = cli("build", "pypi:gadget==0.3.0")
    assert code == 0, out
    cache = pkg_env / "root" / "gadget@0.3.0"
    assert sorted(p.name for p in cache.iterdir() if p.suffix == ".md") == ["README.md"]
    assert (cache / "_api/gadget.md").is_file()
    assert "repository: https://github.com/acme/gadget unavailable: " in out
    source = manifest(cache)["source"]
    assert source["repository"]["url"] == "https://github.com/acme/gadget"
    assert source["repository"]["reached"] is False and source["commit"] is None
    assert source["docs_note"] == "docs repository not reached: README and API pages only"
