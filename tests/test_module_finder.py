"""Modules found as Sphinx would, from conf.py read as data."""

from __future__ import annotations

import pytest

from doc_index.foundation.safe_paths import path_problem
from doc_index.indexer.module_finder import (
    Found,
    ModuleFinder,
    NotFound,
    absolute_module,
    normalize,
    package_roots,
    read_sphinx_conf,
    search_roots,
)

CONF = b'''
import os, sys
from pathlib import Path
here = os.path.dirname(__file__)
sys.path.insert(0, os.path.abspath(".."))
sys.path.insert(0, os.path.abspath("../src"))
sys.path.append(os.path.join(here, "..", "lib"))
sys.path.append(str(Path(__file__).parent.parent.resolve() / "pkgs"))
sys.path.insert(1, str(Path(__file__).parents[1] / "more"))
sys.path.append("/usr/lib/python3")
sys.path.append(os.path.abspath("../../.."))
sys.path.append(compute_it())
autodoc_member_order = "groupwise"
autodoc_default_options = {"members": True, "undoc-members": False, "exclude-members": "x"}
autoclass_content = "both"
'''


def test_conf_sys_path_from_literals() -> None:
    conf = read_sphinx_conf(CONF, "docs/conf.py")
    assert conf.sys_path == ("src", "more", "", "lib", "pkgs")
    assert conf.outside == ("'/usr/lib/python3'", "os.path.abspath('../../..')")
    assert conf.member_order == "groupwise"
    assert conf.default_options == {"members": None, "exclude-members": "x"}
    assert conf.autoclass_content == "both"
    assert search_roots(conf) == ("src", "more", "", "lib", "pkgs")


def test_conf_that_is_not_python() -> None:
    conf = read_sphinx_conf(b"sys.path.insert(0,", "doc/conf.py")
    assert conf.problem is not None and conf.sys_path == ()
    deep = read_sphinx_conf(b"x = " + b"(" * 50_000 + b")" * 50_000, "conf.py")
    assert deep.problem is not None


@pytest.mark.parametrize(("base", "relative", "expected"), [
    ("docs", "../src", "src"), ("docs", "..", ""), ("docs", "../..", None),
    ("docs", "/etc", None), ("", "a/./b//c", "a/b/c"), ("a", "b\\c", None),
    ("a", "x\0y", None),
])
def test_normalize(base: str, relative: str, expected: str | None) -> None:
    assert normalize(base, relative) == expected


FILES = {
    "src/flaskish/__init__.py": b'"""Pkg."""\nfrom .helpers import url_for\n'
                                b'from . import sub as sub\nfrom .app import App\n',
    "src/flaskish/helpers.py": b"def url_for(endpoint):\n    '''Make a URL.'''\n",
    "src/flaskish/app.py": b"from .scaffold import Scaffold\n"
                           b"class App(Scaffold):\n    '''App.'''\n",
    "src/flaskish/ns/scaffold_impl.py": b"class Base:\n    def route(self):\n"
                                        b"        '''Route.'''\n",
    "src/flaskish/scaffold.py": b"from .ns.scaffold_impl import Base\n"
                                b"class Scaffold(Base):\n    pass\n",
    "src/flaskish/sub/__init__.py": b"from .deep import *\n",
    "src/flaskish/sub/deep.py": b"def star():\n    '''Star.'''\n",
    "src/flaskish/broken.py": b"def (:\n",
    "src/flaskish/loop.py": b"from .loop import again\n",
}


def finder(asked: list[str]) -> ModuleFinder:
    def read(path: str) -> bytes | None:
        asked.append(path)
        return FILES.get(path)
    return ModuleFinder(read, search_roots(None))


@pytest.mark.parametrize(("name", "context", "module", "qualname"), [
    ("url_for", ("flaskish",), "flaskish.helpers", "url_for"),
    ("flaskish.url_for", (), "flaskish.helpers", "url_for"),
    ("flaskish.App.route", (), "flaskish.ns.scaffold_impl", "Base.route"),
    ("flaskish.sub.star", (), "flaskish.sub.deep", "star"),
    ("flaskish.sub", (), "flaskish.sub", ""),
    ("flaskish.ns.scaffold_impl.Base", (), "flaskish.ns.scaffold_impl", "Base"),
])
def test_resolve(name: str, context: tuple[str, ...], module: str, qualname: str) -> None:
    asked: list[str] = []
    found = finder(asked).resolve(name, context)
    assert isinstance(found, Found), found
    assert (found.module, found.qualname) == (module, qualname)
    assert found.file == module.replace(".", "/").join(["src/", ".py"]) \
        or found.file == "src/" + module.replace(".", "/") + "/__init__.py"
    assert [p for p in asked if path_problem(p)] == []


@pytest.mark.parametrize(("name", "reason"), [
    ("nothing.here", "no such module: nothing (looked in: src, lib, .)"),
    ("flaskish.nope", "no such object: nope in flaskish"),
    ("flaskish.App.nope", "no such object: nope in flaskish.app.App"),
    ("flaskish.broken.x", "unreadable file src/flaskish/broken.py: not valid Python"),
    ("flaskish.loop.again", "no such object: too many re-exports"),
])
def test_not_found_reasons(name: str, reason: str) -> None:
    found = finder([]).resolve(name)
    assert isinstance(found, NotFound) and found.reason.startswith(reason), found


def test_outside_entries_are_named_when_nothing_is_found() -> None:
    conf = read_sphinx_conf(b"import sys\nsys.path.append('../../x')\n", "docs/conf.py")
    found = ModuleFinder(lambda p: None, search_roots(conf), outside=conf.outside) \
        .resolve("mod.f")
    assert isinstance(found, NotFound)
    assert found.reason.endswith("sys.path entries outside the source were ignored: "
                                 "'../../x'")


def test_package_roots_and_relative_imports() -> None:
    files = ["src/a/__init__.py", "src/a/b/__init__.py", "lib/c/__init__.py", "d/__init__.py",
             "x/y/z/w/e/__init__.py"]
    assert package_roots(files) == ["", "lib", "src"]
    assert absolute_module("a.b", True, "c", 1) == "a.b.c"
    assert absolute_module("a.b", False, "c", 1) == "a.c"
    assert absolute_module("a.b", False, "", 2) is None
    assert absolute_module("a", False, "x", 1) == "x"


def test_file_cap_is_per_page_and_does_not_depend_on_the_cache() -> None:
    cold = ModuleFinder(FILES.get, ("src",), max_files=3)
    warm = ModuleFinder(FILES.get, ("src",))
    assert isinstance(warm.resolve("flaskish.App.route"), Found)  # fills warm's cache
    warm.max_files = 3
    for finder_ in (cold, warm):
        finder_.touched = {}
        found = finder_.resolve("flaskish.App.route")
        assert isinstance(found, NotFound), found
        assert len(finder_.touched) == 3


def test_dependencies_do_not_depend_on_the_cache() -> None:
    cold = ModuleFinder(FILES.get, ("src",))
    cold.resolve("flaskish.sub.star")
    warm = ModuleFinder(FILES.get, ("src",))
    warm.resolve("flaskish.App.route")
    warm.resolve("flaskish.sub.star")
    warm.touched = {}
    warm.resolve("flaskish.sub.star")
    assert warm.touched == cold.touched
