"""What a package says about itself, read as data: its repository and the tag of a version.

- ``PKG-INFO`` (core metadata, email-header format: ``Name``, ``Version``, ``Summary``,
  ``Home-page``, ``Project-URL``), ``pyproject.toml`` (``[project.urls]``, poetry's
  ``repository``/``homepage``/``urls``) and ``package.json`` (``repository``: an object
  with ``url``/``directory``, or the shorthands ``github:o/r``, ``gitlab:o/r``,
  ``bitbucket:o/r``, ``o/r``);
- ``repository_url``: the repository among a package's URLs. Labels are compared as
  PEP 753 normalizes them (lowercase, no punctuation or blanks). First a label that names
  the code (``Source``, ``Repository``, ``Code``, ``GitHub``, ...; any host), then
  ``Homepage`` when it is on a known forge, then any other URL on a known forge that
  names a repository (an issue tracker, a changelog at ``/blob/...``). A forge URL is cut
  to the repository (``https://github.com/o/r/tree/main/docs`` -> ``https://github.com/o/r``);
  a URL of a folder of that repository (``/tree/main/libs/core``) names the package's
  folder in it, as npm's ``repository.directory`` does (``tree_folder``);
- ``choose_tag``: the tag of a version among a repository's tags (``git ls-remote --tags``
  lines or plain names). See its docstring for the order.
"""

from __future__ import annotations

import json
import re
import string
import sys
from collections.abc import Iterable, Mapping
from email.parser import HeaderParser
from email.policy import compat32
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from ..foundation.errors import PackageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_METADATA_BYTES = 4 << 20


class PackageMetadata(NamedTuple):
    """A package's own words: name, version, summary and its URLs as ``(label, url)`` in
    the order given (``Home-page`` as ``Homepage``); None where the file says nothing."""

    name: str | None = None
    version: str | None = None
    summary: str | None = None
    urls: tuple[tuple[str, str], ...] = ()


class Repository(NamedTuple):
    """A repository to clone (``https://host/owner/repo`` for a known forge, the URL as
    given otherwise), the package's folder inside it (npm ``directory``) and the field
    that named it."""

    url: str
    directory: str | None
    origin: str


class TagChoice(NamedTuple):
    """The tag chosen for a version (None when none fits) and why, in one line."""

    tag: str | None
    reason: str


def _text(data: bytes | str, what: str) -> str:
    if isinstance(data, bytes):
        if len(data) > MAX_METADATA_BYTES:
            raise PackageError(f"{what} is over {MAX_METADATA_BYTES} bytes")
        return data.decode("utf-8", "replace")
    if len(data) > MAX_METADATA_BYTES:
        raise PackageError(f"{what} is over {MAX_METADATA_BYTES} bytes")
    return data


def parse_pkg_info(data: bytes | str) -> PackageMetadata:
    """Core metadata (``PKG-INFO``/``METADATA``): the headers only, never the body."""
    text = _text(data, "PKG-INFO")
    headers = HeaderParser(policy=compat32).parsestr(text, headersonly=True)

    def one(key: str) -> str | None:
        value = headers.get(key)
        value = str(value).strip() if value is not None else ""
        return value if value and value != "UNKNOWN" else None

    urls = []
    if one("Home-page"):
        urls.append(("Homepage", one("Home-page") or ""))
    for entry in headers.get_all("Project-URL") or []:
        label, sep, url = str(entry).partition(",")
        if sep and url.strip():
            urls.append((label.strip(), url.strip()))
    return PackageMetadata(one("Name"), one("Version"), one("Summary"), tuple(urls))


def _toml(data: bytes | str, what: str) -> dict[str, Any]:
    try:
        return tomllib.loads(_text(data, what))
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise PackageError(f"{what} does not parse: {exc}") from None


def _str(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def parse_pyproject(data: bytes | str) -> PackageMetadata:
    """``[project]`` name, version, description and urls; poetry's fields when the
    project table has none."""
    table = _toml(data, "pyproject.toml")
    project = table["project"] if isinstance(table.get("project"), dict) else {}
    tool = table["tool"] if isinstance(table.get("tool"), dict) else {}
    poetry = tool["poetry"] if isinstance(tool.get("poetry"), dict) else {}
    urls: list[tuple[str, str]] = []
    project_urls = project.get("urls")
    if isinstance(project_urls, dict):
        urls += [(k, v.strip()) for k, v in project_urls.items() if isinstance(v, str)]
    for key, label in (("repository", "Repository"), ("homepage", "Homepage")):
        if _str(poetry.get(key)):
            urls.append((label, _str(poetry.get(key)) or ""))
    poetry_urls = poetry.get("urls")
    if isinstance(poetry_urls, dict):
        urls += [(k, v.strip()) for k, v in poetry_urls.items() if isinstance(v, str)]
    return PackageMetadata(
        _str(project.get("name")) or _str(poetry.get("name")),
        _str(project.get("version")) or _str(poetry.get("version")),
        _str(project.get("description")) or _str(poetry.get("description")),
        tuple(urls))


def sdist_metadata(files: Mapping[str, bytes]) -> PackageMetadata:
    """An sdist's metadata from its kept files: ``PKG-INFO`` first, the URLs of
    ``pyproject.toml`` added after its own (a bad pyproject.toml is ignored here)."""
    meta = parse_pkg_info(files["PKG-INFO"]) if "PKG-INFO" in files else PackageMetadata()
    if "pyproject.toml" in files:
        try:
            extra = parse_pyproject(files["pyproject.toml"])
        except PackageError:
            return meta
        seen = set(meta.urls)
        meta = PackageMetadata(meta.name or extra.name, meta.version or extra.version,
                               meta.summary or extra.summary,
                               meta.urls + tuple(u for u in extra.urls if u not in seen))
    return meta


# --- repositories ----------------------------------------------------------------------

FORGES = frozenset({"github.com", "gitlab.com", "codeberg.org", "bitbucket.org", "gitea.com",
                    "git.sr.ht", "framagit.org", "salsa.debian.org"})
_NOT_OWNERS = frozenset({"sponsors", "orgs", "apps", "marketplace", "features", "topics",
                         "settings", "about", "site", "collections", "users", "login",
                         "explore", "search", "notifications", "pricing"})
_SOURCE_LABELS = frozenset({"source", "sources", "sourcecode", "repository", "repo", "code",
                            "coderepository", "sourcerepository", "github", "gitlab", "git",
                            "clone", "vcs", "scm", "bitbucket", "codeberg", "forge"})
_HOME_LABELS = frozenset({"homepage", "home", "website"})
_FUNDING_LABELS = frozenset({"funding", "donate", "donation", "donations", "sponsor",
                             "sponsors", "tidelift", "opencollective"})
_SCP = re.compile(r"^(?:[\w.+-]+@)?(?P<host>[\w.-]+):(?!//)(?P<path>.+)$")


def normalize_label(label: str) -> str:
    """A project URL label as PEP 753 compares them: lowercase, punctuation and blanks
    removed (``Source Code`` -> ``sourcecode``)."""
    drop = set(string.punctuation + string.whitespace)
    return "".join(ch for ch in label.lower() if ch not in drop)


def _host_and_path(url: str) -> tuple[str, str] | None:
    url = url.strip()
    if url.startswith("git+"):
        url = url[4:]
    match = _SCP.match(url) if "://" not in url else None
    if match:  # ``git@host:o/r``; a host has a dot (``gist:id`` is npm's shorthand)
        host = match.group("host").lower()
        return (host, "/" + match.group("path").lstrip("/")) if "." in host else None
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https", "git", "ssh") or not parts.hostname:
        return None
    return parts.hostname.lower().removeprefix("www."), parts.path


def forge_repository(url: str) -> str | None:
    """``https://host/owner/repo`` when ``url`` points into a repository on a known forge
    (any page of it, a clone URL, ``git@host:o/r.git``), else None."""
    found = _host_and_path(url)
    if found is None:
        return None
    host, path = found
    if host not in FORGES and "gitlab" not in host:
        return None
    path = path.split("#", 1)[0].split("?", 1)[0]
    if host not in ("github.com", "codeberg.org", "bitbucket.org", "gitea.com", "git.sr.ht"):
        path = path.split("/-/", 1)[0]  # GitLab: groups nest, pages follow /-/
        parts = [p for p in path.split("/") if p]
    else:
        parts = [p for p in path.split("/") if p][:2]
    if len(parts) < 2 or parts[0].lower() in _NOT_OWNERS:
        return None
    parts[-1] = parts[-1].removesuffix(".git")
    if not parts[-1]:
        return None
    return f"https://{host}/" + "/".join(parts)


def _generic_repository(url: str) -> str | None:
    found = _host_and_path(url)
    if found is None:
        return None
    host, path = found
    for marker in ("/-/", "/tree/", "/blob/", "/src/"):
        path = path.split(marker, 1)[0]
    path = path.rstrip("/").removesuffix(".git")
    return f"https://{host}{path}" if path.strip("/") else None


_TREE = re.compile(r"^/(?P<repo>[^/]+/[^/]+(?:/[^/]+)*?)(?:/-)?/tree/[^/]+/(?P<folder>.+)$")
# A folder a project URL points at that is its documentation, not the package.
_NOT_PACKAGE_FOLDERS = frozenset({"docs", "doc", "documentation", "website", "site", "book",
                                  "examples", "example", "tests", "test", ".github"})


def tree_folder(url: str) -> tuple[str, str] | None:
    """``(repository, folder)`` for a forge URL of a folder (GitHub's
    ``/o/r/tree/<ref>/<folder>``, GitLab's ``/g/p/-/tree/<ref>/<folder>``): how a PyPI
    package published from a monorepo names its folder
    (``.../opentelemetry-python-contrib/tree/main/instrumentation/<package>``); None for
    another URL or a docs folder (``/tree/main/docs``: the docs, not the package)."""
    found = _host_and_path(url)
    repository = forge_repository(url)
    if found is None or repository is None:
        return None
    match = _TREE.match(found[1].split("#", 1)[0].split("?", 1)[0].rstrip("/"))
    if match is None:
        return None
    folder = match.group("folder")
    if folder.split("/")[0].lower() in _NOT_PACKAGE_FOLDERS:
        return None
    return repository, folder


def repository_url(urls: Iterable[tuple[str, str]]) -> Repository | None:
    """The package's repository among its ``(label, url)`` (see the module text), with
    the package's folder in it when one of the URLs points at a folder of that repository
    (``tree_folder``)."""
    urls = list(urls)
    found = _ranked_repository(urls)
    if found is None or found.directory is not None:
        return found
    for _, url in urls:
        tree = tree_folder(url)
        if tree is not None and tree[0].lower() == found.url.lower():
            return found._replace(directory=tree[1])
    return found


def _ranked_repository(urls: Iterable[tuple[str, str]]) -> Repository | None:
    ranked: list[tuple[int, int, Repository]] = []
    for order, (label, url) in enumerate(urls):
        key = normalize_label(label)
        forge = forge_repository(url)
        origin = f"project URL {label!r}"
        if key in _SOURCE_LABELS:
            found = forge or _generic_repository(url)
            if found:
                ranked.append((0, order, Repository(found, None, origin)))
        elif forge and key in _HOME_LABELS:
            ranked.append((1, order, Repository(forge, None, origin)))
        elif forge and key not in _FUNDING_LABELS:
            ranked.append((2, order, Repository(forge, None, origin)))
    return min(ranked)[2] if ranked else None


def npm_repository(repository: object) -> Repository | None:
    """``package.json``'s ``repository`` as a repository (shorthands expanded)."""
    directory = None
    if isinstance(repository, dict):
        directory = _str(repository.get("directory"))
        repository = repository.get("url")
    if not isinstance(repository, str) or not repository.strip():
        return None
    value = repository.strip()
    shorthand = re.match(r"^(github|gitlab|bitbucket):([\w.-]+/[\w.-]+)$", value)
    if shorthand:
        host = {"github": "github.com", "gitlab": "gitlab.com",
                "bitbucket": "bitbucket.org"}[shorthand.group(1)]
        value = f"https://{host}/{shorthand.group(2)}"
    elif re.match(r"^[\w.-]+/[\w.-]+$", value):
        value = f"https://github.com/{value}"
    found = forge_repository(value) or _generic_repository(value)
    return Repository(found, directory, "package.json repository") if found else None


def parse_package_json(data: bytes | str) -> tuple[PackageMetadata, Repository | None]:
    """An npm ``package.json``: name, version, description, homepage; its repository."""
    try:
        document = json.loads(_text(data, "package.json"))
    except (ValueError, RecursionError) as exc:
        raise PackageError(f"package.json does not parse: {exc}") from None
    if not isinstance(document, dict):
        raise PackageError("package.json is not an object")
    urls = (("Homepage", document["homepage"]),) if _str(document.get("homepage")) else ()
    meta = PackageMetadata(_str(document.get("name")), _str(document.get("version")),
                           _str(document.get("description")), urls)
    repository = npm_repository(document.get("repository"))
    if repository is None and urls:
        home = forge_repository(urls[0][1])
        repository = Repository(home, None, "package.json homepage") if home else None
    return meta, repository


# --- tags ------------------------------------------------------------------------------

_RELEASE_PREFIXES = ("release-", "release/", "release_", "releases/", "rel-", "rel_",
                     "version-", "version/", "ver-")
_SEPARATORS = "-_@/"


def _tag_name(line: str) -> str:
    """A tag name from a plain name or a ``git ls-remote --tags`` line (peeled or not)."""
    name = line.strip().split()[-1] if line.strip() else ""
    name = name.removeprefix("refs/tags/")
    return name.removesuffix("^{}")


def _compare(text: str, version: str, ecosystem: str) -> int | None:
    """0: the same version as spelled (PEP 440 normalized for PyPI, exact for npm); 1:
    equal only with zero padding (``1.2`` and ``1.2.0``); None: another version."""
    text = text[1:] if text[:1] in ("v", "V") and text[1:2].isdigit() else text
    if not text[:1].isdigit():
        return None
    if ecosystem == "npm":
        return 0 if text == version.strip().lstrip("=v") else None
    try:
        found, wanted = Version(text), Version(version)
    except InvalidVersion:
        return 0 if text == version else None
    if found != wanted:
        return None
    return 0 if str(found) == str(wanted) else 1


def _names(name: str | None, ecosystem: str) -> set[str]:
    if not name:
        return set()
    if ecosystem == "npm":
        return {name, name.rsplit("/", 1)[-1]}
    return {canonicalize_name(name)}


def _tag_ranks(tag: str, version: str, names: set[str],
               ecosystem: str) -> list[tuple[int, int, int]]:
    """(exactness, kind, prefix length) for each way ``tag`` can name ``version``: kind 0
    is ``<name><sep>``, 1 a bare version (``1.2.3``, ``v1.2.3``), 2 a release prefix."""
    ranks = []
    exact = _compare(tag, version, ecosystem)
    if exact is not None:
        ranks.append((exact, 1, 0 if tag[:1].isdigit() else 1))
    for at, ch in enumerate(tag):
        if ch in _SEPARATORS and at:
            left = tag[:at]
            left_key = left if ecosystem == "npm" else canonicalize_name(left)
            exact = _compare(tag[at + 1:], version, ecosystem) if left_key in names else None
            if exact is not None:
                ranks.append((exact, 0, at + 1))
    for prefix in _RELEASE_PREFIXES:
        if tag.lower().startswith(prefix):
            exact = _compare(tag[len(prefix):], version, ecosystem)
            if exact is not None:
                ranks.append((exact, 2, len(prefix)))
    return ranks


def choose_tag(tags: Iterable[str], version: str, *, name: str | None = None,
               ecosystem: str = "pypi") -> TagChoice:
    """The tag of ``version`` among ``tags``.

    A tag names the version as ``<name><sep><version>`` (sep one of ``- _ @ /``, the name
    compared PEP 503-normalized for PyPI, whole or without its scope for npm:
    ``flask-3.1.0``, ``@scope/pkg@1.2.3``), as the bare version (``1.2.3``, ``v1.2.3``),
    or after a release prefix (``release-1.2.3``, ``release/v1.2.3``, ``version-1.2.3``).
    The version part is compared PEP 440-normalized for PyPI (``v1.0.0-rc1`` names
    ``1.0.0rc1``), exactly for npm. Order: a version spelled as asked before one equal
    only by zero padding (``v1.2`` for ``1.2.0``); then the name-qualified tag (the most
    specific in a monorepo), the bare one, the release-prefixed one; then the shorter
    prefix (``1.2.3`` before ``v1.2.3``), then the name. Another package's tag
    (``other-1.2.3``) never matches."""
    names = _names(name, ecosystem)
    unique = sorted({_tag_name(t) for t in tags} - {""})
    ranked = []
    for tag in unique:
        ranks = _tag_ranks(tag, version, names, ecosystem)
        if ranks:
            ranked.append((min(ranks), tag))
    if not ranked:
        near = [t for t in unique if version in t][:3]
        hint = f" (tags with that version under another name: {', '.join(near)})" if near else ""
        return TagChoice(None, f"none of the repository's {len(unique)} tags names version "
                               f"{version}{hint}")
    ranked.sort()
    best_rank, best = ranked[0]
    kind = ("the package's name and the version", "the version", "a release prefix")[best_rank[1]]
    reason = f"tag {best}: {kind}"
    if best_rank[0]:
        reason += f" ({version} with zero padding)"
    others = [tag for rank, tag in ranked[1:] if rank[:2] == best_rank[:2]]
    if others:
        reason += f"; also matching: {', '.join(others[:3])}"
    return TagChoice(best, reason)


__all__ = [
    "FORGES", "PackageMetadata", "Repository", "TagChoice", "choose_tag", "forge_repository",
    "normalize_label", "npm_repository", "parse_package_json", "parse_pkg_info",
    "parse_pyproject", "repository_url", "sdist_metadata", "tree_folder",
]
