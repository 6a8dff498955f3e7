"""sources/package_meta.py: metadata as data, the repository of a package, the tag of a version."""

from __future__ import annotations

import pytest

from doc_index.foundation.errors import PackageError
from doc_index.sources.package_meta import (
    PackageMetadata,
    Repository,
    TagChoice,
    choose_tag,
    forge_repository,
    normalize_label,
    npm_repository,
    parse_package_json,
    parse_pkg_info,
    parse_pyproject,
    repository_url,
    sdist_metadata,
    tree_folder,
)

PKG_INFO = """Metadata-Version: 2.1
Name: Flask
Version: 3.1.0
Summary: A simple framework for building complex web applications.
Home-page: UNKNOWN
Project-URL: Donate, https://palletsprojects.com/donate
Project-URL: Source, https://github.com/pallets/flask/
Description-Content-Type: text/markdown

# Flask
Project-URL: Not, https://example.com/body-is-not-headers
"""


def test_pkg_info_headers_only() -> None:
    assert parse_pkg_info(PKG_INFO) == PackageMetadata(
        "Flask", "3.1.0", "A simple framework for building complex web applications.",
        (("Donate", "https://palletsprojects.com/donate"),
         ("Source", "https://github.com/pallets/flask/")))
    home = parse_pkg_info(b"Name: x\nHome-page: https://github.com/o/x\n")
    assert home.urls == (("Homepage", "https://github.com/o/x"),)


def test_pyproject_project_and_poetry_urls() -> None:
    text = """
[project]
name = "httpx"
version = "0.28.1"
[project.urls]
Changelog = "https://github.com/encode/httpx/blob/master/CHANGELOG.md"
Source = "https://github.com/encode/httpx"
"""
    assert parse_pyproject(text) == PackageMetadata("httpx", "0.28.1", None, (
        ("Changelog", "https://github.com/encode/httpx/blob/master/CHANGELOG.md"),
        ("Source", "https://github.com/encode/httpx")))
    poetry = '[tool.poetry]\nname = "p"\nrepository = "https://gitlab.com/g/sub/p"\n'
    assert parse_pyproject(poetry).urls == (("Repository", "https://gitlab.com/g/sub/p"),)
    with pytest.raises(PackageError, match="pyproject.toml does not parse"):
        parse_pyproject("[project\n")


def test_sdist_metadata_merges_pyproject_urls_after_pkg_info() -> None:
    files = {"PKG-INFO": b"Name: a\nVersion: 1\nProject-URL: Docs, https://a.dev\n",
             "pyproject.toml": b'[project.urls]\nDocs = "https://a.dev"\n'
                               b'Source = "https://codeberg.org/o/a"\n'}
    assert sdist_metadata(files) == PackageMetadata("a", "1", None, (
        ("Docs", "https://a.dev"), ("Source", "https://codeberg.org/o/a")))
    broken = {"PKG-INFO": b"Name: a\n", "pyproject.toml": b"[[["}
    assert sdist_metadata(broken) == PackageMetadata("a")


@pytest.mark.parametrize("url,expected", [
    ("https://github.com/pallets/flask/", "https://github.com/pallets/flask"),
    ("https://www.github.com/encode/httpx/tree/master/docs", "https://github.com/encode/httpx"),
    ("git+https://github.com/o/r.git", "https://github.com/o/r"),
    ("git@github.com:o/r.git", "https://github.com/o/r"),
    ("ssh://git@gitlab.com/group/sub/proj.git", "https://gitlab.com/group/sub/proj"),
    ("https://gitlab.com/group/sub/proj/-/blob/main/README.md",
     "https://gitlab.com/group/sub/proj"),
    ("https://github.com/sponsors/hynek", None),
    ("https://github.com/o", None),
    ("https://example.com/o/r", None),
    ("ftp://github.com/o/r", None),
])
def test_forge_repository(url: str, expected: str | None) -> None:
    assert forge_repository(url) == expected


@pytest.mark.parametrize("url,expected", [
    ("https://github.com/open-telemetry/opentelemetry-python-contrib/tree/main/"
     "instrumentation/opentelemetry-instrumentation-requests",
     ("https://github.com/open-telemetry/opentelemetry-python-contrib",
      "instrumentation/opentelemetry-instrumentation-requests")),
    ("https://gitlab.com/group/sub/proj/-/tree/main/libs/x/",
     ("https://gitlab.com/group/sub/proj", "libs/x")),
    ("https://www.github.com/encode/httpx/tree/master/docs", None),  # the docs, not a package
    ("https://github.com/o/r/tree/main", None),
    ("https://github.com/o/r/blob/main/libs/x/README.md", None),
    ("https://example.com/o/r/tree/main/libs/x", None),
])
def test_tree_folder(url: str, expected: tuple[str, str] | None) -> None:
    assert tree_folder(url) == expected


def test_repository_url_takes_the_package_folder_from_a_folder_url_of_it() -> None:
    urls = [("Homepage", "https://github.com/o/mono/tree/main/libs/core"),
            ("Repository", "https://github.com/o/mono"),
            ("Other", "https://github.com/o/elsewhere/tree/main/libs/other")]
    assert repository_url(urls) == Repository("https://github.com/o/mono", "libs/core",
                                              "project URL 'Repository'")
    assert repository_url(urls[1:]).directory is None  # (another repository's folder)


def test_repository_url_prefers_source_labels_then_home_then_other_forge_urls() -> None:
    click = [("Homepage", "https://palletsprojects.com/p/click/"),
             ("Donate", "https://palletsprojects.com/donate"),
             ("Issue Tracker", "https://github.com/pallets/click/issues/"),
             ("Source Code", "https://github.com/pallets/click/")]
    assert repository_url(click) == Repository(
        "https://github.com/pallets/click", None, "project URL 'Source Code'")
    attrs = [("Funding", "https://github.com/sponsors/hynek"),
             ("GitHub", "https://github.com/python-attrs/attrs")]
    assert repository_url(attrs).url == "https://github.com/python-attrs/attrs"
    home = [("Changelog", "https://github.com/o/a/blob/main/CHANGES.md"),
            ("Homepage", "https://github.com/o/b")]
    assert repository_url(home) == Repository("https://github.com/o/b", None,
                                              "project URL 'Homepage'")
    tracker = [("Tracker", "https://github.com/o/c/issues")]
    assert repository_url(tracker).url == "https://github.com/o/c"
    self_hosted = [("Repository", "https://git.example.org/team/tool.git")]
    assert repository_url(self_hosted).url == "https://git.example.org/team/tool"
    assert repository_url([("Homepage", "https://example.org"),
                           ("Funding", "https://github.com/o/r")]) is None
    assert normalize_label("Source Code") == normalize_label("source-code") == "sourcecode"


@pytest.mark.parametrize("value,expected", [
    ("github:o/r", Repository("https://github.com/o/r", None, "package.json repository")),
    ("o/r", Repository("https://github.com/o/r", None, "package.json repository")),
    ("gitlab:g/p", Repository("https://gitlab.com/g/p", None, "package.json repository")),
    ({"type": "git", "url": "git+https://github.com/babel/babel.git",
      "directory": "packages/babel-core"},
     Repository("https://github.com/babel/babel", "packages/babel-core",
                "package.json repository")),
    ("gist:11081aaa281", None),
    ({"url": 42}, None),
    (None, None),
])
def test_npm_repository(value: object, expected: Repository | None) -> None:
    assert npm_repository(value) == expected


def test_package_json() -> None:
    meta, repo = parse_package_json(
        b'{"name": "@s/p", "version": "1.2.3", "homepage": "https://github.com/s/p#readme"}')
    assert meta == PackageMetadata("@s/p", "1.2.3", None,
                                   (("Homepage", "https://github.com/s/p#readme"),))
    assert repo == Repository("https://github.com/s/p", None, "package.json homepage")
    with pytest.raises(PackageError, match="package.json is not an object"):
        parse_package_json("[]")


TAGS = ["v0.27.0", "0.28.0", "v0.28.1", "0.28.1", "other-0.28.1", "release-0.29.0",
        "httpx-0.30.0", "v0.30.0", "1.0", "v2.0.0rc1", "refs/tags/v3.0.0^{}"]


@pytest.mark.parametrize("version,name,expected", [
    ("0.28.1", "httpx", TagChoice("0.28.1", "tag 0.28.1: the version; also matching: v0.28.1")),
    ("0.27.0", "httpx", TagChoice("v0.27.0", "tag v0.27.0: the version")),
    ("0.29.0", "httpx", TagChoice("release-0.29.0", "tag release-0.29.0: a release prefix")),
    ("0.30.0", "httpx", TagChoice("httpx-0.30.0",
                                  "tag httpx-0.30.0: the package's name and the version")),
    ("1.0.0", "httpx", TagChoice("1.0", "tag 1.0: the version (1.0.0 with zero padding)")),
    ("2.0.0-rc1", "httpx", TagChoice("v2.0.0rc1", "tag v2.0.0rc1: the version")),
    ("3.0.0", "httpx", TagChoice("v3.0.0", "tag v3.0.0: the version")),
    ("0.31.0", "httpx", TagChoice(None, "none of the repository's 11 tags names version 0.31.0")),
])
def test_choose_tag_pypi(version: str, name: str, expected: TagChoice) -> None:
    assert choose_tag(TAGS, version, name=name) == expected


def test_choose_tag_never_takes_another_packages_tag() -> None:
    assert choose_tag(["other-1.0.0", "pkg-2.0.0"], "1.0.0", name="pkg") == TagChoice(
        None, "none of the repository's 2 tags names version 1.0.0 "
              "(tags with that version under another name: other-1.0.0)")
    legacy = choose_tag(["Flask-0.12.5", "0.12.5"], "0.12.5", name="flask")
    assert legacy == TagChoice("Flask-0.12.5", "tag Flask-0.12.5: the package's name and "
                                               "the version")


def test_choose_tag_npm_monorepo_and_exact_versions() -> None:
    tags = ["@babel/core@7.26.0", "@babel/parser@7.26.0", "v7.26.0", "core@7.25.0"]
    assert choose_tag(tags, "7.26.0", name="@babel/core", ecosystem="npm") == TagChoice(
        "@babel/core@7.26.0", "tag @babel/core@7.26.0: the package's name and the version")
    assert choose_tag(tags, "7.25.0", name="@babel/core", ecosystem="npm").tag == "core@7.25.0"
    # npm versions compare exactly: no zero padding, no PEP 440 spelling
    assert choose_tag(["v1.0"], "1.0.0", ecosystem="npm").tag is None
    assert choose_tag(["v1.0.0-rc.1"], "1.0.0-rc.1", ecosystem="npm").tag == "v1.0.0-rc.1"
