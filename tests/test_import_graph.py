"""The import graph of the library code and bench/: no circle, no private name borrowed,
and every import inside a function says why it waits.

Every import counts as an edge: module level, inside a function, under ``TYPE_CHECKING``.
A circle (a strongly connected component of more than one module) means two modules can
only be read, tested or moved together. A name starting with ``_`` is its module's own:
``from x import _y`` from another module makes it a published name in all but name.
An import inside a function defers loading its module until the call, which a command's
startup can need (tests/test_import_rules.py says which modules a command must never
load); each says why on its line or the line above, ``# lazy: <reason>``; the rest are
at the top of their module.

``python tests/test_import_graph.py DIR`` writes the graph as DOT files (one node per
folder, and one per module) for docs/decisions/.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

from conftest import REPO
from test_layers import (
    COMPATIBILITY_ENTRY_POINTS,
    LAYERS,
    folder_of,
    library_folders,
    library_modules,
)

Modules = dict[str, tuple[str, bool]]


def all_modules() -> Modules:
    """name -> (source, is a package) of the library code and bench/'s modules."""
    modules = library_modules()
    for path in sorted((REPO / "bench").glob("*.py")):
        name = "bench" if path.stem == "__init__" else f"bench.{path.stem}"
        modules[name] = (path.read_text(encoding="utf-8"), path.stem == "__init__")
    return modules


def import_nodes(source: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement of ``source``, and whether it is inside a function."""
    def visit(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom,
                                                                  bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            yield from visit(child, in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    yield from visit(ast.parse(source), False)


def target_of(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module a ``from`` import reads from."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1] if node.level else []
    return ".".join([*base, *([node.module] if node.module else [])])


def edges(modules: Modules) -> dict[str, set[str]]:
    """module -> the modules of ours it imports (``from X import name``: ``X.name`` when
    that is a module, else ``X``)."""
    graph: dict[str, set[str]] = {}
    for name, (source, is_package) in modules.items():
        found: set[str] = set()
        for node, _ in import_nodes(source):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
                continue
            target = target_of(node, name, is_package)
            found |= {f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target
                      for a in node.names}
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def private_imports(modules: Modules) -> list[str]:
    """``importer: from X import _name`` for every private name taken from another module
    of ours."""
    found = []
    for name, (source, is_package) in sorted(modules.items()):
        for node, _ in import_nodes(source):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = target_of(node, name, is_package)
            if target not in modules or target == name:
                continue
            found += [f"{name}: from {target} import {a.name}" for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def unexplained_lazy_imports(modules: Modules) -> list[str]:
    """``module:line`` of every import inside a function without ``# lazy: <reason>`` on
    its first line or the line above it."""
    found = []
    for name, (source, _) in sorted(modules.items()):
        lines = source.splitlines()
        for node, in_function in import_nodes(source):
            if not in_function:
                continue
            here = lines[node.lineno - 1]
            above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
            if "# lazy: " not in here and not above.startswith("# lazy: "):
                found.append(f"{name}:{node.lineno}")
    return found


def test_no_import_circles() -> None:
    modules = all_modules()
    assert any(name.startswith("bench.") for name in modules)
    assert circles(edges(modules)) == []


def test_a_circle_is_found_through_any_import() -> None:
    modules: Modules = {
        "doc_index.store": ("", True),
        "doc_index.store.a": ("from . import b\n", False),
        "doc_index.store.b": ("def f():\n    from .c import x\n", False),
        "doc_index.store.c": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from doc_index.store.a import y\n", False),
        "doc_index.store.d": ("from .a import z\n", False),
        "bench.report": ("from .stages import render\n", False),
        "bench.stages": ("def f():\n    from .report import table\n", False),
    }
    assert circles(edges(modules)) == [
        ["bench.report", "bench.stages"],
        ["doc_index.store.a", "doc_index.store.b", "doc_index.store.c"],
    ]


def test_no_private_name_is_imported_from_another_module() -> None:
    assert private_imports(all_modules()) == []


def test_a_private_import_is_found() -> None:
    modules: Modules = {
        "doc_index.sources.walk": ("def _ignored(): pass\n", False),
        "doc_index.sources.expansion": ("from .walk import SKIPPED, _ignored\n"
                                        "from .walk import __all__\n", False),
        "doc_index.store.raw_files": ("from ..sources.walk import Scan as _Scan\n", False),
    }
    assert private_imports(modules) == [
        "doc_index.sources.expansion: from doc_index.sources.walk import _ignored"]


def test_every_import_inside_a_function_says_why() -> None:
    found = unexplained_lazy_imports(library_modules())
    assert found == [], ("move these to the top of their module, or say why they wait "
                         "(# lazy: <reason>):\n" + "\n".join(found))


def test_an_unexplained_lazy_import_is_found() -> None:
    source = ("import os\n\ndef f():\n    import json  # lazy: json costs 2 ms\n"
              "    # lazy: the parsers load in the parse worker\n"
              "    from markdown_it import (\n        MarkdownIt,\n    )\n"
              "    import yaml\n\n\nclass C:\n    def g(self):\n"
              "        from .x import y  # (no reason)\n")
    assert unexplained_lazy_imports({"doc_index.m": (source, False)}) == [
        "doc_index.m:9", "doc_index.m:14"]


def write_dot(folder: Path) -> None:
    """import-graph-folders.dot (one node per top-level folder, ranked by layer, each
    arrow labelled with its import count) and import-graph-modules.dot."""
    folders = library_folders()
    modules = all_modules()
    graph = edges(modules)

    def group(module: str) -> str:
        return "bench" if module.split(".")[0] == "bench" else folder_of(module, folders) or "?"

    counts: dict[tuple[str, str], int] = {}
    compatibility = {(group(a), group(b)) for a, b in COMPATIBILITY_ENTRY_POINTS.items()}
    for source, targets in graph.items():
        for target in targets:
            pair = (group(source), group(target))
            if pair[0] != pair[1] and COMPATIBILITY_ENTRY_POINTS.get(source) != target:
                counts[pair] = counts.get(pair, 0) + 1
    layers = {**LAYERS, "bench": max(LAYERS.values()) + 1}
    out = ["digraph layers {", "  rankdir=BT; node [shape=box, fontname=Helvetica];"]
    for layer in sorted(set(layers.values())):
        names = " ".join(f'"{n}"' for n in sorted(layers) if layers[n] == layer)
        out.append(f"  {{ rank=same; {names} }}")
    for name in sorted(layers):
        out.append(f'  "{name}" [label="{layers[name]} {name}/"];')
    for (a, b), n in sorted(counts.items()):
        out.append(f'  "{a}" -> "{b}" [label="{n}"];')
    for a, b in sorted(compatibility):  # an old hook's module name starting the runner
        out.append(f'  "{a}" -> "{b}" [style=dashed, color=gray, fontcolor=gray, constraint=false, '
                   'label="old hooks\\nentry point"];')
    out.append("}")
    (folder / "import-graph-folders.dot").write_text("\n".join(out) + "\n", encoding="utf-8")
    out = ["digraph modules {", "  rankdir=BT; node [shape=box, fontname=Helvetica];"]
    by_group: dict[str, list[str]] = {}
    for module in sorted(graph):
        by_group.setdefault(group(module), []).append(module)
    for name, members in sorted(by_group.items()):
        out.append(f'  subgraph "cluster_{name}" {{ label="{name}/";')
        out += [f'    "{m}";' for m in members]
        out.append("  }")
    out += [f'  "{a}" -> "{b}";' for a in sorted(graph) for b in sorted(graph[a])]
    out.append("}")
    (folder / "import-graph-modules.dot").write_text("\n".join(out) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_dot(Path(sys.argv[1]))
