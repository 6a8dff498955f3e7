"""The lean RST parse (``indexer/rst_structure.py``): the sections of docutils' full parse,
without the work whose result doc-index never reads."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CountingPattern, write_tree
from docutils import nodes, statemachine
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser, directives, states, tableparser
from docutils.utils import new_document
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_import_rules import modules_of

from doc_index.indexer import rst
from doc_index.indexer.document import index_file
from doc_index.indexer.versions import MAX_SECTIONS_PER_FILE


def full_parse_titles(text: str) -> list[tuple[int, int]]:
    """(0-based title line, depth) of the sections of docutils' full parse: every
    directive run, inline markup and tables parsed (file insertion and raw off)."""
    config = get_default_settings(Parser)
    config.report_level = 5
    config.halt_level = 5
    config.warning_stream = False
    config.file_insertion_enabled = False
    config.raw_enabled = False
    config.syntax_highlight = "none"
    document = new_document("<doc>", config)
    Parser().parse(text, document)
    found: list[tuple[int, int]] = []

    def walk(node: Any, depth: int) -> None:
        for child in node.children:
            if isinstance(child, nodes.section):
                title = child.children[0] if child.children else None
                if isinstance(title, nodes.title) and title.line:
                    found.append((title.line - 2, depth))
                walk(child, depth + 1)

    walk(document, 1)
    return found


CASES = {
    "only": (
        "Top\n===\n\n.. only:: html\n\n   Inside only\n   -----------\n\n   text\n\n"
        "After\n-----\n\nend\n"),
    "ifconfig and container": (
        "Top\n===\n\n.. ifconfig:: x\n\n   In ifconfig\n   ~~~~~~~~~~~\n\n"
        ".. container:: box\n\n   In container\n   ------------\n\n   para\n\n"
        "Next\n----\n\ntext\n"),
    "admonitions": (
        "Top\n===\n\n.. note::\n\n   Not a section\n   -------------\n\n   body\n\n"
        ".. admonition:: Custom\n\n   =====\n   Over\n   =====\n\n"
        ".. topic:: T\n\n   inner\n\nSub\n---\n"),
    "tables": (
        "Top\n===\n\n+-----+-----+\n| a   | b   |\n+=====+=====+\n| Cell title  |\n"
        "| ----------- |\n+-----+-----+\n\n=====  =====\nA      B\n=====  =====\nx      y\n"
        "=====  =====\n\n.. list-table::\n   :header-rows: 1\n\n   * - a\n     - b\n"
        "   * - c\n     - d\n\n.. csv-table:: T\n   :header: a, b\n\n   1, 2\n   3, 4\n\n"
        "Broken\n------\n\n+---+---+\n| a | b\n+---+\n\nEnd\n---\n"),
    "literal blocks": (
        "Top\n===\n\nExample::\n\n   Not a title\n   ===========\n\n::\n\n> quoted\n> ----\n\n"
        ".. code-block:: rst\n\n   Title\n   =====\n\n.. literalinclude:: /etc/passwd\n\n"
        "Real\n----\n\n>>> doctest\n>>> x\n"),
    "transitions and overlines": (
        "=====\nTitle\n=====\n\npara\n\n--------\n\npara\n\n-----\n Inset\n-----\n\n"
        "Sub\n===\n\n~~~~\n\nDeep\n~~~~\n\n-----\n\nSecond\n------\n"),
    "lists and quotes": (
        "Top\n===\n\n- item\n\n  Nested\n  ------\n\n1. one\n#. two\n\n"
        "term\n   definition\n\n   ====\n   Nope\n   ====\n\n:field: value\n\n"
        "-a  option\n\n    quote\n\n    -- attribution\n\n| line\n| block\n\nLast\n----\n"),
    "explicit markup": (
        ".. _target:\n\nTop\n===\n\n.. [1] footnote\n\n   Foot title\n   ----------\n\n"
        ".. [cite] citation\n.. |sub| image:: x.png\n.. |rep| replace:: text\n"
        ".. comment\n   Com\n   ---\n\n.. unknown:: arg\n   :opt: v\n\n   body\n"
        ".. note:: no blank line after\nText\n----\n\n.. bad directive::\n\n"
        ".. image::\n\n.. code:: python\n   :bogus: 1\n\n   x\n\nEnd\n---\n"),
    "inline markup in titles": (
        "Using :func:`pkg.run` and ``code``\n==================================\n\n"
        "*Emph* and `link <http://x>`_\n-----------------------------\n\n"
        "Broken `markup\n--------------\n"),
    "no adornment": "Just text.\n\n    indented\n\n- list\n",
    "other line breaks": "Title\u2028=====\n\ntext\x1cSub\n---\n\n",
    "short underlines": "ab\n=\n\nabcdef\n===\n\nx\n-\n\nTitle\n=====\n\nLong\n---\n",
    "inconsistent styles": (
        "One\n===\n\nTwo\n---\n\nThree\n~~~~~\n\nBack\n---\n\nJump\n^^^^\n\nTop\n===\n"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_sections_are_those_of_the_full_parse(name: str) -> None:
    text = CASES[name]
    assert rst._titles(text) == full_parse_titles(text)


def test_titles_in_directive_bodies_are_not_sections() -> None:
    """As in docutils' full parse, a title inside a directive (known to docutils or not,
    like Sphinx's ``only``) is body text of the section around it."""
    text = CASES["only"] + "\n" + CASES["admonitions"].replace("Top\n===\n", "Again\n=====\n")
    blocks = rst.parse_rst(text, text.encode())
    assert [(b.title, b.depth) for b in blocks] == [
        ("Top", 1), ("After", 2), ("Again", 1), ("Sub", 2)]


RST_PIECES = st.sampled_from(list("=-~^\"'`*_:.|+\\ \t\n1aZé") + [
    "=====\n", "-----\n", "~~~~~\n", ".. ", ":: ", "::\n\n", "Title\n", "Sub\n", "\n\n", "   ",
    ".. note::\n", ".. only:: html\n", ".. container::\n", ".. code-block:: python\n",
    ".. list-table::\n", ".. csv-table::\n", ".. unknown::\n", ".. image:: x\n",
    ".. |s| image:: x\n", ".. |r| replace:: y\n", ".. [1] f\n", ".. _t:\n", "   * - a\n",
    "+--+--+\n", "| a | b |\n", "+==+==+\n", "=====  =====\n", "* ", "#. ", "1. ", "- ",
    ":f: v\n", "-o  x\n", "| l\n", ">>> ", "> q\n", ":ref:`x`", "`a <b>`_", "**b**",
    # nested bodies (not parsed by the lean parser) and what decides where they end
    "      ", "\t", "   - n\n", "   :g: w\n", "   Inner\n   -----\n", "1) ", "(a) ",
    "term\n   def\n", "    -- by\n", "::\n\n> quoted literal\n", ".. [#] f\n   more\n",
])


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(pieces=st.lists(RST_PIECES, max_size=80))
def test_generated_documents_give_the_sections_of_the_full_parse(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert rst._titles(text) == full_parse_titles(text)


# --- the work it leaves out ----------------------------------------------------------


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Calls, during the test, of docutils' inline parser, directive lookup, table parsers,
    rST parse and state set-up."""
    seen = {"inline": 0, "directive": 0, "table": 0, "parse": 0, "state": 0}

    def counting(key: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            seen[key] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(states.Inliner, "parse", counting("inline", states.Inliner.parse))
    monkeypatch.setattr(directives, "directive", counting("directive", directives.directive))
    for cls in (tableparser.GridTableParser, tableparser.SimpleTableParser):
        monkeypatch.setattr(cls, "parse", counting("table", cls.parse))
    monkeypatch.setattr(Parser, "parse", counting("parse", Parser.parse))
    monkeypatch.setattr(statemachine.State, "__init__",
                        counting("state", statemachine.State.__init__))
    yield seen


def test_directives_tables_and_inline_markup_are_not_parsed(counts: dict[str, int]) -> None:
    text = "".join(CASES[k] for k in ("tables", "admonitions", "explicit markup",
                                      "inline markup in titles"))
    parsed = index_file("doc.rst", text.encode())
    assert [s.title for s in parsed.sections if s.kind == "heading"][:3] == [
        "Top", "Broken", "End"]
    assert counts["parse"] == 1
    assert (counts["inline"], counts["directive"], counts["table"]) == (0, 0, 0)


def test_nested_lists_make_only_the_states_they_use(counts: dict[str, int]) -> None:
    """docutils makes all 15 states for each nested parse (a list, a block quote): a
    third of its time on real docs. 200 lists of two items, each holding a quote."""
    text = "Title\n=====\n\n" + "- a\n\n    quote\n\n- b\n\npara\n\n" * 200
    index_file("lists.rst", text.encode())
    assert counts["state"] < 5 * 200


def test_a_file_without_adornment_lines_is_not_given_to_docutils(
        counts: dict[str, int]) -> None:
    parsed = index_file("plain.rst", b"Plain text.\n\n- a list\n\n    a quote\n")
    assert [(s.kind, s.byte_length) for s in parsed.sections] == [("part", 35)]
    assert counts["parse"] == 0


def test_a_file_of_few_lines_is_not_scanned_for_the_section_cap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding the title at the cap needs as many lines: a shorter file is parsed whole
    without scanning its lines for adornments first."""
    counting = CountingPattern(rst._ADORNMENT_LINE)
    monkeypatch.setattr(rst, "_ADORNMENT_LINE", counting)
    text = "Title\n=====\n\n" + "Sub\n---\n\ntext\n\n" * 100
    blocks = rst.parse_rst(text, text.encode(), 5000)
    assert len(blocks) == 101
    assert counting.calls == 0


def test_a_full_build_of_rst_files_sets_up_no_markdown_parser(tmp_path: Path) -> None:
    """The parsers are set up before the parse workers fork, but only those the files
    need: an RST-only build (big enough for the worker pool) never imports markdown-it."""
    page = "Title\n=====\n\n" + "Some text about the worker pool.\n\n" * 1200
    source = write_tree(tmp_path / "src", {f"p{i}.rst": page for i in range(8)})
    imported = modules_of(tmp_path, "doc_index.cli", "build", str(source), "--root",
                          str(tmp_path / "root"))
    assert "doc_index.store.index_store" in imported and "docutils" in imported
    assert "markdown_it" not in imported


def test_include_and_raw_read_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parsing never reads another file: an ``include`` of a file with a title (or a
    ``raw`` or ``literalinclude`` of it) leaves its text out and opens nothing."""
    import docutils.io

    other = tmp_path / "other.rst"
    other.write_text("Included\n========\n\ntext\n")
    opened: list[Any] = []

    def no_file_input(*args: Any, **kwargs: Any) -> None:
        opened.append(args or kwargs)
        raise AssertionError("a file was opened")

    monkeypatch.setattr(docutils.io, "FileInput", no_file_input)
    text = (f"Top\n===\n\n.. include:: {other}\n\n.. raw:: html\n   :file: {other}\n\n"
            f".. literalinclude:: {other}\n\n.. csv-table::\n   :file: {other}\n\n"
            "End\n---\n")
    blocks = rst.parse_rst(text, text.encode())
    assert [b.title for b in blocks] == ["Top", "End"]
    assert opened == []


def test_sections_start_at_the_lines_docutils_sees_after_other_line_breaks() -> None:
    """docutils splits lines at U+2028, U+2029, U+0085 and \\x1c-\\x1e too: a section's
    title and start come from those lines (looked up in the text split at "\\n", one U+2028
    before the titles gave two sections titled '' at wrong lines)."""
    text = ("Intro\u2028more\x1cstill\x85and\n\nFirst\n=====\n\nbody\u2029x\x1dy\x1ez\n\n"
            "Second\n------\n\ntext\u2028\u2028Third\n~~~~~\n\nend\n")
    data = text.encode()
    blocks = rst.parse_rst(text, data)
    assert [(b.kind, b.title, b.depth) for b in blocks] == [
        ("root", "", 0), ("heading", "First", 1), ("heading", "Second", 2),
        ("heading", "Third", 3)]
    starts = [data[b.start:b.end].decode() for b in blocks]
    assert starts[1].startswith("First\n=====\n") and starts[2].startswith("Second\n------\n")
    assert starts[3] == "Third\n~~~~~\n\nend\n"  # it starts inside a line of the file
    assert "".join(starts) == text
    lines = _DOCUTILS_BREAKS.split(text)
    assert [(lines[n], depth) for n, depth in full_parse_titles(text)] == [
        (b.title, b.depth) for b in blocks[1:]]


_DOCUTILS_BREAKS = re.compile("[\n\x1c\x1d\x1e\x85\u2028\u2029]")


def test_a_comment_closing_an_inclusion_nobody_opened_is_a_comment() -> None:
    """docutils pops its include log on this comment: IndexError on one no include put
    there, and one such line stopped the whole build (an internal error)."""
    text = 'Top\n===\n\n.. end of inclusion from "x"\n\nSub\n---\n\ntext\n'
    blocks = rst.parse_rst(text, text.encode())
    assert [(b.title, b.depth) for b in blocks] == [("Top", 1), ("Sub", 2)]


def test_only_the_first_lines_are_looked_at_for_titles(monkeypatch: pytest.MonkeyPatch) -> None:
    """docutils holds about 130 bytes a line: past ``MAX_PARSE_LINES`` lines no title is
    looked for, and the rest of the file is in parts, so it stays answerable."""
    monkeypatch.setattr(rst, "MAX_PARSE_LINES", 60)
    text = "A\n=\n\n" + "para\n\n" * 20 + "B\n-\n\n" + "x\n\n" * 20 + "C\n-\n\ntext\n"
    notes: list[str] = []
    blocks = rst.parse_rst(text, text.encode(), None, notes)
    assert [b.title for b in blocks if b.kind == "heading"] == ["A", "B"]
    assert notes == ["more than 60 lines: no title looked for after line 52"]
    stop = len("".join(text.splitlines(keepends=True)[:52]))
    assert [(b.kind, b.start) for b in blocks[2:]] == [("part", stop)]
    assert blocks[1].end == stop and blocks[-1].end == len(text)


# --- a file too long to look at whole -------------------------------------------------


def test_an_rst_file_of_titles_is_parsed_by_prefixes_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """200,000 one-letter titles (1 MB, 800,000 lines): docutils sees only a few times the
    kept ones (10 MB of them, whole, took it 380 s and 10 GB)."""
    seen: list[int] = []
    real_titles = rst._titles

    def counting_titles(text: str) -> list[tuple[int, int]]:
        seen.append(text.count("\n"))
        return real_titles(text)

    monkeypatch.setattr(rst, "_titles", counting_titles)
    parsed = index_file("big.rst", b"h\n=\n\n" * 200_000)
    cap = MAX_SECTIONS_PER_FILE
    assert len(parsed.sections) > cap and parsed.sections[cap].kind == "part"
    assert parsed.note
    assert sum(seen) <= 3 * 8 * cap


def test_rst_prefix_parsing_finds_the_titles_of_the_whole_parse() -> None:
    pieces = [
        "Title\n=====\n\ntext\n\n", "::\n\n    Not\n    ---\n\n", "=====\nOver\n=====\n\n",
        ".. note::\n\n   Inside\n   ------\n\n", "+---+---+\n| a | b |\n+---+---+\n\n",
        "Sub\n---\n\n", "para\nstill para\n\n", "x\n-\n\n",
    ]
    text = "".join(pieces * 6)
    data = text.encode()
    whole = rst.parse_rst(text, data)
    for limit in range(1, len(whole) - 1):
        got = rst.parse_rst(text, data, limit)
        assert [b[:4] for b in got[: limit + 1]] == [b[:4] for b in whole[: limit + 1]]
