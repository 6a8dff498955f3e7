"""The folders are the layers, and imports only run downhill.

Each top-level folder of the library code is one layer; bottom to top:

    0  foundation   errors, printable, redact, safe_paths, strict_json, cache names
    1  indexer      source text -> sections (formats, include forms, autodoc)
    1  embedding    the optional model (beside the indexer)
    2  sources      where text comes from (walk, git, packages, lockfiles) and
                    sources/snapshot.py, what a source hands the store
    3  store        the cache format and the build
    4  search       ranking, packing, the typed operations
    5  doc_index    the library: DocIndex and the features composing the layers below
                    (build, sync, hooks, mcp_config, meaning_build)
    6  cli, render, server   the doors (render: the renderers the doors share; the CLI
                    starts the server: ``doc-index serve``)

A module imports only folders of a lower layer and its own folder; the doors may use
render (``SHARED``); the store sees of the sources only what they publish for it
(``PUBLISHED``). Every import counts, the ones inside a function or under
``TYPE_CHECKING`` too: a lazy import is still a dependency. The folders come from
pyproject's ``package-dir`` (the one list; the Makefile's typecheck and
tests/test_code_shape.py read it too), so a new folder without a row here fails.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from conftest import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

LAYERS = {"foundation": 0, "indexer": 1, "embedding": 1, "sources": 2, "store": 3,
          "search": 4, "doc_index": 5, "cli": 6, "render": 6, "server": 6}
# Doors other doors use: the renderers they share, and the MCP server ``doc-index serve``
# starts (folder -> the folders that may import it).
SHARED = {"render": {"cli", "server"}, "server": {"cli"}}
# What the store may import from the sources: the input type of a build, and the include
# expansion the build's workers run over a source's files.
PUBLISHED = {("store", "sources"): {"doc_index.sources", "doc_index.sources.snapshot",
                                    "doc_index.sources.expansion"}}
# Entry points kept for hooks an earlier doc-index installed (they run ``python -I -m
# NAME``): each only starts the hook runner, a door, so it may import it.
COMPATIBILITY_ENTRY_POINTS = {
    "doc_index.store.git_hooks": "doc_index.cli.hook_runner",
    "doc_index.hook_runner": "doc_index.cli.hook_runner",
}


def package_dirs() -> dict[str, str]:
    """installed package -> folder, from pyproject.toml."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(config["tool"]["setuptools"]["package-dir"])


def library_folders() -> dict[str, str]:
    """top-level folder -> its installed package (``doc_index.X`` for folder X)."""
    return {folder: package for package, folder in package_dirs().items() if "/" not in folder}


def folder_of(module: str, folders: dict[str, str]) -> str | None:
    """The top-level folder holding the installed module ``module``."""
    best = None
    for folder, package in folders.items():
        if (module == package or module.startswith(package + ".")) and (
                best is None or len(package) > len(folders[best])):
            best = folder
    return best


def module_name(path: Path, folders: dict[str, str]) -> tuple[str, bool]:
    """The installed name of the module at ``path`` (relative to the repo), and whether
    it is a package's ``__init__``."""
    top, *rest = path.with_suffix("").parts
    is_package = rest[-1] == "__init__"
    parts = rest[:-1] if is_package else rest
    return ".".join([folders[top], *parts]), is_package


def imports_of(source: str, module: str, is_package: bool, known: set[str]) -> list[str]:
    """The modules of ours that ``source`` imports (``from X import name`` counts as
    ``X.name`` when that is a module)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append(sub if sub in known else target)
    return [name for name in found if name == "doc_index" or name.startswith("doc_index.")]


def library_modules() -> dict[str, tuple[str, bool]]:
    """name -> (source, is a package) of every module of the library code."""
    folders = library_folders()
    modules = {}
    for folder in folders:
        for path in sorted((REPO / folder).rglob("*.py")):
            name, is_package = module_name(path.relative_to(REPO), folders)
            modules[name] = (path.read_text(encoding="utf-8"), is_package)
    return modules


def allowed(mine: str, theirs: str, target: str) -> bool:
    """Whether a module of folder ``mine`` may import ``target`` of folder ``theirs``."""
    if (mine, theirs) in PUBLISHED:
        return target in PUBLISHED[mine, theirs]
    return (theirs == mine or LAYERS[theirs] < LAYERS[mine]
            or mine in SHARED.get(theirs, set()))


def uphill(modules: dict[str, tuple[str, bool]], folders: dict[str, str]) -> list[str]:
    """``importer (folder) -> imported (folder)`` of every import against the rules."""
    known = set(modules)
    bad = []
    for name, (source, is_package) in sorted(modules.items()):
        mine = folder_of(name, folders)
        assert mine is not None, name
        for target in imports_of(source, name, is_package, known):
            theirs = folder_of(target, folders)
            assert theirs is not None, target
            if not allowed(mine, theirs, target) and \
                    COMPATIBILITY_ENTRY_POINTS.get(name) != target:
                bad.append(f"{name} ({mine}) -> {target} ({theirs})")
    return bad


def test_every_folder_is_a_layer() -> None:
    """Every top-level folder holding library code has a row, and pyproject, the layers
    and the installed names agree (folder X installs as ``doc_index.X``, the library as
    ``doc_index``: the Makefile's typecheck links the folders so)."""
    folders = library_folders()
    assert set(folders) == set(LAYERS)
    assert all(package == ("doc_index" if folder == "doc_index" else f"doc_index.{folder}")
               for folder, package in folders.items())
    python_folders = {path.parent.name for path in REPO.glob("*/__init__.py")}
    assert python_folders - {"bench", "tests"} == set(LAYERS)


def test_every_package_is_installed() -> None:
    """pyproject's ``packages`` names every folder with an ``__init__.py`` (a missing one
    installs without its modules)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    packages = set(config["tool"]["setuptools"]["packages"])
    folders = library_folders()
    found = {module_name(init.relative_to(REPO), folders)[0]
             for folder in folders for init in (REPO / folder).rglob("__init__.py")}
    assert found == packages


def test_every_module_has_a_layer() -> None:
    modules = library_modules()
    assert len(modules) > 100  # the folders are where this test thinks
    folders = library_folders()
    assert [name for name in modules if folder_of(name, folders) is None] == []


def test_imports_only_run_downhill() -> None:
    assert uphill(library_modules(), library_folders()) == []


def test_compatibility_entry_points_only_start_the_runner() -> None:
    modules = library_modules()
    for name, target in COMPATIBILITY_ENTRY_POINTS.items():
        source, is_package = modules[name]
        assert imports_of(source, name, is_package, set(modules)) == [target]


def test_an_uphill_import_is_found_wherever_it_is() -> None:
    folders = library_folders()
    modules = {
        "doc_index.store": ("", True),
        "doc_index.sources": ("", True),
        "doc_index.search.tools": ("", False),
        "doc_index.server.mcp_server": ("", False),
        "doc_index.store.index_store": ("from ..sources.walk import Scan\n"
                                        "from ..sources.snapshot import Scan\n", False),
        "doc_index.indexer.module_finder": (
            "def f():\n    from ..sources import walk\n", False),
        "doc_index.sources.walk": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from ..search import tools\n", False),
        "doc_index.foundation.errors": ("import doc_index.server.mcp_server\n", False),
        "doc_index.search.ranking": ("from .. import tools\nfrom ..tools import x\n", True),
        "doc_index.server.mcp_tools": ("from ..render import answer_text\n", False),
        "doc_index.server.context_cli": ("from ..cli import command\n", False),
    }
    assert uphill(modules, folders) == [
        "doc_index.foundation.errors (foundation) -> doc_index.server.mcp_server (server)",
        "doc_index.indexer.module_finder (indexer) -> doc_index.sources.walk (sources)",
        "doc_index.server.context_cli (server) -> doc_index.cli (cli)",
        "doc_index.sources.walk (sources) -> doc_index.search.tools (search)",
        "doc_index.store.index_store (store) -> doc_index.sources.walk (sources)",
    ]
