"""Autodoc and mkdocstrings directives: found, resolved, ordered."""

from __future__ import annotations

import pytest

from doc_index.indexer.autodoc import (
    Autodoc,
    AutodocRequest,
    markdown_requests,
    parse_yaml_subset,
    rst_requests,
)
from doc_index.indexer.module_finder import ModuleFinder, SphinxConf

FILES = {
    "pkg/__init__.py": b'"""Package."""\nfrom .mod import Widget, helper\nfrom .extra import *\n'
                       b'__all__ = ["helper", "Widget"]\n',
    "pkg/mod.py": b'''"""The module."""

from .base import Base


def helper(x: int) -> int:
    """Help."""


def zeta():
    """Last by name."""


def _private():
    """Private."""


def undocumented():
    pass


class Widget(Base):
    """A widget."""

    def __init__(self, size: int) -> None:
        """Make it."""

    def b_method(self):
        """B."""

    @classmethod
    def a_factory(cls, n):
        """A."""

    size = 1
    """The size."""

    def __len__(self):
        """Special."""
''',
    "pkg/base.py": b'class Base:\n    def inherited(self):\n        """From base."""\n',
    "pkg/extra.py": b'def extra():\n    """Extra."""\n',
}


def autodoc(conf: SphinxConf | None = None) -> Autodoc:
    return Autodoc(ModuleFinder(FILES.get, ("",)), conf)


def request(kind: str, name: str, context: tuple[str, ...] = (), signature: str = "",
            **options: object) -> AutodocRequest:
    return AutodocRequest(kind, name, signature, options, context, (), 0, 1, "")


def names(kind: str, name: str, conf: SphinxConf | None = None, **options: object):
    result = autodoc(conf).document(request(kind, name, **options))
    assert result.problem is None, result.problem
    return [(o.name, o.depth) for o in result.objects]


def test_module_members_follow_all_and_order() -> None:
    assert names("automodule", "pkg", members="") == [
        ("pkg", 0), ("pkg.Widget", 1), ("pkg.Widget.a_factory", 2), ("pkg.Widget.b_method", 2),
        ("pkg.Widget.size", 2), ("pkg.helper", 1)]
    bysource = SphinxConf(member_order="bysource")
    assert names("automodule", "pkg", bysource, members="")[1:3] == [
        ("pkg.helper", 1), ("pkg.Widget", 1)]


def test_module_without_all() -> None:
    assert names("automodule", "pkg.mod", members="") == [
        ("pkg.mod", 0), ("pkg.mod.Widget", 1), ("pkg.mod.Widget.a_factory", 2),
        ("pkg.mod.Widget.b_method", 2), ("pkg.mod.Widget.size", 2), ("pkg.mod.helper", 1),
        ("pkg.mod.zeta", 1)]
    found = names("automodule", "pkg.mod", members="", **{"undoc-members": "",
                                                           "private-members": ""})
    assert ("pkg.mod._private", 1) in found and ("pkg.mod.undocumented", 1) in found
    assert ("pkg.mod.Base", 1) not in found
    imported = names("automodule", "pkg.mod", members="", **{"imported-members": "",
                                                              "undoc-members": ""})
    assert ("pkg.mod.Base", 1) in imported


def test_class_member_options() -> None:
    assert names("autoclass", "pkg.Widget", members="b_method, a_factory") == [
        ("pkg.Widget", 0), ("pkg.Widget.a_factory", 1), ("pkg.Widget.b_method", 1)]
    groupwise = SphinxConf(member_order="groupwise")
    assert names("autoclass", "pkg.Widget", groupwise, members="",
                 **{"special-members": "", "exclude-members": "__init__"}) == [
        ("pkg.Widget", 0), ("pkg.Widget.a_factory", 1), ("pkg.Widget.__len__", 1),
        ("pkg.Widget.b_method", 1), ("pkg.Widget.size", 1)]
    inherited = names("autoclass", "pkg.Widget", members="", **{"inherited-members": ""})
    assert ("pkg.Widget.inherited", 1) in inherited
    assert ("pkg.Widget.inherited", 1) not in names("autoclass", "pkg.Widget", members="")
    assert names("autofunction", "pkg.helper", members="") == [("pkg.helper", 0)]


def test_object_fields() -> None:
    result = autodoc(SphinxConf(autoclass_content="both")).document(
        request("autoclass", "Widget", ("pkg",)))
    widget = result.objects[0]
    assert widget._replace(text="") == widget._replace(
        name="pkg.Widget", kind="class", title="Widget",
        signature="class pkg.Widget(size: int)", text="", file="pkg/mod.py",
        first_line=22, last_line=39, depth=0)
    assert widget.text == "A widget.\n\nMake it."
    method = autodoc().document(request("automethod", "pkg.Widget.a_factory")).objects[0]
    assert (method.title, method.signature) == (
        "Widget.a_factory()", "classmethod pkg.Widget.a_factory(n)")
    explicit = autodoc().document(request("autofunction", "pkg.helper", signature="(y)"))
    assert explicit.objects[0].signature == "pkg.helper(y)"
    missing = autodoc().document(request("autofunction", "nothing", ("pkg",)))
    assert missing.objects == () and missing.problem == "nothing: no such object: nothing in pkg"


def test_mkdocstrings_options() -> None:
    assert names("mkdocstrings", "pkg.Widget", members=["size", "b_method"]) == [
        ("pkg.Widget", 0), ("pkg.Widget.size", 1), ("pkg.Widget.b_method", 1)]
    assert names("mkdocstrings", "pkg.Widget", members=False) == [("pkg.Widget", 0)]
    everything = names("mkdocstrings", "pkg.Widget")
    assert ("pkg.Widget.__len__", 1) in everything
    result = autodoc().document(request("mkdocstrings", "pkg.helper"))
    assert result.objects[0].title == ""
    result = autodoc().document(request("mkdocstrings", "pkg.helper", show_root_heading=True))
    assert result.objects[0].title == "helper()"


def test_rst_requests_context() -> None:
    page = [
        ".. currentmodule:: pkg", "", ".. autofunction:: helper(a, b)", "   :noindex:", "",
        ".. automodule:: pkg.mod", "", ".. autoclass:: Widget", "   :members: a, b", "",
        "   Extra words.", "", ".. py:currentmodule:: None", "", ".. autodata:: x", "",
        "Example::", "", "   .. autofunction:: not_me",
    ]
    found = [(r.kind, r.name, r.signature, r.options, r.context, r.content, r.start, r.end)
             for r in rst_requests(page)]
    assert found == [
        ("autofunction", "helper", "(a, b)", {"noindex": ""}, ("pkg",), (), 2, 4),
        ("automodule", "pkg.mod", "", {}, ("pkg",), (), 5, 6),
        ("autoclass", "Widget", "", {"members": "a, b"}, ("pkg.mod",), ("Extra words.",), 7,
         11),
        ("autodata", "x", "", {}, (), (), 14, 15),
    ]


def test_markdown_requests() -> None:
    page = [
        "# API", "", "::: pkg.Widget", "    handler: python", "    options:",
        "      members:", "        - size", "      show_root_heading: true", "",
        "Text.", "", "```{eval-rst}", ".. autofunction:: pkg.helper", "```", "",
        "```{autoclass} pkg.Widget", ":members:", "```", "", "```md", "::: not.me", "```",
    ]
    found = [(r.kind, r.name, r.options, r.start, r.end) for r in markdown_requests(page)]
    assert found == [
        ("mkdocstrings", "pkg.Widget", {"members": ["size"], "show_root_heading": True}, 2,
         8),
        ("autofunction", "pkg.helper", {}, 12, 13),
        ("autoclass", "pkg.Widget", {"members": ""}, 15, 18),
    ]


@pytest.mark.parametrize(("lines", "value"), [
    (["options:", "  members: [a, 'b', c]", "  heading_level: 3", "  filters: null"],
     {"options": {"members": ["a", "b", "c"], "heading_level": 3, "filters": None}}),
    (["- a", "- b:", "- ", "  - c"], ["a", "b:", ["c"]]),
    (["a: yes", "b: \"x: y\"", "c:", "d: 1.5", "  weird", "e: off"],
     {"a": True, "b": "x: y", "c": None, "d": "1.5", "e": False}),
    ([], None),
])
def test_yaml_subset(lines: list[str], value: object) -> None:
    assert parse_yaml_subset(lines) == value


def test_yaml_subset_deep_nesting_is_bounded() -> None:
    lines = [" " * n + "k:" for n in range(2000)]
    assert isinstance(parse_yaml_subset(lines), dict)
