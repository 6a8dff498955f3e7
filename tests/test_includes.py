"""Each include form and its selectors, the limits, hostile input."""

from __future__ import annotations

import pytest

from doc_index.indexer.includes import IncludeLimits, expand_includes

LINES = "".join(f"line {n}\n" for n in range(1, 11))
FILES: dict[str, bytes] = {
    "docs/ten.txt": LINES.encode(),
    "docs/code.py": b"import os\n\n\n@decorate\nclass A:\n    def m(self):\n"
                    b"        return 1\n\n\ndef f():\n\tpass\n",
    "docs/crlf.md": b"\xef\xbb\xbfone\r\ntwo\r\n",
    "docs/binary.bin": b"\x00\x01\x02",
    "docs/latin.txt": b"caf\xe9\n",
    "docs/big.txt": b"x" * 2000 + b"\n",
    "docs/nest/a.md": b"A {{#include b.md}}\n",
    "docs/nest/b.md": b"B\n",
    "docs/self.md": b"{{#include self.md}}\n",
    "docs/anchors.rs": b"// ANCHOR: all\n// ANCHOR: one\nfn one() {}\n// ANCHOR_END: one\n"
                       b"fn two() {}\n// ANCHOR_END: all\n",
    "docs/sections.md": b"--8<-- [start:a]\nA\n--8<-- [end:a]\nrest\n",
    "src/x_py310.py": b"v310\n",
    "src/x_an_py39.py": b"an39\n",
    "src/x.py": b"base\n",
}


def read(path: str) -> bytes | None:
    return FILES.get(path)


def run(text: str, page: str = "docs/page.md", **options) -> tuple[str, tuple[str, ...]]:
    result = expand_includes(text, page, read, **options)
    return result.text, result.notes


@pytest.mark.parametrize(("text", "expected"), [
    (".. include:: ten.txt\n   :start-line: 2\n   :end-line: 4\n", "line 3\nline 4\n"),
    (".. include:: ten.txt\n   :start-after: ne 2\n   :end-before: line 4\n",
     "line 3\n"),
    (".. include:: ten.txt\n   :start-after: 9\n", "line 10\n"),
    (".. include:: /ten.txt\n   :end-line: 1\n", "line 1\n"),
    (".. include:: ten.txt\n   :literal:\n   :start-line: 9\n", "::\n\n   line 10\n"),
    (".. include:: <isonum.txt>\n", ".. include:: <isonum.txt>\n"),
    (".. literalinclude:: ten.txt\n   :lines: 2, 4-5, 9-\n",
     "::\n\n   line 2\n   line 4\n   line 5\n   line 9\n   line 10\n"),
    (".. literalinclude:: ten.txt\n   :start-at: line 3\n   :end-at: line 4\n",
     "::\n\n   line 3\n   line 4\n"),
    (".. literalinclude:: ten.txt\n   :start-after: line 3\n   :end-before: line 5\n"
     "   :prepend: first\n   :append: last\n", "::\n\n   first\n   line 4\n   last\n"),
    (".. literalinclude:: code.py\n   :pyobject: A.m\n   :dedent: 4\n",
     "::\n\n   def m(self):\n       return 1\n"),
    (".. literalinclude:: code.py\n   :pyobject: A\n   :lines: 1-2\n",
     "::\n\n   @decorate\n   class A:\n"),
    (".. literalinclude:: code.py\n   :pyobject: f\n   :tab-width: 2\n",
     "::\n\n   def f():\n     pass\n"),
    ("- item\n\n  .. include:: ten.txt\n     :end-line: 1\n", "- item\n\n  line 1\n"),
    ("Text::\n\n   .. include:: ten.txt\n", "Text::\n\n   .. include:: ten.txt\n"),
    (".. code-block:: rst\n\n   .. include:: ten.txt\n",
     ".. code-block:: rst\n\n   .. include:: ten.txt\n"),
    (".. custom::\n\n   .. include:: ten.txt\n", ".. custom::\n\n   .. include:: ten.txt\n"),
])
def test_rst(text: str, expected: str) -> None:
    assert run(text, "docs/page.rst", docs_root="docs") == (expected, ())


@pytest.mark.parametrize(("text", "expected"), [
    ("```{include} ten.txt\n:start-line: 8\n```\n", "line 9\nline 10\n"),
    ("```{include} ten.txt\n---\nend-line: 1\nliteral: true\n---\n```\n",
     "```text\nline 1\n```\n"),
    ("```{literalinclude} code.py\n:pyobject: f\n:language: py\n```\n",
     "```py\ndef f():\n\tpass\n```\n"),
    (":::{note}\n```{include} ten.txt\n:end-line: 1\n```\n:::\n",
     ":::{note}\nline 1\n:::\n"),
    ("````md\n```{include} ten.txt\n```\n````\n", "````md\n```{include} ten.txt\n```\n````\n"),
    ("{{#include ten.txt:2}}\n", "line 2\n"),
    ("{{#include ten.txt:2:3}}\n", "line 2\nline 3\n"),
    ("{{#include ten.txt:9:}}\n", "line 9\nline 10\n"),
    ("{{#include ten.txt::1}}\n", "line 1\n"),
    ("{{ #include ten.txt:1 }} and \\{{#include ten.txt}}\n",
     "line 1 and {{#include ten.txt}}\n"),
    ("{{#include anchors.rs:one}}\n", "fn one() {}\n"),
    ("{{#include anchors.rs:all}}\n", "fn one() {}\nfn two() {}\n"),
    ("{{#rustdoc_include anchors.rs:3}}\n", "fn one() {}\n"),
    ("{{#include nest/a.md}}\n", "A B\n"),
    ("{{#title x}} {{#include ten.txt:1}}\n", "{{#title x}} line 1\n"),
    ('--8<-- "docs/ten.txt:2:3"\n', "line 2\nline 3\n"),
    ('--8<-- "docs/ten.txt:10"\n', "line 10\n"),
    ('--8<-- "docs/ten.txt::1,10:"\n', "line 1\nline 10\n"),
    ("    --8<-- 'docs/ten.txt:1:1'\n", "    line 1\n"),
    ('--8<-- "docs/sections.md:a"\n', "A\n"),
    ('--8<-- "docs/sections.md"\n', "A\nrest\n"),
    ("--8<--\ndocs/ten.txt:1:1\n;docs/ten.txt\n\ndocs/ten.txt:2:2\n--8<--\n",
     "line 1\nline 2\n"),
    ('; --8<-- "docs/ten.txt"\n', '; --8<-- "docs/ten.txt"\n'),
    (";--8<-- \"docs/ten.txt\"\n", '--8<-- "docs/ten.txt"\n'),
    ("{* ../src/x.py *}\n", "```python\nan39\n```\n"),
    ("{* ../src/x_py310.py hl[1] *}\n", "```python\nv310\n```\n"),
    ("{* ./ten.txt ln[2:3,5] *}\n",
     "```python\n# Code above omitted 👆\n\nline 2\nline 3\n\n# Code here omitted 👈\n\n"
     "line 5\n\n# Code below omitted 👇\n```\n"),
    ("  {* ./ten.txt *}\n", "  {* ./ten.txt *}\n"),
    ("x {!ten.txt [ln:2-3]!} y\n", "x line 2\nline 3 y\n"),
    ("{!> ./crlf.md !}\n", "one\ntwo\n"),
])
def test_markdown(text: str, expected: str) -> None:
    assert run(text, config_dir="docs") == (expected, ())


@pytest.mark.parametrize(("text", "note"), [
    (".. include:: nothing.rst\n", "[include not found: nothing.rst]"),
    (".. include:: ../../x\n", "[include outside the source: ../../x]"),
    (".. include:: a\\b\n", "[include outside the source: a\\b]"),
    (".. include:: binary.bin\n", "[include not text: binary.bin]"),
    (".. include:: latin.txt\n", "[include not text: latin.txt]"),
    (".. include:: big.txt\n", "[include too large: big.txt]"),
    (".. include:: ten.txt\n   :start-after: nowhere\n",
     "[include start-after text not found (nowhere): ten.txt]"),
    (".. literalinclude:: code.py\n   :pyobject: B\n", "[include pyobject B not found: code.py]"),
    (".. literalinclude:: ten.txt\n   :lines: a-b\n", "[include bad lines option (a-b): ten.txt]"),
    (".. include:: http://example.com/x.rst\n",
     "[include not fetched (URL): http://example.com/x.rst]"),
])
def test_notes_rst(text: str, note: str) -> None:
    limits = IncludeLimits(max_file_bytes=1000)
    assert run(text, "docs/page.rst", limits=limits) == (note + "\n", (note,))


@pytest.mark.parametrize(("text", "note"), [
    ("{{#include self.md}}\n", "[include refused, cycle: self.md]"),
    ("{{#include anchors.rs:nope}}\n", "[include anchor nope not found: anchors.rs:nope]"),
    ('--8<-- "docs/sections.md:b"\n', "[include section b not found: docs/sections.md:b]"),
    ("{* ../src/none.py *}\n", "[include not found: ../src/none.py]"),
])
def test_notes_markdown(text: str, note: str) -> None:
    assert run(text, config_dir="docs") == (note + "\n", (note,))


def test_limits() -> None:
    chain = {f"docs/c{n}.md": f"{n} {{{{#include c{n + 1}.md}}}}".encode() for n in range(20)}
    FILES.update(chain)
    text, notes = run("{{#include c0.md}}\n", limits=IncludeLimits(max_depth=3))
    assert (text, notes) == ("0 1 2 [include depth limit: c3.md]\n",
                             ("[include depth limit: c3.md]",))
    many = "{{#include ten.txt:1}}\n" * 5
    text, notes = run(many, limits=IncludeLimits(max_includes=3))
    assert text.count("line 1") == 3 and len(notes) == 2
    text, notes = run(many, limits=IncludeLimits(max_page_bytes=20))
    assert text.count("line 1") == 2
    assert notes == ("[include skipped, page size cap: ten.txt:1]",) * 3


def test_crlf_bom_and_dependencies() -> None:
    result = expand_includes("{{#include crlf.md}}\n{{#include none.md}}\n", "docs/p.md", read,
                             hasher=lambda data: f"len{len(data)}")
    assert result.text == "one\ntwo\n[include not found: none.md]\n"
    assert [tuple(d) for d in result.dependencies] == [
        ("docs/crlf.md", "read", "len13"), ("docs/none.md", "not found", None)]


# One scan per page, whatever the text: each is 0.4-1 MB, so a quadratic pass would run
# for many minutes; the suite's safety net is the only time limit.
HOSTILE = [
    "{{" * 300_000,
    "{{#include " + "a" * 400_000,
    "{!" * 300_000,
    "--8<--\n" * 100_000,
    "```{include}\n" * 50_000,
    "```\n" * 100_000,
    ".. include::\n" * 60_000,
    ".. " + ":" * 400_000 + "\n",
    "Text::\n" * 100_000,
    "{* " + "x" * 400_000,
    " " * 400_000 + "{{#include ten.txt}}",
    ".. note::\n" + "   .. note::\n" * 50_000,
]


@pytest.mark.parametrize("index", range(len(HOSTILE)))
@pytest.mark.parametrize("page", ["docs/p.md", "docs/p.rst"])
def test_hostile_pages(index: int, page: str) -> None:
    result = expand_includes(HOSTILE[index], page, read)
    assert len(result.text) < 3 * len(HOSTILE[index]) + 1000
