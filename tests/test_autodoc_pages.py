"""Fixture pages expanded as their renderer shows them (includes
inlined, autodoc documented from the source read with ``ast``), byte for byte, with the
span map, the dependencies and the notes; the source is never run, never left."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT

from doc_index.foundation.safe_paths import path_problem
from doc_index.indexer.includes import Dependency, Span
from doc_index.indexer.module_finder import read_sphinx_conf
from doc_index.indexer.page_expand import PageContext, expand_page, make_finder

FIXTURE = Path(__file__).parent / "fixtures" / "autodoc"
PAGES = ["api.rst", "guide.rst", "reference.md", "myst.md", "snippets.md", "book.md",
         "tutorial.md"]


def reader(root: Path, asked: list[str] | None = None):
    """The reader a build gives: repo-relative paths only, no symlinks."""
    def read(path: str) -> bytes | None:
        if asked is not None:
            asked.append(path)
        full = root / path
        if full.is_symlink() or not full.is_file():
            return None
        return full.read_bytes()
    return read


def context(root: Path, asked: list[str] | None = None) -> PageContext:
    read = reader(root, asked)
    conf = read_sphinx_conf(read("docs/conf.py") or b"", "docs/conf.py")
    return PageContext(read, conf, make_finder(read, conf), docs_root="docs",
                       config_dir="docs")


def expand(root: Path, page: str, asked: list[str] | None = None):
    text = (root / "docs" / page).read_text("utf-8")
    return expand_page(text, f"docs/{page}", context(root, asked))


@pytest.mark.parametrize("page", PAGES)
def test_page_expands_exactly(page: str) -> None:
    expected = (FIXTURE / "expected" / f"{page}.txt").read_text("utf-8")
    assert expand(FIXTURE, page).text == expected


def test_spans_cover_the_text_and_name_their_origin() -> None:
    result = expand(FIXTURE, "guide.rst")
    data = result.text.encode("utf-8")
    assert result.spans[0].start == 0 and result.spans[-1].end == len(data)
    for before, after in zip(result.spans, result.spans[1:]):
        assert before.end == after.start
    assert result.spans[:4] == (
        Span(0, 13, "docs/guide.rst", 1, 3),
        Span(13, 73, "docs/parts/intro.rst", 1, 2),
        Span(73, 78, "docs/guide.rst", 5, 6),
        Span(78, 141, "src/shapes/helpers.py", 20, 21),
    )
    piece = data[13:73].decode()
    assert piece == "Shapes are drawn from their radius.\nNothing else is needed.\n"


def test_dependencies_and_notes() -> None:
    result = expand(FIXTURE, "guide.rst")
    statuses = {d.path: d.status for d in result.dependencies}
    assert statuses == {
        "docs/parts/intro.rst": "read", "src/shapes/helpers.py": "read",
        "docs/listings/main.rs": "read", "docs/parts/missing.rst": "not found",
        "docs/parts/cycle_a.rst": "read", "docs/parts/cycle_b.rst": "read"}
    intro = next(d for d in result.dependencies if d.path == "docs/parts/intro.rst")
    assert intro == Dependency("docs/parts/intro.rst", "read", hashlib.sha256(
        (FIXTURE / "docs/parts/intro.rst").read_bytes()).hexdigest())
    assert result.notes == ("[include not found: parts/missing.rst]",
                            "[include outside the source: ../../../../etc/passwd]",
                            "[include refused, cycle: parts/cycle_a.rst]")


def test_autodoc_objects_are_placed_with_their_origin() -> None:
    result = expand(FIXTURE, "api.rst")
    data = result.text.encode("utf-8")
    found = [(o.object.name, o.object.kind, o.object.title, o.level, o.object.file,
              o.object.first_line, o.object.last_line) for o in result.objects]
    assert found == [
        ("shapes.area", "function", "area()", 2, "src/shapes/helpers.py", 6, 17),
        ("shapes.Circle", "class", "Circle", 2, "src/shapes/circle.py", 20, 70),
        ("shapes.Circle.count", "attribute", "Circle.count", 3, "src/shapes/circle.py", 33,
         33),
        ("shapes.Circle.units", "attribute", "Circle.units", 3, "src/shapes/circle.py", 35,
         35),
        ("shapes.Circle.radius", "attribute", "Circle.radius", 3, "src/shapes/circle.py",
         39, 39),
        ("shapes.Circle.diameter", "property", "Circle.diameter", 3,
         "src/shapes/circle.py", 42, 49),
        ("shapes.Circle.scale", "method", "Circle.scale()", 3, "src/shapes/circle.py", 62,
         64),
        ("shapes.ShapeError", "exception", "ShapeError", 2, "src/shapes/circle.py", 8, 9),
        ("shapes.helpers", "module", "", 0, "src/shapes/helpers.py", 1, 1),
        ("shapes.helpers.perimeter", "function", "perimeter()", 3,
         "src/shapes/helpers.py", 20, 33),
        ("shapes.evil.harmless", "function", "harmless()", 2, "src/shapes/evil.py", 8, 9),
    ]
    area = result.objects[0]
    assert data[area.start:area.end].decode().startswith(
        "area()\n~~~~~~\n\n::\n\n   shapes.area(radius: float, *, precision: int = 2)")
    assert result.unresolved == (
        "nowhere: no such object: nowhere in shapes.helpers",
        "shapes.broken.broken: unreadable file src/shapes/broken.py: not valid Python "
        "(line 1): invalid syntax")


def test_no_module_of_the_source_is_imported_or_run(tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(FIXTURE, root)
    marker = root / "src" / "shapes" / "IMPORTED-MARKER"
    for page in PAGES:
        expand(root, page)
    result = expand(root, "api.rst")
    assert "Documented, but the module must not be executed" in result.text
    assert not marker.exists()
    assert not [name for name in sys.modules if name.startswith("shapes")]
    # The marker is what an import would leave: importing the module does write it.
    done = subprocess.run([sys.executable, "-c", "import shapes.evil"], cwd=root / "src",
                          capture_output=True, timeout=SAFETY_TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "imported"


def test_every_path_asked_for_is_inside_the_source() -> None:
    asked: list[str] = []
    for page in PAGES:
        expand(FIXTURE, page, asked)
    assert asked
    assert [p for p in asked if path_problem(p) is not None] == []
    assert "etc/passwd" not in " ".join(asked)
    assert not [p for p in asked if p.startswith("outside")]


def test_a_changed_dependency_changes_the_page(tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(FIXTURE, root)
    before = expand(root, "api.rst")
    helpers = root / "src/shapes/helpers.py"
    helpers.write_text(helpers.read_text().replace("The area of a circle.",
                                                   "The surface of a disc."))
    after = expand(root, "api.rst")
    changed = {d.path for d in set(after.dependencies) - set(before.dependencies)}
    assert changed == {"src/shapes/helpers.py"}
    assert "The surface of a disc." in after.text
