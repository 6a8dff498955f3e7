"""Formats, include forms and lockfile formats are registries: one file an entry.

A module dropped into the registry's folder is picked up with nothing else changed, and
every registered entry has a test named after it (``test_<name>*.py``, or a test function
``test_<name>_...``): adding an entry is one file plus its test.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from doc_index.indexer.formats import FORMATS, format_of, is_doc_path

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"

PLAIN_FORMAT = '''
"""A made-up format: every paragraph of a ``.plain`` file is a section titled by its
first line."""

from ..model import Block
from .format import Format


def _blocks(text, raw, limit, notes):
    blocks, start = [], 0
    for paragraph in raw.split(b"\\n\\n"):
        if paragraph.strip():
            title = paragraph.split(b"\\n", 1)[0].decode()
            blocks.append(Block("heading", title, 1, start, start + len(paragraph)))
        start += len(paragraph) + 2
    return blocks


FORMAT = Format("Plain text", (".plain", ".pln"), _blocks, lambda: None)
'''

PROBE = '''
import json
from copied.indexer import formats
from copied.indexer.document import index_file

parsed = index_file("notes.PLAIN", b"Alpha\\nfirst\\n\\nBeta\\nsecond\\n")
print(json.dumps({
    "formats": [f.name for f in formats.FORMATS],
    "said": formats.described(),
    "indexed": [formats.is_doc_path(p) for p in ("a.plain", "b.PLN", "c.md", "d.rst")],
    "titles": [s.title for s in parsed.sections],
    "other kinds": formats.other_doc_kind("x.plain"),
}))
'''


def test_a_format_module_dropped_in_is_registered_and_parses(tmp_path: Path) -> None:
    """A copy of the indexer with one format file added (and only Markdown besides):
    the sources index its files, the indexer parses them with it, the error message of an
    empty source names it."""
    package = tmp_path / "copied"
    shutil.copytree(REPO / "indexer", package / "indexer",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "foundation", package / "foundation",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (package / "__init__.py").write_text("")
    for module in (package / "indexer" / "formats").glob("*.py"):
        if module.name not in ("__init__.py", "format.py", "markdown.py"):
            module.unlink()
    (package / "indexer" / "formats" / "plain.py").write_text(PLAIN_FORMAT)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "formats": ["Markdown", "Plain text"],
        "said": "Markdown (.md, .markdown, .mdx) or Plain text (.plain, .pln)",
        "indexed": [True, True, True, False],
        "titles": ["Alpha", "Beta"],
        "other kinds": None,
    }


def test_each_suffix_has_one_format_and_one_format_takes_the_rest() -> None:
    claimed = [suffix for f in FORMATS for suffix in (*f.suffixes, *f.parsed_suffixes)]
    assert len(claimed) == len(set(claimed)), claimed
    assert all(s == s.lower() and s.startswith(".") for s in claimed)
    assert [f.name for f in FORMATS if f.fallback] == ["Markdown"]
    assert format_of("notes/CHANGES").name == "Markdown"  # (--everything passes any file)
    assert format_of("index.txt").name == "reStructuredText"  # (Sphinx's, when passed)
    assert not is_doc_path("index.txt")


def _registry_modules(folder: str, entry: str) -> list[str]:
    """The modules of a registry folder that declare an entry (``FORMAT = ...``)."""
    return sorted(p.stem for p in (REPO / folder).glob("*.py")
                  if not p.name.startswith("_") and f"\n{entry} = " in p.read_text())


def _named_in_tests() -> tuple[set[str], set[str]]:
    files = {p.stem for p in TESTS.glob("test_*.py")}
    functions: set[str] = set()
    for path in TESTS.glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                functions.add(node.name)
    return files, functions


def _has_test(name: str, files: set[str], functions: set[str]) -> bool:
    """Whether a test file or test function is named after ``name``: its name holds it as
    whole words (``test_pdm_lock_pipfile_lock_and_pylock`` names pdm_lock and pylock)."""
    return any(f"_{name}_" in f"{test}_" for test in files | functions)


REGISTRIES = [("indexer/formats", "FORMAT"), ("indexer/include_forms", "FORM"),
              ("sources/lockfiles", "LOCKFILE")]


def _registered(entry: str) -> list[str]:
    """The modules the running registry took its entries from (by the module of the
    function each entry holds)."""
    from doc_index.indexer.include_forms import INCLUDE_FORMS
    from doc_index.sources.lockfiles import LOCKFILES

    functions = {"FORMAT": [f.blocks for f in FORMATS],
                 "FORM": [f.directives or f.line for f in INCLUDE_FORMS],
                 "LOCKFILE": [f.locked for f in LOCKFILES]}[entry]
    return sorted(f.__module__.rsplit(".", 1)[1] for f in functions if f is not None)


@pytest.mark.parametrize(("folder", "entry"), REGISTRIES)
def test_every_module_declaring_an_entry_is_registered(folder: str, entry: str) -> None:
    assert _registered(entry) == _registry_modules(folder, entry)


@pytest.mark.parametrize(("folder", "entry"), REGISTRIES)
def test_every_registered_entry_has_a_test_named_after_it(folder: str, entry: str) -> None:
    files, functions = _named_in_tests()
    modules = _registry_modules(folder, entry)
    assert modules, folder
    assert [m for m in modules if not _has_test(m, files, functions)] == []
