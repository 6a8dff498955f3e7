"""Include forms are a registry (``indexer/include_forms/``, one module a form): each is
turned on by its docs tool's configuration and expands its own syntax in a build; a form
module dropped into the folder is run by the engine with nothing else changed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import build, run_cli, write_tree

from doc_index.indexer.include_forms import INCLUDE_FORMS, enabled

REPO = Path(__file__).resolve().parent.parent
TEN = "".join(f"line {n}\n" for n in range(1, 11))


def expanded(tmp_path: Path, files: dict[str, str], page: str) -> str:
    """The stored text of ``page`` after a build of ``files`` (pages are stored as their
    renderer shows them)."""
    src = write_tree(tmp_path / "proj", files)
    build(src, tmp_path / "root", name="proj")
    return (tmp_path / "root" / "local-proj" / page).read_text()


def test_rst_include_is_always_on(tmp_path: Path) -> None:
    text = expanded(tmp_path, {"index.rst": "Title\n=====\n\n.. include:: ten.txt\n   "
                               ":start-line: 8\n", "ten.txt": TEN}, "index.rst")
    assert text == "Title\n=====\n\nline 9\nline 10\n"


def test_myst_include_needs_myst_parser_in_conf_py(tmp_path: Path) -> None:
    page = "# Page\n\n```{include} ten.txt\n:end-line: 1\n```\n"
    files = {"conf.py": "extensions = ['myst_parser']\n", "page.md": page, "ten.txt": TEN}
    assert expanded(tmp_path / "on", files, "page.md") == "# Page\n\nline 1\n"
    files["conf.py"] = "extensions = []\n"
    assert expanded(tmp_path / "off", files, "page.md") == page


def test_mdbook_include_needs_a_book_toml(tmp_path: Path) -> None:
    page = "# Page\n\n{{#include ten.txt:2:3}}\n"
    files = {"book.toml": "[book]\nsrc = \".\"\n", "page.md": page, "ten.txt": TEN}
    assert expanded(tmp_path / "on", files, "page.md") == "# Page\n\nline 2\nline 3\n"
    del files["book.toml"]
    assert expanded(tmp_path / "off", files, "page.md") == page


MKDOCS = "site_name: x\nmarkdown_extensions:\n  - {}\n"


def test_snippets_need_pymdownx_snippets_in_mkdocs_yml(tmp_path: Path) -> None:
    page = '# Page\n\n--8<-- "ten.txt:10"\n'
    files = {"mkdocs.yml": MKDOCS.format("pymdownx.snippets"), "page.md": page,
             "ten.txt": TEN}
    assert expanded(tmp_path / "on", files, "page.md") == "# Page\n\nline 10\n"
    files["mkdocs.yml"] = MKDOCS.format("toc")
    assert expanded(tmp_path / "off", files, "page.md") == page


def test_fastapi_includes_need_markdown_include_variants(tmp_path: Path) -> None:
    page = "# Page\n\n{* ./x.py ln[2] *}\n"
    files = {"mkdocs.yml": MKDOCS.format("markdown_include_variants"), "page.md": page,
             "x.py": "old\n", "x_py310.py": "a = 1\nb = 2\n"}
    assert expanded(tmp_path / "on", files, "page.md") == (
        "# Page\n\n```python\n# Code above omitted 👆\n\nb = 2\n```\n")
    files["mkdocs.yml"] = MKDOCS.format("toc")
    assert expanded(tmp_path / "off", files, "page.md") == page


def test_mdx_include_needs_mdx_include(tmp_path: Path) -> None:
    page = "# Page\n\nx {!ten.txt [ln:2-3]!} y\n"
    files = {"mkdocs.yml": MKDOCS.format("mdx_include"), "page.md": page, "ten.txt": TEN}
    assert expanded(tmp_path / "on", files, "page.md") == "# Page\n\nx line 2\nline 3 y\n"
    files["mkdocs.yml"] = MKDOCS.format("toc")
    assert expanded(tmp_path / "off", files, "page.md") == page


def test_the_forms_a_configuration_turns_on() -> None:
    assert enabled({}) == {"rst"}
    assert enabled({"conf.py": b"extensions = ['myst_nb']", "book.toml": b"",
                    "mkdocs.yml": b"- mdx_include\n- pymdownx.snippets"}) == {
        "rst", "myst", "mdbook", "mdx", "snippets"}
    assert [f.name for f in INCLUDE_FORMS if f.line is not None] == [
        "snippets", "fastapi", "mdbook", "mdx"]  # (the order lines are offered in)


ARROW_FORM = '''
"""A made-up form: ``<<< path`` on its own line includes the file (Markdown pages)."""

import re

from .form import IncludeForm, Refused


def _line(expansion, lines, index, depth, stack):
    line = lines[index]
    if not line.text.startswith("<<< "):
        return None
    written = line.text[4:].strip()
    try:
        target = expansion.target(written, [expansion.config_base], stack, depth)
        return expansion.admit(target.lines), index + 1
    except Refused as refused:
        return [expansion.note(refused.args[0], written, line)], index + 1


FORM = IncludeForm("arrow", "md", ("arrow.toml", ()), mark=re.compile(r"<<< "),
                   page_mark=re.compile(rb"<<< "), order=50, line=_line)
'''

PROBE = '''
import json
from copied.indexer import include_forms
from copied.indexer.includes import expand_includes

files = {"docs/ten.txt": b"one\\ntwo\\n"}
out = expand_includes("# P\\n<<< ten.txt\\n<<< ../../out.txt\\n", "docs/p.md", files.get,
                      config_dir="docs")
print(json.dumps({"forms": sorted(include_forms.FORMS), "text": out.text,
                  "on": sorted(include_forms.enabled({"arrow.toml": b""}))}))
'''


def test_a_form_module_dropped_in_is_registered_and_expands(tmp_path: Path) -> None:
    package = tmp_path / "copied"
    shutil.copytree(REPO / "indexer", package / "indexer",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "foundation", package / "foundation",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (package / "__init__.py").write_text("")
    (package / "indexer" / "include_forms" / "arrow.py").write_text(ARROW_FORM)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "forms": ["arrow", "fastapi", "mdbook", "mdx", "myst", "rst", "snippets"],
        "text": "# P\none\ntwo\n[include outside the source: ../../out.txt]\n",
        "on": ["arrow", "rst"],
    }


def test_mdx_a_bad_line_range_is_a_note_not_an_internal_error(tmp_path: Path) -> None:
    """``{!x [ln:a-b]!}`` stopped the whole build with ``error: internal error (Refused:
    bad line range (a:b))``: the range was read outside the form's refusal handling."""
    src = write_tree(tmp_path / "proj", {
        "mkdocs.yml": MKDOCS.format("mdx_include"), "page.md": "# P\n\n{!ten.txt [ln:a-b]!}\n",
        "ten.txt": TEN})
    done = run_cli("build", str(src), "--root", str(tmp_path / "root"), "--name", "proj")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "root" / "proj" / "page.md").read_text() == (
        "# P\n\n[include bad line range (a:b): ten.txt]\n")
