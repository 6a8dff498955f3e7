"""A package published from a monorepo: ``doc-index build npm:...``/``pypi:...`` as real
subprocesses against the registries of tests/package_servers.py on 127.0.0.1 and a bare
monorepo on disk, reached as git's ``url.<base>.insteadOf`` mirror of the https URL the
package names (docs/packages.md, "A package of a monorepo").

The monorepo ``acme/widgets`` keeps its guides at the top (``docs/``, split by framework
under ``docs/framework/``) and its packages under ``packages/`` (npm) and ``python/``
(PyPI); only ``widgets-cli`` and ``gizmo`` have a docs folder of their own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from package_servers import NpmRegistry, SimpleIndex, file, npm_tarball, tar_archive
from test_package_build import cli, git, insteadof, manifest, pkg_env  # noqa: F401 (a fixture)

REACT_README = "# react-widgets\n\nReact bindings for widgets.\n"
MONOREPO = {
    "README.md": "# Widgets monorepo\n\nEvery widget package lives here.\n",
    "CONTRIBUTING.md": "# Contributing\n\nRun the tests with pnpm.\n",
    "docs/index.md": "# Widgets\n\nStart with the widget registry.\n",
    "docs/reference/registry.md": "# Registry\n\nThe registry keeps every widget by name.\n",
    "docs/framework/react/guide.md": "# React guide\n\nCall useWidget inside a component.\n",
    "docs/framework/react/hooks.md": "# Hooks\n\nuseWidget returns the widget state.\n",
    "docs/framework/vue/guide.md": "# Vue guide\n\nSee the React guide; call useWidget in "
                                   "setup.\n",
    "docs/framework/core/cache.md": "# Cache\n\nThe shared cache evicts after gcTime.\n",
    "packages/react-widgets/package.json": '{"name": "@acme/react-widgets"}\n',
    "packages/react-widgets/README.md": REACT_README,
    "packages/vue-widgets/package.json": '{"name": "@acme/vue-widgets"}\n',
    "packages/vue-widgets/README.md": "# vue-widgets\n\nVue bindings.\n",
    "packages/widgets-core/package.json": '{"name": "@acme/widgets-core"}\n',
    "packages/widgets-cli/package.json": '{"name": "@acme/widgets-cli"}\n',
    "packages/widgets-cli/README.md": "# widgets-cli\n\nThe command line.\n",
    "packages/widgets-cli/docs/usage.md": "# Usage\n\nRun widgets serve --port 8080.\n",
    "python/gizmo/pyproject.toml": "[project]\nname = 'gizmo'\n",
    "python/gizmo/docs/index.md": "# Gizmo\n\nGizmo talks to the widget registry.\n",
    "python/gizmo/gizmo/__init__.py": '"""Gizmo."""\n',
}


def make_monorepo(base: Path, files: dict[str, str] = MONOREPO, name: str = "widgets") -> Path:
    """``<base>/mirror/acme/<name>`` (bare), tag ``v1.0.0``, reached through the user's
    git configuration as ``https://github.com/acme/<name>``."""
    author = base / f"author-{name}"
    author.mkdir()
    git(author, "init", "-q", "-b", "main")
    for rel, text in files.items():
        (author / rel).parent.mkdir(parents=True, exist_ok=True)
        (author / rel).write_text(text)
    git(author, "add", "-A")
    git(author, "commit", "-q", "-m", "v1.0.0")
    git(author, "tag", "v1.0.0")
    bare = base / "mirror" / "acme" / name
    bare.parent.mkdir(parents=True, exist_ok=True)
    git(base, "clone", "-q", "--bare", str(author), str(bare))
    insteadof(base / "home", f"file://{base}/mirror/")
    return bare


@pytest.fixture
def mono(pkg_env: Path) -> Path:  # noqa: F811 (the fixture)
    """``pkg_env`` with the ``acme/widgets`` monorepo reachable."""
    make_monorepo(pkg_env)
    return pkg_env


def npm_package(name: str, folder: str, readme: str | None,
                dependencies: dict[str, str] | None = None, repo: str = "widgets") -> bytes:
    package = {"name": name, "version": "1.0.0", "dependencies": dependencies or {},
               "repository": {"type": "git", "url": f"git+https://github.com/acme/{repo}.git",
                              "directory": folder}}
    files = {"package.json": json.dumps(package), "index.js": "module.exports = {}\n"}
    if readme is not None:
        files["README.md"] = readme
    return npm_tarball(files)


def build_npm(env: Path, monkeypatch: pytest.MonkeyPatch, name: str,
              data: bytes) -> tuple[int, str, Path]:
    with NpmRegistry() as registry:
        registry.add(name, "1.0.0", data)
        monkeypatch.setenv("npm_config_registry", registry.url)
        code, out = cli("build", f"npm:{name}@1.0.0")
    return code, out, env / "root" / f"{name.replace('/', '+')}@1.0.0"


def indexed(cache: Path) -> set[str]:
    return {s["file"] for s in manifest(cache)["sections"]}


def test_package_folder_without_docs_takes_the_root_docs_less_other_frameworks(
        mono: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, cache = build_npm(mono, monkeypatch, "@acme/react-widgets", npm_package(
        "@acme/react-widgets", "packages/react-widgets", REACT_README,
        {"@acme/widgets-core": "1.0.0"}))
    assert code == 0, out
    # The root's docs folder and README-like files; the package's README once (the
    # archive's copy); Vue's pages left out, the shared core's (a dependency) kept.
    assert indexed(cache) == {"README.md", "CONTRIBUTING.md", "docs/index.md",
                              "docs/reference/registry.md", "docs/framework/react/guide.md",
                              "docs/framework/react/hooks.md", "docs/framework/core/cache.md"}
    assert (cache / "README.md").read_text() == REACT_README
    assert "docs docs/ (the repository's root: a folder named docs; the package's folder " \
           "packages/react-widgets has none), 6 files\n" in out
    assert "  left out: docs/framework/vue/ (1 file: other packages' pages)\n" in out
    source = manifest(cache)["source"]
    assert (source["docs_from"], source["docs_note"]) == ("repository", None)
    repository = source["repository"]
    assert (repository["tag"], repository["directory"], repository["docs"],
            repository["left_out"]) == ("v1.0.0", "packages/react-widgets", "docs/",
                                        ["docs/framework/vue/"])
    code, shown = cli("inspect", "@acme+react-widgets@1.0.0")
    assert code == 0 and "docs/ of https://github.com/acme/widgets at tag v1.0.0 (commit " \
        in shown and "1 folder of other packages left out" in shown, shown
    code, answer = cli("resolve", "@acme+react-widgets@1.0.0", "when does the cache evict")
    assert code == 0 and "evicts after gcTime" in answer


def test_a_smaller_framework_folder_keeps_the_pages_it_leans_on(
        mono: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """vue/ holds fewer pages than react/ (TanStack Query's Vue pages borrow the React
    ones): nothing is left out, the React guide stays."""
    code, out, cache = build_npm(mono, monkeypatch, "@acme/vue-widgets", npm_package(
        "@acme/vue-widgets", "packages/vue-widgets", "# vue-widgets\n\nVue bindings.\n"))
    assert code == 0, out
    assert {"docs/framework/vue/guide.md", "docs/framework/react/guide.md",
            "docs/framework/core/cache.md"} <= indexed(cache)
    assert "left out:" not in out and "left_out" not in manifest(cache)["source"]["repository"]


def test_package_folder_with_its_own_docs_folder_keeps_to_it(
        mono: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, cache = build_npm(mono, monkeypatch, "@acme/widgets-cli", npm_package(
        "@acme/widgets-cli", "packages/widgets-cli", None))  # (no README in the tarball)
    assert code == 0, out
    assert indexed(cache) == {"packages/widgets-cli/docs/usage.md",
                              "packages/widgets-cli/README.md"}
    assert "docs packages/widgets-cli/docs/ (the package's folder: a folder named docs)" in out
    assert manifest(cache)["source"]["repository"]["docs"] == "packages/widgets-cli/docs/"


def test_pypi_package_named_by_a_folder_url_of_its_monorepo(
        mono: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyPI has no ``directory``: a project URL of a folder of the repository names it."""
    pkg_info = ("Metadata-Version: 2.1\nName: gizmo\nVersion: 1.0.0\n"
                "Project-URL: Homepage, https://github.com/acme/widgets/tree/main/python/gizmo\n"
                "Project-URL: Source, https://github.com/acme/widgets\n")
    data = tar_archive([file("gizmo-1.0.0/PKG-INFO", pkg_info),
                        file("gizmo-1.0.0/README.md", "# gizmo\n\nThe Python client.\n"),
                        file("gizmo-1.0.0/gizmo/__init__.py", '"""Gizmo."""\n')])
    with SimpleIndex() as index:
        index.add("gizmo", "gizmo-1.0.0.tar.gz", data)
        monkeypatch.setenv("PIP_INDEX_URL", index.index_url)
        code, out = cli("build", "pypi:gizmo==1.0.0")
    assert code == 0, out
    cache = mono / "root" / "gizmo@1.0.0"
    assert indexed(cache) == {"README.md", "_api/gizmo.md", "python/gizmo/docs/index.md"}
    assert manifest(cache)["source"]["repository"]["directory"] == "python/gizmo"


def test_no_docs_folder_in_the_package_or_at_the_root_is_said_not_doubled(
        mono: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The package's folder holds only what the tarball publishes: its README is indexed
    once (it was twice, once per path), and the note says no docs folder was found."""
    readme = "# tiny\n\nTiny does one thing.\n"
    make_monorepo(mono, {"README.md": "# The tiny monorepo\n", "packages/tiny/README.md":
                            readme, "packages/tiny/package.json": '{"name": "tiny"}\n'},
                  name="tiny")
    code, out, cache = build_npm(mono, monkeypatch, "tiny", npm_package(
        "tiny", "packages/tiny", readme, repo="tiny"))
    assert code == 0, out
    assert indexed(cache) == {"README.md"}
    source = manifest(cache)["source"]
    assert (source["docs_from"], source["docs_note"]) == (
        None, "no docs folder in the archive or the docs repository: README only")


def test_package_split_rules() -> None:
    from doc_index.sources.docs_folder import package_split, package_words

    assert {"react", "query", "react-query", "tanstack"} <= package_words(
        "@tanstack/react-query")
    assert "aiohttp-client" in package_words("opentelemetry-instrumentation-aiohttp-client")
    tree = frozenset({"docs/framework/react/a.md", "docs/framework/vue/a.md",
                      "docs/framework/extras/a.md", "docs/framework/svelte/a.md",
                      "packages/react-query/package.json", "packages/vue-query/package.json",
                      "packages/query-core/package.json", "packages/svelte-query/README.md"})
    # vue is another package's word; extras names no package; svelte-query has no
    # manifest (not a package of the workspace): only vue/ is left out.
    assert package_split(tree, "docs/", "packages/react-query", "@t/react-query") == (
        "docs/framework/vue/",)
    # query-core has no folder of its own there: nothing splits for it.
    assert package_split(tree, "docs/", "packages/query-core", "@t/query-core") == ()
