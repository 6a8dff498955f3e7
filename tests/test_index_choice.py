"""sources/index_choice.py: which index a pin is fetched from, what a project's files
name (as names only), when a cached package may be kept. The end-to-end behaviour, with
real subprocesses and recording servers, is tests/test_index_trust.py."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from conftest import write_tree
from package_servers import sri

from doc_index.sources.index_choice import (
    Choice,
    IndexChoice,
    Named,
    npm_names,
    place,
    python_names,
    rebuild_reason,
)
from doc_index.sources.lockfiles import Pin

USER = "https://me:tok@corp.example/simple/"
ENV = {"PIP_CONFIG_FILE": os.devnull, "UV_NO_CONFIG": "1", "PIP_INDEX_URL": USER,
       "PIP_EXTRA_INDEX_URL": "https://extra.example/simple", "npm_config_registry":
       "https://npm.corp.example/", "npm_config_@corp:registry": "https://npm.corp.example/c/",
       "NPM_CONFIG_GLOBALCONFIG": os.devnull, "NPM_CONFIG_USERCONFIG": os.devnull}


def pypi(name: str = "alpha", *, indexes: tuple[str, ...] = (), links: tuple[str, ...] = (),
         hashes: tuple[str, ...] = (), sources: tuple[str, ...] = ("uv.lock",)) -> Pin:
    return Pin("pypi", name, "1.0", True, sources, indexes[0] if indexes else None, hashes,
               indexes, links)


def npm(name: str, index: str | None = None) -> Pin:
    return Pin("npm", name, "1.0.0", True, ("package-lock.json",), index)


def test_place_is_one_spelling_per_location() -> None:
    assert place("HTTPS://Me:Tok@Corp.Example:443/simple/") == "https://corp.example/simple"
    assert place("http://127.0.0.1:8080/simple") == "http://127.0.0.1:8080/simple"
    assert place("http://127.0.0.1:80/x/?q=1#f") == "http://127.0.0.1/x"
    assert place("file:///srv/idx/") == "file:///srv/idx"


def test_what_a_project_names(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "pyproject.toml": (
            '[tool.uv]\nextra-index-url = ["https://x.example/simple"]\n'
            '[[tool.uv.index]]\nurl = "https://pinned.example/simple"\nexplicit = true\n'
            '[[tool.uv.index]]\nurl = "https://uvi.example/simple"\n'
            '[[tool.pdm.source]]\nname = "p"\nurl = "https://pdm.example/simple"\n'),
        "uv.toml": 'find-links = "https://links.example/"\n',
        ".npmrc": ("registry=https://r.example/${TOKEN}/\n@s:registry = \"https://s.example/\"\n"
                   "//r.example/:_authToken=${SECRET}\n; registry=https://commented/\n"),
        ".yarnrc.yml": ("npmRegistryServer: https://berry.example\n"
                        "npmScopes:\n  b:\n    npmRegistryServer: https://b.example\n"),
    })
    assert python_names(tmp_path) == [
        Named("https://uvi.example/simple", "pyproject.toml [tool.uv]"),
        Named("https://x.example/simple", "pyproject.toml [tool.uv]"),
        Named("https://links.example/", "uv.toml", True),
        Named("https://pdm.example/simple", "pyproject.toml [[tool.pdm.source]]")]
    # .npmrc wins over .yarnrc.yml for the default; values as written, never expanded
    assert npm_names(tmp_path) == {
        "": Named("https://r.example/${TOKEN}/", ".npmrc"),
        "@s": Named("https://s.example/", ".npmrc"),
        "@b": Named("https://b.example", ".yarnrc.yml")}
    (tmp_path / ".yarnrc.yml").write_text("a: &x [*x]\n")  # no registry named
    (tmp_path / ".npmrc").unlink()
    outside = write_tree(tmp_path.parent / "elsewhere", {"npmrc": "registry=https://o.example/\n"})
    (tmp_path / ".npmrc").symlink_to(outside / "npmrc")  # a link out is not followed
    os.mkfifo(tmp_path / ".yarnrc")  # a FIFO is not read (it would block)
    assert npm_names(tmp_path) == {}


def test_which_pins_are_refused_and_where_the_rest_come_from(tmp_path: Path) -> None:
    write_tree(tmp_path, {"pyproject.toml": '[tool.uv]\nindex-url = "https://evil.example/s"\n',
                          ".npmrc": "@evil:registry=https://evil.example/npm/\n"})
    choices = IndexChoice(tmp_path, env=ENV)
    # a lockfile's own record wins over the project's configuration: PyPI is the default
    fine = choices.for_pin(pypi(indexes=("https://pypi.org/simple",)))
    assert fine.refusal is None and fine.note is None
    assert [loc.url for loc in fine.config.locations] == [USER, "https://extra.example/simple"]
    # the index the project was locked against, if the user names it, is asked first
    first = choices.for_pin(pypi(indexes=("https://EXTRA.example/simple/",)))
    assert first.refusal is None
    assert [loc.url for loc in first.config.locations] == ["https://extra.example/simple", USER]
    # no record of its own: the project's [tool.uv] names another index
    refused = choices.for_pin(pypi(sources=("requirements.txt",)))
    assert refused.config is None and refused.refusal == (
        "pyproject.toml [tool.uv] names the index https://evil.example/s/, which your pip "
        "configuration does not name (https://corp.example/simple/, "
        "https://extra.example/simple): not fetched; to accept the project's index, run "
        "doc-index sync --trust-project-index by hand")
    assert choices.for_pin(pypi(links=("./wheels",), sources=("r.txt",))).refusal.startswith(
        "r.txt names the index ./wheels, which")
    # npm: a resolved URL on npm's public registry (or yarn's alias) is no choice
    assert choices.for_pin(npm("leftpad", "https://registry.yarnpkg.com/")).refusal is None
    assert choices.for_pin(npm("@corp/ui", "https://npm.corp.example/c/")).refusal is None
    assert choices.for_pin(npm("@corp/ui", "https://other.example/")).refusal.startswith(
        "package-lock.json names the registry https://other.example/, which your npm "
        "configuration does not use for it (https://npm.corp.example/c/)")
    assert choices.for_pin(npm("@evil/x", "https://registry.npmjs.org/")).refusal.startswith(
        ".npmrc names the registry https://evil.example/npm/")
    # a project's default registry: every package but those of a scope the user maps
    (tmp_path / ".npmrc").write_text("registry=https://evil.example/all/\n")
    choices = IndexChoice(tmp_path, env=ENV)
    assert choices.for_pin(npm("leftpad")).refusal.startswith(".npmrc names the registry")
    assert choices.for_pin(npm("@corp/ui")).refusal is None
    (tmp_path / ".npmrc").write_text("@evil:registry=https://evil.example/npm/\n")

    trusting = IndexChoice(tmp_path, env=ENV, trust=True)
    taken = trusting.for_pin(pypi(indexes=("https://u:p@evil.example/simple",)))
    assert taken.refusal is None
    assert taken.note == "from the project's index https://evil.example/simple/ " \
        "(--trust-project-index)"
    project_location = taken.config.locations[0]
    assert (project_location.url, project_location.from_project) == (
        "https://evil.example/simple/", True)  # its own credentials dropped
    assert trusting.for_pin(pypi(links=("/etc",), sources=("r.txt",))).refusal == (
        "r.txt names the index /etc, which your pip configuration does not name "
        "(https://corp.example/simple/, https://extra.example/simple): not fetched; a "
        "project's index is read over http(s) only")
    scoped = trusting.for_pin(npm("@evil/x"))
    assert scoped.config.registry_for("@evil/x") == "https://evil.example/npm/"
    assert scoped.config.authorize("https://evil.example/npm/@evil%2fx") is None


def test_a_cache_is_kept_only_from_an_agreeing_index_and_archive() -> None:
    data = b"archive bytes"
    sha = hashlib.sha256(data).hexdigest()
    sha512 = hashlib.sha512(data).hexdigest()
    choice = Choice(None, frozenset({place(USER)}))
    record = {"index": "https://corp.example/simple/", "archive_sha256": sha,
              "archive_hash": f"sha512:{sha512}"}
    assert rebuild_reason(record, choice, pypi()) is None
    assert rebuild_reason(record, choice, pypi(hashes=(f"sha256:{sha}",))) is None
    assert rebuild_reason(record, choice, pypi(hashes=("sha256:" + "0" * 64, sri(data)))) is None
    assert rebuild_reason(record, choice, pypi(hashes=("sha256:" + "0" * 64,))) == (
        f"the cache's archive (sha256 {sha[:12]}) is not the one uv.lock lists: rebuilt")
    assert rebuild_reason({**record, "index": "http://evil.example/simple/"}, choice,
                          pypi()) == ("cached from http://evil.example/simple/, not from an "
                                      "index your configuration names: rebuilt from yours")
    assert rebuild_reason({}, choice, pypi()).startswith("cached from an unrecorded index")
