"""Includes and autodoc in the build: ``doc-index build`` expands pages (includes inlined, autodoc
written in from the source read with ``ast``), records where each section's text came
from, and re-parses a page when a file it includes or documents changes, and only then.

The fixture set (``tests/fixtures/autodoc``) is copied into a real git work tree with the
docs tools' configuration that enables every form (Sphinx with MyST, MkDocs with
mkdocstrings, snippets and FastAPI's includes, mdBook), then built by a real
``doc-index build`` subprocess; git sources are real bare repositories reached by
``file://`` URLs, served without blobs (``--filter=blob:none``) as GitHub does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SAFETY_TIMEOUT, run_cli

FIXTURE = Path(__file__).parent / "fixtures" / "autodoc"
CONFIG = {
    "docs/mkdocs.yml": "site_name: shapes\nplugins:\n  - mkdocstrings\nmarkdown_extensions:\n"
                       "  - pymdownx.snippets\n  - markdown_include_variants\n  - mdx_include\n",
    "docs/book.toml": "[book]\nsrc = \".\"\n",
}
EXPANDED = ["api.rst", "guide.rst", "reference.md", "myst.md", "snippets.md", "book.md",
            "tutorial.md"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True, timeout=SAFETY_TIMEOUT).stdout


def project(base: Path) -> Path:
    """The fixture set as a committed git work tree, configured for every form."""
    work = base / "shapes"
    shutil.copytree(FIXTURE, work, ignore=shutil.ignore_patterns("expected", "__pycache__"))
    for rel, text in CONFIG.items():
        (work / rel).write_text(text)
    conf = work / "docs" / "conf.py"
    conf.write_text(conf.read_text() + 'extensions = ["sphinx.ext.autodoc", "myst_parser"]\n')
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "shapes")
    return work


def build(source: str, root: Path, *args: str) -> list[str]:
    done = run_cli("--root", str(root), "build", source, *args)
    assert done.returncode == 0, done.stderr.decode()
    return done.stderr.decode().splitlines()


def manifest(cache: Path) -> dict:
    return json.loads((cache / "manifest.json").read_bytes())


def sections(cache: Path, page: str) -> list[tuple[str, str, int, list | None]]:
    return [(s["id"], s["title"], s["depth"], s.get("origins"))
            for s in manifest(cache)["sections"] if s["file"] == page]


@pytest.fixture
def built(env: Path) -> tuple[Path, Path, list[str]]:
    """(work tree, cache, summary lines) of ``doc-index build shapes/docs``."""
    work = project(env)
    root = env / "root"
    lines = build(str(work / "docs"), root)
    return work, root / "local-shapes-docs", lines


def test_pages_are_stored_as_rendered(built: tuple[Path, Path, list[str]]) -> None:
    """Each page's raw file is the expansion the pre-work fixed byte for byte."""
    _, cache, _ = built
    for page in EXPANDED:
        expected = (FIXTURE / "expected" / f"{page}.txt").read_bytes()
        assert (cache / page).read_bytes() == expected, page


def test_autodoc_sections_and_their_origins(built: tuple[Path, Path, list[str]]) -> None:
    _, cache, _ = built
    helpers, circle = "../src/shapes/helpers.py", "../src/shapes/circle.py"
    assert sections(cache, "api.rst") == [
        ("api-api", "API", 1, None),
        ("api-area", "area()", 2, [{"file": helpers, "lines": [6, 17]},
                                   {"file": "api.rst", "lines": [7, 7]}]),
        ("api-circle", "Circle", 2, [{"file": circle, "lines": [20, 70]}]),
        ("api-circlecount", "Circle.count", 3, [{"file": circle, "lines": [33, 33]}]),
        ("api-circleunits", "Circle.units", 3, [{"file": circle, "lines": [35, 35]}]),
        ("api-circleradius", "Circle.radius", 3, [{"file": circle, "lines": [39, 39]}]),
        ("api-circlediameter", "Circle.diameter", 3,  # the property and its setter
         [{"file": circle, "lines": [42, 49]}]),
        ("api-circlescale", "Circle.scale()", 3, [{"file": circle, "lines": [62, 64]},
                                                  {"file": "api.rst", "lines": [13, 13]}]),
        ("api-shapeerror", "ShapeError", 2, [{"file": circle, "lines": [8, 9]},
                                             {"file": "api.rst", "lines": [15, 15]},
                                             {"file": helpers, "lines": [1, 1]}]),
        ("api-perimeter", "perimeter()", 3, [{"file": helpers, "lines": [20, 33]},
                                             {"file": "api.rst", "lines": [18, 20]}]),
        ("api-harmless", "harmless()", 2, [{"file": "../src/shapes/evil.py", "lines": [8, 9]},
                                           {"file": "api.rst", "lines": [22, 28]}]),
    ]


def test_include_forms_sections(built: tuple[Path, Path, list[str]]) -> None:
    _, cache, _ = built
    assert sections(cache, "guide.rst") == [
        ("guide-guide", "Guide", 1, [
            {"file": "guide.rst", "lines": [1, 24]},
            {"file": "parts/intro.rst", "lines": [1, 2]},
            {"file": "../src/shapes/helpers.py", "lines": [20, 21]},
            {"file": "listings/main.rs", "lines": [5, 6]},
            {"file": "parts/cycle_a.rst", "lines": [1, 2]},
            {"file": "parts/cycle_b.rst", "lines": [1, 3]}]),
    ]
    text = (cache / "guide.rst").read_text()
    assert "[include not found: parts/missing.rst]" in text
    assert "[include outside the source: ../../../../etc/passwd]" in text
    assert "[include refused, cycle: parts/cycle_a.rst]" in text
    tutorial = (cache / "tutorial.md").read_text()
    assert "```python\n# Code above omitted" in tutorial  # FastAPI's {* *} with ln[3:4]
    origins = {o["file"] for s in manifest(cache)["sections"] if s["file"] == "tutorial.md"
               for o in s.get("origins") or []}
    assert "../docs_src/tutorial001.py" in origins


def test_summary_counts(built: tuple[Path, Path, list[str]]) -> None:
    _, _, lines = built
    assert lines[1:5] == [
        "  files: 11 added, 0 changed, 0 removed, 0 unchanged, 0 skipped",
        "  autodoc: 7 documented (16 objects), 2 not found: 1 no such object; "
        "1 unreadable file src/shapes/broken.py",
        # (parts/cycle_a.rst, a page too, includes parts/cycle_b.rst from its own folder)
        "  includes: 18 inlined, 7 left as notes: 5 not found; 1 outside the source; "
        "1 refused, cycle",
        "  sections: 25 (1210 tokens)"], lines


def test_the_documented_source_is_never_imported(built: tuple[Path, Path, list[str]]) -> None:
    """``evil.py`` writes a marker file when imported: it is documented, never run."""
    work, cache, _ = built
    assert "Documented, but the module must not be executed" in (cache / "api.rst").read_text()
    assert not list(work.rglob("IMPORTED-MARKER"))
    assert not list(work.rglob("__pycache__"))


def test_resolve_names_the_page_and_the_source(built: tuple[Path, Path, list[str]],
                                               env: Path) -> None:
    done = run_cli("--root", str(env / "root"), "resolve", "local-shapes-docs",
                   "perimeter of a circle", "--budget", "2000")
    assert done.returncode == 0, done.stderr.decode()
    documents = json.loads(done.stdout)["documents"]
    first = next(d for d in documents if d["id"] == "api-perimeter")
    assert first["source"]["file"] == "api.rst"
    assert first["source"]["origins"] == [
        {"file": "../src/shapes/helpers.py", "lines": [20, 33]},
        {"file": "api.rst", "lines": [18, 20]}]
    assert "The perimeter of a circle" in first["content"]
    plain = [d for d in documents if "origins" not in d["source"]]
    assert all(list(d["source"]) == ["file", "title", "path", "lines"] for d in plain)


def test_rebuild_reparses_only_pages_whose_inputs_changed(
        built: tuple[Path, Path, list[str]], env: Path) -> None:
    work, cache, _ = built
    root = env / "root"
    assert "  files: 0 added, 0 changed, 0 removed, 11 unchanged, 0 skipped" in build(
        str(work / "docs"), root)
    # An included file only: the pages that include it (guide.rst, book.md, snippets.md).
    listing = work / "docs" / "listings" / "main.rs"
    listing.write_text(listing.read_text().replace('"Guess the number!"', '"Guess!"'))
    lines = build(str(work / "docs"), root)
    assert "  files: 0 added, 3 changed, 0 removed, 8 unchanged, 0 skipped" in lines, lines
    assert 'println!("Guess!");' in (cache / "guide.rst").read_text()
    # A docstring: the pages that document or include that module (api.rst, guide.rst,
    # myst.md, reference.md).
    helpers = work / "src" / "shapes" / "helpers.py"
    helpers.write_text(helpers.read_text().replace("The area of a circle.",
                                                   "The area of a round circle."))
    lines = build(str(work / "docs"), root)
    assert "  files: 0 added, 4 changed, 0 removed, 7 unchanged, 0 skipped" in lines, lines
    assert "The area of a round circle." in (cache / "api.rst").read_text()
    # The rebuilt cache is the full build's, byte for byte (but indexed_at).
    fresh = env / "fresh"
    build(str(work / "docs"), fresh, "--full")
    for name in ("api.rst", "guide.rst", "search.idx"):
        assert (cache / name).read_bytes() == (fresh / "local-shapes-docs" / name).read_bytes()
    old, new = manifest(cache), manifest(fresh / "local-shapes-docs")
    old["indexed_at"] = new["indexed_at"] = ""
    assert old == new


def test_a_new_module_file_is_a_change(built: tuple[Path, Path, list[str]],
                                       env: Path) -> None:
    """A file looked for and not found is a dependency too: creating it re-parses."""
    work, cache, _ = built
    assert "[autodoc not found: nowhere: no such object" in (cache / "api.rst").read_text()
    assert manifest(cache)["dependencies"]["api.rst"]["../src/nowhere.py"] is None
    (work / "src" / "nowhere.py").write_text('"""Now it is there."""\n')
    git(work, "add", "src/nowhere.py")
    lines = build(str(work / "docs"), env / "root")
    assert "  files: 0 added, 1 changed, 0 removed, 10 unchanged, 0 skipped" in lines, lines
    assert "Now it is there." in (cache / "api.rst").read_text()


def test_a_docs_configuration_change_reparses_every_page(env: Path) -> None:
    """Pages carried from a build whose configuration expanded them otherwise would keep
    the old text: a mkdocs.yml that now names the snippets extension re-parses them all,
    and the cache is the full build's."""
    work = project(env)
    mkdocs = work / "docs" / "mkdocs.yml"
    mkdocs.write_text(CONFIG["docs/mkdocs.yml"].replace("  - pymdownx.snippets\n", ""))
    root = env / "root"
    build(str(work / "docs"), root)
    cache = root / "local-shapes-docs"
    assert "--8<--" in (cache / "snippets.md").read_text()  # not expanded without it
    mkdocs.write_text(CONFIG["docs/mkdocs.yml"])
    lines = build(str(work / "docs"), root)
    assert "  files: 0 added, 11 changed, 0 removed, 0 unchanged, 0 skipped" in lines, lines
    fresh = env / "fresh"
    build(str(work / "docs"), fresh, "--full")
    assert (cache / "snippets.md").read_bytes() == \
        (fresh / "local-shapes-docs" / "snippets.md").read_bytes()
    old, new = manifest(cache), manifest(fresh / "local-shapes-docs")
    old["indexed_at"] = new["indexed_at"] = ""
    assert old == new


def test_git_source_blob_none_and_pull(env: Path) -> None:
    """A git build reads modules from the commit's tree, fetching blobs it lacks (the
    clone is partial); the next commit re-parses only the page documenting the change."""
    work = project(env)
    bare = env / "srv" / "acme" / "shapes.git"
    bare.parent.mkdir(parents=True)
    git(env, "init", "-q", "--bare", "-b", "main", str(bare))
    git(bare, "config", "uploadpack.allowFilter", "true")
    git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    git(work, "push", "-q", str(bare), "main")
    root = env / "root"
    lines = build(bare.as_uri(), root)
    cache = root / "acme-shapes"
    assert "The area of a circle." in (cache / "docs" / "api.rst").read_text(), lines
    clone = next((env / "xdg" / "doc-index" / "clones").iterdir())
    assert git(clone, "config", "remote.origin.promisor").strip() == "true"  # partial
    perimeter = next(s for s in manifest(cache)["sections"] if s["id"] == "api-perimeter")
    assert perimeter["origins"][0] == {"file": "src/shapes/helpers.py", "lines": [20, 33]}
    helpers = work / "src" / "shapes" / "helpers.py"
    helpers.write_text(helpers.read_text().replace("The area of a circle.",
                                                   "The area of a round circle."))
    git(work, "commit", "-q", "-am", "docstring")
    git(work, "push", "-q", str(bare), "main")
    lines = build(bare.as_uri(), root)
    assert "  files: 0 added, 4 changed, 0 removed, 7 unchanged, 0 skipped" in lines, lines
    assert "The area of a round circle." in (cache / "docs" / "api.rst").read_text()


def test_the_forms_are_the_expansions() -> None:
    from doc_index.indexer.includes import FORMS
    from doc_index.sources import expansion

    assert expansion.FORMS == FORMS


def test_the_parse_cache_key_holds_each_dependency_hash(tmp_path: Path) -> None:
    """An expanded page is taken from the parse cache only with the dependencies it was
    expanded with: a changed (or new) file is a miss, its old hash a hit again."""
    from doc_index.indexer.document import index_file
    from doc_index.indexer.model import PageStats
    from doc_index.store.parse_cache import ParseCache

    (tmp_path / "root").mkdir()
    cache = ParseCache(tmp_path / "root")
    assert cache.fd >= 0
    parsed = index_file("a.rst", b"A\n=\n\nfrom x.py\n")
    parsed = parsed._replace(
        sections=[s._replace(origins=(("x.py", 1, 1),)) for s in parsed.sections],
        dependencies=(("x.py", "h1"), ("y.py", None)), expansion=PageStats(1, 2, (), 0, ()))
    cache.put_expanded("a.rst", b"the page as written", parsed)
    cache.flush()
    state = {"x.py": "h1"}
    hit = cache.get_expanded("a.rst", b"the page as written", state.get)
    assert hit is not None
    assert (hit.raw, hit.sections, hit.dependencies, hit.expansion) == (
        parsed.raw, parsed.sections, parsed.dependencies, parsed.expansion)
    assert cache.get_expanded("a.rst", b"another page", state.get) is None
    state["x.py"] = "h2"
    assert cache.get_expanded("a.rst", b"the page as written", state.get) is None
    state.update({"x.py": "h1", "y.py": "now there"})
    assert cache.get_expanded("a.rst", b"the page as written", state.get) is None
    del state["y.py"]
    assert cache.get_expanded("a.rst", b"the page as written", state.get) is not None
    cache.close()
