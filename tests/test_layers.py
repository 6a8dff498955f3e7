"""The layers of the library code, and that its imports only run downhill.

    doors       cli, build_command, render/, hook_runner, demo, fast_exit, server/
    library     doc_index (the package), library, missing_cache, hooks, mcp_config
    search      search/ (ranking, packing, v0 selection, the tools)
    store       store/ (the cache format, the build, the sources)
    indexer     indexer/ (source text -> sections)    embedding   embedding/
    foundation  doc_index/foundation/ (errors, printable, redact, safe_paths, strict_json)

Each layer imports only the layers below it (``ALLOWED``); embedding sits beside the
indexer (store embeds, search fuses; it needs only the foundation). hooks.py and
mcp_config.py hold what ``DocIndex.install_hooks`` / ``mcp_config`` do (they import only
foundation and store); their door is the CLI. Every import counts, the ones inside a
function or under ``TYPE_CHECKING`` too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

# Folders as installed (pyproject's package-dir).
PACKAGE_DIRS = {"doc_index": "doc_index", "indexer": "doc_index.indexer",
                "store": "doc_index.store", "search": "doc_index.search",
                "server": "doc_index.server", "embedding": "doc_index.embedding"}

LIBRARY = {"doc_index", "doc_index.library", "doc_index.meaning_build", "doc_index.meaning_status",
           "doc_index.missing_cache", "doc_index.hooks", "doc_index.mcp_config"}
DOORS = {"doc_index.cli", "doc_index.build_command", "doc_index.sync_command",
         "doc_index.hook_runner", "doc_index.demo", "doc_index.fast_exit"}
PREFIXES = (("doc_index.foundation", "foundation"), ("doc_index.indexer", "indexer"),
            ("doc_index.embedding", "embedding"), ("doc_index.store", "store"),
            ("doc_index.search", "search"), ("doc_index.render", "doors"),
            ("doc_index.server", "doors"))

BELOW_STORE = {"foundation", "indexer", "embedding"}
ALLOWED = {
    "foundation": {"foundation"},
    "indexer": {"foundation", "indexer"},
    "embedding": {"foundation", "embedding"},
    "store": BELOW_STORE | {"store"},
    "search": BELOW_STORE | {"store", "search"},
    "library": BELOW_STORE | {"store", "search", "library"},
    "doors": BELOW_STORE | {"store", "search", "library", "doors"},
}

# The imports that run uphill on purpose: (importer, imported) -> why.
UPHILL_ON_PURPOSE = {
    ("doc_index.library", "doc_index.server.mcp_server"):
        "DocIndex.serve runs the MCP server: the one door the library starts",
    ("doc_index.store.git_hooks", "doc_index.hook_runner"):
        "the hook runner's old name, which hooks installed by an earlier doc-index run",
}


def layer_of(module: str) -> str | None:
    if module in LIBRARY:
        return "library"
    if module in DOORS:
        return "doors"
    for prefix, layer in PREFIXES:
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return None


def module_name(path: Path) -> tuple[str, bool]:
    """The installed name of the module at ``path`` (relative to the repo), and whether
    it is a package's ``__init__``."""
    top, *rest = path.with_suffix("").parts
    is_package = rest[-1] == "__init__"
    parts = rest[:-1] if is_package else rest
    return ".".join([PACKAGE_DIRS[top], *parts]), is_package


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
    modules = {}
    for folder in PACKAGE_DIRS:
        for path in sorted((REPO / folder).rglob("*.py")):
            name, is_package = module_name(path.relative_to(REPO))
            modules[name] = (path.read_text(encoding="utf-8"), is_package)
    return modules


def uphill(modules: dict[str, tuple[str, bool]]) -> list[str]:
    """``importer (layer) -> imported (layer)`` of every import that runs uphill."""
    known = set(modules)
    bad = []
    for name, (source, is_package) in sorted(modules.items()):
        mine = layer_of(name)
        for target in imports_of(source, name, is_package, known):
            theirs = layer_of(target)
            if theirs not in ALLOWED[mine or "foundation"] and (
                    name, target) not in UPHILL_ON_PURPOSE:
                bad.append(f"{name} ({mine}) -> {target} ({theirs})")
    return bad


def test_every_module_has_a_layer() -> None:
    modules = library_modules()
    assert len(modules) > 100  # the folders are where this test thinks
    assert [name for name in modules if layer_of(name) is None] == []


def test_imports_only_run_downhill() -> None:
    assert uphill(library_modules()) == []


def test_an_uphill_import_is_found_wherever_it_is() -> None:
    modules = {
        "doc_index.store": ("", True),
        "doc_index.store.sources": ("", True),
        "doc_index.search.tools": ("", False),
        "doc_index.server.mcp_server": ("", False),
        "doc_index.indexer.module_finder": (
            "def f():\n    from ..store.sources import walk\n", False),
        "doc_index.store.sources.walk": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from ...search import tools\n", False),
        "doc_index.foundation.errors": ("import doc_index.server.mcp_server\n", False),
        "doc_index.search.ranking": ("from .. import tools\nfrom ..tools import x\n", True),
    }
    assert uphill(modules) == [
        "doc_index.foundation.errors (foundation) -> doc_index.server.mcp_server (doors)",
        "doc_index.indexer.module_finder (indexer) -> doc_index.store.sources.walk (store)",
        "doc_index.store.sources.walk (store) -> doc_index.search.tools (search)",
    ]
