"""A Python file read as data (ast), bounded, never run."""

from __future__ import annotations

from doc_index.indexer.python_source import ImportRef, parse_module

SOURCE = b'''"""Module doc."""
from __future__ import annotations

import os.path
import typing as t
from . import sibling
from .helpers import url_for, other as renamed
from ..up import *

__all__ = ["Thing", "url_for"]
__all__ += ["f"]
__all__.extend(["g"])

#: The answer,
#: twice.
ANSWER: int = 42
NAME = "x"  #: Inline doc.
PLAIN = 1
DOCSTRING_AFTER = {"a": 1}
"""Documented after."""


def f(a, b: int = 1, /, c=2, *args: str, d, e: t.Any = None, **kw) -> dict[str, int]:
    """F."""


async def g(*, only): ...


@t.overload
def h(x: int) -> int: ...
@t.overload
def h(x: str) -> str: ...
def h(x):
    """H."""


class Thing(Base, metaclass=Meta):
    """Thing."""

    kind = "thing"
    """A kind."""

    def __init__(self, size: int) -> None:
        self.size = size  #: The size.
        self.hidden = 1
        self.doc = 2
        """Documented instance attribute."""

    @property
    def area(self) -> float:
        """Area."""

    @area.setter
    def area(self, value):
        pass

    @classmethod
    def make(cls): ...

    @staticmethod
    def util(x, /): ...

    class Inner:
        """Inner."""

if TYPE_CHECKING:
    def typed() -> None: ...
'''


def test_module_objects() -> None:
    info = parse_module(SOURCE, "pkg/mod.py")
    assert info.problem is None and info.docstring == "Module doc."
    assert info.all_names == ("Thing", "url_for", "f", "g")
    assert info.top_level == ("__all__", "ANSWER", "NAME", "PLAIN", "DOCSTRING_AFTER", "f",
                              "g", "h", "Thing", "typed")
    objects = {q: (o.kind, o.signature, o.docstring, o.first_line, o.last_line)
               for q, o in info.objects.items()}
    assert objects["ANSWER"] == ("data", "", "The answer,\ntwice.", 16, 16)
    assert objects["NAME"] == ("data", "", "Inline doc.", 17, 17)
    assert objects["PLAIN"] == ("data", "", None, 18, 18)
    assert objects["DOCSTRING_AFTER"][2] == "Documented after."
    assert objects["f"] == (
        "function", "(a, b: int = 1, /, c=2, *args: str, d, e: t.Any = None, **kw) -> "
        "dict[str, int]", "F.", 23, 24)
    assert objects["g"][1] == "(*, only)" and info.objects["g"].is_async
    assert objects["h"][:3] == ("function", "(x)", "H.")
    assert info.objects["h"].overloads == ("(x: int) -> int", "(x: str) -> str")
    assert info.objects["Thing"].bases == ("Base",)
    assert info.objects["Thing"].members == (
        "Thing.kind", "Thing.__init__", "Thing.size", "Thing.doc", "Thing.area",
        "Thing.make", "Thing.util", "Thing.Inner")
    assert objects["Thing.kind"] == ("attribute", "", "A kind.", 41, 41)
    assert objects["Thing.size"] == ("attribute", "", "The size.", 45, 45)
    assert objects["Thing.doc"][2] == "Documented instance attribute."
    assert "Thing.hidden" not in objects
    assert objects["Thing.area"] == ("property", "(self) -> float", "Area.", 50, 56)
    assert info.objects["Thing.area"].annotation == "float"
    assert objects["Thing.make"][0] == "classmethod"
    assert objects["Thing.util"][:2] == ("staticmethod", "(x, /)")
    assert objects["Thing.Inner"][0] == "class"
    assert objects["typed"][0] == "function"


def test_imports_are_recorded_as_references() -> None:
    info = parse_module(SOURCE, "pkg/mod.py")
    assert info.imports == {
        "annotations": ImportRef("__future__", 0, "annotations"),
        "os": ImportRef("os", 0, None), "t": ImportRef("typing", 0, None),
        "sibling": ImportRef("", 1, "sibling"), "url_for": ImportRef("helpers", 1, "url_for"),
        "renamed": ImportRef("helpers", 1, "other")}
    assert info.star_imports == (ImportRef("up", 2, None),)


def test_annotated_doc_parameters() -> None:
    source = (b"from typing import Annotated\nfrom typing_extensions import Doc\n"
              b"def get(path: Annotated[str, Doc('The path.')], n: int = 1) -> "
              b"Annotated[int, Doc('x')]:\n    pass\n"
              b"class A:\n    def __init__(self):\n"
              b"        self.v: Annotated[str, Doc('The v.')] = 'a'\n")
    info = parse_module(source)
    assert info.objects["get"].signature == "(path: str, n: int = 1) -> int"
    assert info.objects["get"].param_docs == (("path", "str", "The path."),)
    assert info.objects["A.v"].docstring == "The v."
    assert info.objects["A.v"].annotation == "str"


def test_unreadable_files_are_reported_not_raised() -> None:
    cases = {
        b"def broken(:\n": "not valid Python (line 1)",
        b"x = " + b"(" * 100_000 + b")" * 100_000 + b"\n": "",
        b"x = " + b"1" * 5000 + b"\n": "not valid Python",
        b"x = 1\x00\n": "not valid Python",
        b"# -*- coding: nope -*-\nx = 1\n": "not valid Python",
        b"x = [" * 20_000 + b"]" * 20_000: "",
    }
    for source, reason in cases.items():
        info = parse_module(source, "bad.py")
        assert info.problem is not None and reason in info.problem, (source[:30], info)
        assert info.objects == {}


def test_caps() -> None:
    assert parse_module(b"x = 1\n", max_bytes=3).problem == "file over 3 bytes"
    many = "".join(f"def f{i}():\n    pass\n" for i in range(50)).encode()
    info = parse_module(many, max_objects=10)
    assert info.truncated and list(info.objects) == [f"f{i}" for i in range(10)]


def test_hostile_comment_line_is_linear() -> None:
    # A long line of '#:' inside a string: one pass finds the comment (quadratic before).
    line = b'x = "' + b"#:" * 300_000 + b'"  #: doc\n'
    info = parse_module(line)
    assert info.objects["x"].docstring == "doc"
